//! The `brainscan` binary: parses the command line, starts tracing, runs the command.

use clap::Parser;
use tracing_subscriber::EnvFilter;

use brainscan::cli::{Cli, Command};

fn init_tracing(json: bool) {
    let filter = EnvFilter::try_from_env("BRAINSCAN_LOG")
        .unwrap_or_else(|_| EnvFilter::new("info,sqlx=warn,hyper=warn"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()));
    if json {
        builder.json().init();
    } else {
        builder.init();
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Serve(config) => {
            init_tracing(config.http.log_json);
            brainscan::serve::run(*config).await
        }
        Command::Migrate { store } => {
            init_tracing(false);
            std::fs::create_dir_all(&store.data_dir)?;
            brainscan::store::Db::connect(&store.database_url()).await?;
            println!("database is up to date");
            Ok(())
        }
        Command::Scan(args) => {
            init_tracing(false);
            brainscan::local::scan(args).await
        }
        Command::Features(args) => {
            init_tracing(false);
            brainscan::local::features(args).await
        }
        Command::Model { command } => {
            init_tracing(false);
            brainscan::local::model(command).await
        }
        Command::Bench(args) => {
            init_tracing(false);
            brainscan::local::bench(args).await
        }
        Command::Plugin {
            store,
            plugins,
            command,
        } => {
            init_tracing(false);
            std::fs::create_dir_all(&store.data_dir)?;
            brainscan::plugins::commands::run(store, plugins, command).await
        }
        Command::Admin { store, command } => {
            std::fs::create_dir_all(&store.data_dir)?;
            let db = brainscan::store::Db::connect(&store.database_url()).await?;
            brainscan::admin::run(&db, command).await
        }
    }
}

//! The `brainscan` binary: parses the command line, starts tracing, runs the command.

use clap::Parser;
use tracing_subscriber::EnvFilter;

use brainscan::cli::{Cli, Command};

fn init_tracing(json: bool) {
    init_tracing_from(json, "info,sqlx=warn,hyper=warn");
}

/// Tracing on stderr, filtered by `BRAINSCAN_LOG` or else by `default`.
fn init_tracing_from(json: bool, default: &str) {
    let filter =
        EnvFilter::try_from_env("BRAINSCAN_LOG").unwrap_or_else(|_| EnvFilter::new(default));
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

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    // Before the runtime's threads exist: they set process-wide environment variables.
    brainscan::runtime_dir::ensure();
    brainscan::compute_threads::ensure();
    let outcome = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(anyhow::Error::from)
        .and_then(|runtime| runtime.block_on(run(cli)));
    match outcome {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            // One line with a stable code (see `cli_error`), not the Debug form and backtrace.
            eprintln!("{}", brainscan::cli_error::one_line(&e));
            std::process::ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> anyhow::Result<()> {
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
        Command::Analyze(args) => {
            // Warnings only: its private plugin registry's migrations and built-in installs
            // are plumbing, and a direct run prints the result and nothing else.
            init_tracing_from(false, "warn");
            brainscan::local::analyze::analyze(*args).await
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
        Command::Completions { shell } => {
            let mut command = <Cli as clap::CommandFactory>::command();
            clap_complete::generate(shell, &mut command, "brainscan", &mut std::io::stdout());
            Ok(())
        }
        Command::Man { out } => {
            let command = <Cli as clap::CommandFactory>::command();
            match out {
                Some(dir) => {
                    std::fs::create_dir_all(&dir)?;
                    clap_mangen::generate_to(command, &dir)?;
                    println!("wrote the man pages to {}", dir.display());
                }
                None => clap_mangen::Man::new(command).render(&mut std::io::stdout())?,
            }
            Ok(())
        }
        Command::Mcp { url, key } => {
            // stdout is the protocol's channel: warnings go to stderr, nothing else is logged.
            init_tracing_from(false, "warn");
            brainscan::mcp::serve_stdio(&url, &key).await
        }
        Command::Admin { store, command } => {
            std::fs::create_dir_all(&store.data_dir)?;
            let db = brainscan::store::Db::connect(&store.database_url()).await?;
            brainscan::admin::run(&db, command).await
        }
    }
}

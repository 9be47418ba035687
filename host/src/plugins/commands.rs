//! `brainscan plugin …`: operators' commands on the registry (they act on the database, and a
//! running service picks the change up within its refresh interval), and `plugin test`, which
//! needs no database at all.

use std::path::PathBuf;
use std::sync::Arc;

use clap::Subcommand;

use super::registry::{Registry, RegistryError};
use super::runtime::PluginRuntime;
use super::{conformance, manifest};
use crate::clock::{SystemClock, iso8601};
use crate::config::{PluginConfig, StoreConfig};
use crate::store::Db;

#[derive(Debug, Subcommand)]
pub enum PluginCommand {
    /// Validate, conformance-check and store a component (`.wasm`). It goes live only with
    /// `--activate` or a later `activate`.
    Install {
        file: PathBuf,
        /// Make it the active version of its slot right away.
        #[arg(long)]
        activate: bool,
    },
    /// Installed versions, where each is active, and what each slot would roll back to.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Make NAME@VERSION the active version of its slot.
    Activate { id: String },
    /// Put a slot back on its previous version: `lens`, `moments`, `manipulation`, or a lens
    /// plugin's name.
    Rollback { slot: String },
    /// Take a lens plugin out of service (its lenses are no longer offered).
    Deactivate { slot: String },
    /// Delete an installed version that no slot uses.
    Remove { id: String },
    /// Recent activations, rollbacks and breaker trips.
    Events {
        #[arg(long, default_value_t = 20)]
        limit: i64,
    },
    /// Run the upload conformance checks on a component locally and print fuel, peak memory,
    /// output size and time against the limits. Needs no database.
    Test {
        file: PathBuf,
        #[arg(long)]
        json: bool,
    },
}

fn read_plugin(file: &PathBuf, max: u64) -> anyhow::Result<Vec<u8>> {
    let meta = std::fs::metadata(file)
        .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", file.display()))?;
    anyhow::ensure!(
        meta.len() <= max,
        "{} is {} bytes, over the limit of {max}",
        file.display(),
        meta.len()
    );
    Ok(std::fs::read(file)?)
}

fn explain(e: RegistryError) -> anyhow::Error {
    match e {
        RegistryError::Conformance {
            plugin,
            detail,
            report,
        } => {
            anyhow::anyhow!(
                "{plugin} failed conformance: {detail}\n\n{}",
                report.table()
            )
        }
        other => anyhow::anyhow!("{} ({})", other, other.code()),
    }
}

/// Runs one plugin command.
///
/// # Errors
/// With a plain-language message for operators.
pub async fn run(
    store: StoreConfig,
    plugins: PluginConfig,
    command: PluginCommand,
) -> anyhow::Result<()> {
    if let PluginCommand::Test { file, json } = &command {
        let bytes = read_plugin(file, plugins.plugin_max_bytes)?;
        let runtime = PluginRuntime::new(plugins.clone(), None)?;
        let rt = runtime.clone();
        let plugin = tokio::task::spawn_blocking(move || rt.load(&bytes, "upload")).await?;
        let plugin = Arc::new(plugin.map_err(|e| anyhow::anyhow!("{e} ({})", e.code()))?);
        let report = conformance::run(&runtime, &plugin).await;
        if *json {
            println!("{}", serde_json::to_string_pretty(&report)?);
        } else {
            let m = &plugin.manifest;
            println!(
                "{} ({} plugin, contract {}, {} bytes, {})",
                m.id(),
                m.kind.as_str(),
                m.wit_version,
                m.size_bytes,
                m.digest
            );
            if !m.provides.is_empty() {
                println!("provides: {}", m.provides.join(", "));
            }
            print!("{}", report.table());
        }
        anyhow::ensure!(
            report.passed(),
            "conformance failed; the service would refuse this upload"
        );
        if !*json {
            println!("all checks passed: the service would accept this upload");
        }
        return Ok(());
    }

    let db = Db::connect(&store.database_url()).await?;
    let runtime = PluginRuntime::new(plugins.clone(), Some(plugins.cache_dir(&store.data_dir)))?;
    let registry = Registry::open(runtime, db, Arc::new(SystemClock))
        .await
        .map_err(explain)?;
    match command {
        PluginCommand::Test { .. } => {}
        PluginCommand::Install { file, activate } => {
            let bytes = read_plugin(&file, plugins.plugin_max_bytes)?;
            let installed = registry
                .install(&bytes, "upload", true)
                .await
                .map_err(explain)?;
            let m = &installed.manifest;
            if installed.new {
                println!(
                    "installed {} ({} plugin, {})",
                    m.id(),
                    m.kind.as_str(),
                    m.digest
                );
            } else {
                println!("{} was already installed with these exact bytes", m.id());
            }
            if let Some(report) = &installed.report {
                print!("{}", report.table());
            }
            if activate {
                let change = registry
                    .activate(&m.name, &m.version)
                    .await
                    .map_err(explain)?;
                println!(
                    "slot {}: {} → {}",
                    change.slot,
                    change.from.as_deref().unwrap_or("empty"),
                    m.id()
                );
            } else {
                println!("next: brainscan plugin activate {}", m.id());
            }
        }
        PluginCommand::List { json } => {
            let list = registry.list().await.map_err(explain)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&list)?);
            } else {
                println!(
                    "{:<34} {:<13} {:<16} {:<8} digest",
                    "plugin", "kind", "active in", "source"
                );
                for l in &list {
                    let m = &l.manifest;
                    let active = l.active_in.clone().unwrap_or_else(|| {
                        if l.rollback_for.is_empty() {
                            "-".into()
                        } else {
                            format!("(rollback for {})", l.rollback_for.join(", "))
                        }
                    });
                    println!(
                        "{:<34} {:<13} {:<16} {:<8} {}",
                        m.id(),
                        m.kind.as_str(),
                        active,
                        m.source,
                        &m.digest[..m.digest.len().min(23)]
                    );
                }
            }
        }
        PluginCommand::Activate { id } => {
            let (name, version) = manifest::parse_id(&id).ok_or_else(|| {
                anyhow::anyhow!("expected NAME@VERSION, e.g. lens-standard@1.0.0")
            })?;
            let change = registry.activate(name, version).await.map_err(explain)?;
            println!(
                "slot {}: {} → {}",
                change.slot,
                change.from.as_deref().unwrap_or("empty"),
                change.to.as_deref().unwrap_or("empty")
            );
        }
        PluginCommand::Rollback { slot } => {
            let change = registry.rollback(&slot).await.map_err(explain)?;
            println!(
                "slot {} rolled back: {} → {}",
                change.slot,
                change.from.as_deref().unwrap_or("empty"),
                change.to.as_deref().unwrap_or("empty")
            );
        }
        PluginCommand::Deactivate { slot } => {
            let change = registry.deactivate(&slot).await.map_err(explain)?;
            println!(
                "slot {} emptied (was {})",
                change.slot,
                change.from.as_deref().unwrap_or("empty")
            );
        }
        PluginCommand::Remove { id } => {
            let (name, version) =
                manifest::parse_id(&id).ok_or_else(|| anyhow::anyhow!("expected NAME@VERSION"))?;
            registry.remove(name, version).await.map_err(explain)?;
            println!("removed {id}");
        }
        PluginCommand::Events { limit } => {
            for e in registry
                .events(limit.clamp(1, 1000))
                .await
                .map_err(explain)?
            {
                println!(
                    "{}  {:<10} {:<20} {} → {}  ({})",
                    iso8601(e.at),
                    e.action,
                    e.slot,
                    e.from.as_deref().unwrap_or("empty"),
                    e.to.as_deref().unwrap_or("empty"),
                    e.reason
                );
            }
        }
    }
    Ok(())
}

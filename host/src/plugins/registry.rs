//! Installed plugins, the active version of each slot, and how versions change.
//!
//! Slots: `moments`, `manipulation`, and one `lens:<plugin name>` per active lens plugin (so a
//! team's custom lens runs beside the standard lenses instead of replacing them; two active
//! lens plugins may not provide the same lens name). The active set is one immutable
//! [`ActiveSet`] behind an atomic pointer ([`arc_swap::ArcSwap`]): a scan takes a snapshot when
//! it starts and finishes on those versions, whatever is activated meanwhile. Compiled plugins
//! stay in memory while a slot or its history names them, so activation and rollback are a
//! pointer swap. Slot changes are written to the database first, with a generation counter, so
//! every process sharing the database converges on the same versions ([`Registry::refresh`]).

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;

use super::conformance::{self, Report};
use super::manifest::{self, Kind, Manifest};
use super::runtime::{LoadError, LoadedPlugin, PluginError, PluginRuntime};
use crate::clock::Clock;
use crate::store::plugins::{PluginEvent, PluginRow, SlotRow};
use crate::store::{Db, StoreError};

/// Earlier versions kept per slot for rollback.
const HISTORY: usize = 5;

/// The versions a scan runs on.
#[derive(Debug, Default)]
pub struct ActiveSet {
    pub generation: i64,
    pub lens: Vec<Arc<LoadedPlugin>>,
    pub moments: Option<Arc<LoadedPlugin>>,
    pub manipulation: Option<Arc<LoadedPlugin>>,
}

impl ActiveSet {
    /// Every lens name an active lens plugin provides, in slot order.
    pub fn lenses(&self) -> Vec<String> {
        self.lens
            .iter()
            .flat_map(|p| p.manifest.provides.iter().cloned())
            .collect()
    }

    /// The active plugin that scores `lens`.
    pub fn lens_plugin(&self, lens: &str) -> Option<&Arc<LoadedPlugin>> {
        self.lens
            .iter()
            .find(|p| p.manifest.provides.iter().any(|l| l == lens))
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    #[error(transparent)]
    Load(#[from] LoadError),
    #[error("{plugin} failed conformance: {detail}")]
    Conformance {
        plugin: String,
        detail: String,
        report: Box<Report>,
    },
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Conflict(String),
    #[error("{0}")]
    Invalid(String),
    #[error("storage: {0}")]
    Store(StoreError),
}

impl RegistryError {
    pub fn code(&self) -> &'static str {
        match self {
            Self::Load(e) => e.code(),
            Self::Conformance { .. } => "conformance_failed",
            Self::NotFound(_) => "not_found",
            Self::Conflict(_) => "conflict",
            Self::Invalid(_) => "invalid_request",
            Self::Store(_) => "internal_error",
        }
    }
}

impl From<StoreError> for RegistryError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::NotFound => Self::NotFound("no such plugin".into()),
            StoreError::Conflict(m) => Self::Conflict(m),
            other => Self::Store(other),
        }
    }
}

/// One installed version, for listings.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Listing {
    #[serde(flatten)]
    pub manifest: Manifest,
    pub installed_at: i64,
    /// The slot this version is active in, if any.
    pub active_in: Option<String>,
    /// Slots that would roll back to this version.
    pub rollback_for: Vec<String>,
}

/// The outcome of an install.
#[derive(Debug)]
pub struct Installed {
    pub manifest: Manifest,
    pub report: Option<Report>,
    /// False when these exact bytes were already installed under this name and version.
    pub new: bool,
}

/// The outcome of an activation or rollback.
#[derive(Debug, Clone, serde::Serialize)]
pub struct SlotChange {
    pub slot: String,
    pub from: Option<String>,
    pub to: Option<String>,
}

pub struct Registry {
    runtime: Arc<PluginRuntime>,
    db: Db,
    clock: Arc<dyn Clock>,
    active: ArcSwap<ActiveSet>,
    /// Compiled plugins by digest.
    loaded: Mutex<HashMap<String, Arc<LoadedPlugin>>>,
    /// Recent failure times per slot, for the crash-loop breaker.
    /// Per slot, the recent plugin faults: when, and on which organisation's input.
    failures: Mutex<HashMap<String, VecDeque<(Instant, String)>>>,
    /// One refresh or slot change at a time in this process.
    writer: tokio::sync::Mutex<()>,
}

fn slot_for(m: &Manifest) -> String {
    match m.kind {
        Kind::Lens => format!("lens:{}", m.name),
        other => other.as_str().to_owned(),
    }
}

/// The service secret that keys the plugin native-code cache's HMACs.
const PLUGIN_CACHE_SECRET: &str = "plugin_cache_hmac";

impl Registry {
    /// Opens the registry: installs the embedded defaults that are missing, activates them in
    /// empty slots (and moves slots the host itself filled to a newer built-in), then loads the
    /// active set.
    ///
    /// # Errors
    /// When the database fails or a default plugin does not load (a broken build).
    pub async fn open(
        runtime: Arc<PluginRuntime>,
        db: Db,
        clock: Arc<dyn Clock>,
    ) -> Result<Arc<Self>, RegistryError> {
        let registry = Arc::new(Self {
            runtime,
            db,
            clock,
            active: ArcSwap::from_pointee(ActiveSet {
                generation: -1,
                ..ActiveSet::default()
            }),
            loaded: Mutex::new(HashMap::new()),
            failures: Mutex::new(HashMap::new()),
            writer: tokio::sync::Mutex::new(()),
        });
        // The native-code cache's HMAC key: a service secret, so only processes that can
        // read the database can write cache entries the others will run.
        let cache_key = registry
            .db
            .service_secret(PLUGIN_CACHE_SECRET, registry.clock.now_ms())
            .await?;
        registry.runtime.set_cache_key(cache_key.as_bytes());
        for (file, bytes) in super::defaults::DEFAULTS {
            let plugin = registry
                .load_bytes(bytes, "builtin")
                .await
                .map_err(|e| RegistryError::Invalid(format!("default plugin {file}: {e}")))?;
            let m = plugin.manifest.clone();
            match registry.store(plugin, None, bytes).await {
                Ok(_) => {}
                // A build that ran on this database stored this name@version with other bytes.
                // A version is immutable (results name its digest), so the stored build stays
                // and is what the slot runs; refusing to start would turn a toolchain upgrade,
                // which changes the bytes but not what the plugin computes, into an outage. A
                // change to what a built-in computes bumps its version (the test
                // `builtin_versions_follow_their_inputs` holds that), so this is the only way here.
                Err(RegistryError::Conflict(why)) => tracing::warn!(
                    plugin = file,
                    "built-in plugin not stored: {why}; the stored build of {} stays in use",
                    m.id()
                ),
                Err(e) => return Err(e),
            }
            let slot = slot_for(&m);
            let current = registry
                .db
                .list_slots()
                .await?
                .into_iter()
                .find(|s| s.slot == slot);
            let take = match &current {
                None => true,
                Some(s) => s.auto && s.version != m.version,
            };
            if take {
                registry
                    .activate_inner(&m.name, &m.version, "built-in default", true)
                    .await?;
            }
        }
        registry.refresh().await?;
        Ok(registry)
    }

    pub fn runtime(&self) -> &Arc<PluginRuntime> {
        &self.runtime
    }

    /// The versions to run a scan on; hold the `Arc` for the whole scan.
    pub fn snapshot(&self) -> Arc<ActiveSet> {
        self.active.load_full()
    }

    /// Compiled plugin for an installed version (compiling on first use).
    async fn loaded(&self, row: &PluginRow) -> Result<Arc<LoadedPlugin>, RegistryError> {
        if let Some(p) = self.loaded.lock().map_err(poisoned)?.get(&row.digest) {
            return Ok(p.clone());
        }
        let bytes = self.db.plugin_bytes(&row.digest).await?;
        let source = serde_json::from_str::<Manifest>(&row.manifest)
            .map(|m| m.source)
            .unwrap_or_else(|_| "upload".into());
        let runtime = self.runtime.clone();
        let plugin = tokio::task::spawn_blocking(move || runtime.load(&bytes, &source))
            .await
            .map_err(|e| RegistryError::Invalid(format!("loading a plugin: {e}")))??;
        let plugin = Arc::new(plugin);
        self.loaded
            .lock()
            .map_err(poisoned)?
            .insert(row.digest.clone(), plugin.clone());
        Ok(plugin)
    }

    /// Validates, checks and stores a component. With `check`, the conformance battery must
    /// pass first; nothing is stored when any step fails. Installing does not activate.
    ///
    /// # Errors
    /// Load errors (not a component, wrong world, forbidden imports, bad manifest),
    /// `Conformance`, or `Conflict` when the version exists with other bytes.
    pub async fn install(
        &self,
        bytes: &[u8],
        source: &str,
        check: bool,
    ) -> Result<Installed, RegistryError> {
        let plugin = self.load_bytes(bytes, source).await?;
        let manifest = plugin.manifest.clone();
        let report = if check {
            let report = conformance::run(&self.runtime, &plugin).await;
            if let Some(row) = report.first_failure() {
                return Err(RegistryError::Conformance {
                    plugin: manifest.id(),
                    detail: format!("{}: {}", row.check, row.detail),
                    report: Box::new(report),
                });
            }
            Some(report)
        } else {
            None
        };
        self.store(plugin, report, bytes).await
    }

    /// Compiles a component off the async threads; stores nothing.
    async fn load_bytes(
        &self,
        bytes: &[u8],
        source: &str,
    ) -> Result<Arc<LoadedPlugin>, RegistryError> {
        let runtime = self.runtime.clone();
        let owned = bytes.to_vec();
        let src = source.to_owned();
        let plugin = tokio::task::spawn_blocking(move || runtime.load(&owned, &src))
            .await
            .map_err(|e| RegistryError::Invalid(format!("loading a plugin: {e}")))??;
        Ok(Arc::new(plugin))
    }

    /// Stores a loaded component's version and bytes; `Conflict` when the version exists with
    /// other bytes.
    async fn store(
        &self,
        plugin: Arc<LoadedPlugin>,
        report: Option<Report>,
        bytes: &[u8],
    ) -> Result<Installed, RegistryError> {
        let manifest = plugin.manifest.clone();
        let row = PluginRow {
            name: manifest.name.clone(),
            version: manifest.version.clone(),
            kind: manifest.kind.as_str().to_owned(),
            digest: manifest.digest.clone(),
            manifest: serde_json::to_string(&manifest).map_err(StoreError::from)?,
            conformance: report
                .as_ref()
                .map(serde_json::to_string)
                .transpose()
                .map_err(StoreError::from)?,
            installed_at: self.clock.now_ms(),
        };
        let new = self.db.insert_plugin(&row, bytes).await?;
        self.loaded
            .lock()
            .map_err(poisoned)?
            .entry(manifest.digest.clone())
            .or_insert(plugin);
        if new {
            tracing::info!(plugin = %manifest.id(), digest = %manifest.digest, kind = manifest.kind.as_str(), "plugin installed");
        }
        Ok(Installed {
            manifest,
            report,
            new,
        })
    }

    /// Makes `name@version` the active version of its slot.
    ///
    /// # Errors
    /// `NotFound`, or `Conflict` when another active lens plugin provides one of its lenses.
    pub async fn activate(&self, name: &str, version: &str) -> Result<SlotChange, RegistryError> {
        self.activate_inner(name, version, "operator", false).await
    }

    async fn activate_inner(
        &self,
        name: &str,
        version: &str,
        reason: &str,
        auto: bool,
    ) -> Result<SlotChange, RegistryError> {
        let _guard = self.writer.lock().await;
        let row = self.db.get_plugin(name, version).await.map_err(|_| {
            RegistryError::NotFound(format!(
                "{name}@{version} is not installed (see `brainscan plugin list`)"
            ))
        })?;
        let plugin = self.loaded(&row).await?;
        let m = &plugin.manifest;
        let slot = slot_for(m);
        let slots = self.db.list_slots().await?;
        if m.kind == Kind::Lens {
            for s in slots.iter().filter(|s| s.kind == "lens" && s.slot != slot) {
                let other = self.db.get_plugin(&s.name, &s.version).await?;
                let other: Manifest =
                    serde_json::from_str(&other.manifest).map_err(StoreError::from)?;
                if let Some(l) = m.provides.iter().find(|l| other.provides.contains(l)) {
                    return Err(RegistryError::Conflict(format!(
                        "lens {l:?} is already provided by the active {}@{}; deactivate it first",
                        other.name, other.version
                    )));
                }
            }
        }
        let current = slots.into_iter().find(|s| s.slot == slot);
        let from = current
            .as_ref()
            .map(|s| format!("{}@{}", s.name, s.version));
        let to = m.id();
        if from.as_deref() == Some(to.as_str()) {
            drop(_guard);
            self.refresh().await?;
            return Ok(SlotChange {
                slot,
                from: from.clone(),
                to: Some(to),
            });
        }
        let mut history = current
            .as_ref()
            .map(|s| s.history.clone())
            .unwrap_or_default();
        if let Some(f) = &from {
            history.retain(|h| h != f && *h != to);
            history.push(f.clone());
        }
        history.retain(|h| *h != to);
        if history.len() > HISTORY {
            history.drain(..history.len() - HISTORY);
        }
        let now = self.clock.now_ms();
        let new = SlotRow {
            slot: slot.clone(),
            kind: m.kind.as_str().to_owned(),
            name: m.name.clone(),
            version: m.version.clone(),
            history,
            auto,
            updated_at: now,
        };
        let event = PluginEvent {
            slot: slot.clone(),
            action: "activate".into(),
            from: from.clone(),
            to: Some(to.clone()),
            reason: reason.into(),
            at: now,
        };
        self.db
            .write_slot(&slot, from.as_deref(), Some(&new), &event)
            .await?;
        tracing::info!(slot = %slot, from = from.as_deref().unwrap_or("-"), to = %to, reason, "plugin activated");
        drop(_guard);
        self.refresh().await?;
        Ok(SlotChange {
            slot,
            from,
            to: Some(to),
        })
    }

    /// Resolves what an operator typed to a slot: `moments`, `manipulation`, `lens` (the lens
    /// slot that provides `attention`), `lens:<name>` or a lens plugin's name.
    async fn resolve_slot(&self, target: &str) -> Result<SlotRow, RegistryError> {
        let slots = self.db.list_slots().await?;
        let wanted = match target {
            "lens" => {
                let active = self.snapshot();
                active
                    .lens_plugin("attention")
                    .map(|p| slot_for(&p.manifest))
                    .or_else(|| {
                        slots
                            .iter()
                            .find(|s| s.kind == "lens")
                            .map(|s| s.slot.clone())
                    })
                    .unwrap_or_else(|| "lens".into())
            }
            t if t.starts_with("lens:") || Kind::parse(t).is_some() => t.to_owned(),
            name => format!("lens:{name}"),
        };
        slots
            .into_iter()
            .find(|s| s.slot == wanted)
            .ok_or_else(|| RegistryError::NotFound(format!("no active slot {wanted:?}")))
    }

    /// Puts the slot back on its previous version.
    ///
    /// # Errors
    /// `NotFound` for an unknown slot, `Conflict` when it has no earlier version.
    pub async fn rollback(&self, target: &str) -> Result<SlotChange, RegistryError> {
        let slot = self.resolve_slot(target).await?;
        self.rollback_slot(slot, "rollback", "operator").await
    }

    async fn rollback_slot(
        &self,
        slot: SlotRow,
        action: &str,
        reason: &str,
    ) -> Result<SlotChange, RegistryError> {
        let guard = self.writer.lock().await;
        let from = format!("{}@{}", slot.name, slot.version);
        let mut history = slot.history.clone();
        let target = loop {
            let Some(id) = history.pop() else {
                return Err(RegistryError::Conflict(format!(
                    "slot {} has no earlier version to roll back to",
                    slot.slot
                )));
            };
            let Some((name, version)) = manifest::parse_id(&id) else {
                continue;
            };
            if let Ok(row) = self.db.get_plugin(name, version).await {
                break row;
            }
        };
        // Compile before the swap so the swap itself cannot fail on a broken artifact.
        let plugin = self.loaded(&target).await?;
        let to = plugin.manifest.id();
        let now = self.clock.now_ms();
        let new = SlotRow {
            slot: slot.slot.clone(),
            kind: slot.kind.clone(),
            name: target.name.clone(),
            version: target.version.clone(),
            history,
            auto: false,
            updated_at: now,
        };
        let event = PluginEvent {
            slot: slot.slot.clone(),
            action: action.into(),
            from: Some(from.clone()),
            to: Some(to.clone()),
            reason: reason.into(),
            at: now,
        };
        self.db
            .write_slot(&slot.slot, Some(&from), Some(&new), &event)
            .await?;
        metrics::counter!("brainscan_plugin_rollbacks_total", "slot" => slot.slot.clone(), "reason" => action.to_owned()).increment(1);
        tracing::warn!(slot = %slot.slot, from = %from, to = %to, reason, "plugin slot rolled back");
        drop(guard);
        self.refresh().await?;
        Ok(SlotChange {
            slot: slot.slot,
            from: Some(from),
            to: Some(to),
        })
    }

    /// Takes a lens plugin out of service (its slot is removed). The standard `moments` and
    /// `manipulation` slots cannot be emptied, only moved to another version.
    ///
    /// # Errors
    /// `NotFound`, or `Invalid` for a non-lens slot.
    pub async fn deactivate(&self, target: &str) -> Result<SlotChange, RegistryError> {
        let slot = self.resolve_slot(target).await?;
        if slot.kind != "lens" {
            return Err(RegistryError::Invalid(format!(
                "slot {} cannot be emptied; activate another version instead",
                slot.slot
            )));
        }
        let guard = self.writer.lock().await;
        let from = format!("{}@{}", slot.name, slot.version);
        let event = PluginEvent {
            slot: slot.slot.clone(),
            action: "deactivate".into(),
            from: Some(from.clone()),
            to: None,
            reason: "operator".into(),
            at: self.clock.now_ms(),
        };
        self.db
            .write_slot(&slot.slot, Some(&from), None, &event)
            .await?;
        drop(guard);
        self.refresh().await?;
        Ok(SlotChange {
            slot: slot.slot,
            from: Some(from),
            to: None,
        })
    }

    /// Deletes an installed version that no slot uses.
    ///
    /// # Errors
    /// `NotFound`, or `Conflict` when it is active or a rollback target.
    pub async fn remove(&self, name: &str, version: &str) -> Result<(), RegistryError> {
        let row =
            self.db.get_plugin(name, version).await.map_err(|_| {
                RegistryError::NotFound(format!("{name}@{version} is not installed"))
            })?;
        self.db.delete_plugin(name, version).await?;
        self.loaded.lock().map_err(poisoned)?.remove(&row.digest);
        tracing::info!(plugin = %format!("{name}@{version}"), "plugin removed");
        Ok(())
    }

    /// Reloads the active set when the database's generation moved (another process, or the
    /// CLI, changed a slot). Cheap when nothing changed: one indexed read.
    ///
    /// # Errors
    /// Database errors, or an active version that no longer loads.
    pub async fn refresh(&self) -> Result<(), RegistryError> {
        let generation = self.db.plugin_generation().await?;
        if generation == self.active.load().generation {
            return Ok(());
        }
        let _guard = self.writer.lock().await;
        let generation = self.db.plugin_generation().await?;
        let slots = self.db.list_slots().await?;
        let mut set = ActiveSet {
            generation,
            ..ActiveSet::default()
        };
        let mut keep = std::collections::HashSet::new();
        for s in &slots {
            let row = self.db.get_plugin(&s.name, &s.version).await?;
            let plugin = self.loaded(&row).await?;
            keep.insert(row.digest.clone());
            // Rollback targets stay compiled so a rollback never waits for the compiler.
            for id in &s.history {
                if let Some((n, v)) = manifest::parse_id(id)
                    && let Ok(r) = self.db.get_plugin(n, v).await
                    && self.loaded(&r).await.is_ok()
                {
                    keep.insert(r.digest);
                }
            }
            match plugin.manifest.kind {
                Kind::Lens => set.lens.push(plugin),
                Kind::Moments => set.moments = Some(plugin),
                Kind::Manipulation => set.manipulation = Some(plugin),
            }
        }
        // Built-in lens plugins first, then by slot name: the order of `GET /lenses`.
        set.lens
            .sort_by_key(|p| (p.manifest.source != "builtin", p.manifest.name.clone()));
        // Operators (and the scale-out tests) compare this across processes to see a swap
        // arrive everywhere.
        metrics::gauge!("brainscan_plugin_generation").set(generation as f64);
        self.active.store(Arc::new(set));
        self.loaded
            .lock()
            .map_err(poisoned)?
            .retain(|d, _| keep.contains(d));
        Ok(())
    }

    /// Counts a failed call on `org`'s input against its slot; after `K` plugin faults within
    /// `T` seconds, from at least `plugin_breaker_orgs` organisations, the slot rolls back to
    /// its last good version. Returns the rollback when one happened. Host-side input checks
    /// (an over-long transcript, a bad duration) are not plugin faults and never count.
    pub async fn record_failure(&self, err: &PluginError, org: &str) -> Option<SlotChange> {
        metrics::counter!("brainscan_plugin_failures_total", "plugin" => err.name.clone(), "limit" => err.failure.limit()).increment(1);
        if !err.failure.is_plugin_fault() {
            return None;
        }
        let config = self.runtime.config();
        let slot_name = match err.kind {
            Kind::Lens => format!("lens:{}", err.name),
            other => other.as_str().to_owned(),
        };
        let trip = {
            let mut failures = self.failures.lock().ok()?;
            let q = failures.entry(slot_name.clone()).or_default();
            let now = Instant::now();
            q.push_back((now, org.to_owned()));
            let window = Duration::from_secs(config.plugin_breaker_window_secs);
            while q
                .front()
                .is_some_and(|(t, _)| now.duration_since(*t) > window)
            {
                q.pop_front();
            }
            let orgs: std::collections::HashSet<&str> = q.iter().map(|(_, o)| o.as_str()).collect();
            let trip = q.len() >= config.plugin_breaker_failures as usize
                && orgs.len() >= config.plugin_breaker_orgs.max(1) as usize;
            let seen = (q.len(), orgs.len());
            if trip {
                q.clear();
            }
            trip.then_some(seen)
        };
        let (count, orgs) = trip?;
        let slot = self.resolve_slot(&slot_name).await.ok()?;
        if slot.name != err.name || slot.version != err.version {
            return None; // the slot has already moved on
        }
        let reason = format!(
            "crash-loop breaker: {count} failures within {} s from {orgs} organisations (last: {})",
            config.plugin_breaker_window_secs, err.failure
        );
        match self.rollback_slot(slot, "breaker", &reason).await {
            Ok(change) => Some(change),
            Err(e) => {
                tracing::error!(slot = %slot_name, "crash-loop breaker could not roll back: {e}");
                None
            }
        }
    }

    /// Every installed version with where it is used.
    ///
    /// # Errors
    /// Database errors.
    pub async fn list(&self) -> Result<Vec<Listing>, RegistryError> {
        let slots = self.db.list_slots().await?;
        let mut out = Vec::new();
        for row in self.db.list_plugins().await? {
            let manifest: Manifest =
                serde_json::from_str(&row.manifest).map_err(StoreError::from)?;
            let id = manifest.id();
            out.push(Listing {
                active_in: slots
                    .iter()
                    .find(|s| s.name == row.name && s.version == row.version)
                    .map(|s| s.slot.clone()),
                rollback_for: slots
                    .iter()
                    .filter(|s| s.history.contains(&id))
                    .map(|s| s.slot.clone())
                    .collect(),
                installed_at: row.installed_at,
                manifest,
            });
        }
        Ok(out)
    }

    /// Slots and their history.
    ///
    /// # Errors
    /// Database errors.
    pub async fn slots(&self) -> Result<BTreeMap<String, SlotRow>, RegistryError> {
        Ok(self
            .db
            .list_slots()
            .await?
            .into_iter()
            .map(|s| (s.slot.clone(), s))
            .collect())
    }

    /// The most recent slot changes.
    ///
    /// # Errors
    /// Database errors.
    pub async fn events(&self, limit: i64) -> Result<Vec<PluginEvent>, RegistryError> {
        Ok(self.db.plugin_events(limit).await?)
    }
}

fn poisoned<T>(_: std::sync::PoisonError<T>) -> RegistryError {
    RegistryError::Invalid("a registry lock was poisoned by an earlier panic".into())
}

//! `brainscan serve`: the HTTP server and in-process workers, with graceful shutdown.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::app::App;
use crate::config::ServeConfig;

/// A started service.
pub struct Running {
    pub addr: SocketAddr,
    /// The operations address, when the operator routes have their own listener.
    pub ops_addr: Option<SocketAddr>,
    pub cancel: CancellationToken,
    tracker: TaskTracker,
    servers: Vec<tokio::task::JoinHandle<std::io::Result<()>>>,
}

impl Running {
    /// Stops accepting connections, lets requests and jobs finish (jobs up to the shutdown
    /// grace, then they are released for other workers) and waits for every task.
    pub async fn shutdown(self) {
        self.cancel.cancel();
        for server in self.servers {
            match server.await {
                Ok(Err(e)) => tracing::error!(error = %e, "server error"),
                Err(e) => tracing::error!(error = %e, "server task failed"),
                Ok(Ok(())) => {}
            }
        }
        self.tracker.close();
        self.tracker.wait().await;
    }
}

/// Starts workers and the HTTP server on `listener`, every route on it.
pub fn start(app: Arc<App>, listener: TcpListener) -> std::io::Result<Running> {
    start_with(app, listener, None)
}

/// Starts workers and the HTTP servers: the public routes on `listener` and, with `ops`, the
/// operator routes (`/metrics`, `/admin/v1`) on that listener instead.
pub fn start_with(
    app: Arc<App>,
    listener: TcpListener,
    ops: Option<TcpListener>,
) -> std::io::Result<Running> {
    let addr = listener.local_addr()?;
    let ops_addr = ops.as_ref().map(TcpListener::local_addr).transpose()?;
    let cancel = CancellationToken::new();
    let tracker = TaskTracker::new();
    if app.config.role.runs_workers() {
        crate::queue::spawn_workers(&app, app.config.queue.workers, &cancel, &tracker);
        spawn_recall_migration(app.clone(), cancel.clone(), &tracker);
    }
    crate::listen::spawn(&app, &cancel, &tracker);
    crate::metrics::handle();
    if let Some(registry) = app.plugins.clone() {
        spawn_plugin_refresh(registry, cancel.clone(), &tracker);
    }
    use crate::api::router::{Surface, router_for};
    let public = if ops.is_some() {
        Surface::Public
    } else {
        Surface::All
    };
    let router = router_for(app.clone(), public);
    let limits = crate::api::server::ConnectionLimits {
        max_connections: app.config.http.max_connections,
        header_read_timeout: Duration::from_secs(app.config.http.header_read_timeout_secs),
        send_stall_timeout: Duration::from_secs(app.config.http.send_timeout_secs.max(1)),
    };
    // Not ready from the moment shutdown starts, while open connections drain.
    let (shutdown, ready_app) = (cancel.clone(), app.clone());
    tokio::spawn(async move {
        shutdown.cancelled().await;
        ready_app.ready.store(false, Ordering::SeqCst);
    });
    let mut servers = vec![tokio::spawn(crate::api::server::serve(
        listener,
        router,
        limits,
        cancel.clone(),
    ))];
    if let Some(ops) = ops {
        servers.push(tokio::spawn(crate::api::server::serve(
            ops,
            router_for(app.clone(), Surface::Operations),
            limits,
            cancel.clone(),
        )));
    }
    app.ready.store(true, Ordering::SeqCst);
    Ok(Running {
        addr,
        ops_addr,
        cancel,
        tracker,
        servers,
    })
}

/// How often a process re-reads the active plugin set. Activations made by another process
/// (the CLI, another API process) reach this one within this interval; a scan also refreshes
/// before it snapshots, so a queued scan never runs on a stale set.
const PLUGIN_REFRESH: Duration = Duration::from_secs(2);

fn spawn_plugin_refresh(
    registry: Arc<crate::plugins::Registry>,
    cancel: CancellationToken,
    tracker: &TaskTracker,
) {
    tracker.spawn(async move {
        let mut tick = tokio::time::interval(PLUGIN_REFRESH);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                () = cancel.cancelled() => return,
                _ = tick.tick() => {}
            }
            if let Err(e) = registry.refresh().await {
                tracing::warn!("plugin registry refresh failed; keeping the loaded set: {e}");
            }
        }
    });
}

/// Re-embeds recall texts stored by an earlier embedding model (see
/// [`crate::intelligence::recall::migrate`]); a failure is logged and retried at the next start.
fn spawn_recall_migration(app: Arc<App>, cancel: CancellationToken, tracker: &TaskTracker) {
    tracker.spawn(async move {
        use crate::intelligence::recall::migrate::reembed_other_models;
        match reembed_other_models(&app.db, &app.recall, &cancel).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(
                texts = n,
                model = crate::embed::e5::MODEL_ID,
                "re-embedded recall texts of an earlier model"
            ),
            Err(e) => tracing::warn!(
                "re-embedding older recall texts failed; they stay out of recall until the next start: {e}"
            ),
        }
    });
}

async fn terminate_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(s) => s,
                Err(_) => {
                    let _ = ctrl_c.await;
                    return;
                }
            };
        tokio::select! {
            _ = ctrl_c => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = ctrl_c.await;
    }
}

/// Runs until SIGINT/SIGTERM.
///
/// # Errors
/// The start-up warning for a service reachable from other machines with no trusted proxies:
/// every limit keyed on the client address (sign-in lockouts, the per-address rate limit, the
/// artifact slots) reads the peer, which behind a reverse proxy is the proxy, so one client
/// would spend everyone's allowance. `None` on a loopback listener or with proxies set.
#[must_use]
pub fn proxy_warning(config: &ServeConfig) -> Option<&'static str> {
    (!config.http.listen.ip().is_loopback() && config.http.trusted_proxies.is_empty()).then_some(
        "BRAINSCAN_TRUSTED_PROXIES is empty and the listener is not loopback: limits keyed on the client address (console sign-in, the per-address rate limit, artifact downloads) read each connection's peer. Behind a reverse proxy every client is the proxy, and five wrong passwords from anyone would hold sign-in for everyone: set BRAINSCAN_TRUSTED_PROXIES to the proxy's address (see docs/console.md). Served directly, ignore this.",
    )
}

/// Start-up failures: the data folder, the database, the listen address, a missing ffprobe.
pub async fn run(config: ServeConfig) -> anyhow::Result<()> {
    if !crate::media::probe::ffprobe_available().await {
        anyhow::bail!(
            "ffprobe was not found on PATH: install the Debian package `ffmpeg` (apt-get install ffmpeg)"
        );
    }
    if let Some(token) = &config.plugins.admin_token {
        if token.chars().count() < crate::config::MIN_ADMIN_TOKEN_CHARS {
            anyhow::bail!(
                "BRAINSCAN_ADMIN_TOKEN must be at least {} characters (it guards plugin installs and rollbacks); generate one with `openssl rand -hex 32`",
                crate::config::MIN_ADMIN_TOKEN_CHARS
            );
        }
        if token.chars().any(char::is_whitespace) {
            anyhow::bail!(
                "BRAINSCAN_ADMIN_TOKEN has white space inside it; a bearer token cannot carry it (generate one with `openssl rand -hex 32`)"
            );
        }
        if config.http.ops_listen.is_none() && !config.http.admin_on_public_listener {
            tracing::warn!(
                "BRAINSCAN_ADMIN_TOKEN is set but the admin API is not served: it answers only on BRAINSCAN_OPS_LISTEN (or set BRAINSCAN_ADMIN_ON_PUBLIC_LISTENER=true to serve it on the public address)"
            );
        }
    }
    if config.role.runs_workers()
        && config.queue.org_running_scans >= i64::try_from(config.queue.workers).unwrap_or(i64::MAX)
    {
        tracing::warn!(
            org_running_scans = config.queue.org_running_scans,
            workers = config.queue.workers,
            "BRAINSCAN_ORG_RUNNING_SCANS is not below BRAINSCAN_WORKERS: one organisation can keep every worker of this process busy"
        );
    }
    if config.role == crate::config::Role::Worker && config.queue.workers == 0 {
        anyhow::bail!(
            "--role worker with --workers 0 would run nothing; give it at least one worker"
        );
    }
    if config.artifacts.public_url.is_none() && !config.http.listen.ip().is_loopback() {
        tracing::warn!(
            listen = %config.http.listen,
            "BRAINSCAN_PUBLIC_URL is not set: signed artifact links take the request's Host header, and requests that name a host other than an IP address or localhost are refused (421); set BRAINSCAN_PUBLIC_URL (and BRAINSCAN_ALLOWED_HOSTS for other names)"
        );
    }
    if let Some(warning) = proxy_warning(&config) {
        tracing::warn!(listen = %config.http.listen, "{warning}");
    }
    // Installed before anything records: the plugin registry reports at start-up.
    crate::metrics::handle();
    let listen = config.http.listen;
    let ops_listen = config.http.ops_listen;
    let role = config.role;
    let app = App::production(config).await?;
    tracing::info!(?role, database = ?app.db.backend, "starting");
    if role == crate::config::Role::Api && app.db.backend == crate::store::Backend::Sqlite {
        tracing::warn!(
            "--role api on SQLite: scans run only if a worker process shares this database file"
        );
    }
    let listener = TcpListener::bind(listen)
        .await
        .map_err(|e| anyhow::anyhow!("cannot listen on {listen}: {e}"))?;
    let ops =
        match ops_listen {
            Some(a) => Some(TcpListener::bind(a).await.map_err(|e| {
                anyhow::anyhow!("cannot listen on {a} (BRAINSCAN_OPS_LISTEN): {e}")
            })?),
            None => None,
        };
    let running = start_with(app, listener, ops)?;
    // Printed on stdout (not the log) so scripts and tests can find the port.
    println!("brainscan listening on http://{}", running.addr);
    if let Some(a) = running.ops_addr {
        println!("brainscan operations (metrics, admin) on http://{a}");
    }
    terminate_signal().await;
    tracing::info!("shutting down");
    let cancel = running.cancel.clone();
    tokio::select! {
        () = running.shutdown() => {}
        () = async {
            cancel.cancelled().await;
            tokio::signal::ctrl_c().await.ok();
        } => tracing::warn!("second interrupt: exiting without waiting"),
    }
    tokio::time::sleep(Duration::from_millis(10)).await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::config::ServeConfig;

    /// Security round 4: behind a reverse proxy with no trusted proxies set, anyone could lock
    /// every person out of the console. `serve` says so at start when it listens off loopback
    /// with no trusted proxies; on loopback, or with a proxy set, it says nothing.
    #[test]
    fn serve_warns_when_it_listens_off_loopback_with_no_trusted_proxies() {
        let mut c = ServeConfig::with_data_dir("/nonexistent".into());
        assert_eq!(super::proxy_warning(&c), None, "loopback");
        c.http.listen = "0.0.0.0:8080".parse().expect("addr");
        let warning = super::proxy_warning(&c).expect("a warning");
        assert!(warning.contains("BRAINSCAN_TRUSTED_PROXIES"), "{warning}");
        c.http.trusted_proxies = vec!["10.0.0.0/8".parse().expect("proxy")];
        assert_eq!(super::proxy_warning(&c), None, "a proxy is set");
    }
}

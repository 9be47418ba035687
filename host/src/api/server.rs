//! The HTTP connection layer: accepts connections for the router with the limits a public
//! listener needs and that `axum::serve` does not offer.
//!
//! - **A cap on open connections.** A connection takes a permit before it is accepted; at the
//!   cap, new ones wait in the kernel's backlog instead of each costing a task and buffers.
//! - **A header-read timeout.** A client that opens a connection and sends its request
//!   headers slowly (slowloris) is cut off after the timeout instead of holding a connection
//!   forever.
//! - **Graceful shutdown.** On cancel it stops accepting, closes idle keep-alive connections
//!   and lets in-flight requests finish, as `axum::serve`'s graceful shutdown did.
//!
//! HTTP/1.1 only, as before (the service is meant to sit behind a proxy for TLS and HTTP/2).

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

/// Limits on the listener's connections.
#[derive(Debug, Clone, Copy)]
pub struct ConnectionLimits {
    pub max_connections: usize,
    pub header_read_timeout: Duration,
}

/// Serves `router` on `listener` until `cancel`, then drains the open connections.
///
/// # Errors
/// None today (accept errors are logged and retried); the result keeps `serve`'s shape.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: ConnectionLimits,
    cancel: CancellationToken,
) -> std::io::Result<()> {
    let permits = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let graceful = GracefulShutdown::new();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .keep_alive(true);
    loop {
        let permit = tokio::select! {
            () = cancel.cancelled() => break,
            permit = permits.clone().acquire_owned() => match permit {
                Ok(p) => p,
                Err(_) => break, // never closed
            },
        };
        let (stream, peer) = tokio::select! {
            () = cancel.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of file descriptors and the like: wait rather than spin.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let _ = stream.set_nodelay(true);
        let service =
            router
                .clone()
                .map_request(move |r: axum::http::Request<hyper::body::Incoming>| {
                    // The peer address, for what is limited per client (the admin lockout).
                    let mut r = r.map(axum::body::Body::new);
                    r.extensions_mut().insert(axum::extract::ConnectInfo(peer));
                    r
                });
        let connection = http.serve_connection(
            TokioIo::new(stream),
            hyper_util::service::TowerToHyperService::new(service),
        );
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::debug!(error = %e, "connection ended with an error");
            }
            drop(permit);
        });
    }
    drop(listener);
    graceful.shutdown().await;
    Ok(())
}

//! The HTTP connection layer: accepts connections for the router with the limits a public
//! listener needs and that `axum::serve` does not offer.
//!
//! - **A cap on open connections.** A connection takes a permit before it is accepted; at the
//!   cap, new ones wait in the kernel's backlog instead of each costing a task and buffers.
//! - **A header-read timeout.** A client that opens a connection and sends its request
//!   headers slowly (slowloris) is cut off after the timeout instead of holding a connection
//!   forever.
//! - **A send timeout.** A write to the client that makes no progress for
//!   [`ConnectionLimits::send_stall_timeout`] ends the connection: a client that stops
//!   reading a response cannot hold what the response holds (an artifact slot, a worker's
//!   buffer) for longer than that.
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
    /// How long one write to the client may wait for room before the connection is closed.
    pub send_stall_timeout: Duration,
}

/// A connection whose writes fail with `TimedOut` once one has waited `stall` for the client
/// to read (see the module documentation). Reads are untouched: the header-read timeout and
/// the request deadline bound those.
struct SendDeadline {
    inner: tokio::net::TcpStream,
    stall: Duration,
    /// Started when a write first finds no room; cleared by any progress.
    waiting: Option<std::pin::Pin<Box<tokio::time::Sleep>>>,
}

impl SendDeadline {
    fn track<T>(
        &mut self,
        cx: &mut std::task::Context<'_>,
        polled: std::task::Poll<std::io::Result<T>>,
    ) -> std::task::Poll<std::io::Result<T>> {
        use std::task::Poll;
        if polled.is_ready() {
            self.waiting = None;
            return polled;
        }
        let stall = self.stall;
        let timer = self
            .waiting
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(stall)));
        if timer.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "the client read nothing for the send timeout",
            )));
        }
        Poll::Pending
    }
}

impl tokio::io::AsyncRead for SendDeadline {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl tokio::io::AsyncWrite for SendDeadline {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        let polled = std::pin::Pin::new(&mut self.inner).poll_write(cx, buf);
        self.track(cx, polled)
    }

    fn poll_write_vectored(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> std::task::Poll<std::io::Result<usize>> {
        let polled = std::pin::Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.track(cx, polled)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let polled = std::pin::Pin::new(&mut self.inner).poll_flush(cx);
        self.track(cx, polled)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_shutdown(cx)
    }
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
        let stream = SendDeadline {
            inner: stream,
            stall: limits.send_stall_timeout,
            waiting: None,
        };
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

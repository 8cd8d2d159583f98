//! The HTTP listener: accept loop, per-connection tasks, graceful shutdown.
//!
//! Shutdown follows mini-redis: one `watch` flag tells every task to stop, and every connection task and WebSocket
//! session holds a [`TaskGuard`], so [`Tracker::wait`] returns once all of them have finished. Sessions stop taking
//! new work, finish (bounded by `drain_timeout`) the tool calls already running, deliver their acks, then close
//! with 1001.

pub mod control;
pub mod http;
pub mod transfer;
pub mod ws;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use hyper::server::conn::http1;
use hyper_util::rt::TokioIo;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::net::TcpListener;

use tokio::sync::{watch, Notify, Semaphore};

use crate::channels::Hub;
use crate::files::FileCache;

/// Runtime settings of the HTTP/WS server.
pub struct ServerConfig {
    /// System API key; `None` leaves `/health`, `/ws` and uploads open (a warning is logged at start).
    pub api_key: Option<String>,
    /// Largest accepted WebSocket message (and frame), in bytes.
    pub max_message_bytes: usize,
    /// Capacity of each socket's outbound queue (packets).
    pub outbound_queue: usize,
    /// How long in-flight tool calls may run after SIGTERM before the sockets close anyway.
    pub drain_timeout: Duration,
    pub max_connections: usize,
    /// Largest accepted upload (`POST /files/uploads`), in bytes of file content.
    pub upload_max_bytes: u64,
}

pub struct App {
    pub hub: Arc<Hub>,
    /// The transfer plane's file cache (uploads, screenshots, pulled files).
    pub files: Arc<FileCache>,
    pub cfg: ServerConfig,
    pub shutdown: watch::Receiver<bool>,
    /// Counts live connection tasks and WebSocket sessions (upgraded sockets outlive their HTTP connection task).
    pub tasks: Tracker,
    /// Counters and histograms for `GET /metrics`.
    pub metrics: Arc<crate::metrics::Metrics>,
    /// Tool calls running now, across sessions.
    pub tools_in_flight: Tracker,
    /// The operator's device wall and devices API (`/`, `/api/v1/…`).
    pub wall: Arc<crate::wall::Wall>,
}

/// Counts live tasks so shutdown can wait for them.
#[derive(Clone, Default)]
pub struct Tracker(Arc<(AtomicUsize, Notify)>);

/// Held by a tracked task; dropping it marks the task finished.
pub struct TaskGuard(Tracker);

impl Tracker {
    pub fn enter(&self) -> TaskGuard {
        self.0 .0.fetch_add(1, Ordering::SeqCst);
        TaskGuard(self.clone())
    }

    pub fn live(&self) -> usize {
        self.0 .0.load(Ordering::SeqCst)
    }

    /// Resolves when no guard is alive.
    pub async fn wait(&self) {
        loop {
            let notified = self.0 .1.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.live() == 0 {
                return;
            }
            notified.await;
        }
    }
}

impl Drop for TaskGuard {
    fn drop(&mut self) {
        if self.0 .0 .0.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0 .0 .1.notify_waiters();
        }
    }
}

/// Serves until `shutdown` flips to true, then drains. Returns after every connection task has ended (or the
/// drain deadline passed).
pub async fn serve(listener: TcpListener, app: Arc<App>) {
    let limit = Arc::new(Semaphore::new(app.cfg.max_connections));
    let mut shutdown = app.shutdown.clone();
    loop {
        let permit = tokio::select! {
            _ = shutdown.changed() => break,
            p = limit.clone().acquire_owned() => p.expect("semaphore never closed"),
        };
        let (stream, peer) = tokio::select! {
            _ = shutdown.changed() => break,
            r = listener.accept() => match r {
                Ok(x) => x,
                Err(e) => {
                    // EMFILE and friends: back off instead of spinning.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
        };
        let _ = stream.set_nodelay(true);
        let app = app.clone();
        let guard = app.tasks.enter();
        tokio::spawn(async move {
            serve_connection(stream, peer, app).await;
            drop(permit);
            drop(guard);
        });
    }
    drop(listener);
    let deadline = app.cfg.drain_timeout + Duration::from_secs(2);
    if tokio::time::timeout(deadline, app.tasks.wait()).await.is_err() {
        tracing::warn!("some connections did not finish within the drain deadline");
    }
}

async fn serve_connection(stream: tokio::net::TcpStream, peer: SocketAddr, app: Arc<App>) {
    let mut shutdown = app.shutdown.clone();
    let svc_app = app.clone();
    let service = hyper::service::service_fn(move |req| http::route(svc_app.clone(), req));
    let conn = http1::Builder::new()
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(Duration::from_secs(20))
        .serve_connection(TokioIo::new(stream), service)
        .with_upgrades();
    tokio::pin!(conn);
    tokio::select! {
        r = conn.as_mut() => {
            if let Err(e) = r {
                tracing::debug!(%peer, error = %e, "http connection ended with an error");
            }
        }
        _ = shutdown.changed() => {
            conn.as_mut().graceful_shutdown();
            let _ = tokio::time::timeout(Duration::from_secs(5), conn).await;
        }
    }
}

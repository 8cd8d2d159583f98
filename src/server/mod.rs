//! The HTTP listener: accept loop, per-connection tasks, graceful shutdown.
//!
//! Shutdown follows mini-redis: one `watch` flag tells every task to stop, and every connection task and WebSocket
//! session holds a [`TaskGuard`], so [`Tracker::wait`] returns once all of them have finished. Sessions stop taking
//! new work, finish (bounded by `drain_timeout`) the tool calls already running, deliver their acks, then close
//! with 1001.

pub mod auth;
pub mod control;
pub mod http;
pub mod mcp;
pub mod origin;
pub mod parts;
pub mod stall;
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
    /// Caps against hostile or runaway clients (see [`Limits`]).
    pub limits: Limits,
    /// Host names (besides IP literals and localhost) a browser may use to reach the wall when there is no key
    /// (`--allowed-host`; see [`origin`]).
    pub allowed_hosts: Vec<String>,
}

/// Caps that keep one client (with or without the key) from exhausting memory, disk, sockets or the hub.
/// Each is documented in README's configuration table and in device-profile/README.md.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Open WebSocket sessions at once; the next upgrade gets 503 `too_many_sessions`.
    pub max_sessions: usize,
    /// Channels the connector keeps (open or waiting for their instance); `channel.open` beyond is `rate_limited`.
    pub max_channels: usize,
    /// Open TCP connections from one IP address; more are closed at accept, so one host cannot starve others.
    pub max_connections_per_ip: usize,
    /// A connection must deliver a complete request head within this time (slowloris).
    pub header_timeout: Duration,
    /// A small request body (login, anything but an upload) must arrive whole within this time after its head.
    pub body_timeout: Duration,
    /// A WebSocket session must complete `connector.hello` within this time, or it is closed (1008).
    pub hello_timeout: Duration,
    /// Longest a write to a WebSocket peer may stall (the peer does not read); then the session is closed.
    pub ws_write_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_sessions: 64,
            max_channels: 1000,
            max_connections_per_ip: 128,
            header_timeout: Duration::from_secs(5),
            body_timeout: Duration::from_secs(5),
            hello_timeout: Duration::from_secs(10),
            ws_write_timeout: Duration::from_secs(10),
        }
    }
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
    /// Running tool calls per channel, across every socket the channel was opened on.
    pub channel_slots: ws::ChannelSlots,
    /// Open WebSocket sessions (bounded by [`Limits::max_sessions`]).
    pub sessions: Arc<Semaphore>,
    /// Open connections per peer address (bounded by [`Limits::max_connections_per_ip`]).
    pub per_ip: PerIp,
    /// Can the state database and the file cache still be written? (`/health`)
    pub health: control::WriteHealth,
    /// The operator's device wall and devices API (`/`, `/api/v1/…`), mounted by the wiring (`run.rs`).
    pub wall: Arc<dyn Mount>,
    /// Per-source limit on wrong API keys, and the failure counters of `/metrics`.
    pub auth: auth::AuthGate,
    /// The open MCP sessions of `/mcp` (each one channel on an in-process data plane).
    pub mcp: mcp::Sessions,
}

/// A boxed future that may move between threads (what [`Mount::route`] answers with).
pub type BoxFuture<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>;

/// A surface mounted beside the protocol planes: the operator's device wall (`wall/`), put into [`App`] by the
/// wiring. The server knows it only through this trait, so the wall imports the server and never the reverse.
pub trait Mount: Send + Sync {
    /// Whether `path` is the mounted surface's (`server::http` hands such requests over).
    fn owns(&self, path: &str) -> bool;
    /// Answers a request for one of its paths.
    fn route(
        self: Arc<Self>,
        app: Arc<App>,
        req: hyper::Request<hyper::body::Incoming>,
    ) -> BoxFuture<'static, hyper::Response<crate::http::Body>>;
    /// A tool call starts running on `device` (the wall's thumbnails step aside, its duration is recorded); the
    /// call counts until the returned guard is dropped.
    fn agent_call(&self, channel_id: &str, device: &crate::device::DeviceKey, tool_id: &str) -> Box<dyn Send>;
    /// A read-only call finished (`audit::reads`: its audit record comes later, as an aggregate); `arguments` are
    /// the redacted ones the audit log would hold.
    fn read_call(
        &self,
        channel_id: &str,
        device: &crate::device::DeviceKey,
        tool_id: &str,
        arguments: String,
        outcome: &str,
    );
}

/// Live connection counts per peer IP address.
#[derive(Clone, Default)]
pub struct PerIp(Arc<std::sync::Mutex<std::collections::HashMap<std::net::IpAddr, usize>>>);

/// One connection's place in its address's count; released on drop.
pub struct IpGuard(PerIp, std::net::IpAddr);

impl PerIp {
    /// Counts a new connection from `ip`, or `None` when that address already has `max` open.
    pub fn enter(&self, ip: std::net::IpAddr, max: usize) -> Option<IpGuard> {
        let mut m = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let n = m.entry(ip).or_default();
        if *n >= max {
            return None;
        }
        *n += 1;
        Some(IpGuard(self.clone(), ip))
    }
}

impl Drop for IpGuard {
    fn drop(&mut self) {
        let mut m = self.0 .0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = m.get_mut(&self.1) {
            *n -= 1;
            if *n == 0 {
                m.remove(&self.1);
            }
        }
    }
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
        // One address may not hold every connection slot (slowloris): beyond its share the socket is closed at once.
        let Some(ip_guard) = app.per_ip.enter(peer.ip(), app.cfg.limits.max_connections_per_ip) else {
            refused_log(peer);
            // A clear answer if the socket takes it at once (never wait on a flooding peer), then close.
            let _ = stream.try_write(TOO_MANY_FROM_ADDRESS);
            drop(stream);
            continue;
        };
        let _ = stream.set_nodelay(true);
        let app = app.clone();
        let guard = app.tasks.enter();
        tokio::spawn(async move {
            serve_connection(stream, peer, app).await;
            drop(ip_guard);
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

/// Sent (best effort) to a connection refused by the per-address cap.
const TOO_MANY_FROM_ADDRESS: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\n\
Content-Type: application/json\r\nContent-Length: 111\r\n\r\n\
{\"error\":{\"code\":\"too_many_connections\",\"message\":\"too many open connections from this address; retry later\"}}\n";

/// Lets one log line through per second and counts the rest, so a flood of refusals never becomes a flood of log
/// lines (each let-through line reports how many were suppressed before it).
pub struct LogGate {
    last_ms: std::sync::atomic::AtomicU64,
    suppressed: std::sync::atomic::AtomicU64,
}

impl LogGate {
    pub const fn new() -> LogGate {
        LogGate { last_ms: std::sync::atomic::AtomicU64::new(0), suppressed: std::sync::atomic::AtomicU64::new(0) }
    }

    /// `Some(suppressed since the last line)` when a line may be logged now.
    pub fn allow(&self) -> Option<u64> {
        let now = crate::protocol::now_ms();
        let last = self.last_ms.load(Ordering::Relaxed);
        if now.saturating_sub(last) >= 1000
            && self.last_ms.compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed).is_ok()
        {
            return Some(self.suppressed.swap(0, Ordering::Relaxed));
        }
        self.suppressed.fetch_add(1, Ordering::Relaxed);
        None
    }
}

impl Default for LogGate {
    fn default() -> Self {
        LogGate::new()
    }
}

fn refused_log(peer: SocketAddr) {
    static GATE: LogGate = LogGate::new();
    if let Some(suppressed) = GATE.allow() {
        tracing::warn!(ip = %peer.ip(), suppressed, "connection refused: too many connections from this address");
    }
}

/// How long, and how many bytes at most, a closing connection keeps reading what its peer still sends.
const LINGER: Duration = Duration::from_secs(2);
const LINGER_MAX_BYTES: usize = 16 << 20;

async fn serve_connection(stream: tokio::net::TcpStream, peer: SocketAddr, app: Arc<App>) {
    use std::os::fd::AsFd;
    let mut shutdown = app.shutdown.clone();
    // A second handle on the socket, so that hyper dropping its own does not close it (see `linger`).
    let spare = stream.as_fd().try_clone_to_owned().ok();
    // A connection that asked for an upgrade belongs to the WebSocket session afterwards: never linger on it.
    let upgrade_asked = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let svc_app = app.clone();
    let asked = upgrade_asked.clone();
    // A long-lived answer (the live view) arms its connection's write-progress deadline through this handle.
    let (stream, deadline) = stall::StallIo::new(stream);
    let service = hyper::service::service_fn(move |mut req: hyper::Request<hyper::body::Incoming>| {
        req.extensions_mut().insert(auth::Peer(peer));
        req.extensions_mut().insert(deadline.clone());
        if req.headers().contains_key(hyper::header::UPGRADE) {
            asked.store(true, Ordering::Relaxed);
        }
        http::route(svc_app.clone(), req)
    });
    let conn = http1::Builder::new()
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(app.cfg.limits.header_timeout)
        // A client may shut down its sending side once its request is out and still wait for the answer (uploads
        // from scripts do): without this, hyper drops the request when it reads that FIN before answering.
        .half_close(true)
        .serve_connection(TokioIo::new(stream), service)
        .with_upgrades();
    tokio::pin!(conn);
    tokio::select! {
        r = conn.as_mut() => {
            if let Err(e) = r {
                tracing::debug!(%peer, error = %e, "http connection ended with an error");
            }
            if let (Some(fd), false) = (spare, upgrade_asked.load(Ordering::Relaxed)) {
                linger(fd).await;
            }
        }
        _ = shutdown.changed() => {
            conn.as_mut().graceful_shutdown();
            let _ = tokio::time::timeout(Duration::from_secs(5), conn).await;
        }
    }
}

/// Lingering close (as nginx does): when the connector answers before reading a whole request body (an upload
/// refused with 400/413/507), closing a socket with unread bytes makes the kernel send a reset, and a reset can
/// destroy the answer before the client reads it — the client sees "connection reset" instead of the error.
/// So: send FIN, then read and discard what the peer still sends, for at most [`LINGER`] or
/// [`LINGER_MAX_BYTES`], and close only then. A peer that already closed ends this at once.
async fn linger(fd: std::os::fd::OwnedFd) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let Ok(mut s) = tokio::net::TcpStream::from_std(std::net::TcpStream::from(fd)) else { return };
    let _ = s.shutdown().await;
    let deadline = tokio::time::Instant::now() + LINGER;
    let mut buf = vec![0u8; 16 * 1024];
    let mut drained = 0usize;
    while drained < LINGER_MAX_BYTES {
        match tokio::time::timeout_at(deadline, s.read(&mut buf)).await {
            Ok(Ok(n)) if n > 0 => drained += n,
            _ => break,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusal_answer_is_well_formed() {
        let text = std::str::from_utf8(TOO_MANY_FROM_ADDRESS).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        let len: usize = head.lines().find_map(|l| l.strip_prefix("Content-Length: ")).unwrap().parse().unwrap();
        assert_eq!(len, body.len());
        let v: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(v["error"]["code"], "too_many_connections");
    }

    #[test]
    fn per_ip_counts_and_releases() {
        let per_ip = PerIp::default();
        let ip: std::net::IpAddr = "127.0.0.1".parse().unwrap();
        let a = per_ip.enter(ip, 2).unwrap();
        let _b = per_ip.enter(ip, 2).unwrap();
        assert!(per_ip.enter(ip, 2).is_none());
        assert!(per_ip.enter("127.0.0.2".parse().unwrap(), 2).is_some());
        drop(a);
        assert!(per_ip.enter(ip, 2).is_some());
    }
}

//! The HTTP listener: accept loop, per-connection tasks, graceful shutdown.
//!
//! Shutdown follows mini-redis: one `watch` flag tells every task to stop, and every connection task and WebSocket
//! session holds a [`TaskGuard`], so [`Tracker::wait`] returns once all of them have finished. Sessions stop taking
//! new work, finish (bounded by `drain_timeout`) the tool calls already running, deliver their acks, then close
//! with 1001.

//!
//! Inside, one way (checked and printed by tests/module_arrows.rs): `mod.rs` (this loop) → `http.rs` (routing) → the planes (`control`,
//! `transfer`, `ws/`, `mcp`) → `state.rs` (`App`, `Mount`) → the primitives (`settings`, `tracker`, `auth`,
//! `writable`, `log_gate`, `body`, `origin`, `parts`, `stall`). Files inside the room name the defining file; the
//! re-exports below are for the rest of the crate.

pub mod auth;
pub mod body;
pub mod control;
pub mod http;
pub mod log_gate;
pub mod mcp;
pub mod mcp_manual;
pub mod mcp_text;
pub mod mcp_tools;
pub mod origin;
pub mod parts;
pub mod reserve;
pub mod settings;
pub mod stall;
pub mod state;
pub mod tracker;
pub mod transfer;
pub mod writable;
pub mod ws;

pub use log_gate::LogGate;
pub use settings::{Limits, ServerConfig};
pub use state::{App, BoxFuture, Mount};
pub use tracker::{IpGuard, PerIp, TaskGuard, Tracker};

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use hyper::server::conn::http1;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

/// Serves until `shutdown` flips to true, then drains. Returns after every connection task has ended (or the
/// drain deadline passed).
pub async fn serve(listener: TcpListener, app: Arc<App>) {
    let limit = Arc::new(Semaphore::new(app.cfg.max_connections));
    // Connections that have not shown the key hold all but a reserve of the slots (issue 48: `reserve.rs`).
    let unproven = Arc::new(reserve::Unproven::new(app.cfg.max_connections));
    // The MCP endpoint's sessions live as long as the server (see `state.rs` for why they are not in `App`).
    let mcp = Arc::new(mcp::Sessions::default());
    let mut shutdown = app.shutdown.clone();
    loop {
        let permit = match limit.clone().try_acquire_owned() {
            Ok(p) => p,
            Err(_) => {
                // Every slot taken: the oldest connection that has not shown the key makes room.
                unproven.evict_oldest();
                tokio::select! {
                    _ = shutdown.changed() => break,
                    p = limit.clone().acquire_owned() => p.expect("semaphore never closed"),
                }
            }
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
        let (app, mcp) = (app.clone(), mcp.clone());
        let guard = app.tasks.enter();
        let place = Arc::new(unproven.enter());
        tokio::spawn(async move {
            serve_connection(stream, peer, app, mcp, place).await;
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

fn refused_log(peer: SocketAddr) {
    static GATE: LogGate = LogGate::new();
    if let Some(suppressed) = GATE.allow() {
        tracing::warn!(ip = %peer.ip(), suppressed, "connection refused: too many connections from this address");
    }
}

/// How long, and how many bytes at most, a closing connection keeps reading what its peer still sends.
const LINGER: Duration = Duration::from_secs(2);
const LINGER_MAX_BYTES: usize = 16 << 20;

async fn serve_connection(
    stream: tokio::net::TcpStream,
    peer: SocketAddr,
    app: Arc<App>,
    mcp: Arc<mcp::Sessions>,
    place: Arc<reserve::Place>,
) {
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
    let evicted = place.evicted().clone();
    let service = hyper::service::service_fn(move |mut req: hyper::Request<hyper::body::Incoming>| {
        // The peer first: whether the trusted proxy's header is believed depends on who sent it.
        req.extensions_mut().insert(auth::Peer(peer));
        // The key, or a live wall login (an operator's browser, logged in with the key or an account's password, or
        // the trusted proxy's user header).
        if !place.proven() && (reserve::shows_key(&req, svc_app.cfg.api_key.as_deref()) || svc_app.wall.signed_in(&req))
        {
            place.prove();
        }
        req.extensions_mut().insert(deadline.clone());
        if req.headers().contains_key(hyper::header::UPGRADE) {
            asked.store(true, Ordering::Relaxed);
        }
        http::route(svc_app.clone(), mcp.clone(), req)
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
        // Closed, still unproven, to make room (`reserve.rs`): dropping the connection closes its socket.
        _ = evicted.cancelled() => {
            tracing::debug!(%peer, "connection without the key closed to make room");
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
}

//! Data plane `GET /ws` (protocol §6): the upgrade, then one [`socket`] session per socket.
//!
//! Inside, one way: `mod.rs` (upgrade) → `socket.rs` (a WebSocket's loops) and `local.rs` (the in-process session)
//! → `dispatch.rs` (packet type → handler) → `tool.rs` (`tool.invoke`) → `session.rs` (the state every handler works
//! on) → `slots.rs`, `fields.rs`.

mod dispatch;
mod fields;
pub mod local;
mod session;
pub mod slots;
mod socket;
mod steps;
mod tool;

/// Bytes tungstenite buffers before writing to the socket.
const WRITE_BUFFER: usize = 128 * 1024;
/// Most bytes tungstenite may hold for a peer that does not read (our outbound queue is bounded in packets; this
/// bounds the bytes below it, and the automatic pong replies that used to pile up without limit). A single packet
/// larger than this cannot be sent and closes the session; acks are far smaller (files go by URL).
pub const MAX_WRITE_BUFFER: usize = 8 << 20;

use std::sync::Arc;

use hyper::body::Incoming;
use hyper::header::{
    HeaderValue, CONNECTION, SEC_WEBSOCKET_ACCEPT, SEC_WEBSOCKET_KEY, SEC_WEBSOCKET_PROTOCOL, SEC_WEBSOCKET_VERSION,
    UPGRADE,
};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::{Role, WebSocketConfig};
use tokio_tungstenite::WebSocketStream;

use super::auth::Surface;
use super::state::App;
use crate::http::{error, full, Body};
use crate::protocol::SUBPROTOCOL;
use crate::server::log_gate::LogGate;

fn header_has_token(req: &Request<Incoming>, name: hyper::header::HeaderName, token: &str) -> bool {
    req.headers()
        .get_all(name)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|t| t.trim().eq_ignore_ascii_case(token))
}

/// Validates the handshake (key before upgrade, subprotocol offered) and hands the socket to a session.
pub fn upgrade(app: Arc<App>, mut req: Request<Incoming>) -> Response<Body> {
    if let Err(r) = app.check_api_key(&req, Surface::Ws) {
        return *r;
    }
    if !header_has_token(&req, UPGRADE, "websocket") || !header_has_token(&req, CONNECTION, "upgrade") {
        return error(
            StatusCode::UPGRADE_REQUIRED,
            "websocket_required",
            "GET /ws is a WebSocket endpoint; send an upgrade request",
        );
    }
    if req.headers().get(SEC_WEBSOCKET_VERSION).and_then(|v| v.to_str().ok()) != Some("13") {
        return error(StatusCode::BAD_REQUEST, "websocket_version", "only WebSocket version 13 is supported");
    }
    let Some(key) = req.headers().get(SEC_WEBSOCKET_KEY).map(|k| k.as_bytes().to_vec()) else {
        return error(StatusCode::BAD_REQUEST, "websocket_key_missing", "Sec-WebSocket-Key is required");
    };
    // "GET /ws  Sec-WebSocket-Protocol: xagent.connector.packet.v1" (§6): a peer that does not speak it is refused.
    if !header_has_token(&req, SEC_WEBSOCKET_PROTOCOL, SUBPROTOCOL) {
        return error(
            StatusCode::BAD_REQUEST,
            "subprotocol_required",
            &format!("offer the WebSocket subprotocol {SUBPROTOCOL} in Sec-WebSocket-Protocol"),
        );
    }
    if *app.shutdown.borrow() {
        return error(StatusCode::SERVICE_UNAVAILABLE, "shutting_down", "the connector is shutting down");
    }
    let Ok(session_permit) = app.sessions.clone().try_acquire_owned() else {
        static GATE: LogGate = LogGate::new();
        if let Some(suppressed) = GATE.allow() {
            tracing::warn!(limit = app.cfg.limits.max_sessions, suppressed, "websocket refused: too many sessions");
        }
        return error(
            StatusCode::SERVICE_UNAVAILABLE,
            "too_many_sessions",
            &format!(
                "this connector already has {} WebSocket sessions open (--max-sessions); close one and retry",
                app.cfg.limits.max_sessions
            ),
        );
    };
    let guard = app.tasks.enter();
    let max = app.cfg.max_message_bytes;
    tokio::spawn(async move {
        match hyper::upgrade::on(&mut req).await {
            Ok(upgraded) => {
                let cfg = WebSocketConfig::default()
                    .max_message_size(Some(max))
                    .max_frame_size(Some(max))
                    .write_buffer_size(WRITE_BUFFER)
                    .max_write_buffer_size(MAX_WRITE_BUFFER);
                let ws = WebSocketStream::from_raw_socket(TokioIo::new(upgraded), Role::Server, Some(cfg)).await;
                socket::run(app, ws).await;
            }
            Err(e) => tracing::debug!(error = %e, "websocket upgrade failed"),
        }
        drop(session_permit);
        drop(guard);
    });
    let mut r = Response::new(full(""));
    *r.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let h = r.headers_mut();
    h.insert(UPGRADE, HeaderValue::from_static("websocket"));
    h.insert(CONNECTION, HeaderValue::from_static("Upgrade"));
    h.insert(SEC_WEBSOCKET_PROTOCOL, HeaderValue::from_static(SUBPROTOCOL));
    h.insert(SEC_WEBSOCKET_ACCEPT, HeaderValue::from_str(&derive_accept_key(&key)).expect("base64 is a valid header"));
    r
}

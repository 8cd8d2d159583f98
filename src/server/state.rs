//! What every plane of the server shares: [`App`] (the hub, the file cache, the settings, the live counts, the
//! gates) and [`Mount`], the one way the server reaches the wall. Everything here is state or a seam; the planes that
//! read it (`control`, `transfer`, `ws/`, `mcp`) sit above it, and it names none of them.
//!
//! The MCP endpoint's own sessions are not here: each holds an in-process data plane (`ws::local`), which holds an
//! `Arc<App>`, so they belong to the endpoint (`mcp::Sessions`, owned by the accept loop in `mod.rs`), not to the
//! state below it.

use std::sync::Arc;

use hyper::{Request, Response, StatusCode};
use tokio::sync::{watch, Semaphore};

use super::auth::{bearer, peer_ip, AuthGate, Surface};
use super::settings::ServerConfig;
use super::tracker::{PerIp, Tracker};
use super::writable::WriteHealth;
use super::ws::slots::ChannelSlots;
use crate::channels::Hub;
use crate::files::FileCache;
use crate::http::{error, Body};

/// The server's shared state, one per process (built by `run.rs`), handed to every connection as `Arc<App>`.
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
    pub channel_slots: ChannelSlots,
    /// Open WebSocket sessions (bounded by [`super::settings::Limits::max_sessions`]).
    pub sessions: Arc<Semaphore>,
    /// Open connections per peer address (bounded by [`super::settings::Limits::max_connections_per_ip`]).
    pub per_ip: PerIp,
    /// Can the state database and the file cache still be written? (`/health`)
    pub health: WriteHealth,
    /// The operator's device wall and devices API (`/`, `/api/v1/…`), mounted by the wiring (`run.rs`).
    pub wall: Arc<dyn Mount>,
    /// Per-source limit on wrong API keys, and the failure counters of `/metrics`.
    pub auth: AuthGate,
}

impl App {
    /// `Authorization: Bearer <key>` when a key is configured (protocol §3). `Err` is the 401/429 to send.
    pub fn check_api_key<B>(&self, req: &Request<B>, surface: Surface) -> Result<(), Box<Response<Body>>> {
        let Some(key) = self.cfg.api_key.as_deref() else { return Ok(()) };
        match bearer(req) {
            Some(p) => self.auth.verify(peer_ip(req), key, p, surface),
            None => Err(Box::new(error(
                StatusCode::UNAUTHORIZED,
                "unauthorized",
                "this endpoint requires Authorization: Bearer <system API key>",
            ))),
        }
    }
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
    /// Whether the request carries a live login session of the mounted surface (the wall's session cookie, or its
    /// trusted proxy's user header): an authenticated client, which the connection reserve counts as one that
    /// showed the key (`reserve.rs`).
    fn signed_in(&self, req: &Request<hyper::body::Incoming>) -> bool;
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

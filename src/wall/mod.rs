//! The operator's device wall (`GET /`) and the devices API (`/api/v1/…`): every phone the connector sees, live,
//! for a person in a browser and for device-farm integrations as JSON.
//!
//! Why it lives beside the protocol planes and not inside them: the wall is for the operator, not the agent. It
//! shows full serials and lets the operator release a binding or take a phone over, so it has its own access rules
//! (a login that turns the system API key into a short-lived HttpOnly session cookie, a CSRF token for every
//! state-changing action: Release, takeover, return, input, logout),
//! and its device work must never get in an agent's way (thumbnails: one capture per device in flight, reused for
//! seconds, skipped while an agent captures; device facts through observation-only shell calls).
//!
//! Files: `session.rs` (login, cookies, CSRF), `api.rs` (JSON views and route handlers), `thumbs.rs` (thumbnail
//! and device-facts caches), `live.rs` (the live view: one capture loop per watched phone, through the thumbnail
//! cache), `control.rs` (takeover, return and operator input; the takeover state itself is `channels::takeover`),
//! `activity.rs` (audit-log follower, call durations, agents-first signal), `events.rs` (the Server-Sent Events
//! stream), `assets/wall.html` (the page, embedded).

mod activity;
mod api;
mod control;
mod events;
mod live;
mod session;
mod thumbs;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hyper::body::Incoming;
use hyper::header::{HeaderValue, CONTENT_SECURITY_POLICY, CONTENT_TYPE};
use hyper::{Method, Request, Response, StatusCode};

use crate::device::adb::AdbBackend;
use crate::device::DeviceKey;
use crate::http::{error, full, Body};
use crate::server::{App, BoxFuture, Mount};

pub use activity::AgentCall;

/// The page: one self-contained HTML file (no external assets: lab networks are often offline).
pub const PAGE: &str = include_str!("../../assets/wall.html");

/// Settings of the wall (flags `--wall-session-ttl`, `--wall-thumbnail-interval`, `--wall-takeover-idle`,
/// `--wall-live-write-timeout`).
#[derive(Clone, Debug)]
pub struct WallConfig {
    /// Lifetime of a login session (its cookie expires with it).
    pub session_ttl: Duration,
    /// How long a captured thumbnail is reused before the device is asked again (at least 2 s).
    pub thumbnail_interval: Duration,
    /// The data dir, to warn when its file system is nearly full (`None`: in-process tests).
    pub data_dir: Option<PathBuf>,
    /// Mark the session cookie `Secure` (`--wall-secure-cookie`: the wall is reached through a TLS proxy).
    pub secure_cookie: bool,
    /// An operator's takeover of a phone ends after this long without input (`--wall-takeover-idle`).
    pub takeover_idle: Duration,
    /// A live viewer whose client has accepted no data for this long is dropped and its place freed
    /// (`--wall-live-write-timeout`; `server::stall`).
    pub live_write_timeout: Duration,
}

impl Default for WallConfig {
    fn default() -> Self {
        WallConfig {
            session_ttl: Duration::from_secs(12 * 3600),
            thumbnail_interval: MIN_THUMBNAIL_INTERVAL,
            data_dir: None,
            secure_cookie: false,
            takeover_idle: DEFAULT_TAKEOVER_IDLE,
            live_write_timeout: DEFAULT_LIVE_WRITE_TIMEOUT,
        }
    }
}

/// Default idle timeout of an operator's takeover.
pub const DEFAULT_TAKEOVER_IDLE: Duration = Duration::from_secs(300);
/// Default write-progress deadline of a live viewer (four keep-alives: a client that reads sees one every 5 s).
pub const DEFAULT_LIVE_WRITE_TIMEOUT: Duration = Duration::from_secs(20);
/// Thumbnails are never captured more often than this per device, whatever the configuration says.
pub const MIN_THUMBNAIL_INTERVAL: Duration = Duration::from_secs(2);
/// Live event streams open at once (each holds a task and a socket).
pub const MAX_EVENT_STREAMS: usize = 32;

pub struct Wall {
    cfg: WallConfig,
    /// The ADB backend for device facts and thumbnails; `None` when the connector runs another backend.
    adb: Option<Arc<AdbBackend>>,
    started: Instant,
    /// Wall-clock start (ms since the epoch), fixed once so the streamed document does not change with it.
    started_ms: u64,
    sessions: session::Sessions,
    thumbs: thumbs::Thumbs,
    facts: thumbs::Facts,
    activity: activity::Activity,
    streams: Arc<tokio::sync::Semaphore>,
    /// Live views (`live.rs`): viewers and the capture loop of each watched phone.
    live: live::Live,
    /// Every device seen since start (model by key), so one that vanished stays on the wall as `gone`.
    seen: std::sync::Mutex<std::collections::BTreeMap<DeviceKey, String>>,
}

impl Wall {
    pub fn new(mut cfg: WallConfig, adb: Option<Arc<AdbBackend>>) -> Arc<Wall> {
        cfg.thumbnail_interval = cfg.thumbnail_interval.max(MIN_THUMBNAIL_INTERVAL);
        Arc::new(Wall {
            sessions: session::Sessions::new(cfg.session_ttl, cfg.secure_cookie),
            thumbs: thumbs::Thumbs::new(cfg.thumbnail_interval),
            facts: thumbs::Facts::default(),
            activity: activity::Activity::default(),
            streams: Arc::new(tokio::sync::Semaphore::new(MAX_EVENT_STREAMS)),
            live: live::Live::default(),
            seen: Default::default(),
            cfg,
            adb,
            started: Instant::now(),
            started_ms: crate::protocol::now_ms(),
        })
    }

    /// Called by the tool dispatcher around every tool call that runs on a device: lets thumbnails step aside
    /// while an agent captures the screen, and records the call's duration for the wall's action list.
    pub fn agent_call(&self, channel_id: &str, device: &DeviceKey, tool_id: &str) -> AgentCall {
        self.activity.begin(channel_id, device, tool_id)
    }

    /// A read-only agent call that finished: shown in the device's recent actions at once (its audit record is an
    /// aggregate written later, `audit::reads`).
    pub fn read_call(&self, channel_id: &str, device: &DeviceKey, tool_id: &str, arguments: String, outcome: &str) {
        self.activity.read_call(channel_id, device, tool_id, arguments, outcome)
    }

    /// Names the session cookie after the port the connector listens on (see [`session::COOKIE_PREFIX`]).
    pub fn listening_on(&self, port: u16) {
        self.sessions.set_port(port);
    }

    /// A device changed state: its last picture no longer shows what the phone shows.
    fn thumbs_changed(&self, key: &DeviceKey) {
        self.thumbs.forget(key);
    }
}

/// The wall's stable id of a device: URL-safe, the same across restarts (a hash of adb server and serial).
pub fn device_id(key: &DeviceKey) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(key.server.as_bytes());
    h.update([0]);
    h.update(key.serial.as_bytes());
    h.finalize()[..8].iter().map(|b| format!("{b:02x}")).collect()
}

/// Whether `path` belongs to the wall (so `server::http` hands it over).
pub fn owns(path: &str) -> bool {
    path == "/" || path == "/api/v1" || path.starts_with("/api/v1/")
}

/// How the server reaches the wall: `run.rs` mounts it into [`App`], and the server knows it only as a
/// [`Mount`] — the arrow runs from the wall to the server, never back.
impl Mount for Wall {
    fn owns(&self, path: &str) -> bool {
        owns(path)
    }

    fn route(self: Arc<Self>, app: Arc<App>, req: Request<Incoming>) -> BoxFuture<'static, Response<Body>> {
        Box::pin(async move { route(&app, self, req).await })
    }

    fn agent_call(&self, channel_id: &str, device: &DeviceKey, tool_id: &str) -> Box<dyn Send> {
        Box::new(Wall::agent_call(self, channel_id, device, tool_id))
    }

    fn read_call(&self, channel_id: &str, device: &DeviceKey, tool_id: &str, arguments: String, outcome: &str) {
        Wall::read_call(self, channel_id, device, tool_id, arguments, outcome)
    }
}

/// Routes `/` and `/api/v1/…`.
pub async fn route(app: &Arc<App>, w: Arc<Wall>, req: Request<Incoming>) -> Response<Body> {
    let path = req.uri().path().to_owned();
    let method = req.method().clone();
    let get = method == Method::GET || method == Method::HEAD;
    if path == "/" {
        return if get { page() } else { api::method_not_allowed("GET, HEAD") };
    }
    api::route(app, w, req, &path, &method).await
}

fn page() -> Response<Body> {
    let mut r = Response::new(full(PAGE));
    let h = r.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"));
    h.insert(hyper::header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    // Everything is inline and same-origin; nothing may be framed (clickjacking of the Release button).
    h.insert(CONTENT_SECURITY_POLICY, HeaderValue::from_str(csp()).expect("the CSP is ASCII"));
    h.insert("x-frame-options", HeaderValue::from_static("DENY"));
    h.insert("referrer-policy", HeaderValue::from_static("no-referrer"));
    r
}

/// The page's Content-Security-Policy: the one inline script is allowed by its SHA-256 (computed once from the
/// embedded page, so an edit of the page can never leave a stale hash), never by `'unsafe-inline'`: markup that
/// slipped into the page (a phone's model name, say) could not run.
fn csp() -> &'static str {
    static CSP: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    CSP.get_or_init(|| {
        format!(
            "default-src 'none'; script-src '{}'; style-src 'unsafe-inline'; img-src 'self' blob:; \
             connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
            script_hash(PAGE)
        )
    })
}

/// `sha256-<base64>` of the text between the page's `<script>` and `</script>`.
fn script_hash(page: &str) -> String {
    use sha2::{Digest, Sha256};
    let start = page.find("<script>").expect("the page has an inline script") + "<script>".len();
    let len = page[start..].find("</script>").expect("the script ends");
    let digest = Sha256::digest(&page.as_bytes()[start..start + len]);
    format!("sha256-{}", crate::base64::encode(&digest))
}

/// A 404 for an unknown device id.
fn no_device(id: &str) -> Response<Body> {
    error(StatusCode::NOT_FOUND, "device_not_found", &format!("no device with id {id:?} (see GET /api/v1/devices)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_script_is_allowed_by_its_hash_not_by_unsafe_inline() {
        assert!(csp().contains("script-src 'sha256-") && !csp().contains("script-src 'unsafe-inline'"));
    }
}

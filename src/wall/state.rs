//! The wall's state: its settings ([`WallConfig`]) and the [`Wall`] itself, which owns every book the wall's
//! handlers read (sessions, thumbnails, device facts, activity, live feeds, the devices seen). It sits below the
//! handler files (`api.rs`, `control.rs`, `events.rs`, `live.rs`), which all reach it, and reaches none of them.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hyper::{Response, StatusCode};

use super::activity::{self, AgentCall};
use super::{feeds, session, thumbs};
use crate::device::adb::AdbBackend;
use crate::device::DeviceKey;
use crate::http::{error, Body};

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
    /// `--trusted-user-header`: the header a reverse proxy names the operator in (lower case).
    pub trusted_user_header: Option<String>,
    /// `--trusted-proxy`: the only addresses whose header is believed.
    pub trusted_proxies: Vec<super::users::Cidr>,
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
            trusted_user_header: None,
            trusted_proxies: Vec::new(),
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
    pub(super) cfg: WallConfig,
    /// The ADB backend for device facts and thumbnails; `None` when the connector runs another backend.
    pub(super) adb: Option<Arc<AdbBackend>>,
    pub(super) started: Instant,
    /// Wall-clock start (ms since the epoch), fixed once so the streamed document does not change with it.
    pub(super) started_ms: u64,
    pub(super) sessions: session::Sessions,
    pub(super) thumbs: thumbs::Thumbs,
    pub(super) facts: thumbs::Facts,
    pub(super) activity: activity::Activity,
    pub(super) streams: Arc<tokio::sync::Semaphore>,
    /// Live views (`live.rs`): viewers and the capture loop of each watched phone.
    pub(super) live: feeds::Live,
    /// Every device seen since start (model by key), so one that vanished stays on the wall as `gone`.
    pub(super) seen: std::sync::Mutex<std::collections::BTreeMap<DeviceKey, String>>,
}

impl Wall {
    pub fn new(mut cfg: WallConfig, adb: Option<Arc<AdbBackend>>) -> Arc<Wall> {
        cfg.thumbnail_interval = cfg.thumbnail_interval.max(MIN_THUMBNAIL_INTERVAL);
        Arc::new(Wall {
            sessions: session::Sessions::new(
                cfg.session_ttl,
                cfg.secure_cookie,
                session::Trust { header: cfg.trusted_user_header.clone(), proxies: cfg.trusted_proxies.clone() },
                cfg.data_dir.as_deref().map(super::users::path),
            ),
            thumbs: thumbs::Thumbs::new(cfg.thumbnail_interval),
            facts: thumbs::Facts::default(),
            activity: activity::Activity::default(),
            streams: Arc::new(tokio::sync::Semaphore::new(MAX_EVENT_STREAMS)),
            live: feeds::Live::default(),
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
    pub(super) fn thumbs_changed(&self, key: &DeviceKey) {
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

/// A 404 for an unknown device id.
pub(super) fn no_device(id: &str) -> Response<Body> {
    error(StatusCode::NOT_FOUND, "device_not_found", &format!("no device with id {id:?} (see GET /api/v1/devices)"))
}

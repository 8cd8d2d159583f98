//! The ADB backend: follows every configured adb server's device list (track-devices plus a 1 s poll), and runs device
//! operations as async host-protocol requests (`device::transport`) under a deadline, in order per device for side
//! effects.
//!
//! Cancellation: an operation is a future that owns its one connection to the adb server. When it is dropped — its
//! deadline passed, its tool call was aborted because the channel closed, the socket dropped or the connector drains
//! — the connection closes at once, the adb server closes the device stream and adbd hangs up the command. No thread
//! is parked on a socket, so a phone that stops answering costs nothing once its callers gave up.
//!
//! Ordering: each device has a FIFO async mutex. A side-effecting operation holds it for as long as its future
//! lives — until it returns *or is cancelled*: a side effect that hangs on the phone is hung up at its deadline and
//! the next one runs at once. Observations take no lock.
//!
//! Features: whether the phone speaks the shell protocol v2 (`shell_v2`: separate stderr, real exit status) is read
//! once per device from `host-serial:SERIAL:features` and cached until the device changes state.

use std::collections::HashMap;
use std::net::{SocketAddr, SocketAddrV4};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::{broadcast, watch};

use super::formats;
use super::key::{DeviceInfo, DeviceKey, DeviceState};
pub use super::link::Device;
use super::power::ScreenState;
pub use super::transport::ShellOut;
use super::transport::{self, FbHeader, FileStat};
use crate::protocol::errors::{ErrorCode, ProtoError};

// More of `impl AdbBackend`, by concern (pure moves out of this file; they use its private items, nothing here
// names them).
mod screen;
mod tracking;

pub struct AdbBackend {
    servers: Vec<SocketAddrV4>,
    devices: Mutex<HashMap<DeviceKey, DeviceInfo>>,
    changes: broadcast::Sender<DeviceKey>,
    locks: Mutex<HashMap<DeviceKey, Arc<tokio::sync::Mutex<()>>>>,
    screen: Mutex<HashMap<DeviceKey, (u32, u32)>>,
    /// Last rotation read per device and when: reused for [`ROTATION_TTL`] (a turn of the phone is seen within it).
    rotations: Mutex<HashMap<DeviceKey, (Instant, u8)>>,
    reachable: Mutex<HashMap<SocketAddrV4, bool>>,
    /// When each adb server's tracker lost its connection (or first failed to make one); removed when a tracker
    /// connection is open again. What `/health` and `xagent_adb_server_up` read (see [`super::key::UNREACHABLE_AFTER`]).
    down_since: Mutex<HashMap<SocketAddrV4, Instant>>,
    /// Devices verified reachable since they last came online, with `ro.product.model` as the phone reports it
    /// (the adb server's `model:` is sanitised: `Pixel_7__sim_`). A device the adb server lists as `device` counts
    /// as online only once it is in here: a shell round trip proved it answers.
    verified: Mutex<HashMap<DeviceKey, Identity>>,
    verifying: Mutex<std::collections::HashSet<DeviceKey>>,
    /// Which listed serials are the same phone (`ro.serialno`); the channel layer sees one key per phone.
    identities: Mutex<super::identity::Identities>,
    /// Per device: does it speak the shell protocol v2? Read once, dropped when the device changes state.
    shell_v2: Mutex<HashMap<DeviceKey, bool>>,
    /// Per device: does `screencap | gzip -1` work ([`AdbBackend::gzip_capture`])? Probed once, dropped when the
    /// device changes state (a reconnect probes again: one small command).
    gzip: Mutex<HashMap<DeviceKey, bool>>,
    /// Per device: how many parallel streams a capture may use ([`AdbBackend::capture_streams`]): learnt with the
    /// gzip probe, lowered to 1 when the temp-file capture fails, dropped when the device changes state.
    capture_streams: Mutex<HashMap<DeviceKey, usize>>,
    /// `--capture-streams`: the most any phone's captures may use.
    capture_streams_max: std::sync::atomic::AtomicUsize,
    /// `--capture-compression`: whether compressed captures may be tried at all.
    capture_compression: std::sync::atomic::AtomicBool,
    /// Servers whose device list was applied at least once (see [`super::backend::Backend::settling`]).
    listed: Mutex<std::collections::HashSet<SocketAddrV4>>,
    /// Per device: the last screen state known, when it was learnt and until when it is trusted
    /// ([`AdbBackend::screen_state`]): [`SCREEN_STATE_TTL`] after a read, [`INPUT_KEEPS_AWAKE`] after an input of
    /// ours on an awake, unlocked phone ([`AdbBackend::kept_awake_by_input`]); dropped by our other side effects
    /// and by state changes. `None` = forgotten at that instant: a read that started earlier must not put its
    /// (older) answer back.
    screen_states: Mutex<HashMap<DeviceKey, KnownState>>,
    /// Per phone: health readings, disconnects, timeouts in a row, recovery state (`health.rs`, `recovery.rs`).
    health: super::health::Book,
    /// Per phone: device operations in flight now. A health read waits until a phone has none (agents first).
    in_flight: Mutex<HashMap<DeviceKey, usize>>,
    /// Per phone: side-effecting operations started since start-up ([`super::backend::Backend::side_effects_started`]).
    side_effects: Mutex<HashMap<DeviceKey, u64>>,
    recovery: Mutex<super::recovery_config::Config>,
    audit: Mutex<Option<super::recovery_config::AuditSink>>,
    /// Lease conditions: what a bind sets and a release restores (`conditions.rs`).
    conditions: super::lease::State,
    /// The backend's own `Arc` (weak): `Backend::released` spawns the release job, which outlives the call.
    me: std::sync::Weak<AdbBackend>,
    /// Per phone: the resident helper (`helper.rs`), started at first use, ended when the phone changes state.
    helpers: super::helper::Helpers,
}

/// Decrements the phone's in-flight count when its operation ends or is dropped.
struct InFlight<'a> {
    map: &'a Mutex<HashMap<DeviceKey, usize>>,
    key: DeviceKey,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        let mut m = self.map.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = m.get_mut(&self.key) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                m.remove(&self.key);
            }
        }
    }
}

/// How long a screen state read is reused: several tools of one agent step (observe, then act) share one read,
/// and the phone's own screen timeout (≥ 15 s on Android) cannot pass unnoticed in between.
pub const SCREEN_STATE_TTL: Duration = Duration::from_secs(1);

/// How long an awake, unlocked phone is known to stay so after an input of ours. Android turns the screen off (and
/// only then locks it) when no user activity came for the screen timeout, and every injected event is user
/// activity (`PowerManagerService.userActivity`, reset by each `injectInputEvent`): the shortest timeout Settings
/// offers is 15 s, so a third of it leaves room for a phone set lower by hand. What this cannot see is a person
/// pressing the power button in that window: the input then reaches a dark screen (most builds drop touches and
/// ordinary keys there), and the next read after the window sees the phone asleep. The
/// saving: an agent's next action costs no `dumpsys power` / `dumpsys window` round trip (issue 31).
pub const INPUT_KEEPS_AWAKE: Duration = Duration::from_secs(5);

/// One device's screen state as the connector knows it (see `AdbBackend::screen_states`).
#[derive(Clone, Copy, Debug)]
struct KnownState {
    /// When it was learnt (or forgotten): a read that started before this must not replace it.
    at: Instant,
    trusted_until: Instant,
    state: Option<ScreenState>,
}

/// What the verification probe learns about a device: model, manufacturer, SDK level, and the phone's own serial.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Identity {
    pub model: String,
    pub manufacturer: String,
    pub sdk: Option<u32>,
    /// `ro.serialno` as the phone reports it: a claim (any phone can report any serial), used only together
    /// with `boot_id` and the adb server to recognise a second path (`device::identity`). Empty when not said.
    pub hw_serial: String,
    /// `/proc/sys/kernel/random/boot_id`: random per boot, unknowable to other phones. Empty when unreadable.
    pub boot_id: String,
}

/// The verification probe: one round trip for everything [`Identity`] holds, in its order. The boot id is read
/// last and may fail (its line is then empty; the probe still succeeds): such a phone stays its own device.
const PROBE: &str = "getprop ro.product.model; getprop ro.product.manufacturer; getprop ro.build.version.sdk; \
                     getprop ro.serialno; cat /proc/sys/kernel/random/boot_id 2>/dev/null || echo";

/// Bytes the verification probe may print. Honest phones print ~150; a phone whose properties run past this never
/// verifies (the warning says the probe printed too much) instead of holding megabytes per poll.
const PROBE_OUTPUT_MAX: usize = 256 * 1024;

impl Identity {
    /// Parses the probe's lines (model, manufacturer, SDK level, serial, boot id).
    fn parse(out: &str) -> Identity {
        use super::text::{phone_text, MAX_NAME_CHARS, MAX_SHORT_CHARS};
        // Every value is the phone's say-so: bounded and stripped of control/bidi characters here, where it enters.
        let mut l = out.lines();
        let model = l.next().map(|m| phone_text(m, MAX_NAME_CHARS)).filter(|m| !m.is_empty());
        let model = model.unwrap_or_else(|| "Android device".to_owned());
        let manufacturer = l.next().map_or_else(String::new, |m| phone_text(m, MAX_NAME_CHARS));
        let sdk = l.next().and_then(|s| phone_text(s, MAX_SHORT_CHARS).parse().ok());
        let hw_serial = l.next().map_or_else(String::new, |s| phone_text(s, MAX_NAME_CHARS));
        let boot_id = l.next().map_or_else(String::new, |s| phone_text(s, MAX_SHORT_CHARS));
        Identity { model, manufacturer, sdk, hw_serial, boot_id }
    }
}

fn state_of(adb_state: &str) -> DeviceState {
    match adb_state {
        "device" => DeviceState::Online,
        "unauthorized" | "authorizing" => DeviceState::Unauthorized,
        _ => DeviceState::Offline,
    }
}

impl AdbBackend {
    pub fn new(servers: Vec<SocketAddrV4>) -> Arc<AdbBackend> {
        Arc::new_cyclic(|me| AdbBackend {
            me: me.clone(),
            servers,
            devices: Mutex::new(HashMap::new()),
            changes: broadcast::channel(256).0,
            locks: Mutex::new(HashMap::new()),
            screen: Mutex::new(HashMap::new()),
            rotations: Mutex::new(HashMap::new()),
            reachable: Mutex::new(HashMap::new()),
            down_since: Mutex::new(HashMap::new()),
            verified: Mutex::new(HashMap::new()),
            verifying: Mutex::new(std::collections::HashSet::new()),
            identities: Mutex::new(Default::default()),
            shell_v2: Mutex::new(HashMap::new()),
            gzip: Mutex::new(HashMap::new()),
            capture_streams: Mutex::new(HashMap::new()),
            capture_streams_max: std::sync::atomic::AtomicUsize::new(usize::MAX),
            capture_compression: std::sync::atomic::AtomicBool::new(true),
            listed: Mutex::new(std::collections::HashSet::new()),
            screen_states: Mutex::new(HashMap::new()),
            health: Default::default(),
            in_flight: Mutex::new(HashMap::new()),
            side_effects: Mutex::new(HashMap::new()),
            recovery: Mutex::new(Default::default()),
            audit: Mutex::new(None),
            conditions: Default::default(),
            helpers: Default::default(),
        })
    }

    /// The phones' resident helpers (`--phone-helper`, reports).
    pub fn helpers(&self) -> &super::helper::Helpers {
        &self.helpers
    }

    /// Per-phone health and recovery state.
    pub fn health_book(&self) -> &super::health::Book {
        &self.health
    }

    /// The operator's part of the recovery ladder (`--recover-command`) and the warning thresholds (policy).
    pub fn configure_health(&self, recovery: super::recovery_config::Config, thresholds: super::health::Thresholds) {
        *self.recovery.lock().unwrap_or_else(|e| e.into_inner()) = recovery;
        self.health.set_thresholds(thresholds);
    }

    pub fn recovery_config(&self) -> super::recovery_config::Config {
        self.recovery.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub(super) fn me(&self) -> Option<Arc<AdbBackend>> {
        self.me.upgrade()
    }

    /// The lease-condition state (`conditions.rs`).
    pub fn conditions(&self) -> &super::lease::State {
        &self.conditions
    }

    /// Where recovery steps are recorded (the audit log; wired by `run.rs`).
    pub fn set_audit(&self, sink: super::recovery_config::AuditSink) {
        *self.audit.lock().unwrap_or_else(|e| e.into_inner()) = Some(sink);
    }

    pub(crate) fn audit(
        &self,
        key: &DeviceKey,
        step: &'static str,
        details: &serde_json::Map<String, serde_json::Value>,
        result: &str,
    ) {
        let sink = self.audit.lock().unwrap_or_else(|e| e.into_inner()).clone();
        if let Some(sink) = sink {
            sink(key, step, details, result);
        }
    }

    /// The adb path commands for `key` take now (its best listed path).
    pub fn path_of(&self, key: &DeviceKey) -> DeviceKey {
        self.route(key)
    }

    /// The state the channel layer sees for `key`, `None` when no adb server lists it.
    pub fn raw_state(&self, key: &DeviceKey) -> Option<DeviceState> {
        self.view().into_iter().find(|d| &d.key == key).map(|d| d.state)
    }

    /// Whether any device operation for `key` is in flight now.
    pub fn busy(&self, key: &DeviceKey) -> bool {
        self.in_flight.lock().unwrap_or_else(|e| e.into_inner()).get(key).is_some_and(|n| *n > 0)
    }

    /// Reads the health of online phones that are due ([`super::health::READ_EVERY`]) and idle, until `shutdown`.
    async fn watch_health(self: Arc<Self>, mut shutdown: watch::Receiver<bool>) {
        use super::health::{Reading, OUTPUT_MAX, READ_DEADLINE, TICK};
        let mut tick = tokio::time::interval(TICK);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = shutdown.changed() => return,
                _ = tick.tick() => {}
            }
            for d in self.view().into_iter().filter(|d| d.state == DeviceState::Online) {
                // An agent's call (or any other command) is running on this phone: try at a later tick.
                if self.busy(&d.key) || !self.health.claim_read(&d.key, Instant::now()) {
                    continue;
                }
                let me = self.clone();
                tokio::spawn(async move {
                    let cmd = super::formats::HEALTH_COMMAND;
                    let out = me
                        .op(&d.key, false, READ_DEADLINE, |dev| async move { dev.shell_capped(cmd, OUTPUT_MAX).await })
                        .await;
                    match out {
                        Ok(o) => {
                            let text = super::formats::health(&o.stdout);
                            me.health.record_reading(&d.key, Reading::from_text(&text, crate::protocol::now_ms()));
                        }
                        Err(e) => tracing::debug!(device = %d.key, error = %e, "health read failed"),
                    }
                });
            }
        }
    }

    pub(super) fn ids(&self) -> std::sync::MutexGuard<'_, super::identity::Identities> {
        self.identities.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The device list as the channel layer sees it: one entry per phone under its presented key, in the state
    /// of its best path.
    pub(super) fn view(&self) -> Vec<DeviceInfo> {
        let raw: Vec<DeviceInfo> = self.devices.lock().unwrap_or_else(|e| e.into_inner()).values().cloned().collect();
        let ids = self.ids();
        let mut best: HashMap<DeviceKey, (DeviceInfo, (u8, u8))> = HashMap::new();
        for d in raw {
            let key = ids.presented_of(&d.key);
            let rank = super::identity::rank(&d.key, d.state);
            if best.get(&key).is_none_or(|(_, r)| rank < *r) {
                best.insert(key.clone(), (DeviceInfo { key, ..d }, rank));
            }
        }
        best.into_values().map(|(d, _)| d).collect()
    }

    /// The path a command for the phone presented as `key` takes: its best listed path.
    fn route(&self, key: &DeviceKey) -> DeviceKey {
        let paths = self.ids().paths_of(key);
        let map = self.devices.lock().unwrap_or_else(|e| e.into_inner());
        paths
            .into_iter()
            .filter_map(|p| map.get(&p).map(|d| (super::identity::rank(&p, d.state), p)))
            .min()
            .map_or_else(|| key.clone(), |(_, p)| p)
    }

    /// True while an adb server's first list has not arrived or a listed device is being verified
    /// ([`super::backend::Backend::settling`]).
    pub(super) fn lists_pending(&self) -> bool {
        if !self.verifying.lock().unwrap_or_else(|e| e.into_inner()).is_empty() {
            return true;
        }
        // A server not tried yet, or reachable but not yet listed (an unreachable one will not list anything soon).
        let listed = self.listed.lock().unwrap_or_else(|e| e.into_inner());
        let reachable = self.reachable.lock().unwrap_or_else(|e| e.into_inner());
        self.servers.iter().any(|s| !listed.contains(s) && reachable.get(s).copied() != Some(false))
    }

    /// How many side-effecting operations were ever started on `key` ([`super::backend::Backend::side_effects_started`]).
    pub(super) fn side_effects_of(&self, key: &DeviceKey) -> u64 {
        self.side_effects.lock().unwrap_or_else(|e| e.into_inner()).get(key).copied().unwrap_or(0)
    }

    /// Every state change of a device ([`super::backend::Backend::subscribe`]).
    pub(super) fn changes(&self) -> broadcast::Receiver<DeviceKey> {
        self.changes.subscribe()
    }

    pub fn servers(&self) -> &[SocketAddrV4] {
        &self.servers
    }

    fn lock_for(&self, key: &DeviceKey) -> Arc<tokio::sync::Mutex<()>> {
        self.locks.lock().unwrap_or_else(|e| e.into_inner()).entry(key.clone()).or_default().clone()
    }

    fn server_addr(key: &DeviceKey) -> Result<SocketAddrV4, ProtoError> {
        key.server.parse().map_err(|_| ProtoError::new(ErrorCode::Internal, "binding names an unknown adb server"))
    }

    /// Runs `op` against the device within `deadline` (lock wait included). `ordered` operations (side effects)
    /// run one at a time per device, in arrival order; the order slot is held by this future and released when it
    /// returns or is dropped. Everything `op` does is async I/O owned by its future (see the module docs).
    pub async fn op<T, F, Fut>(
        &self,
        key: &DeviceKey,
        ordered: bool,
        deadline: Duration,
        op: F,
    ) -> Result<T, ProtoError>
    where
        F: FnOnce(Device) -> Fut,
        Fut: std::future::Future<Output = Result<T, ProtoError>>,
    {
        if ordered {
            // Counted before anything can fail or wait: a side effect that may have been sent is never missed.
            *self.side_effects.lock().unwrap_or_else(|e| e.into_inner()).entry(key.clone()).or_default() += 1;
        }
        let path = self.route(key);
        let server = SocketAddr::V4(Self::server_addr(&path)?);
        let began = Instant::now();
        *self.in_flight.lock().unwrap_or_else(|e| e.into_inner()).entry(key.clone()).or_default() += 1;
        let _in_flight = InFlight { map: &self.in_flight, key: key.clone() };
        let work = async {
            // The order slot belongs to the phone (the presented key), the connection to its best path.
            let _order = if ordered {
                let lock = self.lock_for(key);
                let waited = Instant::now();
                let g = lock.lock_owned().await;
                if waited.elapsed() > Duration::from_millis(100) {
                    tracing::debug!(device = %key, waited_ms = waited.elapsed().as_millis() as u64, "waited for the device's previous command");
                }
                Some(g)
            } else {
                None
            };
            if ordered {
                // From here the side effect may reach the phone: a call cut short says so (`device::sent`).
                super::sent::started();
            }
            let shell_v2 = self.shell_v2_of(&path, server).await?;
            op(Device::new(server, path.serial.clone(), shell_v2)).await
        };
        let r = tokio::time::timeout(deadline, work).await;
        if ordered {
            // Our own input may have woken, slept, locked or unlocked the phone: read the state again next time.
            self.forget_screen_state(key);
        }
        // The recovery ladder counts timeouts in a row; any answer proves the phone alive. Other errors (the adb
        // server refused, the device went away) say nothing about the phone's adbd and change neither.
        match &r {
            Ok(Ok(_)) => {
                self.health.command_ended(key, false);
            }
            Ok(Err(e)) if e.code == ErrorCode::DeviceTimeout => {
                self.health.command_ended(key, true);
            }
            Err(_) => {
                self.health.command_ended(key, true);
            }
            Ok(Err(_)) => {}
        }
        match r {
            // Cut by the recovery ladder's reconnect: say so rather than the transport's "adb: closed".
            Ok(r) => r.map_err(|e| explain_cut(self, key, began, ordered, e)),
            Err(_) => Err(ProtoError::new(
                ErrorCode::DeviceTimeout,
                format!(
                    "the phone {} did not answer within {} ms (the command was hung up)",
                    path.serial,
                    deadline.as_millis()
                ),
            )),
        }
    }

    /// Whether `key` speaks shell v2, from the cache or one `features` query.
    async fn shell_v2_of(&self, key: &DeviceKey, server: SocketAddr) -> Result<bool, ProtoError> {
        if let Some(v) = self.shell_v2.lock().unwrap_or_else(|e| e.into_inner()).get(key) {
            return Ok(*v);
        }
        let v = transport::features(server, &key.serial).await?.iter().any(|f| f == "shell_v2");
        self.shell_v2.lock().unwrap_or_else(|e| e.into_inner()).insert(key.clone(), v);
        Ok(v)
    }

    /// Runs one shell command and returns its output and exit status (shell v2; on `shell:`-only phones the status
    /// comes from a tagged status line, see [`transport::shell_v1`]).
    pub async fn shell(
        &self,
        key: &DeviceKey,
        cmd: &str,
        ordered: bool,
        deadline: Duration,
    ) -> Result<ShellOut, ProtoError> {
        self.op(key, ordered, deadline, |d| async move { d.shell(cmd).await }).await.map_err(|mut e| {
            // Name the command (program and verb only: arguments may be typed text) in a timeout.
            if e.code == ErrorCode::DeviceTimeout && !e.message.contains('`') {
                e.message = e.message.replacen(
                    " did not answer ",
                    &format!(" did not answer `{}` ", super::shell::label(cmd)),
                    1,
                );
            }
            e
        })
    }

    /// [`AdbBackend::shell`] reading at most `cap` bytes of output (beyond: `tool_invoke_failed` naming the cap).
    pub async fn shell_capped(
        &self,
        key: &DeviceKey,
        cmd: &str,
        cap: usize,
        ordered: bool,
        deadline: Duration,
    ) -> Result<ShellOut, ProtoError> {
        self.op(key, ordered, deadline, |d| async move { d.shell_capped(cmd, cap).await }).await
    }

    /// `exec:CMD`: raw stdout, at most `cap` bytes. An observation unless `ordered`.
    pub async fn exec(
        &self,
        key: &DeviceKey,
        cmd: &str,
        cap: usize,
        ordered: bool,
        deadline: Duration,
    ) -> Result<Vec<u8>, ProtoError> {
        self.op(key, ordered, deadline, |d| async move { d.exec(cmd, cap).await }).await
    }

    /// `exec:CMD` whose output is gzip, inflated as it arrives under `inflate`'s bounds (an observation):
    /// the inflated bytes and the compressed bytes that crossed adb.
    pub async fn exec_gunzip(
        &self,
        key: &DeviceKey,
        cmd: &str,
        max_compressed: usize,
        inflate: super::gunzip::BoundedGunzip,
        deadline: Duration,
    ) -> Result<(Vec<u8>, usize), ProtoError> {
        self.op(key, false, deadline, |d| async move {
            let (server, serial) = d.path();
            transport::exec_gunzip(server, serial, cmd, max_compressed, inflate).await
        })
        .await
    }

    /// `exec:CMD` whose gzip output is inflated into `inflate`'s range as it arrives (an observation): the bytes
    /// that crossed adb. The caller finishes `inflate`.
    pub async fn exec_gunzip_into(
        &self,
        key: &DeviceKey,
        cmd: &str,
        max_compressed: usize,
        inflate: &mut (impl super::gunzip::Feed + Send),
        deadline: Duration,
    ) -> Result<usize, ProtoError> {
        self.op(key, false, deadline, |d| async move {
            let (server, serial) = d.path();
            transport::exec_feed(server, serial, cmd, max_compressed, inflate).await
        })
        .await
    }

    /// `exec:CMD` as a future that borrows nothing (it can outlive the caller: a clean-up spawned when a capture
    /// is cancelled), bounded by `deadline`; output beyond 4 KiB is an error. Outside the per-device bookkeeping
    /// of [`AdbBackend::op`] on purpose: it is our own housekeeping, not the agent's command.
    pub fn detached_exec(
        &self,
        key: &DeviceKey,
        cmd: String,
        deadline: Duration,
    ) -> impl std::future::Future<Output = Result<Vec<u8>, ProtoError>> + Send + 'static {
        let path = self.route(key);
        let server = Self::server_addr(&path).map(SocketAddr::V4);
        async move {
            let server = server?;
            match tokio::time::timeout(deadline, transport::exec(server, &path.serial, &cmd, 4096)).await {
                Ok(r) => r,
                Err(_) => Err(ProtoError::new(ErrorCode::DeviceTimeout, "the phone did not answer in time")),
            }
        }
    }

    /// How many parallel streams a capture of `key` may use, as last probed or decided (`None`: not probed since
    /// the device last changed state).
    pub fn capture_streams(&self, key: &DeviceKey) -> Option<usize> {
        self.capture_streams.lock().unwrap_or_else(|e| e.into_inner()).get(&self.route(key)).copied()
    }

    /// Records how many parallel streams captures of `key` use from now on (1: the single stream), at most
    /// `--capture-streams`.
    pub fn set_capture_streams(&self, key: &DeviceKey, n: usize) {
        let n = n.min(self.capture_streams_max.load(std::sync::atomic::Ordering::Relaxed)).max(1);
        self.capture_streams.lock().unwrap_or_else(|e| e.into_inner()).insert(self.route(key), n);
    }

    /// `--capture-streams`: the most parallel streams any phone's captures use (unlimited until set).
    pub fn set_capture_streams_max(&self, n: usize) {
        self.capture_streams_max.store(n.max(1), std::sync::atomic::Ordering::Relaxed);
    }

    /// `--capture-compression` (on unless the operator turned it off).
    pub fn set_capture_compression(&self, on: bool) {
        self.capture_compression.store(on, std::sync::atomic::Ordering::Relaxed);
    }

    pub fn capture_compression(&self) -> bool {
        self.capture_compression.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Whether the phone's `gzip` can carry a capture, as last probed or decided (`None`: not probed since the
    /// device last changed state).
    pub fn gzip_capture(&self, key: &DeviceKey) -> Option<bool> {
        self.gzip.lock().unwrap_or_else(|e| e.into_inner()).get(&self.route(key)).copied()
    }

    /// Records the probe's answer (or that a compressed capture failed: `false` until the device changes state).
    pub fn set_gzip_capture(&self, key: &DeviceKey, works: bool) {
        self.gzip.lock().unwrap_or_else(|e| e.into_inner()).insert(self.route(key), works);
    }

    /// The `framebuffer:` service: header and raw pixels (an observation).
    pub async fn framebuffer(
        &self,
        key: &DeviceKey,
        max_pixel_bytes: usize,
        deadline: Duration,
    ) -> Result<(FbHeader, Vec<u8>), ProtoError> {
        self.op(key, false, deadline, |d| async move { d.framebuffer(max_pixel_bytes).await }).await
    }

    /// The `framebuffer:` service with its pixels handed to the sink `start` makes from the checked header, as
    /// they arrive (an observation; see [`transport::framebuffer_feed`]).
    pub async fn framebuffer_feed<S: transport::PixelSink + Send>(
        &self,
        key: &DeviceKey,
        max_pixel_bytes: usize,
        start: impl FnOnce(&FbHeader) -> Result<S, ProtoError> + Send,
        deadline: Duration,
    ) -> Result<(FbHeader, S), ProtoError> {
        self.op(key, false, deadline, |d| async move {
            let (server, serial) = d.path();
            transport::framebuffer_feed(server, serial, max_pixel_bytes, start).await
        })
        .await
    }

    /// `sync:` STAT of one path (an observation).
    pub async fn stat(&self, key: &DeviceKey, path: &str, deadline: Duration) -> Result<FileStat, ProtoError> {
        self.op(key, false, deadline, |d| async move { d.sync().await?.stat(path).await }).await
    }

    /// `sync:` RECV of one path into `sink` (an observation).
    pub async fn pull(
        &self,
        key: &DeviceKey,
        path: &str,
        sink: impl FnMut(&[u8]) -> Result<(), ProtoError>,
        deadline: Duration,
    ) -> Result<(), ProtoError> {
        self.op(key, false, deadline, |d| async move { d.sync().await?.recv(path, sink).await }).await
    }

    /// `sync:` SEND of `path` from `reader`; a side effect, ordered.
    pub async fn push<R: tokio::io::AsyncRead + Unpin>(
        &self,
        key: &DeviceKey,
        path: &str,
        mode: u32,
        reader: &mut R,
        progress: impl FnMut(u64),
        deadline: Duration,
    ) -> Result<(), ProtoError> {
        self.op(key, true, deadline, |d| async move { d.sync().await?.send(path, mode, reader, progress).await }).await
    }

    /// Like [`AdbBackend::shell`] but a non-zero exit is an error carrying the command's own message.
    pub async fn shell_ok(
        &self,
        key: &DeviceKey,
        cmd: &str,
        ordered: bool,
        deadline: Duration,
    ) -> Result<String, ProtoError> {
        let out = self.shell(key, cmd, ordered, deadline).await?;
        if out.code != 0 {
            let msg = if out.stderr.trim().is_empty() { out.stdout.trim() } else { out.stderr.trim() };
            // The phone's own words reach the agent, the logs and `call`'s terminal: printable, bounded.
            let msg = super::text::phone_text(msg, 300);
            return Err(ProtoError::new(
                ErrorCode::ToolInvokeFailed,
                format!("device command failed (exit {}): {msg}", out.code),
            ));
        }
        Ok(out.stdout)
    }

    /// The screen size [`AdbBackend::screen_size`] last read, if it is still cached: what a reader that must not
    /// wait for the phone (the device wall) can show at once.
    pub fn screen_size_known(&self, key: &DeviceKey) -> Option<(u32, u32)> {
        self.screen.lock().unwrap_or_else(|e| e.into_inner()).get(key).copied()
    }

    /// The device's screen size in pixels (`wm size`; an override wins), cached until the device changes state.
    pub async fn screen_size(&self, key: &DeviceKey) -> Result<(u32, u32), ProtoError> {
        if let Some(s) = self.screen.lock().unwrap_or_else(|e| e.into_inner()).get(key) {
            return Ok(*s);
        }
        // The helper's `screen` names the display's logical size (an override included, as `wm size` prints it)
        // after rotation: turned back to the natural size. `wm size` where it does not run or cannot say.
        // A helper that does not answer in time (a first start on a loaded phone) leaves it to the shell.
        let helper = self.helper(key, false, Duration::from_secs(5), "screen", "", Duration::ZERO).await.ok().flatten();
        let field = |k| helper.as_deref().and_then(|p| ScreenState::helper_field(p, k));
        let size = match (field("width"), field("height"), field("rotation")) {
            (Some(w), Some(h), Some(r)) if w > 0 && h > 0 => {
                if r % 2 == 1 {
                    (h, w)
                } else {
                    (w, h)
                }
            }
            _ => {
                let out = self.shell_ok(key, "wm size", false, Duration::from_secs(5)).await?;
                formats::wm_size(&out).effective().ok_or_else(|| {
                    ProtoError::new(ErrorCode::ToolInvokeFailed, "could not read the screen size (wm size)")
                })?
            }
        };
        self.screen.lock().unwrap_or_else(|e| e.into_inner()).insert(key.clone(), size);
        Ok(size)
    }
}

/// The error of a command that ended because the ladder reconnected its phone (`began`: when the command
/// started): the transport's own error ("adb: closed", "device offline") names a symptom, not what happened.
/// `device_timeout` is the code of a phone that stopped answering; the message says so, that the connector
/// reconnected it, and whether the call's input is known to have been sent (`device::sent`): an ordered command
/// (a side effect) or an earlier one of the same call may have reached the phone. Other errors pass unchanged.
fn explain_cut(adb: &AdbBackend, key: &DeviceKey, began: Instant, ordered: bool, e: ProtoError) -> ProtoError {
    if e.code == ErrorCode::DeviceTimeout || !adb.health_book().reconnected_since(key, began) {
        return e;
    }
    let sent = ordered || super::sent::already();
    let what = if sent {
        "its input may have been sent before the reconnect (check the screen before repeating it)"
    } else {
        "none of its input had been sent"
    };
    ProtoError::new(
        ErrorCode::DeviceTimeout,
        format!(
            "the phone stopped answering and the connector reconnected it (recovery) during this call, which cut \
             the call; {what}. The phone may be back within seconds: retry then"
        ),
    )
    .with_details(serde_json::json!({"reconnected": true, "input_may_have_been_sent": sent}))
}

/// How long a rotation read is reused: a burst of taps costs one `dumpsys input`, a turned phone is seen within 1 s.
pub const ROTATION_TTL: Duration = Duration::from_secs(1);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::backend::Backend;
    use crate::device::host;

    #[test]
    fn wm_size_prefers_override() {
        let size = |t: &str| formats::wm_size(t).effective();
        assert_eq!(size("Physical size: 1080x2400\n"), Some((1080, 2400)));
        assert_eq!(size("Physical size: 1080x2400\nOverride size: 720x1600\n"), Some((720, 1600)));
        assert_eq!(size("garbage"), None);
    }

    #[test]
    fn adb_states_map_to_device_states() {
        assert_eq!(state_of("device"), DeviceState::Online);
        assert_eq!(state_of("unauthorized"), DeviceState::Unauthorized);
        assert_eq!(state_of("offline"), DeviceState::Offline);
        assert_eq!(state_of("recovery"), DeviceState::Offline);
    }

    #[test]
    fn apply_announces_changes_and_online_needs_verification() {
        let b = AdbBackend::new(vec!["127.0.0.1:5037".parse().unwrap()]);
        let mut rx = b.subscribe();
        let server: SocketAddrV4 = "127.0.0.1:5037".parse().unwrap();
        let key = |s: &str| DeviceKey { server: server.to_string(), serial: s.into() };
        let dev =
            |s: &str, st: &str| host::ListedDevice { serial: s.into(), state: st.into(), model: Some("P".into()) };
        b.apply(server, vec![dev("A", "device"), dev("B", "unauthorized")]);
        assert_eq!(rx.try_recv().unwrap().serial, "A");
        assert_eq!(rx.try_recv().unwrap().serial, "B");
        assert_eq!(b.info(&key("A")).unwrap().state, DeviceState::Offline, "listed, not yet verified");
        b.mark_verified(&key("A"), Identity::parse("Pixel 7 (sim)\nGoogle\n34\n"));
        assert_eq!(rx.try_recv().unwrap().serial, "A");
        assert_eq!(b.info(&key("A")).unwrap().state, DeviceState::Online);
        assert_eq!(b.info(&key("A")).unwrap().model, "Pixel 7 (sim)");
        assert_eq!(
            (b.info(&key("A")).unwrap().manufacturer.as_str(), b.info(&key("A")).unwrap().sdk),
            ("Google", Some(34))
        );
        b.apply(server, vec![dev("A", "device"), dev("B", "unauthorized")]);
        assert!(rx.try_recv().is_err(), "no change, no announcement");
        b.apply(server, vec![dev("B", "device")]);
        let mut got = vec![rx.try_recv().unwrap().serial, rx.try_recv().unwrap().serial];
        got.sort();
        assert_eq!(got, vec!["A", "B"]);
        assert_eq!(b.devices().len(), 1);
        // A returns later: verified again before it counts as online.
        b.apply(server, vec![dev("A", "device"), dev("B", "device")]);
        assert_eq!(b.info(&key("A")).unwrap().state, DeviceState::Offline);
    }

    #[test]
    fn a_phone_leaving_counts_as_a_disconnect_but_an_adb_server_outage_does_not() {
        let b = AdbBackend::new(vec!["127.0.0.1:5037".parse().unwrap()]);
        let server: SocketAddrV4 = "127.0.0.1:5037".parse().unwrap();
        let key = DeviceKey { server: server.to_string(), serial: "A".into() };
        let listed = || vec![host::ListedDevice { serial: "A".into(), state: "device".into(), model: None }];
        let online = |b: &Arc<AdbBackend>| {
            b.apply(server, listed());
            b.mark_verified(&key, Identity::parse("P\nG\n34\n"));
        };
        let disconnects = |b: &AdbBackend| b.health.snapshot(&key, Instant::now()).disconnects_total;
        online(&b);
        b.apply(server, vec![host::ListedDevice { serial: "A".into(), state: "offline".into(), model: None }]);
        assert_eq!(disconnects(&b), 1, "online → offline");
        online(&b);
        b.apply(server, Vec::new());
        assert_eq!(disconnects(&b), 2, "online → gone");
        online(&b);
        // The tracker lost the adb server (what `track` does): the phones are gone with it, but did not disconnect.
        b.mark_down(server);
        b.apply(server, Vec::new());
        assert_eq!(disconnects(&b), 2, "an adb server outage is not the phone's disconnect");
    }
}

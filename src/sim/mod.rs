//! Simulated Android device speaking the real ADB transport protocol (test support and demo backend).
//!
//! `SimPhone::start` listens on a TCP port exactly like `adbd` does in `adb tcpip` mode, so the
//! real adb server can `adb connect 127.0.0.1:PORT` to it and every client (the `adb` CLI,
//! `adb_client`, the connector) drives it through the genuine ADB code path: the sim is never a
//! shortcut around it.
//!
//! Layout:
//! - [`transport`]: message codec, CNXN/AUTH handshake, stream multiplexing and flow control;
//! - [`services`]: `shell:` (v1 and shell protocol v2), `exec:`, `abb_exec:`, `reboot:`...;
//! - [`sync`]: the `sync:` file transfer protocol;
//! - [`shell`]: a small sh-like interpreter (quoting, `;`/`&&`/`||`/`|`, redirections, `$?`);
//! - [`commands`]: the Android tools (`input`, `screencap`, `uiautomator`, `pm`, `am`, ...);
//! - [`ui`]: the UI model behind both `uiautomator dump` and `screencap`;
//! - [`fs`]: the in-memory filesystem; [`device`]: the rest of the phone's state.
//!
//! Faults (latency, hang, offline, unauthorized, dropped connections) can be injected at runtime
//! to test the connector's error handling against a realistic transport. A phone can also be made hostile, in
//! the real wire formats: lying screen captures ([`SimPhone::lie_about_frames`]), lying shell-v2/sync lengths
//! ([`SimPhone::lie_about_lengths`]), any property value — another phone's `ro.serialno`, a 100 KB or
//! bidi-spoofing model ([`SimPhone::set_prop`]). Each phone has its own random boot id
//! (`/proc/sys/kernel/random/boot_id`), shared by the paths of [`SimPhone::listen_also`].

pub mod commands;
pub mod device;
pub mod fs;
pub mod services;
pub mod shell;
pub mod sync;
pub mod transport;
pub mod ui;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use device::Device;

/// Identity and screen of the simulated phone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimConfig {
    pub model: String,
    pub manufacturer: String,
    pub android_version: String,
    pub sdk: u32,
    pub screen_width: u32,
    pub screen_height: u32,
    pub density: u32,
    /// Whether the ADB Keyboard IME (`com.android.adbkeyboard/.AdbIME`) is installed: the usual way to type
    /// non-ASCII text over adb (`am broadcast -a ADB_INPUT_B64 --es msg <base64>` while it is the active IME).
    pub adb_keyboard: bool,
    /// Whether adbd offers the shell protocol v2 (`shell_v2` feature, Android 7.0+). Without it only plain
    /// `shell:` exists (stderr merged, no exit status) and `shell,v2,...:` is an unknown service, as on old phones.
    pub shell_v2: bool,
    /// Whether `uiautomator dump /dev/tty` prints the XML (it does on most versions; on others the XML goes
    /// nowhere and only the "dumped to" line appears).
    pub dump_to_tty: bool,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            model: "Pixel 7 (sim)".into(),
            manufacturer: "Google".into(),
            android_version: "14".into(),
            sdk: 34,
            screen_width: 1080,
            screen_height: 2400,
            density: 420,
            adb_keyboard: false,
            shell_v2: true,
            dump_to_tty: true,
        }
    }
}

/// Injected misbehaviour. Exactly one fault is active at a time; `Fault::None` clears it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Fault {
    #[default]
    None,
    /// Every shell/exec command is delayed by this much before it runs.
    Latency(Duration),
    /// Shell/exec commands are accepted (and logged) but not answered until the fault changes.
    Hang,
    /// adbd is wedged: the transport stays up (the adb server still lists the device as `device`), but service
    /// OPENs are never answered — no OKAY, no CLSE — as on a phone whose adbd or USB stack hangs. The adb server
    /// then never answers the host's service request either.
    Unresponsive,
    /// Existing transports are closed and new TCP connections are closed immediately, so the adb
    /// server first shows the device `offline` and then drops it.
    Offline,
    /// New transports answer CNXN with AUTH challenges forever: adb lists the device as
    /// `unauthorized`. Existing transports are unaffected (call `drop_connections` to force the
    /// adb server to reconnect into the unauthorized state).
    Unauthorized,
}

/// A hostile phone's screen captures (`framebuffer:`, `screencap`, `screencap -p`), for testing that nothing a
/// phone sends can panic the connector. An honest phone never sends these; each lie is one a broken or malicious
/// adbd could send, byte for byte in the real formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FrameLie {
    #[default]
    None,
    /// `framebuffer:` names a red channel at bit offset 0xFFFFFFF8, length 8 (wraps to 0 in u32 arithmetic);
    /// raw `screencap` claims one more row than it sends.
    ChannelOverflow,
    /// Honest headers, then half the pixels and the stream ends.
    Truncated,
    /// Every capture claims a 60 000 × 60 000 screen: `screencap -p` a valid PNG header (IHDR) with no pixel
    /// data, the raw formats the same size with a few bytes.
    Huge,
}

/// One injected input event, as recorded in the event log.
#[derive(Clone, Debug, PartialEq)]
pub enum InputEvent {
    Tap {
        x: i32,
        y: i32,
    },
    Swipe {
        x1: i32,
        y1: i32,
        x2: i32,
        y2: i32,
        duration_ms: u32,
    },
    Text(String),
    /// Canonical key name, e.g. `KEYCODE_HOME` (numeric codes are translated).
    Key(String),
}

/// State shared by the accept loop, every connection and every service task.
pub(crate) struct Shared {
    pub(crate) device: Mutex<Device>,
    pub(crate) fault: watch::Sender<Fault>,
    /// Bumped to make every live connection close (drop/offline/shutdown/reboot).
    pub(crate) kill: watch::Sender<u64>,
    pub(crate) cfg: SimConfig,
    pub(crate) stalls: Mutex<Stalls>,
    /// Bumped whenever a stall pattern is released.
    pub(crate) stall_release: watch::Sender<u64>,
}

/// The per-command stall fault (see [`SimPhone::stall`]).
#[derive(Default)]
pub(crate) struct Stalls {
    /// Active patterns: a command (or `framebuffer:`, `sync:SEND PATH`, ...) starting with one of them is held.
    pub(crate) patterns: Vec<String>,
    /// Commands held right now.
    pub(crate) held: Vec<String>,
    /// Held commands whose stream the host closed (adbd would SIGHUP them), oldest first.
    pub(crate) hung_up: Vec<String>,
}

/// Handle to a running simulated phone; cheap to clone.
#[derive(Clone)]
pub struct SimPhone {
    shared: Arc<Shared>,
    addr: SocketAddr,
    accept_task: Arc<Mutex<Option<JoinHandle<()>>>>,
    /// Accept loops of further addresses ([`SimPhone::listen_also`]).
    more_tasks: Arc<Mutex<Vec<JoinHandle<()>>>>,
}

impl std::fmt::Debug for SimPhone {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimPhone").field("addr", &self.addr).finish()
    }
}

impl SimPhone {
    /// Bind on `addr` (use 127.0.0.1:0 for an ephemeral port) and serve in background tokio tasks.
    pub async fn start(addr: SocketAddr, cfg: SimConfig) -> std::io::Result<SimPhone> {
        let listener = TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let serial = format!("{}:{}", addr.ip(), addr.port());
        let shared = Arc::new(Shared {
            device: Mutex::new(Device::new(cfg.clone(), serial)),
            fault: watch::Sender::new(Fault::None),
            kill: watch::Sender::new(0),
            cfg,
            stalls: Mutex::new(Stalls::default()),
            stall_release: watch::Sender::new(0),
        });
        let task = tokio::spawn(accept_loop(listener, shared.clone()));
        tracing::info!(%addr, "sim phone listening");
        Ok(SimPhone { shared, addr, accept_task: Arc::new(Mutex::new(Some(task))), more_tasks: Arc::default() })
    }

    /// Serves the same phone on one more address. After `adb connect` to both, the adb server lists one phone
    /// under two serials with one `ro.serialno` — as a real phone on USB and Wi-Fi debugging at once.
    pub async fn listen_also(&self, addr: SocketAddr) -> std::io::Result<SocketAddr> {
        let listener = TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let task = tokio::spawn(accept_loop(listener, self.shared.clone()));
        self.more_tasks.lock().unwrap_or_else(|e| e.into_inner()).push(task);
        tracing::info!(%addr, "sim phone listening on a second address");
        Ok(addr)
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// "127.0.0.1:PORT": the serial adb assigns after `adb connect`.
    pub fn serial(&self) -> String {
        format!("{}:{}", self.addr.ip(), self.addr.port())
    }

    fn device(&self) -> std::sync::MutexGuard<'_, Device> {
        self.shared.device.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Makes every later screen capture lie (see [`FrameLie`]); `FrameLie::None` makes the phone honest again.
    pub fn lie_about_frames(&self, lie: FrameLie) {
        self.device().frame_lie = lie;
    }

    /// Makes every later shell-protocol v2 output packet and sync `DATA` chunk announce 0xFFFFFFF0 bytes (then
    /// send a few and stall), as a broken or malicious adbd could; `false` makes the phone honest again.
    pub fn lie_about_lengths(&self, lie: bool) {
        self.device().length_lie = lie;
    }

    /// Sets a system property (`getprop NAME` prints it from now on): a phone that claims another phone's
    /// `ro.serialno`, or reports a 100 KB or bidi-spoofing `ro.product.model` (hostile-phone tests).
    pub fn set_prop(&self, name: &str, value: &str) {
        self.device().props.insert(name.to_owned(), value.to_owned());
    }

    /// The phone's `/proc/sys/kernel/random/boot_id` line, without its newline.
    pub fn boot_id(&self) -> String {
        self.read_file("/proc/sys/kernel/random/boot_id")
            .map_or_else(String::new, |b| String::from_utf8_lossy(&b).trim().to_owned())
    }

    /// Every input event injected so far (oldest first).
    pub fn events(&self) -> Vec<InputEvent> {
        self.device().events.clone()
    }

    /// Forgets the recorded input events (a test's "from here on").
    pub fn clear_events(&self) {
        self.device().events.clear();
    }

    /// Every command line received over shell/exec/abb services (oldest first).
    pub fn commands(&self) -> Vec<String> {
        self.device().commands.clone()
    }

    /// The home screen's counter (incremented by taps on the "Increment" button).
    pub fn counter(&self) -> u32 {
        self.device().ui.counter
    }

    /// Labels of the demo app's elements that taps hit ("OK (left)", "Item 7"), oldest first.
    pub fn clicks(&self) -> Vec<String> {
        self.device().ui.clicks.clone()
    }

    /// How far the demo app's list is scrolled, in pixels.
    pub fn list_offset(&self) -> i32 {
        self.device().ui.list_offset
    }

    /// Chooses the screen lock (as in Settings) and, for a lock other than `None`, locks the phone now: the
    /// keyguard shows until a swipe up or `wm dismiss-keyguard` opens it (a `Secure` one never opens over adb).
    pub fn set_lock(&self, mode: ui::LockMode) {
        let mut d = self.device();
        d.ui.lock = mode;
        d.ui.keyguard_showing = mode != ui::LockMode::None;
    }

    /// Whether the keyguard is showing.
    pub fn locked(&self) -> bool {
        self.device().ui.keyguard_showing
    }

    /// Turns the screen on or off, as the power button or the screen timeout would (off locks a phone that has
    /// a screen lock).
    pub fn set_screen_on(&self, on: bool) {
        self.device().ui.set_screen(on);
    }

    pub fn screen_on(&self) -> bool {
        self.device().ui.screen_on
    }

    /// The foreground window is FLAG_SECURE (banking app, DRM video): captures are black, the UI tree is intact.
    pub fn set_secure_window(&self, on: bool) {
        self.device().ui.secure_window = on;
    }

    /// Something animates forever: `uiautomator dump` waits `idle_timeout` (10 s on a real phone), prints
    /// `ERROR: could not get idle state.` on stderr and exits 0.
    pub fn set_never_idle(&self, on: bool, idle_timeout: Duration) {
        let mut d = self.device();
        d.ui.never_idle = on;
        d.idle_timeout = idle_timeout;
    }

    /// Makes the screen change by itself: a status-bar indicator advances one step every `period` (as a download
    /// or a video would), so that consecutive captures differ; `None` stills it. For live-view tests.
    pub fn set_ticking_screen(&self, period: Option<Duration>) {
        self.device().ui.ticking = period.map(|p| (std::time::Instant::now(), p));
    }

    /// Appends one line to the phone's logcat buffer, as an app calling `android.util.Log` would.
    pub fn log(&self, priority: char, tag: &str, message: &str) {
        self.device().log(priority, tag, message);
    }

    /// A file of the phone's filesystem (`None` when missing or a directory).
    pub fn read_file(&self, path: &str) -> Option<Vec<u8>> {
        self.device().fs.read(path).ok().map(<[u8]>::to_vec)
    }

    /// Creates or replaces a file (parents are created), as an app writing to storage would.
    pub fn write_file(&self, path: &str, data: &[u8]) -> bool {
        self.device().fs.write(path, data.to_vec(), 0o660, device::now_unix_secs(), true).is_ok()
    }

    /// Installed package names (system and user), sorted.
    pub fn packages(&self) -> Vec<String> {
        self.device().packages.keys().cloned().collect()
    }

    /// Per-command stall fault: from now on every command line starting with `pattern` (e.g. `input`,
    /// `uiautomator dump`, `pm install`, `screencap`; or the services `framebuffer:`, `sync:SEND PATH`,
    /// `sync:RECV PATH`, `sync:STAT PATH`) is accepted and logged but blocks until [`SimPhone::release`] or until
    /// the host closes its stream — then it ends without output, as adbd hangs up a command whose host went away.
    /// Other commands run normally.
    pub fn stall(&self, pattern: &str) {
        self.shared.stalls.lock().unwrap_or_else(|e| e.into_inner()).patterns.push(pattern.to_owned());
    }

    /// Ends the stall of `pattern`: held commands matching no other pattern run now.
    pub fn release(&self, pattern: &str) {
        self.shared.stalls.lock().unwrap_or_else(|e| e.into_inner()).patterns.retain(|p| p != pattern);
        self.shared.stall_release.send_modify(|n| *n += 1);
    }

    /// Commands held by a stall right now.
    pub fn stalled(&self) -> Vec<String> {
        self.shared.stalls.lock().unwrap_or_else(|e| e.into_inner()).held.clone()
    }

    /// Held commands whose stream the host closed while they were held (oldest first).
    pub fn hung_up(&self) -> Vec<String> {
        self.shared.stalls.lock().unwrap_or_else(|e| e.into_inner()).hung_up.clone()
    }

    pub fn set_fault(&self, f: Fault) {
        let offline = f == Fault::Offline;
        self.shared.fault.send_replace(f);
        if offline {
            self.drop_connections();
        }
    }

    /// Closes every live TCP connection now (the adb server will see the device go away and may
    /// reconnect).
    pub fn drop_connections(&self) {
        self.shared.kill.send_modify(|k| *k += 1);
    }

    /// Stops listening and closes all connections.
    pub async fn shutdown(self) {
        let task = self.accept_task.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(t) = task {
            t.abort();
            let _ = t.await;
        }
        let more: Vec<_> = self.more_tasks.lock().unwrap_or_else(|e| e.into_inner()).drain(..).collect();
        for t in more {
            t.abort();
            let _ = t.await;
        }
        self.drop_connections();
    }
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    loop {
        match listener.accept().await {
            Ok((sock, peer)) => {
                if *shared.fault.borrow() == Fault::Offline {
                    tracing::debug!(%peer, "sim offline: refusing transport");
                    drop(sock);
                    continue;
                }
                tracing::debug!(%peer, "sim: adb transport connected");
                tokio::spawn(transport::serve(sock, shared.clone()));
            }
            Err(e) => {
                // E.g. EMFILE: back off instead of spinning.
                tracing::warn!(error = %e, "sim: accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

#[cfg(test)]
mod wire_tests;

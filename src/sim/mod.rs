//! Simulated Android device speaking the real ADB transport protocol (test support and demo backend).
//!
//! `SimPhone::start` listens on a TCP port exactly like `adbd` does in `adb tcpip` mode, so the
//! real adb server can `adb connect 127.0.0.1:PORT` to it and every client (the `adb` CLI,
//! `adb_client`, the connector) drives it through the genuine ADB code path: the sim is never a
//! shortcut around it.
//!
//! Layout (the one-way order the files name each other in is checked and printed by tests/module_arrows.rs):
//! - [`transport`]: CNXN/AUTH handshake, stream multiplexing and flow control, on [`wire`]'s message codec and
//!   [`stream`]'s stream halves;
//! - [`services`]: `shell:` (v1 and shell protocol v2, [`shell_v2`]), `exec:`, `abb_exec:`, `reboot:`...; the
//!   stream services [`sync`] (`sync:`), [`helper`] (the resident phone helper), [`devtools`]; [`gates`]: the
//!   stall and latency/hang faults they all pass;
//! - [`commands`]: the Android tools (`input`, `screencap`, `uiautomator`, `pm`, `am`, ...), one file per family;
//! - [`shell`]: a small sh-like interpreter (quoting, `;`/`&&`/`||`/`|`, redirections, `$?`), given the commands;
//! - [`shared`]: what every connection of one phone shares; [`device`]: the phone's state; [`ui`]: the UI model
//!   behind both `uiautomator dump` and `screencap`; [`fs`]: the in-memory filesystem; [`cmdio`]: a command's I/O;
//! - [`state`]: the configuration, injected faults and input events; [`costs`]: what the phone's hardware spends.
//!
//! Faults (latency, hang, offline, unauthorized, dropped connections) can be injected at runtime
//! to test the connector's error handling against a realistic transport. A phone can also be made hostile, in
//! the real wire formats: lying screen captures ([`SimPhone::lie_about_frames`]), lying shell-v2/sync lengths
//! ([`SimPhone::lie_about_lengths`]), any property value — another phone's `ro.serialno`, a 100 KB or
//! bidi-spoofing model ([`SimPhone::set_prop`]), any output of a command — terminal escapes on stderr
//! ([`SimPhone::answer`]). Each phone has its own random boot id
//! (`/proc/sys/kernel/random/boot_id`), shared by the paths of [`SimPhone::listen_also`].

pub mod cmdio;
pub mod commands;
pub mod costs;
pub mod device;
pub mod devtools;
pub mod font;
pub mod fs;
pub mod gates;
pub mod helper;
pub mod packages;
pub mod services;
pub mod shared;
pub mod shell;
pub mod shell_v2;
pub mod state;
pub mod stream;
pub mod sync;
pub mod transport;
pub mod ui;
pub mod wire;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

pub use costs::PhoneCosts;
use device::Device;
use shared::{Shared, Stalls};
pub use state::{Fault, FrameLie, InputEvent, SimConfig};

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
            transports: Default::default(),
            streams: Default::default(),
            link: costs::Link::default(),
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
    /// Makes the browser stand-in's DevTools socket hostile (see [`devtools::Lie`]).
    pub fn lie_about_devtools(&self, lie: devtools::Lie) {
        self.device().devtools_lie = lie;
    }

    /// Another app opens a DevTools socket named `socket` whose `/json/version` claims `claims` and which serves a
    /// forged page ([`devtools::FORGED_URL`]); listed before the browser's own (issue 48: squatting sockets).
    pub fn squat_devtools(&self, socket: &str, claims: &str) {
        self.device().devtools_squatters.push((socket.to_owned(), claims.to_owned()));
    }

    /// The browser page's search field's text.
    pub fn web_query(&self) -> String {
        self.device().ui.browser.input("q").to_owned()
    }

    /// How far the browser's page is scrolled (screen pixels).
    pub fn web_scroll(&self) -> i32 {
        self.device().ui.web_scroll
    }

    pub fn lie_about_lengths(&self, lie: bool) {
        self.device().length_lie = lie;
    }

    /// From now on every command line starting with `prefix` (e.g. `input tap`, `pm install`) prints `stdout` and
    /// `stderr` and exits with `status` instead of running: a phone whose tools print whatever they like — terminal
    /// escapes, forged lines, megabytes — as a vendor's `input` binary or a rooted phone can (hostile-phone tests).
    pub fn answer(&self, prefix: &str, stdout: &str, stderr: &str, status: i32) {
        let res = cmdio::ExecResult {
            stdout: stdout.as_bytes().to_vec(),
            stderr: stderr.as_bytes().to_vec(),
            status,
            ..Default::default()
        };
        self.device().answers.push((prefix.to_owned(), res));
    }

    /// Undoes [`SimPhone::answer`] for `prefix`: those commands run again.
    pub fn unanswer(&self, prefix: &str) {
        self.device().answers.retain(|(p, _)| p != prefix);
    }

    /// A setting as `settings get NAMESPACE NAME` would print it (`None`: unset, printed `null`).
    pub fn setting(&self, namespace: &str, name: &str) -> Option<String> {
        self.device().settings.get(&(namespace.to_owned(), name.to_owned())).cloned()
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

    /// Sets the boot id this phone reports (a relay that copied another phone's, readable by any app there).
    pub fn set_boot_id(&self, id: &str) {
        self.device().fs.put_system_file("/proc/sys/kernel/random/boot_id", format!("{id}\n").into_bytes(), 0o444);
    }

    /// Sets what `dumpsys battery` reports: level (%), temperature in tenths of a degree (451 = 45.1 °C), and
    /// whether the phone is on USB power (charging) or on battery.
    pub fn set_battery(&self, level: u32, temperature_tenths: i32, plugged: bool) {
        let mut d = self.device();
        d.battery_level = level;
        d.battery_temperature_tenths = temperature_tenths;
        d.battery_plugged = plugged;
    }

    /// Sets the /data file system `df` reports (bytes, rounded down to KiB as df counts).
    pub fn set_storage(&self, free_bytes: u64, total_bytes: u64) {
        let mut d = self.device();
        d.data_free_kib = free_bytes / 1024;
        d.data_total_kib = total_bytes / 1024;
    }

    /// Transport connections accepted so far: one per `adb connect`, one more per reconnect of the adb server.
    pub fn transports(&self) -> u64 {
        self.shared.transports.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Streams opened on the phone so far (every shell or exec command, sync session, framebuffer read): the round
    /// trips a client paid.
    pub fn streams(&self) -> u64 {
        self.shared.streams.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Bytes the phone's streams (shell, exec, framebuffer, sync, ...) have sent to the host so far: stream
    /// payloads as they cross the link, without the ADB message headers.
    pub fn bytes_sent(&self) -> u64 {
        self.shared.link.sent.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Every input event injected so far (oldest first).
    pub fn events(&self) -> Vec<InputEvent> {
        self.device().events.clone()
    }

    /// Processes beyond the fixed system ones (running phone helpers): pid and arguments, as `ps` lists them.
    pub fn processes(&self) -> Vec<(u32, String)> {
        self.device().processes.iter().map(|p| (p.pid, p.args.clone())).collect()
    }

    /// The primary clip (what the phone helper's paste sets and puts back).
    pub fn clipboard(&self) -> Option<String> {
        self.device().clipboard.clone()
    }

    /// Sets the primary clip, as an app copying text would.
    pub fn set_clipboard(&self, clip: Option<&str>) {
        self.device().clipboard = clip.map(str::to_owned);
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

    /// The home screen's text field and the demo app's sign-in password field, as typed.
    pub fn fields(&self) -> (String, String) {
        let d = self.device();
        (d.ui.text.clone(), d.ui.password.clone())
    }

    /// Whether a screen-change animation is running now (`SimConfig::animation_ms`).
    pub fn animating(&self) -> bool {
        self.device().ui.animation_left().is_some()
    }

    /// The app in front, `package/activity`.
    pub fn foreground(&self) -> String {
        self.device().ui.foreground.component()
    }

    /// Labels of the demo app's elements that taps hit ("OK (left)", "Item 7"), oldest first.
    pub fn clicks(&self) -> Vec<String> {
        self.device().ui.clicks.clone()
    }

    /// How far the demo app's list is scrolled, in pixels.
    pub fn list_offset(&self) -> i32 {
        self.device().ui.list_offset
    }

    /// How far the Settings list is scrolled, in pixels.
    pub fn settings_offset(&self) -> i32 {
        self.device().ui.settings_offset
    }

    /// Chooses the screen lock (as in Settings) and, for a lock other than `None`, locks the phone now: the
    /// keyguard shows until a swipe up or `wm dismiss-keyguard` opens it (a `Secure` one never opens over adb).
    pub fn set_lock(&self, mode: ui::LockMode) {
        let mut d = self.device();
        d.ui.lock = mode;
        d.ui.keyguard_showing = mode != ui::LockMode::None;
    }

    /// A PIN screen lock: the phone locks when its screen goes off (POWER), and its keyguard shows the PIN pad
    /// once the screen is on, which opens with this PIN (typed or tapped, then ENTER). Not locked now.
    pub fn set_pin_lock(&self, pin: &str) {
        let mut d = self.device();
        d.ui.lock = ui::LockMode::Secure;
        d.ui.pin = Some(pin.to_owned());
    }

    /// The SMS the phone received so far (sender, text), oldest first.
    pub fn sms(&self) -> Vec<(String, String)> {
        let now = std::time::Instant::now();
        self.device().ui.sms.iter().filter(|m| m.arrives <= now).map(|m| (m.from.clone(), m.body.clone())).collect()
    }

    /// The page the browser shows (address-bar form, `sim.example/news`).
    pub fn browser_at(&self) -> String {
        self.device().ui.browser.at.clone()
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

    /// A runtime-permission prompt (`com.google.android.permissioncontroller`) floats over the app with `message`,
    /// as when the app asks for a permission: Allow / Don't allow, modal, dismissed by BACK (`sim/ui/windows.rs`).
    /// A tap on a button records its label in [`SimPhone::clicks`].
    pub fn show_permission_prompt(&self, message: &str) {
        self.device().ui.permission_prompt = Some(ui::PermissionPrompt { message: message.to_owned() });
    }

    /// The app's window has no views yet (`on`: an activity still inflating its layout): both trees hold its root
    /// node alone, and the picture shows no text.
    pub fn set_app_loading(&self, on: bool) {
        self.device().ui.app_loading = on;
    }

    /// Whether the permission prompt still shows.
    pub fn permission_prompt_shown(&self) -> bool {
        self.device().ui.permission_prompt.is_some()
    }

    /// The app draws one plain colour (a splash or loading screen): captures are uniform white, nothing is secure.
    pub fn set_plain_screen(&self, on: bool) {
        self.device().ui.plain_screen = on;
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

    /// Posts a notification as app `package` would (`NotificationManager.notify`); its text is the app's own, so
    /// any characters (newlines, lines that look like the dump) may be in it. Returns its id.
    pub fn post_notification(&self, package: &str, title: Option<&str>, text: Option<&str>, ongoing: bool) -> u32 {
        let mut d = self.device();
        let id = d.notifications.iter().map(|n| n.id).max().unwrap_or(0) + 1;
        let posted_ms =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |t| t.as_millis() as u64);
        d.notifications.push(device::SimNotification {
            package: package.to_owned(),
            id,
            title: title.map(str::to_owned),
            text: text.map(str::to_owned),
            ongoing,
            posted_ms,
        });
        id
    }

    /// Appends one line to the phone's logcat buffer, as an app calling `android.util.Log` would.
    pub fn log(&self, priority: char, tag: &str, message: &str) {
        self.device().log(priority, tag, message);
    }

    /// A file of the phone's filesystem (`None` when missing or a directory).
    pub fn read_file(&self, path: &str) -> Option<Vec<u8>> {
        self.device().fs.read(path).ok().map(<[u8]>::to_vec)
    }

    /// Files under the directory `dir` (full paths), e.g. the captures a host left in `/data/local/tmp`.
    pub fn files_under(&self, dir: &str) -> Vec<String> {
        self.device().fs.files_under(dir)
    }

    /// Makes `path` and everything below it read-only (writes fail with EROFS), as a full or remounted data
    /// partition would refuse them.
    pub fn mount_read_only(&self, path: &str) {
        self.device().fs.mount_read_only(path);
    }

    /// Creates or replaces a file (parents are created), as an app writing to storage would.
    pub fn write_file(&self, path: &str, data: &[u8]) -> bool {
        self.write_file_aged(path, data, 0)
    }

    /// [`SimPhone::write_file`] with a modification time `age_secs` in the past (a file left there long ago).
    pub fn write_file_aged(&self, path: &str, data: &[u8], age_secs: u32) -> bool {
        let mtime = device::now_unix_secs().saturating_sub(age_secs);
        self.device().fs.write(path, data.to_vec(), 0o660, mtime, true).is_ok()
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
                shared.transports.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
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

//! Mutable state of the simulated phone (everything a shell command can observe or change).
//!
//! It lives behind one `std::sync::Mutex` owned by the `SimPhone` handle: commands are
//! short and synchronous, so a plain mutex (never held across an `.await`) keeps every command
//! atomic with respect to the others, like a single-threaded device would appear.

use std::collections::{BTreeMap, VecDeque};
use std::time::{SystemTime, UNIX_EPOCH};

use super::cmdio::ExecResult;
use super::costs::Cores;
use super::fs::MemFs;
use super::state::{DevtoolsLie, FrameLie, InputEvent, SimConfig};
use super::ui::Ui;

/// Logcat ring size; old lines are dropped like the kernel log buffer does.
const LOG_CAPACITY: usize = 2000;
/// Bounded command/event logs so a long-running demo cannot grow without limit.
const HISTORY_CAPACITY: usize = 100_000;

#[derive(Debug, Clone)]
pub struct Package {
    pub system: bool,
    pub path: String,
    pub launcher_activity: String,
}

#[derive(Debug, Clone)]
pub struct LogLine {
    pub unix_ms: u64,
    pub pid: u32,
    pub tid: u32,
    pub prio: char,
    pub tag: String,
    pub msg: String,
}

/// One posted notification, as an app's `NotificationManager.notify` leaves it.
#[derive(Clone, Debug)]
pub struct SimNotification {
    pub package: String,
    pub id: u32,
    pub title: Option<String>,
    pub text: Option<String>,
    pub ongoing: bool,
    /// Posting time on the phone's clock (ms since the epoch): `mCreationTimeMs` and `when`.
    pub posted_ms: u64,
}

pub struct Device {
    pub cfg: SimConfig,
    pub serial: String,
    pub fs: MemFs,
    pub ui: Ui,
    pub props: BTreeMap<String, String>,
    pub packages: BTreeMap<String, Package>,
    pub settings: BTreeMap<(String, String), String>,
    pub imes: Vec<String>,
    pub logcat: VecDeque<LogLine>,
    pub commands: Vec<String>,
    pub events: Vec<InputEvent>,
    pub battery_level: u32,
    /// `dumpsys battery`'s `temperature:` in tenths of a degree (268 = 26.8 °C).
    pub battery_temperature_tenths: i32,
    /// On USB power (`USB powered: true`, `status: 2` charging); false: on battery (`status: 3` discharging).
    pub battery_plugged: bool,
    /// The notifications the phone shows (`SimPhone::post_notification`), printed by `dumpsys notification`.
    pub notifications: Vec<SimNotification>,
    /// Granted runtime permissions: (package, permission) (`sim::packages`).
    pub granted: std::collections::BTreeSet<(String, String)>,
    /// The /data file system as `df` reports it, in KiB.
    pub data_free_kib: u64,
    pub data_total_kib: u64,
    /// When this phone booted (`/proc/uptime`).
    pub booted: std::time::Instant,
    pub installs: u32,
    /// How long `uiautomator dump` waits for an idle UI before giving up (10 s on real phones).
    pub idle_timeout: std::time::Duration,
    /// How screen captures lie (hostile-phone tests); [`FrameLie::None`] for an honest phone.
    pub frame_lie: FrameLie,
    /// How the browser stand-in's DevTools socket lies (hostile-page tests); `Lie::None` for an honest one.
    pub devtools_lie: DevtoolsLie,
    /// DevTools sockets another app opened (hostile-app tests, issue 48): (socket name, the package its
    /// `/json/version` claims), listed in `/proc/net/unix` before the browser's, always listening, serving a forged
    /// page.
    pub devtools_squatters: Vec<(String, String)>,
    /// Shell-protocol v2 packets and sync `DATA` chunks announce 0xFFFFFFF0 bytes (hostile-phone tests).
    pub length_lie: bool,
    /// Command lines answered with a scripted output instead of running (hostile-phone tests): the first entry
    /// whose prefix starts the command line wins.
    pub answers: Vec<(String, ExecResult)>,
    /// The phone's fast cores as phone-side tools use them (`gzip`), shared by every command of the phone.
    pub(crate) cores: Cores,
    /// The file-creation mask of the shell running the current command line (`umask`); each command line is a
    /// new shell, which starts from adbd's.
    pub umask: u32,
    /// The primary clip (`ClipboardManager`): what the phone helper's paste sets and puts back.
    pub clipboard: Option<String>,
    /// Processes a test can see with `ps` and end with `kill` beyond the fixed system ones: running phone helpers.
    pub processes: Vec<Process>,
    pub next_pid: u32,
}

/// A running phone helper (`helper.rs`) as `ps` and `kill` see it.
#[derive(Debug, Clone)]
pub struct Process {
    pub pid: u32,
    pub args: String,
    /// Notified by `kill`: the helper ends with 137.
    pub(super) kill: std::sync::Arc<tokio::sync::Notify>,
}

pub fn now_unix_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

/// The umask each simulated command line starts from. Not a claim about real phones (it differs between releases
/// and vendors, which is why the connector sets its own with `umask 077` before writing a capture): 0, so the
/// modes the tools ask for are the modes files get.
pub const ADBD_UMASK: u32 = 0;

/// Component id of the ADB Keyboard IME.
pub const ADB_KEYBOARD: &str = "com.android.adbkeyboard/.AdbIME";

pub fn now_unix_secs() -> u32 {
    (now_unix_ms() / 1000) as u32
}

const SYSTEM_PACKAGES: &[(&str, &str)] = &[
    ("android", ""),
    ("com.android.systemui", ""),
    ("com.android.launcher3", "com.android.launcher3.uioverrides.QuickstepLauncher"),
    ("com.android.settings", "com.android.settings.Settings"),
    ("com.android.chrome", "com.google.android.apps.chrome.Main"),
    ("com.android.vending", "com.android.vending.AssetBrowserActivity"),
    ("com.google.android.calculator", "com.android.calculator2.Calculator"),
    ("com.google.android.deskclock", "com.android.deskclock.DeskClock"),
    ("com.android.shell", ""),
    ("com.google.android.inputmethod.latin", ""),
    ("com.google.android.apps.messaging", "com.google.android.apps.messaging.ui.ConversationListActivity"),
];

impl Device {
    pub fn new(cfg: SimConfig, serial: String) -> Self {
        let boot = now_unix_secs();
        let mut props = BTreeMap::new();
        let device_name = cfg.model.to_lowercase().split_whitespace().next().unwrap_or("sim").to_string();
        let p = |props: &mut BTreeMap<String, String>, k: &str, v: &str| {
            props.insert(k.to_string(), v.to_string());
        };
        p(&mut props, "ro.product.model", &cfg.model);
        p(&mut props, "ro.product.manufacturer", &cfg.manufacturer);
        p(&mut props, "ro.product.brand", &cfg.manufacturer.to_lowercase());
        p(&mut props, "ro.product.name", &format!("{device_name}_sim"));
        p(&mut props, "ro.product.device", &format!("{device_name}_sim"));
        p(&mut props, "ro.product.cpu.abi", "x86_64");
        p(&mut props, "ro.build.version.release", &cfg.android_version);
        p(&mut props, "ro.build.version.sdk", &cfg.sdk.to_string());
        p(&mut props, "ro.build.type", "user");
        p(&mut props, "ro.build.tags", "release-keys");
        p(&mut props, "ro.build.id", "UQ1A.240105.004");
        p(
            &mut props,
            "ro.build.fingerprint",
            &format!(
                "xagent/{device_name}_sim/{device_name}:{}/UQ1A.240105.004/1:user/release-keys",
                cfg.android_version
            ),
        );
        p(&mut props, "ro.serialno", &serial);
        p(&mut props, "ro.boot.serialno", &serial);
        p(&mut props, "ro.sf.lcd_density", &cfg.density.to_string());
        p(&mut props, "ro.secure", "1");
        p(&mut props, "ro.debuggable", "0");
        p(&mut props, "sys.boot_completed", "1");
        p(&mut props, "dev.bootcomplete", "1");
        p(&mut props, "init.svc.bootanim", "stopped");
        p(&mut props, "persist.sys.timezone", "UTC");
        p(&mut props, "persist.sys.locale", "en-US");
        let mut packages = BTreeMap::new();
        for (name, act) in SYSTEM_PACKAGES {
            let dir = if name.starts_with("com.google") || *name == "com.android.chrome" {
                "product/app"
            } else {
                "system/priv-app"
            };
            let short = name.rsplit('.').next().unwrap_or(name);
            packages.insert(
                name.to_string(),
                Package {
                    system: true,
                    path: format!("/{dir}/{short}/{short}.apk"),
                    launcher_activity: act.to_string(),
                },
            );
        }
        packages.insert(
            super::ui::WEBVIEW_APP_PACKAGE.into(),
            Package {
                system: false,
                path: "/data/app/~~aGVscA==/com.xagent.help-1/base.apk".into(),
                launcher_activity: "com.xagent.help.MainActivity".into(),
            },
        );
        packages.insert(
            "com.xagent.demo".into(),
            Package {
                system: false,
                path: "/data/app/~~c2ltZGVtbw==/com.xagent.demo-1/base.apk".into(),
                launcher_activity: "com.xagent.demo.MainActivity".into(),
            },
        );
        let mut settings = BTreeMap::new();
        for (ns, k, v) in [
            ("system", "screen_brightness", "128"),
            ("system", "screen_off_timeout", "60000"),
            // Auto-rotate off (AOSP's `def_accelerometer_rotation`); `user_rotation` unset (`null`) until written.
            ("system", "accelerometer_rotation", "0"),
            ("global", "airplane_mode_on", "0"),
            ("global", "adb_enabled", "1"),
            ("global", "stay_on_while_plugged_in", "0"),
            (
                "secure",
                "default_input_method",
                "com.google.android.inputmethod.latin/com.android.inputmethod.latin.LatinIME",
            ),
            ("secure", "android_id", "5a1b2c3d4e5f6071"),
            // Dark mode off, as `cmd uimode night no` leaves it (`sim::commands::uimode`).
            ("secure", "ui_night_mode", "1"),
        ] {
            settings.insert((ns.to_string(), k.to_string()), v.to_string());
        }
        let mut ui = Ui::new(cfg.screen_width, cfg.screen_height);
        ui.animation = std::time::Duration::from_millis(u64::from(cfg.animation_ms));
        let mut imes: Vec<String> = vec![
            "com.google.android.inputmethod.latin/com.android.inputmethod.latin.LatinIME".into(),
            "com.xagent.sim.ime/.SimKeyboard".into(),
        ];
        if cfg.adb_keyboard {
            imes.push(ADB_KEYBOARD.into());
        }
        let mut d = Device {
            fs: MemFs::new(boot),
            ui,
            props,
            packages,
            settings,
            imes,
            logcat: VecDeque::new(),
            commands: Vec::new(),
            events: Vec::new(),
            battery_level: 87,
            battery_temperature_tenths: 268,
            battery_plugged: true,
            notifications: Vec::new(),
            granted: Default::default(),
            // A 128 GB phone with half of it free (toybox reports 1K blocks).
            data_free_kib: 56_089_024,
            data_total_kib: 112_178_048,
            booted: std::time::Instant::now(),
            installs: 0,
            idle_timeout: std::time::Duration::from_secs(10),
            frame_lie: FrameLie::None,
            devtools_lie: DevtoolsLie::None,
            devtools_squatters: Vec::new(),
            length_lie: false,
            answers: Vec::new(),
            cores: Cores::default(),
            umask: ADBD_UMASK,
            clipboard: None,
            processes: Vec::new(),
            next_pid: 5000,
            cfg,
            serial,
        };
        // The kernel's boot id: a random UUID per boot, one line (`cat /proc/sys/kernel/random/boot_id` prints
        // e.g. `5f0e3c1a-9b7d-4e2f-8a6c-1d3b5e7f9a0c`; see tests/fixtures/real/INDEX.md). Every path to this
        // simulated phone (`SimPhone::listen_also`) reads the same one, like a real phone's USB and Wi-Fi paths.
        let h = crate::protocol::ids::random_hex(16);
        let boot_id = format!("{}-{}-{}-{}-{}\n", &h[..8], &h[8..12], &h[12..16], &h[16..20], &h[20..]);
        d.fs.put_system_file("/proc/sys/kernel/random/boot_id", boot_id.into_bytes(), 0o444);
        // Settings → About phone reads what `getprop` says.
        let prop = |k: &str| d.props.get(k).cloned().unwrap_or_default();
        d.ui.about = vec![
            ("Device name".into(), prop("ro.product.model")),
            ("Phone number".into(), "Unknown".into()),
            ("Model".into(), prop("ro.product.model")),
            ("Android version".into(), prop("ro.build.version.release")),
            ("Build number".into(), prop("ro.build.id")),
        ];
        d.log('I', "ActivityManager", "System server boot completed");
        d.log('I', "Launcher", "Displayed com.android.launcher3/.uioverrides.QuickstepLauncher");
        d
    }

    pub fn log(&mut self, prio: char, tag: &str, msg: &str) {
        let pid = 1000 + (tag.bytes().map(u32::from).sum::<u32>() % 8000);
        self.logcat.push_back(LogLine {
            unix_ms: now_unix_ms(),
            pid,
            tid: pid,
            prio,
            tag: tag.into(),
            msg: msg.into(),
        });
        while self.logcat.len() > LOG_CAPACITY {
            self.logcat.pop_front();
        }
    }

    /// Posts the notification of each SMS that arrived since the last look (`ui::Sms`): the messages app's, with
    /// the sender as title and the message as text, stamped with its arrival.
    pub fn deliver_sms(&mut self) {
        let now = std::time::Instant::now();
        let wall = now_unix_ms();
        let mut due = Vec::new();
        for m in self.ui.sms.iter_mut().filter(|m| !m.notified && m.arrives <= now) {
            m.notified = true;
            let ago = now.duration_since(m.arrives).as_millis() as u64;
            due.push((m.from.clone(), m.body.clone(), wall.saturating_sub(ago)));
        }
        for (from, body, posted_ms) in due {
            let id = self.notifications.iter().map(|n| n.id).max().unwrap_or(0) + 1;
            self.notifications.push(SimNotification {
                package: super::ui::MESSAGES_PACKAGE.to_owned(),
                id,
                title: Some(from),
                text: Some(body),
                ongoing: false,
                posted_ms,
            });
        }
    }

    pub fn record_command(&mut self, cmd: &str) {
        if self.commands.len() >= HISTORY_CAPACITY {
            self.commands.remove(0);
        }
        self.commands.push(cmd.to_string());
    }

    pub fn record_event(&mut self, ev: InputEvent) {
        if self.events.len() >= HISTORY_CAPACITY {
            self.events.remove(0);
        }
        self.events.push(ev);
    }
}

/// Formats a log line in `threadtime` format (`MM-DD HH:MM:SS.mmm  PID  TID P TAG: msg`), the
/// logcat default since Android 7, or `brief` (`P/TAG( PID): msg`).
pub fn format_log(l: &LogLine, format: &str) -> String {
    let secs = (l.unix_ms / 1000) as i64;
    let ms = l.unix_ms % 1000;
    let (_, mo, d) = crate::build_info::civil_from_days(secs.div_euclid(86_400));
    let sod = secs.rem_euclid(86_400);
    let (hh, mm, ss) = (sod / 3600, (sod % 3600) / 60, sod % 60);
    let ts = format!("{mo:02}-{d:02} {hh:02}:{mm:02}:{ss:02}.{ms:03}");
    match format {
        "brief" => format!("{}/{}({:5}): {}", l.prio, l.tag, l.pid, l.msg),
        "time" => format!("{ts} {}/{}({:5}): {}", l.prio, l.tag, l.pid, l.msg),
        "tag" => format!("{}/{}: {}", l.prio, l.tag, l.msg),
        "raw" => l.msg.clone(),
        _ => format!("{ts} {:5} {:5} {} {}: {}", l.pid, l.tid, l.prio, l.tag, l.msg),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The verification probe's boot-id read, as the connector sends it: one UUID line, a new one per boot.
    #[test]
    fn boot_id_reads_like_a_real_phone() {
        let mut d = Device::new(SimConfig::default(), "127.0.0.1:5555".into());
        let run = |d: &mut Device, s: &str| {
            String::from_utf8_lossy(&super::super::commands::run_line(d, s, b"").stdout).into_owned()
        };
        let id = run(&mut d, "cat /proc/sys/kernel/random/boot_id 2>/dev/null || echo");
        assert_eq!(id.len(), 37, "{id:?}");
        assert!(id.ends_with('\n') && id[..36].chars().filter(|c| *c == '-').count() == 4, "{id:?}");
        let other = Device::new(SimConfig::default(), "127.0.0.1:5557".into());
        assert_ne!(other.fs.read("/proc/sys/kernel/random/boot_id").unwrap(), id.as_bytes(), "random per phone");
        d.fs = MemFs::new(0);
        assert_eq!(
            run(&mut d, "getprop ro.serialno; cat /proc/sys/kernel/random/boot_id 2>/dev/null || echo"),
            "127.0.0.1:5555\n\n"
        );
    }
}

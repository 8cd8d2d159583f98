//! What a real phone charges for starting and running each command: the time model of the simulated phone.
//!
//! A loopback simulator answers in microseconds; a phone does not. Every figure that compares the connector with
//! the adb command line is only honest if the phone charges both sides what a phone charges (issue 31): a stream
//! open is a USB round trip, `input` on Android ≤ 11 starts a Java VM, `uiautomator dump` starts one and then waits
//! for a second of accessibility quiet, a `dumpsys` costs tens of milliseconds per service. Functional tests keep
//! every cost at zero ([`PhoneCosts::default`]); the benchmark and the demo turn them on ([`PhoneCosts::phone`]).
//!
//! The generation is the simulated phone's `sdk`: what changes between generations is *which* programs are Java
//! (an `app_process` VM start each time) and which are thin `cmd` wrappers (a binder call into system_server).
//! AOSP, by source (`BENCHMARKS.md`, "Phone costs", has every figure's source):
//!
//! | program | ≤ Android 7.1 (API 25) | 8 – 11 (API 26 – 30) | 12+ (API 31+) |
//! |---|---|---|---|
//! | `input` | VM (`cmds/input/input`: `app_process … Input`) | VM | `cmd input "$@"` (`cmds/input/input.sh`) |
//! | `am`, `pm` | VM (appium-adb#355 measured ~1.15 s on API 24) | `cmd activity` / `cmd package` | same |
//! | `am instrument`, `content`, `uiautomator`, `monkey` | VM | VM | VM (`cmds/*/…`: still `exec app_process`) |
//! | `settings`, `wm`, `ime` | `cmd` wrappers | same | same |
//!
//! Costs are added to the command line's modelled time ([`super::shell::CmdIo::sleep`]): the service answers once
//! the whole line's time has passed, as a phone's shell does.

use std::sync::Mutex;
use std::time::Duration;

/// Time a real phone spends that a loopback simulator would not. Capture costs (display read, PNG, link, gzip)
/// are paid as a wait on top of the sim's own work (the sim waits until the modelled time has passed since the
/// work started, so a slow host does not double-count); command costs are added to the command line's time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PhoneCosts {
    /// Reading the display once (`screencap`, `framebuffer:`), before any encoding.
    pub display_read: Duration,
    /// PNG encoding on the phone's CPU per megapixel (`screencap -p`).
    pub png_per_megapixel: Duration,
    /// Device-to-host link rate in bytes per second, shared by every stream of the phone (shell, exec,
    /// framebuffer, sync); 0 = unlimited.
    pub link_bytes_per_s: u64,
    /// Input throughput of the phone-side `gzip -1` in bytes per second, on one core; 0 = free.
    pub gzip_bytes_per_s: u64,
    /// Cores that run phone-side tools at full rate at once: at most this many `gzip`s compress at
    /// `gzip_bytes_per_s` together, more wait for a core (0 = as many as ask). What `nproc` prints is
    /// [`super::SimConfig::cpus`]; this is how many of them are fast.
    pub cores: u32,
    /// Opening one adb stream (OPEN → OKAY over USB) and, for a shell, adbd forking `sh`: paid by every service
    /// request, the connector's and the adb CLI's alike.
    pub stream_open: Duration,
    /// Starting a Java program (`app_process`: a fresh VM, its class path, `BaseCommand.main`).
    pub vm_start: Duration,
    /// A `cmd SERVICE …` binder call into system_server: the `cmd` process, the transaction, the service's
    /// shell-command handler.
    pub binder_call: Duration,
    /// One touch event injected with `INJECT_INPUT_EVENT_MODE_WAIT_FOR_FINISH` (what `input` does): until the
    /// app's window has handled it.
    pub touch_event: Duration,
    /// One key event injected the same way (`input keyevent`, each character of `input text`).
    pub key_event: Duration,
    /// `UiAutomation` connecting (`uiautomator dump` after its VM start).
    pub uiautomation_connect: Duration,
    /// `uiautomator dump`'s `waitForIdle(1000, 10000)`: the accessibility stream must be quiet this long.
    pub dump_idle: Duration,
    /// Serialising one node of the UI tree (`uiautomator dump`).
    pub dump_per_node: Duration,
    /// `dumpsys SERVICE` of a small service (power, input, input_method, battery, display): the binary, the
    /// binder dump, the text.
    pub dumpsys: Duration,
    /// `dumpsys window` (any section).
    pub dumpsys_window: Duration,
    /// `dumpsys activity` (any section) and `dumpsys package`: the large ones.
    pub dumpsys_activity: Duration,
    /// `getprop`: a read of the property area, no binder.
    pub getprop: Duration,
    /// The resident phone helper's start (`app_process`: a VM, its dex, the reflective look-ups), paid once per
    /// phone connection (`helper.rs`).
    pub helper_start: Duration,
    /// One request of a running helper that injects or reads the screen state (`tap`, `key`, `text`, `screen`):
    /// a few binder calls, no VM, no synchronous wait for the app.
    pub helper_call: Duration,
    /// A helper's `tree`: the UiAutomation walk, plus [`PhoneCosts::helper_tree_per_kb`] per KiB of XML.
    pub helper_tree: Duration,
    pub helper_tree_per_kb: Duration,
    /// A helper's `frame`: the display read in its process (SurfaceFlinger's capture and the copy out of the
    /// hardware buffer), plus [`PhoneCosts::helper_frame_per_megapixel`] for averaging every pixel into cells.
    pub helper_frame: Duration,
    pub helper_frame_per_megapixel: Duration,
}

impl PhoneCosts {
    /// A mid-range phone's capture path on USB 2.0 (the screenshot benchmarks' figures, sources in
    /// `BENCHMARKS.md`); commands start for free.
    pub fn usb2() -> PhoneCosts {
        PhoneCosts {
            display_read: Duration::from_millis(100),
            png_per_megapixel: Duration::from_millis(150),
            link_bytes_per_s: 35_000_000,
            gzip_bytes_per_s: 60_000_000,
            // Tensor G2 (Pixel 7, the phone this simulator plays): 2 Cortex-X1 + 2 Cortex-A78 + 4 Cortex-A55. The
            // four big and mid cores are the ones that run a compressor at anything like the rate above; the
            // little cores are left out (BENCHMARKS.md, "Issue 24").
            cores: 4,
            ..PhoneCosts::default()
        }
    }

    /// A real phone on USB 2.0: the capture path of [`PhoneCosts::usb2`] and what starting and running each
    /// command costs. Which programs pay [`PhoneCosts::vm_start`] follows the simulated phone's `sdk`, so one
    /// profile serves every generation. Each figure's source: `BENCHMARKS.md`, "Phone costs".
    pub fn phone() -> PhoneCosts {
        PhoneCosts {
            stream_open: Duration::from_millis(15),
            // `input tap` on Android ≤ 11: 0.3–1.2 s measured on real phones, the VM start dominating.
            vm_start: Duration::from_millis(600),
            // `wm size` ≈ 20 ms on the phone (a `cmd window` call).
            binder_call: Duration::from_millis(20),
            // `input tap` on 12+ ≈ 60 ms on the phone: the `cmd` call and two synchronous touch injections.
            touch_event: Duration::from_millis(20),
            // `input keyevent` / `input text`: ~10 ms a key (DOWN and UP).
            key_event: Duration::from_millis(5),
            // `uiautomator dump`: ~0.8 s before it looks at the screen (the VM start and the connection).
            uiautomation_connect: Duration::from_millis(200),
            dump_idle: Duration::from_millis(1000),
            dump_per_node: Duration::from_millis(5),
            dumpsys: Duration::from_millis(30),
            dumpsys_window: Duration::from_millis(50),
            dumpsys_activity: Duration::from_millis(100),
            getprop: Duration::from_millis(5),
            // The phone helper (issue 32; mobilecli measured a tap at 5.6 ms with its resident dex).
            helper_start: Duration::from_millis(1000),
            helper_call: Duration::from_millis(5),
            helper_tree: Duration::from_millis(20),
            helper_tree_per_kb: Duration::from_millis(4),
            // An in-process capture: 30–130 ms measured for peers' resident screenshots that also scale and
            // encode a JPEG (research notes §6: handsets.dev 8–12 ms on an emulator, midscene's scrcpy path
            // 130 ms); no encoding here, so the low end plus the hardware buffer's copy. The averaging pass is
            // one read of each pixel in ART, ~10 ns each once JIT-compiled. Both interpolated, not measured.
            helper_frame: Duration::from_millis(40),
            helper_frame_per_megapixel: Duration::from_millis(10),
            ..PhoneCosts::usb2()
        }
    }

    /// How long `bytes` take at `per_s` bytes per second (zero when the rate is unlimited).
    pub(crate) fn at_rate(bytes: usize, per_s: u64) -> Duration {
        if per_s == 0 {
            return Duration::ZERO;
        }
        Duration::from_secs_f64(bytes as f64 / per_s as f64)
    }

    /// What starting and running `argv` costs a phone of API level `sdk`, beyond what the command's own
    /// implementation charges (captures, gzip, the dump's idle wait and nodes): the program's start (a VM or a
    /// binder call) and the work its arguments alone determine (events injected, a swipe's duration).
    /// `cmd SERVICE …` is charged here once; the tool it reaches is not charged again.
    pub(crate) fn command(&self, sdk: u32, argv: &[&str]) -> Duration {
        let Some((name, args)) = argv.split_first() else { return Duration::ZERO };
        let name = name.rsplit('/').next().unwrap_or(name);
        let first = args.first().copied().unwrap_or("");
        match name {
            "input" => self.start(sdk <= LAST_JAVA_INPUT) + self.input_work(sdk, args),
            "am" if first == "instrument" => self.vm_start,
            "am" | "pm" => self.start(sdk <= LAST_JAVA_AM_PM) + self.extra(name, first),
            "uiautomator" => self.vm_start + self.uiautomation_connect,
            "content" | "monkey" => self.vm_start,
            "settings" | "wm" | "ime" => self.binder_call,
            "cmd" => {
                let tool = match first {
                    "input" => return self.binder_call + self.input_work(sdk, &args[1..]),
                    "package" => "pm",
                    "activity" => "am",
                    _ => "",
                };
                self.binder_call + self.extra(tool, args.get(1).copied().unwrap_or(""))
            }
            "dumpsys" => match first {
                "window" => self.dumpsys_window,
                "activity" | "package" => self.dumpsys_activity,
                _ => self.dumpsys,
            },
            "getprop" => self.getprop,
            _ => Duration::ZERO,
        }
    }

    fn start(&self, java: bool) -> Duration {
        if java {
            self.vm_start
        } else {
            self.binder_call
        }
    }

    /// The package manager's listing walks every installed package: ~150 ms on 12+ phones instead of a plain
    /// call's 20 ms.
    fn extra(&self, tool: &str, verb: &str) -> Duration {
        match (tool, verb) {
            ("pm", "list") => self.binder_call * 6,
            _ => Duration::ZERO,
        }
    }

    /// The events `input ARGS` injects, each synchronously, and the time a gesture holds by itself.
    fn input_work(&self, sdk: u32, args: &[&str]) -> Duration {
        // `input [SOURCE] VERB …`: a source name (touchscreen, keyboard, …) may come first.
        let args = match args.first() {
            Some(s) if INPUT_SOURCES.contains(s) => &args[1..],
            _ => args,
        };
        let Some((verb, rest)) = args.split_first() else { return Duration::ZERO };
        match *verb {
            "tap" => self.touch_event * 2,
            // A busy loop of synchronous MOVEs until the duration has passed (300 ms unless given), then UP.
            "swipe" | "draganddrop" => {
                let ms = rest.get(4).and_then(|d| d.parse::<u64>().ok()).unwrap_or(300).min(60_000);
                Duration::from_millis(ms) + self.touch_event * 2
            }
            "motionevent" => self.touch_event,
            "keyevent" | "keycombination" => {
                let long = rest.contains(&"--longpress");
                let keys = rest.iter().filter(|a| !a.starts_with("--")).count() as u32;
                // 12+ sleeps the long-press timeout between DOWN and UP; ≤ 11 sends a repeat event at once.
                let hold = if long && sdk > LAST_JAVA_INPUT { LONG_PRESS_TIMEOUT } else { Duration::ZERO };
                self.key_event * 2 * keys + hold
            }
            // Each character is DOWN + UP (four events with SHIFT), all synchronous.
            "text" => {
                let chars = rest.first().map_or(0, |t| t.chars().count()) as u32;
                let shifted = rest.first().map_or(0, |t| t.chars().filter(|c| c.is_ascii_uppercase()).count()) as u32;
                self.key_event * 2 * (chars + shifted)
            }
            _ => Duration::ZERO,
        }
    }
}

/// The last API level whose `input` is a Java program (Android 11; 12 made it `cmd input`).
pub const LAST_JAVA_INPUT: u32 = 30;
/// The last API level whose `am` and `pm` start a VM for every call (Android 7.1; appium-adb#355 measured it on
/// API 24).
pub const LAST_JAVA_AM_PM: u32 = 25;
/// `ViewConfiguration.getLongPressTimeout()` default (`DEFAULT_LONG_PRESS_TIMEOUT`, 400 ms since Android 12).
const LONG_PRESS_TIMEOUT: Duration = Duration::from_millis(400);
/// Input sources `input` accepts before the verb (`Input.java` / `InputShellCommand.java`).
const INPUT_SOURCES: &[&str] = &[
    "keyboard",
    "gamepad",
    "touchscreen",
    "touchpad",
    "touchnavigation",
    "trackball",
    "dpad",
    "stylus",
    "joystick",
    "mouse",
    "rotaryencoder",
];

/// The phone's CPU cores as phone-side tools see them ([`PhoneCosts::cores`]): each job takes the core that frees
/// first and holds it for its whole cost, so with `n` cores at most `n` jobs run at once at full rate.
#[derive(Debug, Default)]
pub(crate) struct Cores {
    busy_until: Vec<tokio::time::Instant>,
}

impl Cores {
    /// Reserves a core for `cost` starting no earlier than `from`; returns when the job is done. `cores` = 0:
    /// every job has a core of its own.
    pub(crate) fn run(&mut self, cores: u32, from: tokio::time::Instant, cost: Duration) -> tokio::time::Instant {
        if cores == 0 {
            return from + cost;
        }
        self.busy_until.resize(cores as usize, from);
        let core = (0..self.busy_until.len()).min_by_key(|i| self.busy_until[*i]).unwrap_or(0);
        let end = self.busy_until[core].max(from) + cost;
        self.busy_until[core] = end;
        end
    }
}

/// The phone's one USB link: every byte any stream sends to the host takes its turn at the configured rate.
#[derive(Default)]
pub(crate) struct Link {
    busy_until: Mutex<Option<tokio::time::Instant>>,
    /// Every byte any stream sent to the host (paced or not): what [`SimPhone::bytes_sent`] reports.
    pub(crate) sent: std::sync::atomic::AtomicU64,
}

impl Link {
    /// Reserves the link for `bytes` at `per_s`; returns when they have crossed it.
    pub(crate) fn reserve(&self, bytes: usize, per_s: u64) -> tokio::time::Instant {
        let now = tokio::time::Instant::now();
        let mut busy = self.busy_until.lock().unwrap_or_else(|e| e.into_inner());
        let start = busy.filter(|b| *b > now).unwrap_or(now);
        let end = start + PhoneCosts::at_rate(bytes, per_s);
        *busy = Some(end);
        end
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(d: Duration) -> u64 {
        d.as_millis() as u64
    }

    #[test]
    fn input_is_a_vm_start_up_to_android_11_and_a_binder_call_after() {
        let c = PhoneCosts::phone();
        assert_eq!(ms(c.command(30, &["input", "tap", "1", "2"])), 640);
        assert_eq!(ms(c.command(31, &["input", "tap", "1", "2"])), 60);
        assert_eq!(ms(c.command(34, &["/system/bin/input", "touchscreen", "tap", "1", "2"])), 60);
        // `cmd input` is what the 12+ wrapper runs: charged once, as a binder call, on every version.
        assert_eq!(ms(c.command(30, &["cmd", "input", "tap", "1", "2"])), 60);
    }

    #[test]
    fn gestures_hold_for_their_duration_and_text_pays_per_character() {
        let c = PhoneCosts::phone();
        assert_eq!(ms(c.command(34, &["input", "swipe", "1", "2", "3", "4", "900"])), 20 + 900 + 40);
        assert_eq!(ms(c.command(34, &["input", "swipe", "1", "2", "3", "4"])), 20 + 300 + 40);
        assert_eq!(ms(c.command(34, &["input", "text", "hello"])), 20 + 50);
        assert_eq!(ms(c.command(34, &["input", "text", "Hi"])), 20 + 30);
        assert_eq!(ms(c.command(34, &["input", "keyevent", "KEYCODE_DEL", "KEYCODE_DEL"])), 20 + 20);
        assert_eq!(ms(c.command(34, &["input", "keyevent", "--longpress", "KEYCODE_A"])), 20 + 10 + 400);
    }

    #[test]
    fn java_programs_and_services() {
        let c = PhoneCosts::phone();
        assert_eq!(ms(c.command(34, &["uiautomator", "dump", "/dev/tty"])), 800);
        assert_eq!(ms(c.command(34, &["am", "instrument", "-w", "x"])), 600);
        assert_eq!(ms(c.command(34, &["am", "start", "-n", "a/.B"])), 20);
        assert_eq!(ms(c.command(24, &["am", "force-stop", "a.b"])), 600);
        assert_eq!(ms(c.command(34, &["pm", "list", "packages"])), 140);
        assert_eq!(ms(c.command(34, &["cmd", "package", "list", "packages"])), 140);
        assert_eq!(ms(c.command(34, &["dumpsys", "window", "policy"])), 50);
        assert_eq!(ms(c.command(34, &["dumpsys", "power"])), 30);
        assert_eq!(ms(c.command(34, &["grep", "-E", "x"])), 0);
        assert_eq!(PhoneCosts::default().command(30, &["input", "tap", "1", "2"]), Duration::ZERO);
    }
}

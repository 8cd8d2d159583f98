//! The plain types the simulated phone is made of and told to do, below everything that acts on them: its
//! configuration ([`SimConfig`]), the misbehaviour injected into it ([`Fault`], [`FrameLie`], [`DevtoolsLie`],
//! [`HelperMode`]) and the input events it records ([`InputEvent`]). No file of the sim is below this one but
//! `costs.rs`, so the phone's state (`device.rs`), its services and its commands all name these from here.

use std::time::Duration;

use super::costs::PhoneCosts;

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
    /// How long a screen change (an app opening or closing, a tap that opens a screen) animates, in milliseconds:
    /// until it ends every captured frame differs and `uiautomator dump` waits (waitForIdle). 0 (tests' default):
    /// changes show at once; the demo animates.
    pub animation_ms: u32,
    /// CPUs the phone's kernel offers a shell process: what `nproc` (toybox, Android 10+) prints. 8 on the
    /// Pixel 7 this simulator plays (Tensor G2).
    pub cpus: u32,
    /// Commands this phone's build lacks although its release has them (vendor builds strip toybox applets):
    /// the shell answers "inaccessible or not found" for them.
    pub missing_commands: Vec<String>,
    /// What the phone's hardware spends (display read, PNG encoding, the USB link, phone-side tools). All zero by
    /// default, so functional tests run at loopback speed; the benchmark and the demo turn them on ([`PhoneCosts::phone`]).
    pub costs: PhoneCosts,
    /// How the resident phone helper (`app_process … xagent.Helper`, `helper.rs`) behaves on this phone: it works
    /// (default), cannot start, finds no injection API, is refused injection (Xiaomi), finds UiAutomation taken…
    pub helper: HelperMode,
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
            animation_ms: 0,
            cpus: 8,
            missing_commands: Vec::new(),
            costs: PhoneCosts::default(),
            helper: HelperMode::default(),
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
    /// OPENs are never answered — no OKAY, no CLSE — and writes on streams already open (a resident phone
    /// helper's) are neither delivered nor acknowledged, as on a phone whose adbd or USB stack hangs. The adb
    /// server then never answers the host's service request either.
    ///
    /// What this follows: AOSP adb/protocol.txt — an OPEN "MUST result in either a READY … or a CLOSE", and after a
    /// WRITE no other may be sent "until another READY message has been received" — so a daemon that stops
    /// processing messages leaves new streams pending and open streams stalled, with no error on the wire; field
    /// reports of such phones: still listed `device` by `adb devices` while every `adb shell` hangs until a reboot
    /// or replug (dtmilano/AndroidViewClient#171, zjn0505/adb-alfred#16).
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
    /// Every capture claims a `width × height` RGBA screen with headers consistent in themselves (the size word
    /// matches), then sends 64 bytes of pixels and ends: a claim the connector must not pay for up front.
    Claims(u32, u32),
    /// Captures are honest, but `gzip` answers a valid gzip member holding the capture followed by 64 MiB of
    /// zeros (a 64 KB "zip bomb" whose header claims an honest frame and which inflates far past it).
    GzipBomb,
    /// Captures are honest, but `gzip` compresses all of its input but the last 4 KiB (a valid member that
    /// inflates to less than was asked for).
    GzipShort,
    /// Captures are honest, but `gzip` flips one byte in the middle of its deflate data (a corrupt stream).
    GzipCorrupt,
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
    /// A multi-touch gesture through the phone helper's `gesture` verb: each pointer's path (pointer 0 first),
    /// every path with the same number of points; point *j* of *P* is reached at *j*·`duration_ms`/(*P*−1).
    Gesture {
        duration_ms: u32,
        pointers: Vec<Vec<(i32, i32)>>,
    },
}

/// How the resident phone helper (`helper.rs`, where it is re-exported as `helper::Mode`) behaves on this phone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HelperMode {
    /// Everything works.
    #[default]
    Works,
    /// `app_process` dies before the greeting (a vendor build that refuses it, a dex it cannot load).
    NoStart,
    /// It starts, but no injection method was found (a release whose hidden API moved): the greeting says
    /// `no_inject_method` for every injecting operation and `no_uiautomation` for tree and idle.
    Unavailable,
    /// Injection is refused with a SecurityException (Xiaomi/MIUI/HyperOS without "USB debugging (Security
    /// settings)"): every injecting request answers `denied`; `screen` and `tree` still work.
    Denied,
    /// Another UiAutomation is connected (a test framework, `uiautomator` itself): `tree` and `idle` answer
    /// `busy uiautomation_in_use`.
    TreeBusy,
    /// The previous clip cannot be read (Android 10+ limits background clipboard reads): a paste answers
    /// `paste not_restored`.
    ClipUnreadable,
    /// The virtual keyboard's KeyCharacterMap did not load: the greeting says `text=no_key_map` and ASCII text is
    /// pasted like any other (case 16).
    NoKeyMap,
    /// Paste types the clip that was there before ours (Samsung One UI 9–11: setting the clipboard has no effect on
    /// paste — scrcpy #1771, #1986, #2277, #3611) while the helper, which reads its own clip back, answers
    /// `paste restored`.
    StalePaste,
    /// Every input (tap, swipe, press, gesture, key, text) is carried out at once but answered [`LATE_REPLY`]
    /// later (a phone whose helper stalls: a long GC pause, a CPU-starved phone), past the host's request limit of
    /// 3 s plus the verb's own time. Reads answer at once.
    Late,
}

/// How late a [`HelperMode::Late`] helper answers.
pub const LATE_REPLY: Duration = Duration::from_millis(4000);

/// How the browser stand-in's DevTools socket lies (hostile-page tests; `devtools.rs`, where it is re-exported as
/// `devtools::Lie`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DevtoolsLie {
    #[default]
    None,
    /// A WebSocket frame announcing 9 MiB (more than the host reads).
    Oversized,
    /// A frame with a reserved opcode.
    MalformedFrame,
    /// Replies, but every one with another request's id.
    WrongIds,
    /// Layout metrics and rectangles with absurd numbers (1e308, negative sizes).
    AbsurdNumbers,
    /// Accepts the WebSocket and never answers.
    Silent,
}

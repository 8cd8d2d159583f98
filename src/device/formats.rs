//! Parsers of what phones print: `dumpsys window` / `activity` (foreground), `dumpsys input` (rotation),
//! `dumpsys input_method` (soft keyboard), `dumpsys battery`, `wm size`, `getprop`. Pure functions, no I/O.
//!
//! Every format here changed across Android versions and vendors; each parser is table-tested over outputs
//! recorded on real phones (`tests/fixtures/real/`, provenance in its `INDEX.md`). Phones are hostile input too:
//! nothing here indexes without checking, and names taken from the output are checked against a grammar.

use std::collections::BTreeMap;

/// What [`foreground_command`] runs. Android ≤ 10 prints the focus lines under `dumpsys window windows`;
/// from 11 (appium-adb already switches at API 29) only in the display section (`dumpsys window displays`), one
/// `mCurrentFocus`/`mFocusedApp` pair per display. The section headers (`WINDOW MANAGER …`, `Display:
/// mDisplayId=N`) are kept so that [`foreground`] knows which display a pair belongs to.
const FOCUS_GREP: &str = "grep -E 'WINDOW MANAGER|Display: mDisplayId=|mCurrentFocus=|mFocusedApp='";

/// The one shell command whose output [`foreground`] reads, for a phone of this SDK level (`None`: unknown, ask
/// both sections). Always exits 0, so that "no focus" is not a failed command.
pub fn foreground_command(sdk: Option<u32>) -> String {
    match sdk {
        Some(s) if s >= 30 => format!("dumpsys window displays | {FOCUS_GREP}; true"),
        Some(s) if s <= 28 => format!("dumpsys window windows | {FOCUS_GREP}; true"),
        _ => format!("dumpsys window displays | {FOCUS_GREP}; dumpsys window windows | {FOCUS_GREP}; true"),
    }
}

/// What [`focused_window_secure`] reads: every window's header (`Window #N Window{HASH u0 title}:`) and flags
/// line (`fl=…`, one line of `WindowManager.LayoutParams.toString`), and the focus lines of
/// [`foreground_command`]. Asked only for a uniform frame, so its cost is paid when a picture already failed.
pub fn secure_window_command(sdk: Option<u32>) -> String {
    // Plain alternatives, no anchors: `pfl=` lines match too and are told apart by the parser.
    format!("dumpsys window windows | grep -E 'Window #|fl='; {}", foreground_command(sdk))
}

/// Whether the focused window carries `FLAG_SECURE` (SurfaceFlinger leaves such a layer out of every capture, so
/// the frame is black while the accessibility tree is intact), from [`secure_window_command`]'s output.
///
/// The focused window is found by the hash that `mCurrentFocus=Window{HASH …}` and its `Window #N Window{HASH …}:`
/// header share, never by title (an app chooses its own window title, so a title cannot vouch for another
/// window); its `fl=` line is the first one after that header and before the next. `SECURE` is the name
/// `LayoutParams.flagsToString` gives `FLAG_SECURE` (0x2000), matched as a whole word. `None`: no focused window
/// with a hash, or no flags line for it (the answer is unknown, not "not secure").
pub fn focused_window_secure(text: &str) -> Option<bool> {
    fn hash_after(line: &str, marker: &str) -> Option<String> {
        let rest = &line[line.find(marker)? + marker.len()..];
        let hash = rest.split(|c: char| c.is_whitespace() || c == '}').next()?;
        (!hash.is_empty() && hash.len() <= 16 && hash.bytes().all(|b| b.is_ascii_hexdigit())).then(|| hash.to_owned())
    }
    let focus = text
        .lines()
        .filter(|l| l.trim_start().starts_with("mCurrentFocus="))
        .find_map(|l| hash_after(l, "mCurrentFocus=Window{"))?;
    let mut in_focused = false;
    for line in text.lines() {
        let t = line.trim_start();
        if t.starts_with("Window #") {
            if in_focused {
                return None;
            }
            in_focused = hash_after(t, "Window{").as_deref() == Some(focus.as_str());
        } else if in_focused {
            if let Some(flags) = t.strip_prefix("fl=") {
                return Some(flags.split_whitespace().any(|f| f == "SECURE"));
            }
        }
    }
    None
}

/// `pkg/.Act` or `pkg/pkg.Act` → (package, fully qualified activity), when both are well-formed names.
fn component(word: &str) -> Option<(String, String)> {
    let word = word.trim_end_matches(['}', ',', ':']);
    let (pkg, act) = word.split_once('/')?;
    let java = |s: &str, extra: &[char]| {
        !s.is_empty()
            && s.len() <= 255
            && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.' || extra.contains(&c))
    };
    if !java(pkg, &[]) || !pkg.contains('.') || pkg.starts_with('.') || !java(act, &['$']) {
        return None;
    }
    let act = if act.starts_with('.') { format!("{pkg}{act}") } else { act.to_owned() };
    Some((pkg.to_owned(), act))
}

/// The first `package/activity` word of a line.
fn component_in(line: &str) -> Option<(String, String)> {
    line.split(|c: char| c.is_whitespace() || c == '{').find_map(component)
}

/// The app in front of the main display (display 0), from the output of [`foreground_command`], a full or
/// sectioned `dumpsys window`, or `dumpsys activity activities` (`mResumedActivity:` / `topResumedActivity=`).
///
/// Per display, a focused window with a component wins; a focused window without one (`NotificationShade`, a TV
/// overlay, `Window{com.android.systemui:b3ce339 u0 NotificationShade type=2040 }`) falls back to the display's
/// focused app. With several displays, display 0's pair is taken; lines outside a display section (Android ≤ 10's
/// `windows` section, or grepped lines without headers) are used when display 0 says nothing.
pub fn foreground(text: &str) -> Option<(String, String)> {
    // (display, current focus component, focused app component) in the order met.
    #[derive(Default)]
    struct Pair {
        current: Option<(String, String)>,
        app: Option<(String, String)>,
    }
    let mut display0 = Pair::default();
    let mut loose = Pair::default();
    let mut others = Pair::default();
    let mut display: Option<u32> = None;
    for line in text.lines().take(200_000) {
        let t = line.trim();
        if t.starts_with("WINDOW MANAGER ") || t.starts_with("ACTIVITY MANAGER ") {
            display = None;
            continue;
        }
        if let Some(rest) = t.strip_prefix("Display: mDisplayId=") {
            display = rest.split(|c: char| !c.is_ascii_digit()).next().and_then(|n| n.parse().ok());
            continue;
        }
        let slot = match display {
            Some(0) => &mut display0,
            None => &mut loose,
            Some(_) => &mut others,
        };
        if let Some(v) = t.strip_prefix("mCurrentFocus=") {
            if slot.current.is_none() {
                slot.current = component_in(v);
            }
        } else if let Some(v) = t.strip_prefix("mFocusedApp=").or_else(|| {
            t.strip_prefix("mResumedActivity:")
                .or_else(|| t.strip_prefix("topResumedActivity="))
                .or_else(|| t.strip_prefix("ResumedActivity:"))
        }) {
            if slot.app.is_none() {
                slot.app = component_in(v);
            }
        }
    }
    [display0, loose, others].into_iter().find_map(|p| p.current.or(p.app))
}

/// The display's rotation in quarter turns (0–3) from `dumpsys input`: `SurfaceOrientation: N` (≤ 12),
/// `InputDeviceOrientation: N` (13–14), `InputDeviceOrientation: RotationN` (15+), else the
/// `Viewport INTERNAL: … orientation=N` line (the built-in display's viewport, all versions since 9).
pub fn rotation(text: &str) -> Option<u8> {
    let quarter = |v: &str| -> Option<u8> {
        let v = v.trim();
        let n: u32 = v.strip_prefix("Rotation").unwrap_or(v).trim().parse().ok()?;
        match n {
            0..=3 => Some(n as u8),
            90 | 180 | 270 => Some((n / 90) as u8),
            _ => None,
        }
    };
    let mut viewport = None;
    for line in text.lines().take(200_000) {
        let t = line.trim();
        if let Some(v) = t.strip_prefix("SurfaceOrientation:").or_else(|| t.strip_prefix("InputDeviceOrientation:")) {
            if let Some(r) = quarter(v) {
                return Some(r);
            }
        }
        if viewport.is_none() && t.starts_with("Viewport INTERNAL:") {
            viewport = t.split([' ', ',']).find_map(|w| w.strip_prefix("orientation=")).and_then(quarter);
        }
    }
    viewport
}

/// Whether the soft keyboard is shown, from `dumpsys input_method`: `mInputShown=` is one field of the
/// `mShowRequested=… mInputShown=…` line up to 13 and alone on its line from 14. `None` if neither is there.
pub fn keyboard_shown(text: &str) -> Option<bool> {
    text.lines().take(200_000).find_map(|l| {
        let i = l.find("mInputShown=")?;
        // A field of its own: at the line start or after a space (not e.g. `mLastInputShown=`).
        if i > 0 && !l[..i].ends_with(char::is_whitespace) {
            return None;
        }
        let v = l[i + "mInputShown=".len()..].split_whitespace().next()?;
        match v {
            "true" => Some(true),
            "false" => Some(false),
            _ => None,
        }
    })
}

/// Whether `ime list -s` (the *enabled* input methods, one id a line; `-a` would add the disabled ones) lists `id`.
pub fn ime_listed(text: &str, id: &str) -> bool {
    text.lines().take(10_000).any(|l| l.trim() == id)
}

/// `dumpsys battery`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Battery {
    pub level: Option<i64>,
    pub plugged: bool,
    /// BatteryManager.BATTERY_STATUS_*: `charging`, `discharging`, `not_charging`, `full`, `unknown`.
    pub status: &'static str,
    /// `temperature:` in tenths of a degree Celsius (`280` = 28.0 °C), as `BatteryManager.EXTRA_TEMPERATURE`
    /// has been since Android 1. `None` when missing or outside −50…150 °C (no battery works there: a lie or a
    /// broken sensor, not a reading).
    pub temperature_tenths: Option<i32>,
}

/// `key: value` lines of `dumpsys battery` (vendor extras such as `mod level:` or `Charge counter:` ignored).
/// A `scale` other than 100 turns `level` into a percentage.
pub fn battery(text: &str) -> Battery {
    let get = |k: &str| {
        text.lines().take(10_000).find_map(|l| {
            let (a, b) = l.trim().split_once(':')?;
            (a.trim() == k).then(|| b.trim().to_owned())
        })
    };
    let num = |k: &str| get(k).and_then(|v| v.parse::<i64>().ok());
    let level = match (num("level"), num("scale")) {
        (Some(l), Some(s)) if s > 0 && s != 100 => Some(l.saturating_mul(100) / s),
        (l, _) => l,
    }
    .filter(|l| (0..=100).contains(l));
    let plugged = ["AC powered", "USB powered", "Wireless powered", "Dock powered"]
        .iter()
        .any(|k| get(k).as_deref() == Some("true"));
    // Plugged in is not the same as charging (a full or an overheated battery is plugged but not charging).
    let status = match num("status") {
        Some(2) => "charging",
        Some(3) => "discharging",
        Some(4) => "not_charging",
        Some(5) => "full",
        _ => "unknown",
    };
    let temperature_tenths =
        num("temperature").filter(|t| (-500..=1500).contains(t)).and_then(|t| i32::try_from(t).ok());
    Battery { level, plugged, status, temperature_tenths }
}

/// Free and total bytes of the file system a `df` line reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DfSpace {
    pub free_bytes: u64,
    pub total_bytes: u64,
}

/// A toolbox size (`27G`, `362M`, `76K`, `1.5G`, `0K`) in bytes; plain numbers are bytes. Bounded (< 1 EiB).
fn human_size(v: &str) -> Option<u64> {
    let (num, unit) = match v.char_indices().last()? {
        (i, c) if c.is_ascii_alphabetic() => (&v[..i], c.to_ascii_uppercase()),
        _ => (v, 'B'),
    };
    let shift = match unit {
        'B' => 0,
        'K' => 10,
        'M' => 20,
        'G' => 30,
        'T' => 40,
        'P' => 50,
        _ => return None,
    };
    if num.is_empty() || num.len() > 24 || !num.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return None;
    }
    let n: f64 = num.parse().ok()?;
    let bytes = n * (1u64 << shift) as f64;
    (bytes.is_finite() && (0.0..1.0e18).contains(&bytes)).then_some(bytes as u64)
}

/// The `df` line of the file system mounted at `mount` (e.g. `/data`), in any of the formats Android printed:
///
/// - toybox (Android 6+): `Filesystem 1K-blocks Used Available Use% Mounted on`, mount point last;
///   a long device name may wrap the numbers onto the next line;
/// - toybox `-h`: the same columns with `Size Used Avail` in human units;
/// - toolbox (Android ≤ 5): `Filesystem Size Used Free Blksize`, the mount point *first*, human units.
///
/// `None` when no line names `mount` or its numbers do not parse. Bounded: 10 000 lines, numbers < 1 EiB.
pub fn df(text: &str, mount: &str) -> Option<DfSpace> {
    let mut lines = text.lines().take(10_000).peekable();
    let header = loop {
        let l = lines.next()?;
        if l.trim_start().starts_with("Filesystem") {
            break l.split_whitespace().map(str::to_owned).collect::<Vec<_>>();
        }
    };
    let has = |name: &str| header.iter().any(|h| h.eq_ignore_ascii_case(name));
    if has("Blksize") {
        // toolbox: `/data 27G 19G 8G 4096`.
        for l in lines {
            let w: Vec<&str> = l.split_whitespace().collect();
            if w.len() >= 4 && w[0] == mount {
                let (total, free) = (human_size(w[1])?, human_size(w[3])?);
                return Some(DfSpace { free_bytes: free, total_bytes: total });
            }
        }
        return None;
    }
    let kib = has("1K-blocks");
    let mut pending: Option<String> = None;
    for l in lines {
        // A wrapped line (device name alone) continues on the next one.
        let joined = match pending.take() {
            Some(p) => format!("{p} {l}"),
            None => l.to_owned(),
        };
        let w: Vec<&str> = joined.split_whitespace().collect();
        if w.len() == 1 {
            pending = Some(joined);
            continue;
        }
        if w.len() < 6 || w[w.len() - 1] != mount {
            continue;
        }
        let size = |v: &str| -> Option<u64> {
            if kib {
                v.parse::<u64>().ok().filter(|n| *n < 1 << 50).map(|n| n * 1024)
            } else {
                human_size(v)
            }
        };
        let (total, free) = (size(w[1])?, size(w[3])?);
        return Some(DfSpace { free_bytes: free, total_bytes: total });
    }
    None
}

/// Seconds since boot from `/proc/uptime` (`12345.67 54321.00`: uptime, then idle time of all CPUs; the format of
/// Linux `fs/proc/uptime.c`). Whole seconds; `None` unless the first word is a plausible number (< 100 years).
pub fn uptime(text: &str) -> Option<u64> {
    let first = text.split_whitespace().next()?;
    let whole = first.split('.').next()?;
    if whole.is_empty() || whole.len() > 12 || !whole.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    whole.parse::<u64>().ok().filter(|s| *s < 100 * 365 * 86_400)
}

/// The marker line between the sections of [`HEALTH_COMMAND`]'s output.
pub const HEALTH_MARK: &str = "--xagent-health--";

/// One shell round trip for a phone's health: `dumpsys battery`, `df /data`, `/proc/uptime`, separated by
/// [`HEALTH_MARK`] lines. Each part may fail alone (its section is then empty); the whole always exits 0.
pub const HEALTH_COMMAND: &str = "dumpsys battery 2>/dev/null; echo --xagent-health--; df /data 2>/dev/null; \
                                  echo --xagent-health--; cat /proc/uptime 2>/dev/null; true";

/// What [`HEALTH_COMMAND`] printed, parsed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HealthText {
    pub battery: Battery,
    pub storage: Option<DfSpace>,
    pub uptime_s: Option<u64>,
}

pub fn health(text: &str) -> HealthText {
    let mut parts = text.split(HEALTH_MARK);
    let battery_text = parts.next().unwrap_or("");
    let df_text = parts.next().unwrap_or("");
    let uptime_text = parts.next().unwrap_or("");
    HealthText { battery: battery(battery_text), storage: df(df_text, "/data"), uptime_s: uptime(uptime_text) }
}

/// `wm size`: the physical size and the override (`wm size WxH`) if any. Both are of the natural (portrait)
/// orientation whatever the rotation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WmSize {
    pub physical: Option<(u32, u32)>,
    pub overridden: Option<(u32, u32)>,
}

impl WmSize {
    /// The size in effect: an override wins.
    pub fn effective(&self) -> Option<(u32, u32)> {
        self.overridden.or(self.physical)
    }
}

pub fn wm_size(text: &str) -> WmSize {
    let find = |prefix: &str| {
        text.lines().find_map(|l| l.trim().strip_prefix(prefix)).and_then(|v| {
            let (w, h) = v.trim().split_once('x')?;
            let (w, h): (u32, u32) = (w.trim().parse().ok()?, h.trim().parse().ok()?);
            (w > 0 && h > 0 && w <= 100_000 && h <= 100_000).then_some((w, h))
        })
    };
    WmSize { physical: find("Physical size:"), overridden: find("Override size:") }
}

/// `getprop` (all properties): `[key]: [value]` per property; a value may span several lines (e.g.
/// `ro.build.description` on some vendor builds, or values with embedded newlines), ending at the `]` that
/// closes a line. Values are bounded to 8 KiB each, at most 10 000 properties.
pub fn getprop(text: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if out.len() >= 10_000 {
            break;
        }
        let Some(rest) = line.trim_start().strip_prefix('[') else { continue };
        let Some((key, rest)) = rest.split_once("]: [") else { continue };
        let mut value = String::from(rest);
        // Continue until a line ends with `]`.
        while !value.ends_with(']') {
            match lines.next() {
                Some(next) if value.len() < 8192 => {
                    value.push('\n');
                    value.push_str(next);
                }
                _ => break,
            }
        }
        let value = value.strip_suffix(']').unwrap_or(&value);
        let value: String = value.chars().take(8192).collect();
        out.insert(key.to_owned(), value);
    }
    out
}

/// `settings get NS NAME; …` for `n` settings: one line per setting, `null` = unset (every Android version since
/// 4.2 prints exactly that). `None` unless there are exactly `n` lines and every value is printable, at most
/// `max_len` bytes: a value we could not put back exactly is refused, never truncated.
pub fn settings_values(text: &str, n: usize, max_len: usize) -> Option<Vec<Option<String>>> {
    let lines: Vec<&str> =
        text.strip_suffix('\n').unwrap_or(text).split('\n').map(|l| l.trim_end_matches('\r')).collect();
    if n == 0 || lines.len() != n {
        return None;
    }
    lines
        .into_iter()
        .map(|l| match l {
            "null" => Some(None),
            v if v.len() <= max_len && super::text::phone_text(v, max_len) == v => Some(Some(v.to_owned())),
            _ => None,
        })
        .collect()
}

/// The mode in `cmd uimode night`'s answer, `Night mode: yes` (AOSP `UiModeManagerService.Shell`
/// `printCurrentNightMode`: yes, no, auto; Android 11+ also custom_schedule, custom_bedtime; `unknown` otherwise).
/// `None` for anything else (an error, a vendor's other words).
pub fn night_mode(line: &str) -> Option<&str> {
    let mode = line.trim().strip_prefix("Night mode: ")?.trim();
    (!mode.is_empty() && mode.len() <= 32 && mode.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')).then_some(mode)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_values_are_one_per_line_and_refused_when_not_exact() {
        assert_eq!(settings_values("1.0\nnull\n7\n", 3, 256), Some(vec![Some("1.0".into()), None, Some("7".into())]));
        assert_eq!(settings_values("1.0\r\nnull\r\n", 2, 256), Some(vec![Some("1.0".into()), None]));
        assert_eq!(settings_values("1.0\n", 2, 256), None, "a value missing");
        assert_eq!(settings_values("1\n2\n3\n", 2, 256), None, "a value too many");
        assert_eq!(settings_values("a\u{202e}b\n", 1, 256), None, "bidi control");
        assert_eq!(settings_values(&"x".repeat(300), 1, 256), None, "too long");
    }

    #[test]
    fn components_are_checked() {
        assert_eq!(component("com.a/.B}"), Some(("com.a".into(), "com.a.B".into())));
        assert_eq!(component("com.a/com.b.C$D,"), Some(("com.a".into(), "com.b.C$D".into())));
        assert_eq!(component("a/b"), None, "a package has a dot");
        assert_eq!(component("com.a/../../x;rm"), None);
        assert_eq!(component("NotificationShade"), None);
    }

    #[test]
    fn foreground_prefers_display_0_and_falls_back_from_overlays() {
        let t = "WINDOW MANAGER DISPLAY CONTENTS (dumpsys window displays)\n  Display: mDisplayId=1\n  \
                 mCurrentFocus=Window{1 u0 com.x/.Cover}\n  mFocusedApp=ActivityRecord{2 u0 com.x/.Cover t3}\n  \
                 Display: mDisplayId=0 rootTasks=7\n  mCurrentFocus=Window{3 u0 NotificationShade}\n  \
                 mFocusedApp=ActivityRecord{4 u0 com.y/.Main t9}\n";
        assert_eq!(foreground(t), Some(("com.y".into(), "com.y.Main".into())));
        assert_eq!(foreground("  mCurrentFocus=null\n  mFocusedApp=null\n"), None);
    }

    #[test]
    fn rotation_forms() {
        assert_eq!(rotation("      SurfaceOrientation: 1\n"), Some(1));
        assert_eq!(rotation("    InputDeviceOrientation: 3\n"), Some(3));
        assert_eq!(rotation("    InputDeviceOrientation: Rotation90\n"), Some(1));
        assert_eq!(rotation("Viewport INTERNAL: displayId=0, uniqueId=local:0, port=0, orientation=2, x"), Some(2));
        assert_eq!(rotation("SurfaceOrientation: 9"), None);
        assert_eq!(rotation("nothing"), None);
    }

    #[test]
    fn getprop_multi_line() {
        let p = getprop("[a.b]: [1]\n[c.d]: [two\nlines]\n[e]: []\n");
        assert_eq!(p.get("a.b").map(String::as_str), Some("1"));
        assert_eq!(p.get("c.d").map(String::as_str), Some("two\nlines"));
        assert_eq!(p.get("e").map(String::as_str), Some(""));
    }

    #[test]
    fn df_uptime_and_health_are_bounded() {
        // A wrapped toybox line (long device name alone on its line).
        let t = "Filesystem 1K-blocks Used Available Use% Mounted on\n/dev/block/bootdevice/by-name/userdata\n 1000 400 600 40% /data\n";
        assert_eq!(df(t, "/data"), Some(DfSpace { free_bytes: 600 * 1024, total_bytes: 1000 * 1024 }));
        // Hostile numbers: overflowing, negative, NaN-ish, absurd units.
        let big = "Filesystem 1K-blocks Used Available Use% Mounted on\nx 99999999999999999999 1 2 1% /data\n";
        assert_eq!(df(big, "/data"), None);
        assert_eq!(df("Filesystem Size Used Free Blksize\n/data 1e308G 1G -5G 4096\n", "/data"), None);
        assert_eq!(df("Filesystem Size Used Free Blksize\n/data 9999999999P 1G 1G 4096\n", "/data"), None);
        assert_eq!(df("no header\n/data 1 2 3 4\n", "/data"), None);
        assert_eq!(uptime("12345.67 54321.00\n"), Some(12345));
        assert_eq!(uptime("-1.00 2.00"), None);
        assert_eq!(uptime("99999999999999999999.0 1"), None);
        assert_eq!(uptime(""), None);
        let h = health(&format!(
            "  level: 50\n  temperature: 451\n  AC powered: true\n{HEALTH_MARK}\nFilesystem 1K-blocks Used Available Use% Mounted on\n/dev/x 100 50 50 50% /data\n{HEALTH_MARK}\n77.10 1.00\n"
        ));
        assert_eq!(h.battery.temperature_tenths, Some(451));
        assert_eq!(h.storage.map(|s| s.free_bytes), Some(50 * 1024));
        assert_eq!(h.uptime_s, Some(77));
        assert_eq!(battery("temperature: 99999").temperature_tenths, None, "a 9999.9 °C battery is a lie");
        assert_eq!(battery("temperature: -12").temperature_tenths, Some(-12));
    }
}

//! Screen state: is the display on, is the keyguard (lock screen) showing, and does it need a credential.
//!
//! One shell round trip reads both halves: the `dumpsys power` lines that carry the wakefulness and the
//! `dumpsys window policy` lines that carry the keyguard, each filtered on the phone by `grep` so a few hundred
//! bytes cross the wire instead of ~40 KB. What real phones print, by version (samples with their provenance in
//! `tests/fixtures/real/state-*.txt`):
//!
//! - wakefulness: `mWakefulness=Awake|Asleep|Dozing|Dreaming` (4.2 – 15; some vendor builds print
//!   `getWakefulnessLocked()=…`), and `Display Power: state=ON|OFF|DOZE|…` (5.0+). 4.x prints `mScreenOn=true`.
//! - keyguard, Android 8+: the `KeyguardServiceDelegate` block of `dumpsys window policy`, whose
//!   `KeyguardStateMonitor` says `mIsShowing=` and `mInputRestricted=` (both true while the keyguard blocks input,
//!   which is how appium-adb reads it since appium-adb#566) and `secure=` (a PIN, pattern or password is set);
//!   before 8: `mShowingLockscreen=` / `mDreamingLockscreen=` (and `isStatusBarKeyguard=` on 6 – 7).
//!
//! Anything the phone does not print stays unknown (`None`): an unknown state never blocks input.

/// The query: one round trip, filtered on the phone. `grep` exits 1 when a vendor prints none of the lines,
/// which only means "unknown".
pub const QUERY: &str =
    "dumpsys power | grep -E 'mWakefulness=|getWakefulnessLocked|Display Power: state=|mScreenOn='; \
                         dumpsys window policy | grep -E 'showing=|secure=|mIsShowing=|mInputRestricted=|\
                         mShowingLockscreen=|mDreamingLockscreen=|isStatusBarKeyguard='";

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ScreenState {
    /// The display is on and interactive (`Awake`); `Some(false)` when asleep, dozing (always-on display) or
    /// dreaming (screensaver) — input needs a wake-up first.
    pub screen_on: Option<bool>,
    /// The keyguard is showing and restricting input.
    pub locked: Option<bool>,
    /// The keyguard needs a PIN, pattern or password (only known on phones that print it).
    pub secure: Option<bool>,
}

impl ScreenState {
    /// Parses the output of [`QUERY`] (or of the full `dumpsys power` / `dumpsys window` — same lines).
    pub fn parse(text: &str) -> ScreenState {
        // `key=value` anywhere on a line (4.x prints several per line: `mShowingLockscreen=true mShowingDream=…`).
        let value = |key: &str| -> Option<&str> {
            text.lines()
                .find_map(|l| l.split_whitespace().find_map(|w| w.strip_prefix(key)?.strip_prefix('=').map(str::trim)))
        };
        let flag = |key: &str| value(key).and_then(|v| v.parse::<bool>().ok());

        let wakefulness = value("mWakefulness").or_else(|| value("getWakefulnessLocked()"));
        let display = text.lines().find_map(|l| l.trim().strip_prefix("Display Power: state=")).map(str::trim);
        let screen_on = match (wakefulness, display) {
            (Some("Awake"), _) => Some(true),
            (Some("Asleep" | "Dozing" | "Dreaming"), _) => Some(false),
            (_, Some("ON" | "VR")) => Some(true),
            (_, Some(_)) => Some(false),
            _ => flag("mScreenOn"),
        };

        // The monitor reflects SystemUI's own state; the delegate's `showing=` can lag behind it, so the monitor
        // wins where both exist. A keyguard that does not restrict input (occluded by a show-when-locked activity,
        // or trusted) lets input through.
        let locked = match (flag("mIsShowing"), flag("mInputRestricted")) {
            (Some(showing), Some(restricted)) => Some(showing && restricted),
            (Some(showing), None) => Some(showing),
            _ => {
                let legacy: Vec<bool> = ["mShowingLockscreen", "mDreamingLockscreen", "isStatusBarKeyguard"]
                    .iter()
                    .filter_map(|k| flag(k))
                    .collect();
                if legacy.is_empty() {
                    flag("showing")
                } else {
                    Some(legacy.contains(&true))
                }
            }
        };
        ScreenState { screen_on, locked, secure: flag("secure") }
    }

    /// Parses the phone helper's `screen` payload (`interactive=1 locked=0 secure=0 rotation=0 width=… height=…`,
    /// `-` for a field its service could not give: unknown).
    pub fn from_helper(payload: &str) -> ScreenState {
        let field = |key: &str| -> Option<bool> {
            payload.split(' ').find_map(|f| f.strip_prefix(key)?.strip_prefix('=')).and_then(|v| match v {
                "1" => Some(true),
                "0" => Some(false),
                _ => None,
            })
        };
        ScreenState { screen_on: field("interactive"), locked: field("locked"), secure: field("secure") }
    }

    /// One number of the phone helper's `screen` payload (`rotation`, `width`, `height`); `None` when it is `-`
    /// (its service could not say) or missing.
    pub fn helper_field(payload: &str, key: &str) -> Option<u32> {
        payload.split(' ').find_map(|f| f.strip_prefix(key)?.strip_prefix('=')).and_then(|v| v.parse().ok())
    }

    pub fn asleep(&self) -> bool {
        self.screen_on == Some(false)
    }

    pub fn is_locked(&self) -> bool {
        self.locked == Some(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> String {
        let path = format!("{}/tests/fixtures/real/{name}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    /// Every sample of the corpus, with the state read off it by hand.
    #[test]
    fn real_samples() {
        // (file, screen_on, locked, secure)
        type Case = (&'static str, Option<bool>, Option<bool>, Option<bool>);
        let cases: &[Case] = &[
            ("state-power-awake-samsung-uiautomator2-444.txt", Some(true), None, None),
            ("state-power-android4.4-python-androidtv-112.txt", Some(true), None, None),
            ("state-window-policy-screen-on-appium-adb-lockmgmt.txt", None, Some(false), Some(false)),
            ("state-window-policy-screen-off-appium-adb-lockmgmt.txt", None, Some(false), Some(false)),
            ("state-window-policy-locked-appium-adb-lockmgmt.txt", None, Some(true), None),
            ("state-window-policy-showing-not-restricted-appium-adb-lockmgmt.txt", None, Some(false), None),
            ("state-window-policy-legacy-locked-appium-adb-lockmgmt.txt", None, Some(true), None),
            ("state-window-policy-legacy-dreaming-appium-adb-lockmgmt.txt", None, Some(true), None),
            ("state-window-policy-legacy-unlocked-appium-adb-lockmgmt.txt", None, Some(false), None),
        ];
        for (name, on, locked, secure) in cases {
            let s = ScreenState::parse(&fixture(name));
            assert_eq!((s.screen_on, s.locked, s.secure), (*on, *locked, *secure), "{name}");
        }
    }

    #[test]
    fn wakefulness_forms() {
        assert_eq!(ScreenState::parse("  mWakefulness=Asleep\nDisplay Power: state=OFF\n").screen_on, Some(false));
        assert_eq!(ScreenState::parse("  mWakefulness=Dozing\nDisplay Power: state=DOZE\n").screen_on, Some(false));
        assert_eq!(ScreenState::parse("  getWakefulnessLocked()=Awake\n").screen_on, Some(true));
        assert_eq!(ScreenState::parse("Display Power: state=ON\n").screen_on, Some(true));
        assert_eq!(ScreenState::parse("  mScreenOn=false\n").screen_on, Some(false));
        assert_eq!(ScreenState::parse("Permission Denial: can't dump PowerManagerService"), ScreenState::default());
    }

    #[test]
    fn secure_keyguard() {
        let s = ScreenState::parse(
            "    KeyguardServiceDelegate\n      showing=true\n      secure=true\n      KeyguardStateMonitor\n        \
             mIsShowing=true\n        mSimSecure=false\n        mInputRestricted=true\n",
        );
        assert_eq!((s.locked, s.secure), (Some(true), Some(true)));
    }
}

//! The lease conditions as data (issue 34 item 4): the operator's policy (`lease_conditions`, [`Conditions`]) and
//! what an agent may choose within it, the rows recorded before a lease changes a setting ([`Recorded`], kept by a
//! [`Ledger`]), and each phone's lease state ([`State`], held by the backend). The jobs that set and restore them
//! on a phone are `conditions.rs`, above the backend; this file is below it, so the backend can hold the state
//! without importing the jobs.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use serde::Deserialize;
use serde_json::Value;

use super::key::DeviceKey;

/// Apps a release may stop.
const MAX_APPS: usize = 32;

/// Policy key `lease_conditions` (every field optional).
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Conditions {
    /// `"off"`: the three animation scales 0 (`"on"`: 1).
    #[serde(default)]
    pub animations: Option<Switch>,
    /// true: stay awake while plugged in (AC, USB, wireless: 7); false: 0.
    #[serde(default)]
    pub stay_awake_while_plugged: Option<bool>,
    /// `system screen_off_timeout`, ms.
    #[serde(default)]
    pub screen_timeout_ms: Option<u64>,
    /// `system font_scale`, 0.5 ..= 2.0.
    #[serde(default)]
    pub font_scale: Option<Scale>,
    /// `global http_proxy`, `host:port` (no credentials: Android's global proxy has none).
    #[serde(default)]
    pub http_proxy: Option<String>,
    /// Dark mode: `cmd uimode night yes` (false: `no`).
    #[serde(default)]
    pub dark_mode: Option<bool>,
    /// Which of the conditions above an agent's `auth.start` input may choose for its lease ([`AGENT_KEYS`]).
    #[serde(default)]
    pub agent_may_set: Vec<String>,
    #[serde(default)]
    pub release: Release,
}

/// The conditions an agent may be allowed to choose (release actions stay the operator's).
pub const AGENT_KEYS: &[&str] =
    &["animations", "stay_awake_while_plugged", "screen_timeout_ms", "font_scale", "http_proxy", "dark_mode"];

/// The pseudo-namespace of dark mode's row (`cmd uimode night`).
pub const UIMODE: &str = "uimode";
/// The pseudo-namespace of the keyboard's row (recorded at bind, put back with `ime set`).
pub const IME: &str = "ime";
/// Dark mode's values as `cmd uimode night` prints and takes them (UiModeManagerService's shell command).
pub const NIGHT_MODES: &[&str] = &["yes", "no", "auto", "custom_schedule", "custom_bedtime"];

/// One thing a lease reads and records at bind, and (with a value) sets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Change {
    pub namespace: &'static str,
    pub name: &'static str,
    /// What the lease sets; `None`: recorded only (the keyboard).
    pub value: Option<String>,
}

impl Change {
    /// The command printing the old value on one line.
    pub fn read(&self) -> String {
        match self.namespace {
            UIMODE => "cmd uimode night".into(),
            IME => "settings get secure default_input_method".into(),
            ns => format!("settings get {ns} {}", self.name),
        }
    }

    /// The command setting the new value (`None`: recorded only).
    pub fn set(&self) -> Option<String> {
        let v = self.value.as_ref()?;
        Some(match self.namespace {
            UIMODE => format!("cmd uimode night {}", super::shell::quote(v)),
            ns => format!("settings put {ns} {} {}", self.name, super::shell::quote(v)),
        })
    }
}

/// What a release does besides restoring settings. Clean by default (issue 47): without a policy a release
/// goes Home, empties the clipboard, puts the keyboard back and undoes what the lease did (the apps it opened
/// stopped, its runtime grants revoked, its pushed files removed, its installed packages uninstalled); the
/// operator opts out per item (`false`).
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Release {
    /// Packages force-stopped at release (`am force-stop`).
    #[serde(default)]
    pub stop_apps: Vec<String>,
    /// Packages whose data a release clears (`pm clear`).
    #[serde(default)]
    pub clear_apps: Vec<String>,
    /// Press Home at release.
    #[serde(default = "yes")]
    pub home: bool,
    /// Put the keyboard back at release when the lease changed it (recorded at bind, `ime set`).
    #[serde(default = "yes")]
    pub restore_keyboard: bool,
    /// Empty the clipboard at release (through the phone helper: Android has no shell command for it), so what one
    /// agent copied — a one-time code, a password it typed by paste — is not the next agent's.
    #[serde(default = "yes")]
    pub clear_clipboard: bool,
    /// Force-stop every app the lease launched (`android_app_launch`): the text typed into its fields goes too.
    #[serde(default = "yes")]
    pub stop_opened_apps: bool,
    /// Revoke every runtime permission the lease granted that was not granted before (`android_permission`).
    #[serde(default = "yes")]
    pub revoke_grants: bool,
    /// Remove every file the lease pushed where there was none (`android_file_push`).
    #[serde(default = "yes")]
    pub remove_pushed_files: bool,
    /// Uninstall every package the lease installed that was not installed before (`android_app_install`).
    #[serde(default = "yes")]
    pub uninstall_installed: bool,
}

fn yes() -> bool {
    true
}

impl Default for Release {
    fn default() -> Self {
        Release {
            stop_apps: Vec::new(),
            clear_apps: Vec::new(),
            home: true,
            restore_keyboard: true,
            clear_clipboard: true,
            stop_opened_apps: true,
            revoke_grants: true,
            remove_pushed_files: true,
            uninstall_installed: true,
        }
    }
}

/// What a lease did that its release undoes: the pseudo-namespaces of the rows recorded when it did it (the row's
/// name says what; `old` is always unset), and the command that undoes one.
pub const OPENED: &str = "opened";
pub const GRANTED: &str = "granted";
pub const PUSHED: &str = "pushed";
pub const INSTALLED: &str = "installed";
/// An install under way (issue 47): recorded before the APK is copied, named by the APK's path on the phone, `old`
/// = the packages the phone had before (one per line). Forgotten once the install's own [`INSTALLED`] rows are
/// written; a row still there at release (a `kill -9` or a cut mid-install) uninstalls every package the phone
/// has now that it did not have then, and removes the copied APK.
pub const INSTALLING: &str = "installing";

/// The package names of a `pm list packages` output (`package:NAME` lines), well-formed names only.
pub fn package_names(listing: &str) -> Vec<String> {
    listing
        .lines()
        .filter_map(|l| l.trim().strip_prefix("package:"))
        .filter(|p| {
            !p.is_empty() && p.len() <= 255 && p.bytes().all(|b| b.is_ascii_alphanumeric() || b"._".contains(&b))
        })
        .map(str::to_owned)
        .collect()
}

/// The command undoing a row of [`OPENED`], [`GRANTED`], [`PUSHED`] or [`INSTALLED`]; `None` for other rows.
/// Each tolerates what changed meanwhile (the app uninstalled, the file removed): the release goes on. Run as
/// `;`-separated commands ahead of the settings' `&&` chain.
pub fn undo(namespace: &str, name: &str) -> Option<String> {
    let q = super::shell::quote;
    Some(match namespace {
        OPENED => format!("am force-stop {}", q(name)),
        GRANTED => {
            let (pkg, perm) = name.split_once(' ')?;
            format!("pm revoke {} {} || true", q(pkg), q(perm))
        }
        PUSHED => format!("rm -f {}", q(name)),
        INSTALLED => format!("pm uninstall {} || true", q(name)),
        INSTALLING => format!("rm -f {}", q(name)),
        _ => return None,
    })
}

impl Release {
    /// Whether the release undoes rows of `namespace` ([`OPENED`] …): what the tools record.
    pub fn undoes(&self, namespace: &str) -> bool {
        match namespace {
            OPENED => self.stop_opened_apps,
            GRANTED => self.revoke_grants,
            PUSHED => self.remove_pushed_files,
            INSTALLED | INSTALLING => self.uninstall_installed,
            _ => false,
        }
    }
}

#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Switch {
    On,
    Off,
}

/// A font scale as the policy gives it (a JSON number), kept as the text `settings put` gets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Scale(pub String);

impl<'de> Deserialize<'de> for Scale {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = f64::deserialize(d)?;
        if !(0.5..=2.0).contains(&v) {
            return Err(serde::de::Error::custom(format!("font_scale must be within 0.5 ..= 2.0, not {v}")));
        }
        Ok(Scale(format!("{}", (v * 100.0).round() / 100.0)))
    }
}

/// A package name (the same grammar as the tools' check).
fn package_like(p: &str) -> bool {
    !p.is_empty()
        && p.len() <= 255
        && p.contains('.')
        && p.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
        && !p.starts_with('.')
        && !p.ends_with('.')
}

/// `host:port` with a DNS name or IPv4 address and a port 1..65535; nothing else (no scheme, no user:password@).
fn valid_proxy(p: &str) -> bool {
    let Some((host, port)) = p.rsplit_once(':') else { return false };
    let host_ok = !host.is_empty()
        && host.len() <= 253
        && host.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-')
        && !host.starts_with(['-', '.']);
    host_ok && port.parse::<u16>().is_ok_and(|p| p > 0)
}

impl Conditions {
    pub fn validate(&self) -> Result<(), String> {
        if let Some(p) = &self.http_proxy {
            if !valid_proxy(p) {
                return Err(format!(
                    "lease_conditions.http_proxy {:?} must be host:port (a DNS name or IPv4 address, no scheme, no \
                     credentials)",
                    p.chars().take(80).collect::<String>()
                ));
            }
        }
        if let Some(t) = self.screen_timeout_ms {
            if !(1_000..=86_400_000).contains(&t) {
                return Err(format!("lease_conditions.screen_timeout_ms must be within 1000 ..= 86400000, not {t}"));
            }
        }
        for (key, apps) in [("stop_apps", &self.release.stop_apps), ("clear_apps", &self.release.clear_apps)] {
            if apps.len() > MAX_APPS {
                return Err(format!("lease_conditions.release.{key} lists more than {MAX_APPS} packages"));
            }
            if let Some(p) = apps.iter().find(|p| !package_like(p)) {
                return Err(format!("lease_conditions.release.{key} entry {p:?} is not a package name"));
            }
        }
        if let Some(k) = self.agent_may_set.iter().find(|k| !AGENT_KEYS.contains(&k.as_str())) {
            return Err(format!(
                "lease_conditions.agent_may_set: {k:?} is not a condition an agent may choose (those are {})",
                AGENT_KEYS.join(", ")
            ));
        }
        Ok(())
    }

    /// The conditions of one lease: the policy's, with what the agent asked for in `auth.start`
    /// (`input.conditions`) where the policy lets it choose. Refused (nothing bound) with the reason: a key the
    /// policy does not let agents set, or a value the policy itself could not have.
    pub fn for_lease(&self, asked: &Value) -> Result<Conditions, String> {
        // A form field's value is text: a JSON object in a string is taken too (empty: nothing asked).
        let parsed;
        let asked = match asked {
            Value::String(t) if t.trim().is_empty() => return Ok(self.clone()),
            Value::String(t) => {
                parsed = serde_json::from_str::<Value>(t)
                    .map_err(|e| format!("auth.start input.conditions is not a JSON object: {e}"))?;
                &parsed
            }
            v => v,
        };
        let Value::Object(asked) = asked else {
            return Err("auth.start input.conditions must be a JSON object".into());
        };
        if let Some(k) = asked.keys().find(|k| !self.agent_may_set.iter().any(|a| a == *k)) {
            let k: String = k.chars().take(64).flat_map(char::escape_debug).collect();
            let may = if self.agent_may_set.is_empty() {
                "none: the operator's policy lets agents choose no lease condition".to_owned()
            } else {
                self.agent_may_set.join(", ")
            };
            return Err(format!(
                "lease condition \"{k}\" is not one the operator's policy lets an agent choose (allowed: {may})"
            ));
        }
        let mine: Conditions = serde_json::from_value(Value::Object(asked.clone()))
            .map_err(|e| format!("auth.start input.conditions: {e}"))?;
        mine.validate().map_err(|e| e.replace("lease_conditions.", "auth.start input.conditions."))?;
        let mut c = self.clone();
        c.animations = mine.animations.or(c.animations);
        c.stay_awake_while_plugged = mine.stay_awake_while_plugged.or(c.stay_awake_while_plugged);
        c.screen_timeout_ms = mine.screen_timeout_ms.or(c.screen_timeout_ms);
        c.font_scale = mine.font_scale.or(c.font_scale);
        c.http_proxy = mine.http_proxy.or(c.http_proxy);
        c.dark_mode = mine.dark_mode.or(c.dark_mode);
        Ok(c)
    }

    /// Everything a lease reads, records and sets, in order: [`Conditions::settings`], dark mode, the keyboard.
    pub fn changes(&self) -> Vec<Change> {
        let mut v: Vec<Change> = self
            .settings()
            .into_iter()
            .map(|(namespace, name, value)| Change { namespace, name, value: Some(value) })
            .collect();
        if let Some(on) = self.dark_mode {
            v.push(Change { namespace: UIMODE, name: "night", value: Some(if on { "yes" } else { "no" }.into()) });
        }
        if self.release.restore_keyboard {
            v.push(Change { namespace: IME, name: "default_input_method", value: None });
        }
        v
    }

    /// The settings a lease runs under: (namespace, name, value). Every value is a number or a checked
    /// `host:port`, so none needs quoting — they are quoted anyway.
    pub fn settings(&self) -> Vec<(&'static str, &'static str, String)> {
        let mut v = Vec::new();
        if let Some(s) = self.animations {
            let x = if s == Switch::Off { "0" } else { "1" };
            for name in ["window_animation_scale", "transition_animation_scale", "animator_duration_scale"] {
                v.push(("global", name, x.to_owned()));
            }
        }
        if let Some(on) = self.stay_awake_while_plugged {
            v.push(("global", "stay_on_while_plugged_in", if on { "7" } else { "0" }.to_owned()));
        }
        if let Some(t) = self.screen_timeout_ms {
            v.push(("system", "screen_off_timeout", t.to_string()));
        }
        if let Some(f) = &self.font_scale {
            v.push(("system", "font_scale", f.0.clone()));
        }
        if let Some(p) = &self.http_proxy {
            v.push(("global", "http_proxy", p.clone()));
        }
        v
    }

    pub fn is_empty(&self) -> bool {
        self.changes().is_empty()
            && self.release.stop_apps.is_empty()
            && self.release.clear_apps.is_empty()
            && !self.release.home
            && !self.release.clear_clipboard
    }
}

/// One setting as it was before a lease changed it (`old: None` = it was unset).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Recorded {
    pub namespace: String,
    pub name: String,
    pub old: Option<String>,
}

/// Where the old values live until they are restored; `run.rs` wires it to the store (`device/` writes no SQL).
pub trait Ledger: Send + Sync {
    /// Records old values; a setting already recorded for the phone keeps its first (the phone's own) value.
    fn record(&self, key: &DeviceKey, rows: &[Recorded]) -> Result<(), String>;
    fn recorded(&self, key: &DeviceKey) -> Result<Vec<Recorded>, String>;
    fn forget(&self, key: &DeviceKey) -> Result<(), String>;
    /// Forgets one row (an [`INSTALLING`] row once the install's outcome is recorded).
    fn forget_row(&self, _key: &DeviceKey, _namespace: &str, _name: &str) -> Result<(), String> {
        Ok(())
    }
    /// Every phone with recorded values.
    fn phones(&self) -> Result<Vec<DeviceKey>, String>;
}

/// What a release put back, and what it could not (each with why).
pub type Reset = (Vec<String>, Vec<String>);

/// The lease-condition state of the backend (owned by `AdbBackend`; the jobs of `conditions.rs` work on it).
#[derive(Default)]
pub struct State {
    pub(super) cfg: Mutex<Arc<Conditions>>,
    pub(super) ledger: Mutex<Option<Arc<dyn Ledger>>>,
    /// One condition job per phone at a time (bind, release, retry).
    pub(super) work: Mutex<HashMap<DeviceKey, Arc<tokio::sync::Mutex<()>>>>,
    /// Phones a lease holds, their conditions applied (or continuing from before a restart).
    pub(super) leased: Mutex<HashSet<DeviceKey>>,
    /// Phones released whose release job has not run yet (whoever takes the phone's job first runs it).
    pub(super) to_release: Mutex<HashSet<DeviceKey>>,
    /// Phones with recorded values no lease holds, and why they are not restored yet.
    pub(super) not_restored: Mutex<HashMap<DeviceKey, String>>,
    /// The conditions an agent chose for the lease its `auth.start` is binding (taken by [`prepare`]).
    pub(super) asked: Mutex<HashMap<DeviceKey, Arc<Conditions>>>,
    /// What each phone's last release put back and what it could not (with why): the next bind's answer.
    pub(super) report: Mutex<HashMap<DeviceKey, Reset>>,
}

pub(super) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl State {
    pub fn configure(&self, c: Conditions) {
        *lock(&self.cfg) = Arc::new(c);
    }

    /// Whether the policy lets agents choose any condition (the card's `conditions` field is offered then).
    pub fn agents_may_choose(&self) -> bool {
        !lock(&self.cfg).agent_may_set.is_empty()
    }

    /// Checks what an agent asked for (`auth.start` `input.conditions`; `None`: nothing) against the policy and,
    /// given the phone being bound, keeps it for that lease's [`prepare`]. A phone bound without asking gets the
    /// policy's own conditions.
    pub fn ask(&self, key: Option<&DeviceKey>, asked: Option<&Value>) -> Result<(), String> {
        let lease = match asked {
            None => None,
            Some(a) => Some(Arc::new(lock(&self.cfg).for_lease(a)?)),
        };
        if let Some(key) = key {
            match lease {
                Some(c) => lock(&self.asked).insert(key.clone(), c),
                None => lock(&self.asked).remove(key),
            };
        }
        Ok(())
    }

    pub(super) fn job(&self, key: &DeviceKey) -> Arc<tokio::sync::Mutex<()>> {
        lock(&self.work).entry(key.clone()).or_default().clone()
    }

    /// A binding restored at start-up holds the phone: its recorded values stay until that lease ends.
    pub fn lease_continues(&self, key: &DeviceKey) {
        lock(&self.leased).insert(key.clone());
    }

    pub fn not_restored(&self, key: &DeviceKey) -> Option<String> {
        lock(&self.not_restored).get(key).cloned()
    }

    /// Marks the phone released; the caller spawns [`release`].
    pub fn released(&self, key: &DeviceKey) -> bool {
        if !lock(&self.leased).remove(key) {
            return false;
        }
        lock(&self.to_release).insert(key.clone());
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(v: Value) -> Result<Conditions, String> {
        let c: Conditions = serde_json::from_value(v).map_err(|e| e.to_string())?;
        c.validate()?;
        Ok(c)
    }

    #[test]
    fn policy_values_become_settings_and_bad_ones_are_refused() {
        let c = parse(json!({"animations": "off", "stay_awake_while_plugged": true, "screen_timeout_ms": 600000,
            "font_scale": 1.3, "http_proxy": "10.0.0.2:3128"}))
        .unwrap();
        let s: Vec<String> = c.settings().iter().map(|(ns, n, v)| format!("{ns} {n} {v}")).collect();
        assert_eq!(
            s,
            [
                "global window_animation_scale 0",
                "global transition_animation_scale 0",
                "global animator_duration_scale 0",
                "global stay_on_while_plugged_in 7",
                "system screen_off_timeout 600000",
                "system font_scale 1.3",
                "global http_proxy 10.0.0.2:3128"
            ]
        );
        for bad in [
            json!({"http_proxy": "user:pw@proxy:3128"}),
            json!({"http_proxy": "http://proxy:3128"}),
            json!({"http_proxy": "proxy"}),
            json!({"http_proxy": "proxy:0"}),
            json!({"font_scale": 5}),
            json!({"animations": "slow"}),
            json!({"screen_timeout_ms": 10}),
            json!({"release": {"stop_apps": ["x; reboot"]}}),
            json!({"dark": true}),
            json!({"dark_mode": "yes"}),
            json!({"release": {"clear_apps": ["com.x", "$(reboot)"]}}),
            json!({"agent_may_set": ["release"]}),
        ] {
            assert!(parse(bad.clone()).is_err(), "{bad}");
        }
    }

    #[test]
    fn dark_mode_and_the_keyboard_are_read_recorded_and_set_in_order() {
        let c = parse(json!({"animations": "off", "dark_mode": true, "release": {"restore_keyboard": true}})).unwrap();
        let reads: Vec<String> = c.changes().iter().map(Change::read).collect();
        assert_eq!(reads.last().unwrap(), "settings get secure default_input_method");
        assert_eq!(reads[reads.len() - 2], "cmd uimode night");
        let sets: Vec<String> = c.changes().iter().filter_map(Change::set).collect();
        assert_eq!(sets.last().unwrap(), "cmd uimode night 'yes'", "the keyboard is only recorded");
        assert_eq!(sets.len(), 4);
    }

    #[test]
    fn an_agent_chooses_only_what_the_policy_lets_it() {
        let policy =
            parse(json!({"animations": "off", "font_scale": 1.0, "agent_may_set": ["font_scale", "dark_mode"]}))
                .unwrap();
        let lease = policy.for_lease(&json!({"font_scale": 1.3, "dark_mode": true})).unwrap();
        assert_eq!(lease.font_scale, Some(Scale("1.3".into())));
        assert_eq!(lease.dark_mode, Some(true));
        assert_eq!(lease.animations, Some(Switch::Off), "the policy's own stay");
        // A form field's text.
        assert_eq!(policy.for_lease(&json!("{\"dark_mode\": false}")).unwrap().dark_mode, Some(false));
        let e = policy.for_lease(&json!({"http_proxy": "10.0.0.1:80"})).unwrap_err();
        assert!(e.contains("\"http_proxy\"") && e.contains("allowed: font_scale, dark_mode"), "{e}");
        let e = policy.for_lease(&json!({"font_scale": 9})).unwrap_err();
        assert!(e.contains("font_scale"), "{e}");
        let e = parse(json!({})).unwrap().for_lease(&json!({"dark_mode": true})).unwrap_err();
        assert!(e.contains("lets agents choose no lease condition"), "{e}");
        assert!(policy.for_lease(&json!([1])).is_err());
    }
}

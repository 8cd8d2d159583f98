//! Lease conditions (issue 34 item 4): the same phone for every lease. The operator's policy (`lease_conditions`)
//! names settings a lease runs under — animations off, stay awake while plugged in, a screen timeout, a font
//! scale, a Wi-Fi HTTP proxy, dark mode — and what a release does (stop and clear listed apps, go home, put back the
//! keyboard the phone had at bind). Within what the policy names (`agent_may_set`), an agent's `auth.start` input
//! (`input.conditions`) chooses conditions for its own lease ([`Conditions::for_lease`]); anything else is refused
//! at bind, before anything is bound.
//!
//! What is recorded is rows of (namespace, name, old value): the three `settings` namespaces; `uimode night` (dark
//! mode, `cmd uimode night`, which is not a plain setting: Android keeps its own state beside `ui_night_mode`); and
//! `ime default_input_method` (the keyboard, recorded only: put back with `ime set` when a lease changed it).
//!
//! At bind ([`prepare`], awaited before the bind's answer reaches the agent) the old values are read in one round
//! trip and **recorded through the [`Ledger`] before anything changes** (run.rs wires it to SQLite, so a `kill -9`
//! between the change and the release loses nothing), then set in a second round trip. At release
//! (`Backend::released`: logout, channel cleanup, lease expiry, the operator's Release) the release actions run and
//! every recorded setting is put back (`settings delete` when it was unset); only then are the rows forgotten. Rows
//! of a phone no lease holds after a restart are restored as soon as it is online ([`sweep`]).
//!
//! A phone whose restore failed stays *not restored*: the channel layer hands it to no agent
//! (`Backend::not_restored`), the health book shows it (`/health`, the wall's card), and [`sweep`] retries it while it
//! is online. Without `lease_conditions` and without rows nothing here sends the phone anything.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::adb::AdbBackend;
use super::{DeviceKey, DeviceState};
use crate::protocol::errors::{ErrorCode, ProtoError};

/// Deadline of one round trip (all reads, all writes or the whole restore).
const ROUND_TRIP: Duration = Duration::from_secs(10);
/// How often not-restored phones are retried (also on every device state change).
pub const RETRY_EVERY: Duration = Duration::from_secs(5);
/// The longest setting value kept (a phone's own old value longer than this is refused, not truncated).
const VALUE_MAX: usize = 256;
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
const UIMODE: &str = "uimode";
/// The pseudo-namespace of the keyboard's row (recorded at bind, put back with `ime set`).
const IME: &str = "ime";
/// Dark mode's values as `cmd uimode night` prints and takes them (UiModeManagerService's shell command).
const NIGHT_MODES: &[&str] = &["yes", "no", "auto", "custom_schedule", "custom_bedtime"];

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
    fn read(&self) -> String {
        match self.namespace {
            UIMODE => "cmd uimode night".into(),
            IME => "settings get secure default_input_method".into(),
            ns => format!("settings get {ns} {}", self.name),
        }
    }

    fn set(&self) -> Option<String> {
        let v = self.value.as_ref()?;
        Some(match self.namespace {
            UIMODE => format!("cmd uimode night {}", super::shell::quote(v)),
            ns => format!("settings put {ns} {} {}", self.name, super::shell::quote(v)),
        })
    }
}

/// What a release does besides restoring settings.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Release {
    /// Packages force-stopped at release (`am force-stop`).
    #[serde(default)]
    pub stop_apps: Vec<String>,
    /// Packages whose data a release clears (`pm clear`).
    #[serde(default)]
    pub clear_apps: Vec<String>,
    /// Press Home at release.
    #[serde(default)]
    pub home: bool,
    /// Put the keyboard back at release when the lease changed it (recorded at bind, `ime set`).
    #[serde(default)]
    pub restore_keyboard: bool,
    /// Empty the clipboard at release (through the phone helper: Android has no shell command for it), so what one
    /// agent copied — a one-time code, a password it typed by paste — is not the next agent's.
    #[serde(default)]
    pub clear_clipboard: bool,
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

    fn is_empty(&self) -> bool {
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
    /// Every phone with recorded values.
    fn phones(&self) -> Result<Vec<DeviceKey>, String>;
}

/// The lease-condition state of the backend (owned by `AdbBackend`).
#[derive(Default)]
pub struct State {
    cfg: Mutex<Arc<Conditions>>,
    ledger: Mutex<Option<Arc<dyn Ledger>>>,
    /// One condition job per phone at a time (bind, release, retry).
    work: Mutex<HashMap<DeviceKey, Arc<tokio::sync::Mutex<()>>>>,
    /// Phones a lease holds, their conditions applied (or continuing from before a restart).
    leased: Mutex<HashSet<DeviceKey>>,
    /// Phones released whose release job has not run yet (whoever takes the phone's job first runs it).
    to_release: Mutex<HashSet<DeviceKey>>,
    /// Phones with recorded values no lease holds, and why they are not restored yet.
    not_restored: Mutex<HashMap<DeviceKey, String>>,
    /// The conditions an agent chose for the lease its `auth.start` is binding (taken by [`prepare`]).
    asked: Mutex<HashMap<DeviceKey, Arc<Conditions>>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
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

    fn job(&self, key: &DeviceKey) -> Arc<tokio::sync::Mutex<()>> {
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

/// Wires the ledger and takes over what it holds: phones with rows that no restored binding holds are not restored
/// yet (a crash or `kill -9` came between a bind and its restore); [`sweep`] restores them once they are online.
pub fn set_ledger(adb: &AdbBackend, ledger: Arc<dyn Ledger>) {
    let st = adb.conditions();
    match ledger.phones() {
        Ok(phones) => {
            let leased = lock(&st.leased).clone();
            for k in phones.into_iter().filter(|k| !leased.contains(k)) {
                mark(adb, &k, "its settings from a lease before the connector restarted are not restored yet".into());
            }
        }
        Err(e) => tracing::error!(error = %e, "could not read the recorded lease conditions"),
    }
    *lock(&st.ledger) = Some(ledger);
}

fn mark(adb: &AdbBackend, key: &DeviceKey, why: String) {
    adb.health_book().set_not_restored(key, Some(why.clone()));
    lock(&adb.conditions().not_restored).insert(key.clone(), why);
}

fn unmark(adb: &AdbBackend, key: &DeviceKey) {
    adb.health_book().set_not_restored(key, None);
    lock(&adb.conditions().not_restored).remove(key);
}

fn ledger(adb: &AdbBackend) -> Option<Arc<dyn Ledger>> {
    lock(&adb.conditions().ledger).clone()
}

fn failed(msg: String) -> ProtoError {
    ProtoError::new(ErrorCode::DeviceBusy, msg)
}

/// Applies the policy's conditions for a new lease of `key`; awaited before the bind's answer. Idempotent for a
/// phone its lease already prepared (a second `auth.start` on the same channel). A previous lease's leftovers are
/// released first; if that fails the phone is not clean and the bind fails.
pub async fn prepare(adb: Arc<AdbBackend>, key: DeviceKey) -> Result<(), ProtoError> {
    let st = adb.conditions();
    let job = st.job(&key);
    let _job = job.lock().await;
    if lock(&st.leased).contains(&key) {
        return Ok(());
    }
    if lock(&st.to_release).contains(&key) || lock(&st.not_restored).contains_key(&key) {
        release_now(&adb, &key).await?;
    }
    let cfg = lock(&st.asked).remove(&key).unwrap_or_else(|| lock(&st.cfg).clone());
    let changes = cfg.changes();
    if !changes.is_empty() {
        let Some(ledger) = ledger(&adb) else {
            return Err(failed("the connector is still starting; bind again in a second".into()));
        };
        let read: Vec<String> = changes.iter().map(Change::read).collect();
        let out = adb.shell_ok(&key, &read.join("; "), false, ROUND_TRIP).await?;
        let olds = super::formats::settings_values(&out, changes.len(), VALUE_MAX).ok_or_else(|| {
            failed(
                "the phone's answer to the reads of its settings is not one value per setting; nothing was changed"
                    .into(),
            )
        })?;
        let mut rows = Vec::with_capacity(changes.len());
        for (c, old) in changes.iter().zip(olds) {
            let old = if c.namespace == UIMODE {
                // "Night mode: yes": only a mode `cmd uimode night` takes back is recorded.
                let mode = old.as_deref().and_then(super::formats::night_mode).filter(|m| NIGHT_MODES.contains(m));
                Some(mode.map(str::to_owned).ok_or_else(|| {
                    failed("the phone's `cmd uimode night` answer names no dark mode it could be put back to; nothing was changed".into())
                })?)
            } else {
                old
            };
            rows.push(Recorded { namespace: c.namespace.into(), name: c.name.into(), old });
        }
        // Recorded before the phone changes: whatever happens next, the old values can be put back.
        ledger.record(&key, &rows).map_err(|e| {
            tracing::error!(error = %e, device = %key, "could not record the phone's settings");
            ProtoError::new(ErrorCode::Internal, "the connector's state store failed; see the connector log")
        })?;
        let put: Vec<String> = changes.iter().filter_map(Change::set).collect();
        let mut details = Map::new();
        details.insert(
            "settings".into(),
            Value::Object(
                changes
                    .iter()
                    .filter_map(|c| Some((format!("{}/{}", c.namespace, c.name), json!(c.value.as_ref()?))))
                    .collect(),
            ),
        );
        let set = if put.is_empty() {
            Ok(String::new())
        } else {
            adb.shell_ok(&key, &put.join(" && "), true, ROUND_TRIP).await
        };
        if let Err(e) = set {
            adb.audit(&key, "lease.conditions.set", &details, "failed");
            // Whatever part was set is recorded: the release that follows the failed bind puts it back.
            lock(&st.to_release).insert(key.clone());
            return Err(failed(format!("the lease conditions could not be set on the phone: {}", e.message)));
        }
        adb.audit(&key, "lease.conditions.set", &details, "ok");
    }
    lock(&st.leased).insert(key);
    Ok(())
}

/// The release job of a phone marked released (spawned by `Backend::released`).
pub async fn release(adb: Arc<AdbBackend>, key: DeviceKey) {
    let job = adb.conditions().job(&key);
    let _job = job.lock().await;
    if !lock(&adb.conditions().to_release).contains(&key) {
        return; // a bind ran it first
    }
    let _ = release_now(&adb, &key).await;
}

/// Release actions, then the restore of every recorded setting. Under the phone's job lock.
async fn release_now(adb: &Arc<AdbBackend>, key: &DeviceKey) -> Result<(), ProtoError> {
    let st = adb.conditions();
    let released = lock(&st.to_release).remove(key);
    if released {
        let cfg = lock(&st.cfg).clone();
        let mut steps: Vec<String> =
            cfg.release.stop_apps.iter().map(|p| format!("am force-stop {}", super::shell::quote(p))).collect();
        steps.extend(cfg.release.clear_apps.iter().map(|p| format!("pm clear {}", super::shell::quote(p))));
        if cfg.release.home {
            steps.push("input keyevent 3".into());
        }
        if !steps.is_empty() || cfg.release.clear_clipboard {
            let mut details = Map::new();
            details.insert("stop_apps".into(), json!(cfg.release.stop_apps));
            details.insert("clear_apps".into(), json!(cfg.release.clear_apps));
            details.insert("home".into(), json!(cfg.release.home));
            let mut ok = true;
            if !steps.is_empty() {
                ok = adb.shell_ok(key, &steps.join("; "), true, ROUND_TRIP).await.is_ok();
            }
            if cfg.release.clear_clipboard {
                // Not a restore step: a phone where the helper cannot run (older than Android 8, --phone-helper
                // off) would otherwise never be handed out again. The audit and the log say it was not cleared.
                let cleared = adb.clipboard_set(key, None, ROUND_TRIP).await;
                details.insert(
                    "clipboard".into(),
                    json!(match &cleared {
                        Ok(()) => "cleared".to_owned(),
                        Err(e) => format!("not cleared: {}", e.message),
                    }),
                );
                if let Err(e) = cleared {
                    tracing::warn!(device = %key, error = %e.message, "the release could not clear the clipboard");
                    ok = false;
                }
            }
            adb.audit(key, "lease.release", &details, if ok { "ok" } else { "failed" });
        }
    }
    restore(adb, key).await
}

/// Puts every recorded setting back in one round trip; the rows go only once the phone confirmed.
async fn restore(adb: &Arc<AdbBackend>, key: &DeviceKey) -> Result<(), ProtoError> {
    let Some(ledger) = ledger(adb) else { return Ok(()) };
    let rows = ledger.recorded(key).map_err(|e| {
        tracing::error!(error = %e, device = %key, "could not read the phone's recorded settings");
        ProtoError::new(ErrorCode::Internal, "the connector's state store failed; see the connector log")
    })?;
    if rows.is_empty() {
        unmark(adb, key);
        return Ok(());
    }
    // The keyboard goes back only if the lease changed it: one read first (the agent's typing tools may switch to
    // their own keyboard and back; a phone whose keyboard is its own again is left alone).
    let keyboard = rows.iter().find(|r| r.namespace == IME).and_then(|r| r.old.clone());
    let keyboard = match keyboard {
        Some(old) => {
            let now = adb.shell_ok(key, "settings get secure default_input_method", false, ROUND_TRIP).await;
            let now = now.map(|o| super::formats::settings_values(&o, 1, VALUE_MAX));
            match now {
                Ok(Some(v)) if v.first().cloned().flatten().as_deref() == Some(old.as_str()) => None,
                Ok(_) => Some(old),
                Err(e) => return not_restored(adb, key, &rows, e),
            }
        }
        None => None,
    };
    let mut cmd: Vec<String> = Vec::new();
    if let Some(old) = &keyboard {
        // `ime set` switches the running keyboard; a keyboard `ime` no longer knows (uninstalled meanwhile) is put
        // back as the setting at least. First in the line: `a || b && c` runs c after either.
        let q = super::shell::quote(old);
        cmd.push(format!("ime set {q} || settings put secure default_input_method {q}"));
    }
    cmd.extend(rows.iter().filter_map(|r| match (r.namespace.as_str(), &r.old) {
        (IME, _) => None,
        (UIMODE, Some(v)) => Some(format!("cmd uimode night {}", super::shell::quote(v))),
        (UIMODE, None) => None,
        (ns, Some(v)) => Some(format!("settings put {ns} {} {}", r.name, super::shell::quote(v))),
        (ns, None) => Some(format!("settings delete {ns} {}", r.name)),
    }));
    let mut details = Map::new();
    details.insert(
        "settings".into(),
        Value::Object(rows.iter().map(|r| (format!("{}/{}", r.namespace, r.name), json!(r.old))).collect()),
    );
    let done =
        if cmd.is_empty() { Ok(String::new()) } else { adb.shell_ok(key, &cmd.join(" && "), true, ROUND_TRIP).await };
    match done {
        Ok(_) => {
            if let Err(e) = ledger.forget(key) {
                tracing::error!(error = %e, device = %key, "could not forget the restored settings");
            }
            unmark(adb, key);
            adb.audit(key, "lease.conditions.restored", &details, "ok");
            tracing::info!(device = %key, settings = rows.len(), "lease conditions restored");
            Ok(())
        }
        Err(e) => not_restored(adb, key, &rows, e),
    }
}

/// Marks the phone not restored (audited once), saying why.
fn not_restored(adb: &Arc<AdbBackend>, key: &DeviceKey, rows: &[Recorded], e: ProtoError) -> Result<(), ProtoError> {
    let mut details = Map::new();
    details.insert(
        "settings".into(),
        Value::Object(rows.iter().map(|r| (format!("{}/{}", r.namespace, r.name), json!(r.old))).collect()),
    );
    let why = format!(
        "its settings from the last lease could not be restored ({}); it is not handed to an agent until \
         they are (retried every {} s while it is online)",
        e.message,
        RETRY_EVERY.as_secs()
    );
    tracing::warn!(device = %key, error = %e.message, "lease conditions not restored");
    if adb.conditions().not_restored(key).is_none() {
        adb.audit(key, "lease.conditions.restored", &details, "failed");
    }
    mark(adb, key, why.clone());
    Err(failed(format!("the phone is not clean: {why}")))
}

/// Runs until `shutdown` flips: retries every not-restored phone that is online, every [`RETRY_EVERY`] and when a
/// device changes state (a phone coming back online is restored at once).
pub async fn sweep(adb: Arc<AdbBackend>, mut shutdown: tokio::sync::watch::Receiver<bool>) {
    let mut changes = super::Backend::subscribe(adb.as_ref());
    loop {
        let due: Vec<DeviceKey> = lock(&adb.conditions().not_restored).keys().cloned().collect();
        for key in due {
            let online = super::Backend::info(adb.as_ref(), &key).is_some_and(|d| d.state == DeviceState::Online);
            if !online || lock(&adb.conditions().leased).contains(&key) {
                continue;
            }
            let job = adb.conditions().job(&key);
            let _job = job.lock().await;
            if lock(&adb.conditions().not_restored).contains_key(&key) {
                let _ = release_now(&adb, &key).await;
            }
        }
        tokio::select! {
            _ = shutdown.changed() => return,
            _ = changes.recv() => {}
            _ = tokio::time::sleep(RETRY_EVERY) => {}
        }
    }
}

/// Whether the backend has anything to do at bind (no conditions: nothing is sent, nothing waited for).
pub fn idle(adb: &AdbBackend, key: &DeviceKey) -> bool {
    let st = adb.conditions();
    lock(&st.cfg).is_empty()
        && !lock(&st.asked).contains_key(key)
        && !lock(&st.to_release).contains(key)
        && !lock(&st.not_restored).contains_key(key)
}

#[cfg(test)]
mod tests {
    use super::*;

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

//! Lease conditions (issue 34 item 4): the same phone for every lease. The operator's policy (`lease_conditions`)
//! names settings a lease runs under — animations off, stay awake while plugged in, a screen timeout, a font
//! scale, a Wi-Fi HTTP proxy — and what a release does (stop listed apps, go home).
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
    #[serde(default)]
    pub release: Release,
}

/// What a release does besides restoring settings.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Release {
    /// Packages force-stopped at release (`am force-stop`).
    #[serde(default)]
    pub stop_apps: Vec<String>,
    /// Press Home at release.
    #[serde(default)]
    pub home: bool,
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
        if self.release.stop_apps.len() > MAX_APPS {
            return Err(format!("lease_conditions.release.stop_apps lists more than {MAX_APPS} packages"));
        }
        if let Some(p) = self.release.stop_apps.iter().find(|p| !package_like(p)) {
            return Err(format!("lease_conditions.release.stop_apps entry {p:?} is not a package name"));
        }
        Ok(())
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
        self.settings().is_empty() && self.release.stop_apps.is_empty() && !self.release.home
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
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl State {
    pub fn configure(&self, c: Conditions) {
        *lock(&self.cfg) = Arc::new(c);
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
    let cfg = lock(&st.cfg).clone();
    let settings = cfg.settings();
    if !settings.is_empty() {
        let Some(ledger) = ledger(&adb) else {
            return Err(failed("the connector is still starting; bind again in a second".into()));
        };
        let read: Vec<String> = settings.iter().map(|(ns, name, _)| format!("settings get {ns} {name}")).collect();
        let out = adb.shell_ok(&key, &read.join("; "), false, ROUND_TRIP).await?;
        let olds = super::formats::settings_values(&out, settings.len(), VALUE_MAX).ok_or_else(|| {
            failed("the phone's `settings get` answer is not one value per setting; nothing was changed".into())
        })?;
        let rows: Vec<Recorded> = settings
            .iter()
            .zip(olds)
            .map(|((ns, name, _), old)| Recorded { namespace: (*ns).into(), name: (*name).into(), old })
            .collect();
        // Recorded before the phone changes: whatever happens next, the old values can be put back.
        ledger.record(&key, &rows).map_err(|e| {
            tracing::error!(error = %e, device = %key, "could not record the phone's settings");
            ProtoError::new(ErrorCode::Internal, "the connector's state store failed; see the connector log")
        })?;
        let put: Vec<String> = settings
            .iter()
            .map(|(ns, name, v)| format!("settings put {ns} {name} {}", super::shell::quote(v)))
            .collect();
        let mut details = Map::new();
        details.insert(
            "settings".into(),
            Value::Object(settings.iter().map(|(ns, n, v)| (format!("{ns}/{n}"), json!(v))).collect()),
        );
        if let Err(e) = adb.shell_ok(&key, &put.join(" && "), true, ROUND_TRIP).await {
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
        if cfg.release.home {
            steps.push("input keyevent 3".into());
        }
        if !steps.is_empty() {
            let mut details = Map::new();
            details.insert("stop_apps".into(), json!(cfg.release.stop_apps));
            details.insert("home".into(), json!(cfg.release.home));
            let r = adb.shell_ok(key, &steps.join("; "), true, ROUND_TRIP).await;
            adb.audit(key, "lease.release", &details, if r.is_ok() { "ok" } else { "failed" });
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
    let cmd: Vec<String> = rows
        .iter()
        .map(|r| match &r.old {
            Some(v) => format!("settings put {} {} {}", r.namespace, r.name, super::shell::quote(v)),
            None => format!("settings delete {} {}", r.namespace, r.name),
        })
        .collect();
    let mut details = Map::new();
    details.insert(
        "settings".into(),
        Value::Object(rows.iter().map(|r| (format!("{}/{}", r.namespace, r.name), json!(r.old))).collect()),
    );
    match adb.shell_ok(key, &cmd.join(" && "), true, ROUND_TRIP).await {
        Ok(_) => {
            if let Err(e) = ledger.forget(key) {
                tracing::error!(error = %e, device = %key, "could not forget the restored settings");
            }
            unmark(adb, key);
            adb.audit(key, "lease.conditions.restored", &details, "ok");
            tracing::info!(device = %key, settings = rows.len(), "lease conditions restored");
            Ok(())
        }
        Err(e) => {
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
    }
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
    lock(&st.cfg).is_empty() && !lock(&st.to_release).contains(key) && !lock(&st.not_restored).contains_key(key)
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
        ] {
            assert!(parse(bad.clone()).is_err(), "{bad}");
        }
    }
}

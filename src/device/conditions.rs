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

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Map, Value};

use super::adb::AdbBackend;
use super::key::{DeviceKey, DeviceState};
use super::lease::{lock, undo, Change, Ledger, Recorded, IME, NIGHT_MODES, UIMODE};
use crate::protocol::errors::{ErrorCode, ProtoError};

/// Deadline of one round trip (all reads, all writes or the whole restore).
const ROUND_TRIP: Duration = Duration::from_secs(10);
/// How often not-restored phones are retried (also on every device state change).
pub const RETRY_EVERY: Duration = Duration::from_secs(5);
/// The longest setting value kept (a phone's own old value longer than this is refused, not truncated).
const VALUE_MAX: usize = 256;

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

/// Writes what a lease is about to change of `key` (`rows`) to the ledger and marks the phone as having something
/// to restore (even when the policy set nothing at bind). A ledger not open yet or a write that fails refuses the
/// caller's call: the lease changes nothing it could not put back. `what` names the record in the log.
fn record_for_lease(adb: &AdbBackend, key: &DeviceKey, rows: &[Recorded], what: &str) -> Result<(), ProtoError> {
    let Some(ledger) = ledger(adb) else {
        return Err(failed("the connector is still starting; try again in a second".into()));
    };
    ledger.record(key, rows).map_err(|e| {
        tracing::error!(error = %e, device = %key, "could not record {what}");
        ProtoError::new(
            ErrorCode::Internal,
            "the connector's state store failed; see the connector log; nothing was done",
        )
    })?;
    lock(&adb.conditions().leased).insert(key.clone());
    Ok(())
}

/// Whether the policy's release undoes what a lease does of `namespace` (`lease::OPENED` …): the tools record it
/// only then ([`lease_did`]).
pub fn undoes(adb: &AdbBackend, namespace: &str) -> bool {
    lock(&adb.conditions().cfg).release.undoes(namespace)
}

/// Records what the lease of `key` is about to do (or, for an install, has just done) that its release undoes
/// (issue 47: `lease::OPENED`, `GRANTED`, `PUSHED`, `INSTALLED`), through the ledger — SQLite, so a crash or
/// `kill -9` before the release still undoes it at the next start ([`sweep`]). Nothing when the policy opts out
/// of undoing it. A record that cannot be written refuses the call: the lease does nothing it could not undo.
pub fn lease_did(adb: &AdbBackend, key: &DeviceKey, namespace: &str, name: &str) -> Result<(), ProtoError> {
    if !undoes(adb, namespace) {
        return Ok(());
    }
    let row = Recorded { namespace: namespace.to_owned(), name: name.to_owned(), old: None };
    record_for_lease(adb, key, &[row], "what the lease did")
}

/// Records an install about to run (issue 47: [`lease::INSTALLING`], before the APK is copied), with the packages
/// the phone has now, so that a `kill -9` or a cut mid-install still uninstalls what it added. Nothing when the
/// policy keeps installed packages; an error refuses the install before anything reached the phone.
pub fn installing(adb: &AdbBackend, key: &DeviceKey, apk: &str, packages_before: &str) -> Result<(), ProtoError> {
    if !undoes(adb, super::lease::INSTALLING) {
        return Ok(());
    }
    let before = super::lease::package_names(packages_before).join("\n");
    let row = Recorded { namespace: super::lease::INSTALLING.to_owned(), name: apk.to_owned(), old: Some(before) };
    record_for_lease(adb, key, &[row], "the install about to run")
}

/// Records the values `settings` (namespace, name) of `key` have now, before a tool of the lease changes them
/// (issue 49: `android_rotate`'s `accelerometer_rotation` / `user_rotation`), through the ledger — the release then
/// puts them back as it puts back the policy's conditions (`settings delete` for one that was unset). A setting
/// already recorded keeps the value first recorded (the phone's own: the ledger's rule). A value that cannot be
/// read or recorded refuses the call: the lease changes nothing it could not put back.
pub async fn lease_sets(
    adb: &Arc<AdbBackend>,
    key: &DeviceKey,
    settings: &[(&str, &str)],
    deadline: Duration,
) -> Result<(), ProtoError> {
    if ledger(adb).is_none() {
        return Err(failed("the connector is still starting; try again in a second".into()));
    }
    let read: Vec<String> = settings.iter().map(|(ns, name)| format!("settings get {ns} {name}")).collect();
    let out = adb.shell_ok(key, &read.join("; "), false, deadline.min(ROUND_TRIP)).await?;
    let olds = super::formats::settings_values(&out, settings.len(), VALUE_MAX).ok_or_else(|| {
        failed(
            "the phone's answer to the reads of its settings is not one value per setting; nothing was changed".into(),
        )
    })?;
    let rows: Vec<Recorded> = settings
        .iter()
        .zip(olds)
        .map(|((ns, name), old)| Recorded { namespace: (*ns).to_owned(), name: (*name).to_owned(), old })
        .collect();
    record_for_lease(adb, key, &rows, "the phone's settings")
}

/// The install recorded by [`installing`] ended and what it added is recorded ([`lease_did`]): its row goes.
pub fn install_recorded(adb: &AdbBackend, key: &DeviceKey, apk: &str) {
    if let Some(ledger) = ledger(adb) {
        if let Err(e) = ledger.forget_row(key, super::lease::INSTALLING, apk) {
            tracing::warn!(error = %e, device = %key, "could not forget a finished install's record");
        }
    }
}

/// An install still recorded as under way at release: every package the phone has now that it did not have
/// before it becomes an [`lease::INSTALLED`] row of this release (read with one `pm list packages`).
async fn expand_installing(adb: &Arc<AdbBackend>, key: &DeviceKey, rows: &mut Vec<Recorded>) -> Result<(), ProtoError> {
    let befores: Vec<Vec<String>> = rows
        .iter()
        .filter(|r| r.namespace == super::lease::INSTALLING)
        .map(|r| r.old.as_deref().unwrap_or("").lines().map(str::to_owned).collect())
        .collect();
    if befores.is_empty() {
        return Ok(());
    }
    let now = adb.shell_ok(key, "pm list packages", false, ROUND_TRIP).await?;
    let now = super::lease::package_names(&now);
    for before in befores {
        for p in now.iter().filter(|p| !before.contains(p)) {
            if !rows.iter().any(|r| r.namespace == super::lease::INSTALLED && &r.name == p) {
                rows.push(Recorded { namespace: super::lease::INSTALLED.to_owned(), name: p.clone(), old: None });
            }
        }
    }
    Ok(())
}

/// What the last release of `key` put back (`reset`) and what it could not (`not_reset`, with why): the next
/// bind's answer says it (`lease: {reset, not_reset}`).
pub fn report(adb: &AdbBackend, key: &DeviceKey) -> (Vec<String>, Vec<String>) {
    lock(&adb.conditions().report).get(key).cloned().unwrap_or_default()
}

fn reported(adb: &AdbBackend, key: &DeviceKey, reset: Vec<String>, not_reset: Vec<String>) {
    let mut g = lock(&adb.conditions().report);
    let e = g.entry(key.clone()).or_default();
    e.0.extend(reset);
    e.1.extend(not_reset.iter().map(|why| brief(why)));
}

/// A reason as the next tenant reads it in every bind answer: its first sentence, at most 160 characters (the full
/// message is in the release's audit record and the log).
fn brief(why: &str) -> String {
    let first = why.split(". ").next().unwrap_or(why).trim_end_matches('.');
    let mut out: String = first.chars().take(160).collect();
    if out.len() < first.len() {
        out.push('…');
    }
    out
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
        lock(&st.report).remove(key);
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
                let mut done: Vec<String> = cfg.release.stop_apps.iter().map(|p| format!("stopped {p}")).collect();
                done.extend(cfg.release.clear_apps.iter().map(|p| format!("cleared {p}")));
                if cfg.release.home {
                    done.push("home".into());
                }
                if ok {
                    reported(adb, key, done, Vec::new());
                } else {
                    let why = done.into_iter().map(|d| format!("{d}: the release command failed")).collect();
                    reported(adb, key, Vec::new(), why);
                }
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
                match cleared {
                    Ok(()) => reported(adb, key, vec!["clipboard".into()], Vec::new()),
                    Err(e) => {
                        tracing::warn!(device = %key, error = %e.message, "the release could not clear the clipboard");
                        reported(adb, key, Vec::new(), vec![format!("clipboard: {}", e.message)]);
                        ok = false;
                    }
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
    let mut rows = rows;
    if let Err(e) = expand_installing(adb, key, &mut rows).await {
        return not_restored(adb, key, &rows, e);
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
    // What the lease did (apps opened, grants, pushed files, installs): undone first, each on its own, tolerant of
    // what changed meanwhile; then the settings' chain.
    let undone: Vec<&Recorded> = rows.iter().filter(|r| undo(&r.namespace, &r.name).is_some()).collect();
    let mut prefix: String = undone.iter().filter_map(|r| undo(&r.namespace, &r.name)).map(|c| c + "; ").collect();
    let mut cmd: Vec<String> = Vec::new();
    if let Some(old) = &keyboard {
        // `ime set` switches the running keyboard; a keyboard `ime` no longer knows (uninstalled meanwhile) is put
        // back as the setting at least. First in the line: `a || b && c` runs c after either.
        let q = super::shell::quote(old);
        cmd.push(format!("ime set {q} || settings put secure default_input_method {q}"));
    }
    cmd.extend(rows.iter().filter(|r| undo(&r.namespace, &r.name).is_none()).filter_map(|r| {
        match (r.namespace.as_str(), &r.old) {
            (IME, _) => None,
            (UIMODE, Some(v)) => Some(format!("cmd uimode night {}", super::shell::quote(v))),
            (UIMODE, None) => None,
            (ns, Some(v)) => Some(format!("settings put {ns} {} {}", r.name, super::shell::quote(v))),
            (ns, None) => Some(format!("settings delete {ns} {}", r.name)),
        }
    }));
    let mut details = Map::new();
    let settings = rows.iter().filter(|r| undo(&r.namespace, &r.name).is_none());
    details.insert(
        "settings".into(),
        Value::Object(settings.map(|r| (format!("{}/{}", r.namespace, r.name), json!(r.old))).collect()),
    );
    let undone_names: Vec<String> = undone.iter().map(|r| format!("{} {}", r.namespace, r.name)).collect();
    details.insert("undone".into(), json!(undone_names));
    if cmd.is_empty() {
        // Nothing of the chain: the undo steps alone (the last one's status is that of `|| true` or `rm -f`).
        prefix.push_str("true");
    }
    let line = format!("{prefix}{}", cmd.join(" && "));
    let done = adb.shell_ok(key, &line, true, ROUND_TRIP).await;
    match done {
        Ok(_) => {
            let mut reset: Vec<String> = rows
                .iter()
                .filter(|r| r.namespace != IME || keyboard.is_some())
                .map(|r| format!("{} {}", r.namespace, r.name))
                .collect();
            reset.sort();
            reported(adb, key, reset, Vec::new());
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
    let names = rows.iter().map(|r| format!("{} {}: {}", r.namespace, r.name, e.message)).collect();
    reported(adb, key, Vec::new(), names);
    if adb.conditions().not_restored(key).is_none() {
        adb.audit(key, "lease.conditions.restored", &details, "failed");
    }
    mark(adb, key, why.clone());
    Err(failed(format!("the phone is not clean: {why}")))
}

/// Runs until `shutdown` flips: retries every not-restored phone that is online, every [`RETRY_EVERY`] and when a
/// device changes state (a phone coming back online is restored at once).
pub async fn sweep(adb: Arc<AdbBackend>, mut shutdown: tokio::sync::watch::Receiver<bool>) {
    let mut changes = super::backend::Backend::subscribe(adb.as_ref());
    loop {
        let due: Vec<DeviceKey> = lock(&adb.conditions().not_restored).keys().cloned().collect();
        for key in due {
            let online =
                super::backend::Backend::info(adb.as_ref(), &key).is_some_and(|d| d.state == DeviceState::Online);
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

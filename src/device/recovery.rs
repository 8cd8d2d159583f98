//! The recovery ladder of a stuck phone, run by the tracker side (never by a tool): a phone whose commands ended in
//! `device_timeout` [`TIMEOUTS_IN_A_ROW`] times in a row, or that the adb server has listed `offline` for
//! [`Config::offline_after`] (`--recover-offline-after`, default [`OFFLINE_AFTER`]), and that does not answer a trivial probe (`echo ok`, 3 s) either, is
//!
//! 1. reconnected through the adb server (`host-serial:SERIAL:reconnect`, [`super::host::reconnect`]; a phone on
//!    the network is then connected again with `host:connect`) and given [`Config::wait`] to answer a probe again;
//! 2. then, if the operator configured one (`--recover-command`), handed to the operator's command (e.g. a hub port
//!    power cycle), run without a shell with `{serial}` substituted, bounded by [`Config::command_timeout`] and run
//!    at most once per [`Config::command_every`] per phone, and given [`Config::wait`] to answer;
//! 3. then marked unhealthy (the wall, the API and `xagent_device_unhealthy` show it) until it answers again.
//!
//! One ladder per phone at a time; every step is reported to the audit sink (`device.recover.*`). A phone that
//! answers any command clears `unhealthy` (`health::Book::command_ended`).
//!
//! [`TIMEOUTS_IN_A_ROW`]: super::recovery_config::TIMEOUTS_IN_A_ROW
//! [`OFFLINE_AFTER`]: super::recovery_config::OFFLINE_AFTER
//! [`Config::offline_after`]: super::recovery_config::Config::offline_after
//! [`Config::wait`]: super::recovery_config::Config::wait
//! [`Config::command_timeout`]: super::recovery_config::Config::command_timeout
//! [`Config::command_every`]: super::recovery_config::Config::command_every

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Map};

use super::adb::AdbBackend;
use super::key::{DeviceKey, DeviceState};
use super::recovery_config::{serial_ok, TIMEOUTS_IN_A_ROW};

/// How often the ladder looks for phones that need it.
const TICK: Duration = Duration::from_secs(1);

/// Runs the ladder for every phone that needs it until `shutdown`.
pub async fn run(adb: Arc<AdbBackend>, mut shutdown: tokio::sync::watch::Receiver<bool>) {
    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = shutdown.changed() => return,
            _ = tick.tick() => {}
        }
        let offline_after = adb.recovery_config().offline_after;
        for (key, why) in adb.health_book().due_for_recovery(TIMEOUTS_IN_A_ROW, offline_after, Instant::now()) {
            // Only phones the adb server still lists can be reconnected by serial.
            if adb.raw_state(&key).is_none() {
                continue;
            }
            adb.health_book().set_recovering(&key, Some("reconnect"));
            tokio::spawn(ladder(adb.clone(), key, why));
        }
    }
}

async fn ladder(adb: Arc<AdbBackend>, key: DeviceKey, why: String) {
    let book = adb.health_book();
    // Timeouts of single commands (a stuck `uiautomator`, a pull from a slow card) do not make a stuck phone: one
    // that answers a trivial command now is left alone — a reconnect would cut every call running on it.
    if adb.raw_state(&key) == Some(DeviceState::Online) && probe(&adb, &key).await {
        tracing::info!(device = %key, reason = %why, "the phone answers: no recovery needed");
        book.recovered(&key);
        return;
    }
    tracing::warn!(device = %key, reason = %why, "recovering a stuck phone: reconnecting it through the adb server");
    let path = adb.path_of(&key);
    // Before the reconnect: every command it cuts answers what happened (`explain_cut`), not "adb: closed".
    book.reconnecting(&key, Instant::now());
    let outcome = match path.server.parse::<std::net::SocketAddr>() {
        Ok(server) => super::host::reconnect(server, &path.serial).await.map_err(|e| e.to_string()),
        Err(_) => Err("unknown adb server".to_owned()),
    };
    let mut details = Map::new();
    details.insert("reason".into(), json!(why));
    match &outcome {
        Ok(msg) => details.insert("adb_server".into(), json!(super::text::phone_text(msg, 200))),
        Err(e) => details.insert("error".into(), json!(super::text::phone_text(e, 200))),
    };
    adb.audit(&key, "device.recover.reconnect", &details, if outcome.is_ok() { "ok" } else { "failed" });
    let cfg = adb.recovery_config();
    if back(&adb, &key, &path, cfg.wait).await {
        recovered(&adb, &key, "reconnect");
        return;
    }
    if let Some(argv) = cfg.command.as_ref() {
        if !serial_ok(&path.serial) {
            let mut d = Map::new();
            d.insert("skipped".into(), json!("the serial is not a plain adb serial; not passed to a command"));
            adb.audit(&key, "device.recover.command", &d, "refused");
        } else if !book.claim_command(&key, cfg.command_every, Instant::now()) {
            let mut d = Map::new();
            d.insert("skipped".into(), json!(format!("ran less than {} s ago", cfg.command_every.as_secs())));
            adb.audit(&key, "device.recover.command", &d, "rate_limited");
        } else {
            book.set_recovering(&key, Some("recover_command"));
            let result = run_command(argv, &path.serial, cfg.command_timeout).await;
            let mut d = Map::new();
            // The program only: the rest of the operator's command line may hold a PDU's password.
            d.insert("program".into(), json!(argv[0]));
            tracing::warn!(device = %key, program = %argv[0], result = %result, "ran the recover command");
            adb.audit(&key, "device.recover.command", &d, &result);
            if back(&adb, &key, &path, cfg.wait).await {
                recovered(&adb, &key, "recover_command");
                return;
            }
        }
    }
    let msg = format!(
        "The phone stopped answering ({why}); reconnecting it{} did not help. Replug it or power-cycle its hub port.",
        if cfg.command.is_some() { " and the recover command" } else { "" }
    );
    tracing::error!(device = %key, "phone marked unhealthy: {msg}");
    book.mark_unhealthy(&key, msg);
    let mut d = Map::new();
    d.insert("reason".into(), json!(why));
    adb.audit(&key, "device.recover.unhealthy", &d, "unhealthy");
}

fn recovered(adb: &AdbBackend, key: &DeviceKey, by: &str) {
    tracing::info!(device = %key, by, "stuck phone recovered");
    adb.health_book().recovered(key);
    let mut d = Map::new();
    d.insert("by".into(), json!(by));
    adb.audit(key, "device.recover.recovered", &d, "ok");
}

/// Whether the phone answers a probe within `wait` (listed online, then a trivial command answered).
///
/// A USB phone re-enumerates by itself after a reconnect; a phone on the network (serial `HOST:PORT`, `adb
/// connect`) is dropped by the adb server's reconnect and not dialled again (adb 29, checked against a simulated
/// phone): for those the server is asked to `host:connect` it again while it is not listed.
async fn back(adb: &AdbBackend, key: &DeviceKey, path: &DeviceKey, wait: Duration) -> bool {
    let deadline = Instant::now() + wait;
    let network = path.serial.parse::<std::net::SocketAddr>().is_ok();
    let server = path.server.parse::<std::net::SocketAddr>().ok();
    // Give the adb server a moment to drop the old transport first (else the probe may ride the stuck one).
    tokio::time::sleep(Duration::from_millis(500)).await;
    while Instant::now() < deadline {
        let state = adb.raw_state(key);
        if state == Some(DeviceState::Online) && probe(adb, key).await {
            return true;
        }
        match state {
            None if network => {
                if let Some(server) = server {
                    if let Err(e) = super::host::connect(server, &path.serial).await {
                        tracing::debug!(device = %key, error = %e, "connecting the network phone again failed");
                    }
                }
            }
            _ => {}
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    false
}

/// Whether the phone answers `echo ok` within 3 s.
async fn probe(adb: &AdbBackend, key: &DeviceKey) -> bool {
    adb.op(key, false, Duration::from_secs(3), |d| async move { d.shell_capped("echo ok", 64).await })
        .await
        .is_ok_and(|o| o.stdout.trim() == "ok")
}

/// Runs the operator's command with `{serial}` substituted: no shell, stdin closed, output discarded, killed at
/// `timeout`. Returns `ok`, `exit_N`, `signal`, `timeout` or `spawn_failed`.
async fn run_command(argv: &[String], serial: &str, timeout: Duration) -> String {
    let args: Vec<String> = argv.iter().map(|a| a.replace("{serial}", serial)).collect();
    let mut cmd = tokio::process::Command::new(&args[0]);
    cmd.args(&args[1..])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            tracing::warn!(program = %args[0], error = %e, "the recover command did not start");
            return "spawn_failed".into();
        }
    };
    match tokio::time::timeout(timeout, child.wait()).await {
        Ok(Ok(st)) if st.success() => "ok".into(),
        Ok(Ok(st)) => st.code().map_or_else(|| "signal".to_owned(), |c| format!("exit_{c}")),
        Ok(Err(_)) => "spawn_failed".into(),
        Err(_) => {
            let _ = child.kill().await;
            "timeout".into()
        }
    }
}

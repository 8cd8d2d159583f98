//! The wall's JSON views: every device (listed now or seen before), a device's card, its health, the connector's
//! header, and the whole wall as one document ([`snapshot`]), which `GET /api/v1/devices` answers and every event
//! of the stream carries. Read-only: the handlers that change things (`api.rs`, `control.rs`) sit above.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{json, Value};

use super::state::{device_id, Wall};
use crate::channels::takeover::{Operator, TakeoverInfo};
use crate::channels::Holder;
use crate::device::{DeviceInfo, DeviceKey, DeviceState};
use crate::server::App;

/// Devices the wall remembers after their adb server stopped listing them (shown as `gone`).
const MAX_REMEMBERED: usize = 256;

/// What the operator should do about a device in `state`.
pub fn state_hint(state: DeviceState) -> Option<&'static str> {
    match state {
        DeviceState::Online => None,
        DeviceState::Unauthorized => Some(
            "Accept the \"Allow USB debugging?\" prompt on the phone and tick \"Always allow from this computer\".",
        ),
        DeviceState::Offline => Some("Replug the USB cable or check the cable and port; then wait a few seconds."),
        DeviceState::Gone => Some("No adb server lists it any more: check the cable and that the phone is on."),
    }
}

/// Every device to show: what the backend lists now plus the ones seen before that are gone.
pub(super) fn all_devices(app: &App, w: &Wall) -> Vec<DeviceInfo> {
    let now = app.hub.backend().devices();
    let mut seen = w.seen.lock().unwrap_or_else(|e| e.into_inner());
    for d in &now {
        seen.insert(d.key.clone(), d.model.clone());
    }
    while seen.len() > MAX_REMEMBERED {
        let first = seen.keys().next().cloned();
        match first {
            Some(k) => seen.remove(&k),
            None => break,
        };
    }
    let mut out: BTreeMap<DeviceKey, DeviceInfo> = seen
        .iter()
        .map(|(k, model)| {
            (
                k.clone(),
                DeviceInfo {
                    key: k.clone(),
                    state: DeviceState::Gone,
                    model: model.clone(),
                    manufacturer: String::new(),
                    sdk: None,
                },
            )
        })
        .collect();
    for d in now {
        out.insert(d.key.clone(), d);
    }
    out.into_values().collect()
}

pub(super) fn find(app: &App, w: &Wall, id: &str) -> Option<DeviceKey> {
    all_devices(app, w).into_iter().map(|d| d.key).find(|k| device_id(k) == id)
}

fn short_channel(id: &str) -> String {
    let tail: String = id.chars().rev().take(8).collect::<Vec<_>>().into_iter().rev().collect();
    format!("…{tail}")
}

pub(super) fn device_json(app: &App, w: &Wall, d: &DeviceInfo, holders: &[Holder]) -> Value {
    let id = device_id(&d.key);
    let facts = w.facts.get(&d.key);
    let held_by = holders.iter().find(|h| h.device == d.key).map(|h| {
        let last = w.activity.recent(&d.key, 1).into_iter().next();
        json!({
            "channel_id": h.channel_id,
            "channel_short": short_channel(&h.channel_id),
            "connector_id": h.connector_id,
            // `MCP: <client> <version>` for an MCP session's channel (client-supplied words, cleaned and bounded by
            // `server::mcp`; the page escapes them like any text); null for xAgent.
            "client": h.client,
            "since_ms": h.bound_since_ms,
            "channel_connected": h.open,
            "last_call": last,
        })
    });
    json!({
        "id": id,
        "serial": d.key.serial,
        "adb_server": d.key.server,
        // Every adb serial proven to reach this phone (same adb server, serial and boot id), this one included:
        // a phone on USB and Wi-Fi shows both; a phone merely claiming another's serial is a device of its own.
        "paths": app.hub.backend().aliases(&d.key),
        "model": d.model,
        "state": d.state.as_str(),
        "state_hint": state_hint(d.state),
        "android_version": facts.android_version,
        // The health reader's last reading: the wall runs no battery read of its own (one reader per phone).
        "battery_percent": app.hub.backend().health_of(&d.key).and_then(|(s, _)| s.reading?.battery_percent),
        // The resident phone helper in one line (running, or why this phone uses the shell path).
        "phone_helper": app.hub.backend().phone_helper(&d.key),
        // What the operator should do about it (injection refused: where Xiaomi's toggle is; typed text
        // unverified; operations on the shell path and why): `{problem, message, action}` items, shown on the card.
        "phone_helper_attention": app.hub.backend().phone_helper_attention(&d.key),
        "allowed": app.hub.device_allowed(&d.key),
        "held_by": held_by,
        "running_calls": w.activity.running(&d.key),
        "screen_url": format!("/api/v1/devices/{id}/screen.jpg"),
        "live_url": format!("/api/v1/devices/{id}/live.mjpeg"),
        "takeover": app.hub.takeover_of(&d.key).map(|t| takeover_json(&t, None)),
        // The agent's open request for a person (`android_request_human`): the card's banner and the detail's.
        "human_request": app.hub.registry().human().view(&d.key),
        "health": health_json(app, &d.key),
    })
}

// ---- health (issue 20 item 3) ----------------------------------------------------------------------------------

/// The phone's `health` object: last reading (battery, temperature, charging, /data, uptime), disconnects,
/// recovery state and warnings under the policy's thresholds. Fields are null until the first read.
fn health_json(app: &App, key: &DeviceKey) -> Value {
    let Some((s, warnings)) = app.hub.backend().health_of(key) else {
        return json!({"read_ms": null, "disconnects_last_hour": 0, "unhealthy": false, "warnings": []});
    };
    let r = s.reading.as_ref();
    json!({
        "battery_percent": r.and_then(|r| r.battery_percent),
        "temperature_celsius": r.and_then(|r| r.temperature_celsius),
        "charging": r.map(|r| r.battery_status == "charging"),
        "plugged": r.map(|r| r.plugged),
        "battery_status": r.map(|r| r.battery_status),
        "storage_free_bytes": r.and_then(|r| r.storage_free_bytes),
        "storage_total_bytes": r.and_then(|r| r.storage_total_bytes),
        "uptime_s": r.and_then(|r| r.uptime_s),
        "read_ms": r.map(|r| r.read_ms),
        "disconnects_last_hour": s.disconnects_last_hour,
        "disconnects_total": s.disconnects_total,
        "unhealthy": s.unhealthy.is_some(),
        "unhealthy_reason": s.unhealthy,
        "recovering": s.recovering,
        "warnings": warnings.iter().map(|w| json!({"code": w.code, "message": w.message})).collect::<Vec<_>>(),
    })
}

/// Free and total bytes of the file system holding `dir`.
#[cfg(unix)]
fn disk_space(dir: &std::path::Path) -> Option<(u64, u64)> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a valid NUL-terminated path and `s` a properly sized, writable statvfs.
    if unsafe { libc::statvfs(c.as_ptr(), &mut s) } != 0 {
        return None;
    }
    let frsize = s.f_frsize as u64;
    Some((s.f_bavail as u64 * frsize, s.f_blocks as u64 * frsize))
}

#[cfg(not(unix))]
fn disk_space(_dir: &std::path::Path) -> Option<(u64, u64)> {
    None
}

/// The header: version, uptime, adb servers, counts, warnings.
fn connector_json(app: &App, w: &Wall, devices: &[DeviceInfo]) -> Value {
    let mut counts = serde_json::Map::new();
    for st in [DeviceState::Online, DeviceState::Offline, DeviceState::Unauthorized, DeviceState::Gone] {
        counts.insert(st.as_str().into(), json!(devices.iter().filter(|d| d.state == st).count()));
    }
    let servers: Vec<Value> = match &w.adb {
        Some(adb) => {
            adb.servers().iter().map(|s| json!({"address": s.to_string(), "reachable": adb.is_reachable(*s)})).collect()
        }
        None => Vec::new(),
    };
    let mut warnings = Vec::new();
    if app.cfg.api_key.is_none() {
        warnings.push(json!({"code": "no_api_key",
            "message": "No system API key is configured: this wall, /ws and the API are open to anyone who can reach the connector."}));
    }
    for s in &servers {
        if s["reachable"] == false {
            warnings.push(json!({"code": "adb_server_unreachable",
                "message": format!("adb server {} is not reachable (is adb-server.service running?)", s["address"].as_str().unwrap_or(""))}));
        }
    }
    let (cache_files, cache_bytes) = app.files.totals();
    let limits = app.files.limits();
    if cache_bytes * 10 >= limits.max_bytes * 9 || cache_files * 10 >= limits.max_files * 9 {
        warnings.push(json!({"code": "cache_nearly_full",
            "message": "The file cache is over 90% full; the oldest files are evicted first."}));
    }
    let disk = w.cfg.data_dir.as_deref().and_then(disk_space);
    if let Some((free, total)) = disk {
        if total > 0 && (free * 20 < total || free < 256 << 20) {
            warnings.push(json!({"code": "data_dir_nearly_full",
                "message": format!("The data dir's file system has only {} MiB free.", free >> 20)}));
        }
    }
    let uptime = w.started.elapsed().as_secs();
    json!({
        "name": "xagent-adb-connector",
        "version": crate::build_info::BUILD.version,
        "uptime_s": uptime,
        "started_ms": w.started_ms,
        "api_key_required": app.cfg.api_key.is_some(),
        "adb_servers": servers,
        "counts": counts,
        "cache": {"files": cache_files, "bytes": cache_bytes, "max_files": limits.max_files, "max_bytes": limits.max_bytes},
        // Rounded down to 0.1 % of the file system (at least 64 MiB): the stream re-sends the document only when
        // it changes, and any process writing to the disk would otherwise change it on every tick.
        "data_dir": disk.map(|(free, total)| {
            let step = (total / 1000).max(64 << 20);
            json!({"free_bytes": free / step * step, "total_bytes": total})
        }),
        "warnings": warnings,
    })
}

/// The whole wall as one JSON document (`GET /api/v1/devices` and every event of the stream).
pub async fn snapshot(app: &App, w: &Wall, facts_wait: Duration) -> Value {
    w.activity.refresh(app.hub.store());
    let devices = all_devices(app, w);
    if let Some(adb) = &w.adb {
        let online: Vec<DeviceKey> =
            devices.iter().filter(|d| d.state == DeviceState::Online).map(|d| d.key.clone()).collect();
        w.facts.refresh(adb, online, facts_wait).await;
    }
    let holders = app.hub.holders();
    let list: Vec<Value> = devices.iter().map(|d| device_json(app, w, d, &holders)).collect();
    json!({"connector": connector_json(app, w, &devices), "devices": list})
}

/// The takeover as the API shows it (`takeover` of a device; never the session id).
pub fn takeover_json(t: &TakeoverInfo, me: Option<&Operator>) -> Value {
    json!({"by": t.by.name(), "since_ms": t.since_ms, "expires_ms": t.expires_ms, "mine": me == Some(&t.by)})
}

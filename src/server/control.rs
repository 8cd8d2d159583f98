//! Control plane (protocol §4): the public card and skill, and `/health`. Pure reads.

use hyper::header::{HeaderValue, CACHE_CONTROL, CONTENT_TYPE};
use hyper::{Response, StatusCode};
use serde_json::json;

use super::state::App;
use super::writable::Problem;
use crate::http::{full, json_response, Body};
use crate::protocol as proto;

/// The main skill, embedded at compile time so the binary is the single artifact an operator installs.
pub const SKILL_MD: &str = include_str!("../../skills/connector-device-adb/SKILL.md");

pub fn card(app: &App) -> Response<Body> {
    let body = serde_json::to_string_pretty(app.hub.card()).expect("card serialises");
    let mut r = json_response(StatusCode::OK, body);
    r.headers_mut().insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    r
}

pub fn skill() -> Response<Body> {
    let mut r = Response::new(full(SKILL_MD));
    r.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("text/markdown; charset=utf-8"));
    r
}

/// The adb servers whose tracker has been without a connection for [`crate::device::UNREACHABLE_AFTER`] or
/// longer: their phones are gone from the list and bindings to them fail, but phones on other servers still work,
/// so this is `degraded`, not `failed`. Read live (no probe: the trackers already retry every second).
fn adb_server_problems(app: &App) -> Vec<Problem> {
    app.hub
        .backend()
        .adb_servers()
        .into_iter()
        .filter_map(|(server, down)| {
            let down = down.filter(|d| *d >= crate::device::UNREACHABLE_AFTER)?;
            Some(Problem {
                fatal: false,
                message: format!(
                    "the adb server {server} has not answered for {} s (its phones are unavailable): check \
                     `systemctl status adb-server` (or start one: `adb -P {} start-server`)",
                    down.as_secs(),
                    server.rsplit(':').next().unwrap_or("5037"),
                ),
            })
        })
        .collect()
}

/// §4.3: the same `build` as the card; `connector_card_version` is `connector.version`. `status` is `ok`, or
/// `degraded` (200: the file cache cannot be written, or an adb server is unreachable) or `failed` (503: the
/// state cannot be written, so every session would fail), with `problems` saying why.
pub async fn health(app: &App) -> Response<Body> {
    let mut problems = app.health.problems().await;
    problems.extend(adb_server_problems(app));
    // A phone whose last lease's settings are not restored is not handed out (`device::conditions`): say which.
    problems.extend(app.hub.backend().health().into_iter().filter_map(|(k, s, _)| {
        let why = s.not_restored?;
        Some(Problem {
            fatal: false,
            message: format!("phone {}: not handed to agents: {why}", crate::device::text::phone_text(&k.serial, 64)),
        })
    }));
    // The audit log could not keep its record cap without removing records younger than the retention period,
    // and the archive is full: agents' side effects are counted, not stored one by one (`audit::budget`).
    if app.hub.audit_full() {
        problems.push(Problem {
            fatal: false,
            message: "the audit log is full: records younger than --audit-retention are over --audit-max-records and \
                      the archive is at --audit-archive-max-bytes; agents' side effects are counted, not recorded one \
                      by one"
                .into(),
        });
    }
    let (instances, channels, open) = app.hub.stats();
    let devices = app.hub.backend().devices();
    let online = devices.iter().filter(|d| d.state == crate::device::DeviceState::Online).count();
    let fatal = problems.iter().any(|p| p.fatal);
    let status = if fatal {
        "failed"
    } else if problems.is_empty() {
        "ok"
    } else {
        "degraded"
    };
    let mut body = json!({
        "status": status,
        "connector_card_id": proto::CONNECTOR_CARD_ID,
        "connector_card_version": app.hub.card().connector.version,
        "protocol_version": proto::PROTOCOL_VERSION,
        "build": crate::build_info::BUILD,
        "connector_instances": instances,
        "channels": channels,
        "open_channels": open,
        "devices": devices.len(),
        "devices_online": online,
    });
    if !problems.is_empty() {
        body["problems"] = problems.iter().map(|p| p.message.clone()).collect();
    }
    // Each online phone's resident helper in one line (`doctor` prints them).
    let helpers: serde_json::Map<String, serde_json::Value> = devices
        .iter()
        .filter(|d| d.state == crate::device::DeviceState::Online)
        .filter_map(|d| Some((d.key.serial.clone(), json!(app.hub.backend().phone_helper(&d.key)?))))
        .collect();
    if !helpers.is_empty() {
        body["phone_helpers"] = json!(helpers);
    }
    // What the operator should do about them (injection refused, typed text unverified, fallbacks): `doctor` warns.
    let attention: serde_json::Map<String, serde_json::Value> = devices
        .iter()
        .filter(|d| d.state == crate::device::DeviceState::Online)
        .map(|d| (d.key.serial.clone(), app.hub.backend().phone_helper_attention(&d.key)))
        .filter(|(_, a)| !a.is_empty())
        .map(|(s, a)| (s, json!(a)))
        .collect();
    if !attention.is_empty() {
        body["phone_helper_attention"] = json!(attention);
    }
    let code = if fatal { StatusCode::SERVICE_UNAVAILABLE } else { StatusCode::OK };
    json_response(code, body.to_string())
}

/// `GET /metrics`: Prometheus text format (behind the API key like `/health`).
/// The health gauges of every phone the adb servers list now (a phone gone from every list drops out).
fn phone_health(app: &App) -> Vec<crate::metrics::PhoneHealth> {
    let listed: std::collections::HashSet<_> = app.hub.backend().devices().into_iter().map(|d| d.key).collect();
    app.hub
        .backend()
        .health()
        .into_iter()
        .filter(|(k, _, _)| listed.contains(k))
        .map(|(k, s, _)| crate::metrics::PhoneHealth {
            temperature_celsius: s.reading.as_ref().and_then(|r| r.temperature_celsius),
            battery_percent: s.reading.as_ref().and_then(|r| r.battery_percent),
            plugged: s.reading.as_ref().map(|r| r.plugged),
            storage_free_bytes: s.reading.as_ref().and_then(|r| r.storage_free_bytes),
            disconnects_total: s.disconnects_total,
            unhealthy: s.unhealthy.is_some(),
            serial: k.serial,
            adb_server: k.server,
        })
        .collect()
}

pub fn metrics(app: &App) -> Response<Body> {
    use crate::device::DeviceState;
    let devices = app.hub.backend().devices();
    let count = |st: DeviceState| devices.iter().filter(|d| d.state == st).count() as u64;
    let (cache_files, cache_bytes) = app.files.totals();
    let retention = app.hub.store().audit_retention().ok().flatten();
    let gauges = crate::metrics::Gauges {
        audit_pruned: retention.map_or(0, |r| r.pruned),
        audit_pruned_young: retention.map_or(0, |r| r.pruned_young),
        audit_archived: app.hub.store().audit_archived_count().unwrap_or(0),
        audit_full: app.hub.audit_full(),
        devices_by_state: vec![
            ("online", count(DeviceState::Online)),
            ("offline", count(DeviceState::Offline)),
            ("unauthorized", count(DeviceState::Unauthorized)),
        ],
        channels_by_status: app.hub.status_counts(),
        cache_bytes,
        cache_files,
        in_flight_tools: app.tools_in_flight.live() as u64,
        auth: app.auth.counts(),
        observations_held: crate::tools::observe::held() as u64,
        human_requests_open: app.hub.registry().human().open_count() as u64,
        adb_servers_up: app
            .hub
            .backend()
            .adb_servers()
            .into_iter()
            .map(|(s, down)| (s, down.is_none_or(|d| d < crate::device::UNREACHABLE_AFTER)))
            .collect(),
        phones: phone_health(app),
    };
    let mut r = Response::new(full(app.metrics.render(&gauges)));
    *r.status_mut() = StatusCode::OK;
    r.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"));
    r
}

//! Control plane (protocol §4): the public card and skill, and `/health`. Pure reads.

use hyper::header::{HeaderValue, CACHE_CONTROL, CONTENT_TYPE};
use hyper::{Response, StatusCode};
use serde_json::json;

use super::App;
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

/// Whether the connector can still write its state and its file cache, re-checked at most every
/// [`WriteHealth::EVERY`] for `/health`. A connector whose database stopped accepting writes refuses every
/// session (`internal_error`), so it must not report `ok`: SD cards fail into a read-only remount, a disk fills,
/// someone holds a lock on `connector.db`.
pub struct WriteHealth {
    store: Option<crate::store::Store>,
    data_dir: Option<std::path::PathBuf>,
    files_dir: std::path::PathBuf,
    last: std::sync::Mutex<Option<(std::time::Instant, Vec<Problem>)>>,
}

/// One reason `/health` is not `ok`.
#[derive(Clone, Debug)]
pub struct Problem {
    /// `failed`: sessions cannot work (503); `degraded`: some tools fail (200).
    pub fatal: bool,
    pub message: String,
}

impl WriteHealth {
    pub const EVERY: std::time::Duration = std::time::Duration::from_secs(5);
    /// Longest a probe may take before it counts as a failure (a held lock makes SQLite wait).
    const PROBE_DEADLINE: std::time::Duration = std::time::Duration::from_secs(2);

    /// `store: None` (in-memory state in tests) checks only the file cache.
    /// The file cache may live apart from the data dir (in memory by default), so both are named.
    pub fn new(
        store: Option<crate::store::Store>,
        data_dir: Option<std::path::PathBuf>,
        files_dir: std::path::PathBuf,
    ) -> WriteHealth {
        WriteHealth { store, data_dir, files_dir, last: std::sync::Mutex::new(None) }
    }

    /// The current problems (empty when healthy); probes on a blocking thread when the last result is stale.
    pub async fn problems(&self) -> Vec<Problem> {
        if let Some((at, p)) = &*self.last.lock().unwrap_or_else(|e| e.into_inner()) {
            if at.elapsed() < Self::EVERY {
                return p.clone();
            }
        }
        let (store, data_dir, files_dir) = (self.store.clone(), self.data_dir.clone(), self.files_dir.clone());
        let probe = tokio::task::spawn_blocking(move || probe(store.as_ref(), data_dir.as_deref(), &files_dir));
        let problems = match tokio::time::timeout(Self::PROBE_DEADLINE, probe).await {
            Ok(Ok(p)) => p,
            Ok(Err(_)) => vec![Problem { fatal: true, message: "the state probe failed unexpectedly".into() }],
            Err(_) => vec![Problem {
                fatal: true,
                message: format!(
                    "the state database did not take a write lock within {} s (another process holds it?)",
                    Self::PROBE_DEADLINE.as_secs()
                ),
            }],
        };
        for p in &problems {
            tracing::warn!(problem = %p.message, fatal = p.fatal, "health check");
        }
        *self.last.lock().unwrap_or_else(|e| e.into_inner()) = Some((std::time::Instant::now(), problems.clone()));
        problems
    }
}

fn probe(
    store: Option<&crate::store::Store>,
    data_dir: Option<&std::path::Path>,
    files_dir: &std::path::Path,
) -> Vec<Problem> {
    let mut out = Vec::new();
    if let Some(store) = store {
        if let Some((dir, Err(e))) = data_dir.map(|d| (d, crate::store::private::prove_writable(d))) {
            out.push(Problem { fatal: true, message: format!("the data dir {} is not writable: {e}", dir.display()) });
        }
        if let Err(e) = store.probe_write_lock() {
            out.push(Problem { fatal: true, message: format!("the state database does not accept writes: {e}") });
        }
    }
    if let Err(e) = crate::store::private::prove_writable(files_dir) {
        out.push(Problem {
            fatal: false,
            message: format!(
                "the file cache {} is not writable: {e} (screenshots, pulls and uploads fail)",
                files_dir.display()
            ),
        });
    }
    out
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

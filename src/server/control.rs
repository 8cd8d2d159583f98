//! Control plane (protocol §4): the public card and skill, and `/health`. Pure reads.

use hyper::header::{HeaderValue, CACHE_CONTROL, CONTENT_TYPE};
use hyper::{Response, StatusCode};
use serde_json::json;

use super::http::{full, json_response, Body};
use super::App;
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

/// §4.3: the same `build` as the card; `connector_card_version` is `connector.version`.
pub fn health(app: &App) -> Response<Body> {
    let (instances, channels, open) = app.hub.stats();
    let devices = app.hub.backend().devices();
    let online = devices.iter().filter(|d| d.state == crate::device::DeviceState::Online).count();
    let body = json!({
        "status": "ok",
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
    json_response(StatusCode::OK, body.to_string())
}

/// `GET /metrics`: Prometheus text format (behind the API key like `/health`).
pub fn metrics(app: &App) -> Response<Body> {
    use crate::device::DeviceState;
    let devices = app.hub.backend().devices();
    let count = |st: DeviceState| devices.iter().filter(|d| d.state == st).count() as u64;
    let (cache_files, cache_bytes) = app.files.totals();
    let gauges = crate::metrics::Gauges {
        devices_by_state: vec![
            ("online", count(DeviceState::Online)),
            ("offline", count(DeviceState::Offline)),
            ("unauthorized", count(DeviceState::Unauthorized)),
        ],
        channels_by_status: app.hub.status_counts(),
        cache_bytes,
        cache_files,
        in_flight_tools: app.tools_in_flight.live() as u64,
    };
    let mut r = Response::new(full(app.metrics.render(&gauges)));
    *r.status_mut() = StatusCode::OK;
    r.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"));
    r
}

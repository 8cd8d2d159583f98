//! Operational metrics in the Prometheus text format (`GET /metrics`, behind the API key).
//!
//! Hand-written instead of a client crate: a handful of counters, gauges read at scrape time and one histogram
//! family, rendered in ~100 lines. Label values are tool ids, fixed state names and the configured adb server
//! addresses — never channel ids or anything from a request — so cardinality is bounded by the registry and the
//! configuration; the per-phone health families (`xagent_device_*`) add the phone's serial, bounded by the phones
//! attached.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// Latency buckets (seconds) of tool calls: taps take milliseconds, screenshots and UI dumps up to seconds.
const BUCKETS: &[f64] = &[0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0];

#[derive(Default)]
struct Histogram {
    counts: [u64; 12],
    sum: f64,
    count: u64,
}

#[derive(Default)]
pub struct Metrics {
    /// (tool, result code or "ok") → calls.
    calls: Mutex<BTreeMap<(String, String), u64>>,
    latency: Mutex<BTreeMap<String, Histogram>>,
    pub ws_connections: AtomicI64,
    pub ws_connections_total: AtomicU64,
    pub packets_in: AtomicU64,
    pub packets_out: AtomicU64,
    pub progress_dropped: AtomicU64,
    /// tool → bytes of files its results produced (screenshots, pulled files, large logs).
    file_bytes: Mutex<BTreeMap<String, u64>>,
    pub queue_depth_max: AtomicU64,
    /// Frames the wall's live view captured and encoded to JPEG (the picture changed).
    pub live_frames_encoded: AtomicU64,
    /// Frames the live view captured whose pixels were those of the frame before: no encode, nothing sent.
    pub live_frames_unchanged: AtomicU64,
}

/// Point-in-time values read from other components at scrape time.
#[derive(Default)]
pub struct Gauges {
    pub devices_by_state: Vec<(&'static str, u64)>,
    pub channels_by_status: Vec<(&'static str, u64)>,
    pub cache_bytes: u64,
    pub cache_files: u64,
    /// Audit records removed by retention in all, and of them those younger than the age limit (the record cap
    /// removed them: the log fills too fast), from the store's checkpoint.
    pub audit_pruned: u64,
    pub audit_pruned_young: u64,
    /// Audit records the record cap moved to the archive (younger than the retention period; issue 48).
    pub audit_archived: u64,
    /// Whether the audit log is full (the archive has no room: side effects are counted, not recorded).
    pub audit_full: bool,
    pub in_flight_tools: u64,
    /// `(surface, wrong keys, refused by the per-source limit)` of every key check surface.
    pub auth: Vec<(&'static str, u64, u64)>,
    /// `android_observe` observations held (all channels).
    pub observations_held: u64,
    /// Agents waiting for a person now (`android_request_human`): at most one per phone.
    pub human_requests_open: u64,
    /// `(host:port, up)` of every configured adb server (`--adb-server`): bounded by the configuration.
    pub adb_servers_up: Vec<(String, bool)>,
    /// Per phone health (`device::health`): bounded by the phones the adb servers list (`health::MAX_PHONES`).
    pub phones: Vec<PhoneHealth>,
}

/// One phone's health gauges. `serial` is the adb serial (cleaned by `device::text` where it entered).
#[derive(Default)]
pub struct PhoneHealth {
    pub serial: String,
    pub adb_server: String,
    pub temperature_celsius: Option<f64>,
    pub battery_percent: Option<u8>,
    /// On external power (AC, USB, wireless, dock).
    pub plugged: Option<bool>,
    pub storage_free_bytes: Option<u64>,
    pub disconnects_total: u64,
    pub unhealthy: bool,
}

/// A Prometheus label value: `\`, `"` and newlines escaped (text format 0.0.4), so no value can break a line.
fn label(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

impl Metrics {
    pub fn tool_finished(&self, tool: &str, result: &str, took: Duration) {
        *self
            .calls
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry((tool.to_owned(), result.to_owned()))
            .or_default() += 1;
        let mut lat = self.latency.lock().unwrap_or_else(|e| e.into_inner());
        let h = lat.entry(tool.to_owned()).or_default();
        let s = took.as_secs_f64();
        for (i, b) in BUCKETS.iter().enumerate() {
            if s <= *b {
                h.counts[i] += 1;
            }
        }
        h.sum += s;
        h.count += 1;
    }

    pub fn files_produced(&self, tool: &str, bytes: u64) {
        *self.file_bytes.lock().unwrap_or_else(|e| e.into_inner()).entry(tool.to_owned()).or_default() += bytes;
    }

    /// A call refused before its tool ran (validation, binding, device state, policy): counted, not timed.
    pub fn tool_refused(&self, tool: &str, code: &str) {
        *self.calls.lock().unwrap_or_else(|e| e.into_inner()).entry((tool.to_owned(), code.to_owned())).or_default() +=
            1;
    }

    pub fn render(&self, g: &Gauges) -> String {
        let mut out = String::with_capacity(4096);
        let block = |out: &mut String, name: &str, kind: &str, help: &str, body: String| {
            let _ = write!(out, "# HELP {name} {help}\n# TYPE {name} {kind}\n{body}");
        };
        let mut body = String::new();
        for (state, n) in &g.devices_by_state {
            let _ = writeln!(body, "xagent_devices{{state=\"{state}\"}} {n}");
        }
        block(&mut out, "xagent_devices", "gauge", "Devices known to the adb servers, by state.", body);
        let mut body = String::new();
        for (status, n) in &g.channels_by_status {
            let _ = writeln!(body, "xagent_channels{{status=\"{status}\"}} {n}");
        }
        block(&mut out, "xagent_channels", "gauge", "Channels by descriptor status.", body);
        let mut body = String::new();
        for ((tool, result), n) in self.calls.lock().unwrap_or_else(|e| e.into_inner()).iter() {
            let _ = writeln!(body, "xagent_tool_calls_total{{tool=\"{tool}\",result=\"{result}\"}} {n}");
        }
        block(
            &mut out,
            "xagent_tool_calls_total",
            "counter",
            "Tool calls by tool and result (ok or error code), refusals before the run included.",
            body,
        );
        let mut body = String::new();
        for (tool, h) in self.latency.lock().unwrap_or_else(|e| e.into_inner()).iter() {
            for (i, b) in BUCKETS.iter().enumerate() {
                let _ =
                    writeln!(body, "xagent_tool_latency_seconds_bucket{{tool=\"{tool}\",le=\"{b}\"}} {}", h.counts[i]);
            }
            let _ = writeln!(body, "xagent_tool_latency_seconds_bucket{{tool=\"{tool}\",le=\"+Inf\"}} {}", h.count);
            let _ = writeln!(body, "xagent_tool_latency_seconds_sum{{tool=\"{tool}\"}} {}", h.sum);
            let _ = writeln!(body, "xagent_tool_latency_seconds_count{{tool=\"{tool}\"}} {}", h.count);
        }
        block(
            &mut out,
            "xagent_tool_latency_seconds",
            "histogram",
            "Tool call latency, from the start of the tool run (after the gates) to the ack.",
            body,
        );
        let mut body = String::new();
        for (tool, n) in self.file_bytes.lock().unwrap_or_else(|e| e.into_inner()).iter() {
            let _ = writeln!(body, "xagent_file_bytes_produced_total{{tool=\"{tool}\"}} {n}");
        }
        block(
            &mut out,
            "xagent_file_bytes_produced_total",
            "counter",
            "Bytes of files produced by tools (screenshots: tool=android_screenshot).",
            body,
        );
        let ld = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let scalars: [(&str, &str, &str, String); 12] = [
            (
                "xagent_ws_connections",
                "gauge",
                "Open data-plane WebSocket connections.",
                self.ws_connections.load(Ordering::Relaxed).to_string(),
            ),
            (
                "xagent_ws_connections_total",
                "counter",
                "Data-plane WebSocket connections accepted.",
                ld(&self.ws_connections_total).to_string(),
            ),
            (
                "xagent_packets_received_total",
                "counter",
                "Packets received on the data plane.",
                ld(&self.packets_in).to_string(),
            ),
            (
                "xagent_packets_sent_total",
                "counter",
                "Packets sent on the data plane.",
                ld(&self.packets_out).to_string(),
            ),
            (
                "xagent_progress_dropped_total",
                "counter",
                "tool.progress.push packets dropped under backpressure.",
                ld(&self.progress_dropped).to_string(),
            ),
            (
                "xagent_outbound_queue_depth_max",
                "gauge",
                "Deepest outbound queue seen on any socket.",
                ld(&self.queue_depth_max).to_string(),
            ),
            ("xagent_file_cache_bytes", "gauge", "Bytes held by the file cache.", g.cache_bytes.to_string()),
            ("xagent_file_cache_files", "gauge", "Files held by the file cache.", g.cache_files.to_string()),
            (
                "xagent_audit_pruned_records_total",
                "counter",
                "Audit records removed by retention (90 days or the 200000-record cap), since the log began.",
                g.audit_pruned.to_string(),
            ),
            (
                "xagent_audit_pruned_young_records_total",
                "counter",
                "Audit records removed by the record cap while younger than 90 days (the log fills too fast: alert).",
                g.audit_pruned_young.to_string(),
            ),
            (
                "xagent_audit_archived_records_total",
                "counter",
                "Audit records the record cap moved to the archive while younger than the retention period (the cap bit: alert).",
                g.audit_archived.to_string(),
            ),
            (
                "xagent_audit_full",
                "gauge",
                "1 when the audit log is full (over its cap, the archive at its budget): side effects are counted, not recorded.",
                u8::from(g.audit_full).to_string(),
            ),
        ];
        for (name, kind, help, v) in scalars {
            block(&mut out, name, kind, help, format!("{name} {v}\n"));
        }
        block(
            &mut out,
            "xagent_tools_in_flight",
            "gauge",
            "Tool calls running now.",
            format!("xagent_tools_in_flight {}\n", g.in_flight_tools),
        );
        let mut failures = String::new();
        let mut throttled = String::new();
        for (surface, f, t) in &g.auth {
            let _ = writeln!(failures, "xagent_auth_failures_total{{surface=\"{surface}\"}} {f}");
            let _ = writeln!(throttled, "xagent_auth_throttled_total{{surface=\"{surface}\"}} {t}");
        }
        block(
            &mut out,
            "xagent_auth_failures_total",
            "counter",
            "Wrong system API keys presented, by surface (login, api, health, metrics, upload, download, ws).",
            failures,
        );
        block(
            &mut out,
            "xagent_auth_throttled_total",
            "counter",
            "Key checks refused with 429 because their source spent its wrong-key budget, by surface.",
            throttled,
        );
        block(
            &mut out,
            "xagent_observations_held",
            "gauge",
            "android_observe observations kept for element targets (freed on logout, close and expiry).",
            format!("xagent_observations_held {}\n", g.observations_held),
        );
        block(
            &mut out,
            "xagent_human_requests_open",
            "gauge",
            "Agents waiting for a person (android_request_human) now: take the phone over on the wall and return it.",
            format!("xagent_human_requests_open {}\n", g.human_requests_open),
        );
        let mut body = String::new();
        for (server, up) in &g.adb_servers_up {
            let _ = writeln!(body, "xagent_adb_server_up{{server=\"{}\"}} {}", label(server), u8::from(*up));
        }
        block(
            &mut out,
            "xagent_adb_server_up",
            "gauge",
            &format!(
                "1 while the connector reaches the adb server, 0 once it has not answered for {} s.",
                crate::device::UNREACHABLE_AFTER.as_secs()
            ),
            body,
        );
        block(
            &mut out,
            "xagent_live_frames_total",
            "counter",
            "Frames the wall's live view captured, by outcome: encoded (the picture changed) or unchanged (same pixels \
             as the frame before: not encoded, not sent).",
            format!(
                "xagent_live_frames_total{{result=\"encoded\"}} {}\nxagent_live_frames_total{{result=\"unchanged\"}} {}\n",
                ld(&self.live_frames_encoded),
                ld(&self.live_frames_unchanged)
            ),
        );
        render_phones(&mut out, &g.phones);
        out
    }
}

/// One per-phone family: name, type, help, the phone's value (none: no sample).
type Family = (&'static str, &'static str, &'static str, fn(&PhoneHealth) -> Option<String>);

/// The per-phone health families (`xagent_device_*{serial, adb_server}`). The one place where a serial becomes a
/// label: the set is bounded by the phones attached, which is what an operator wants a series per.
fn render_phones(out: &mut String, phones: &[PhoneHealth]) {
    let families: [Family; 6] = [
        (
            "xagent_device_battery_temperature_celsius",
            "gauge",
            "Battery temperature as the phone last reported it.",
            |p| p.temperature_celsius.map(|t| format!("{t:.1}")),
        ),
        ("xagent_device_battery_level_percent", "gauge", "Battery level as the phone last reported it.", |p| {
            p.battery_percent.map(|l| l.to_string())
        }),
        (
            "xagent_device_power_plugged",
            "gauge",
            "1 while the phone is on external power (AC, USB, wireless, dock).",
            |p| p.plugged.map(|b| u8::from(b).to_string()),
        ),
        ("xagent_device_storage_free_bytes", "gauge", "Free bytes on the phone's /data file system.", |p| {
            p.storage_free_bytes.map(|b| b.to_string())
        }),
        (
            "xagent_device_disconnects_total",
            "counter",
            "Times the phone left the online state since the connector started.",
            |p| Some(p.disconnects_total.to_string()),
        ),
        (
            "xagent_device_unhealthy",
            "gauge",
            "1 when the recovery ladder (reconnect, recover command) did not bring the phone back.",
            |p| Some(u8::from(p.unhealthy).to_string()),
        ),
    ];
    for (name, kind, help, value) in families {
        let _ = write!(out, "# HELP {name} {help}\n# TYPE {name} {kind}\n");
        for p in phones {
            if let Some(v) = value(p) {
                let _ = writeln!(
                    out,
                    "{name}{{serial=\"{}\",adb_server=\"{}\"}} {v}",
                    label(&p.serial),
                    label(&p.adb_server)
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_counters_histograms_and_gauges() {
        let m = Metrics::default();
        m.tool_finished("android_tap", "ok", Duration::from_millis(7));
        m.tool_finished("android_tap", "ok", Duration::from_millis(300));
        m.tool_finished("android_tap", "device_timeout", Duration::from_secs(10));
        m.ws_connections.fetch_add(2, Ordering::Relaxed);
        m.files_produced("android_screenshot", 1000);
        m.files_produced("android_screenshot", 234);
        let g = Gauges {
            devices_by_state: vec![("online", 3), ("offline", 1)],
            channels_by_status: vec![("connected", 2)],
            cache_bytes: 1234,
            cache_files: 2,
            audit_pruned: 7,
            audit_pruned_young: 3,
            audit_archived: 0,
            audit_full: false,
            in_flight_tools: 1,
            auth: vec![("login", 4, 1)],
            observations_held: 5,
            human_requests_open: 1,
            adb_servers_up: vec![("127.0.0.1:5037".into(), true), ("a\"b\\c\nd".into(), false)],
            phones: vec![PhoneHealth {
                serial: "R58\"x".into(),
                adb_server: "127.0.0.1:5037".into(),
                temperature_celsius: Some(45.1),
                battery_percent: Some(9),
                plugged: Some(false),
                storage_free_bytes: None,
                disconnects_total: 2,
                unhealthy: true,
            }],
        };
        let text = m.render(&g);
        for needle in [
            "xagent_auth_failures_total{surface=\"login\"} 4",
            "xagent_auth_throttled_total{surface=\"login\"} 1",
            "xagent_tool_calls_total{tool=\"android_tap\",result=\"ok\"} 2",
            "xagent_observations_held 5",
            "xagent_human_requests_open 1",
            "xagent_adb_server_up{server=\"127.0.0.1:5037\"} 1",
            "xagent_device_battery_temperature_celsius{serial=\"R58\\\"x\",adb_server=\"127.0.0.1:5037\"} 45.1",
            "xagent_device_battery_level_percent{serial=\"R58\\\"x\",adb_server=\"127.0.0.1:5037\"} 9",
            "xagent_device_disconnects_total{serial=\"R58\\\"x\",adb_server=\"127.0.0.1:5037\"} 2",
            "xagent_device_unhealthy{serial=\"R58\\\"x\",adb_server=\"127.0.0.1:5037\"} 1",
            "xagent_adb_server_up{server=\"a\\\"b\\\\c\\nd\"} 0",
            "xagent_tool_calls_total{tool=\"android_tap\",result=\"device_timeout\"} 1",
            "xagent_tool_latency_seconds_bucket{tool=\"android_tap\",le=\"0.01\"} 1",
            "xagent_tool_latency_seconds_bucket{tool=\"android_tap\",le=\"0.5\"} 2",
            "xagent_tool_latency_seconds_bucket{tool=\"android_tap\",le=\"+Inf\"} 3",
            "xagent_tool_latency_seconds_count{tool=\"android_tap\"} 3",
            "xagent_devices{state=\"online\"} 3",
            "xagent_channels{status=\"connected\"} 2",
            "xagent_ws_connections 2",
            "xagent_file_cache_bytes 1234",
            "xagent_file_bytes_produced_total{tool=\"android_screenshot\"} 1234",
            "# TYPE xagent_tool_latency_seconds histogram",
        ] {
            assert!(text.contains(needle), "missing {needle:?} in\n{text}");
        }
        // Every sample line belongs to a declared family.
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let name = line.split(['{', ' ']).next().unwrap();
            let base = name.trim_end_matches("_bucket").trim_end_matches("_sum").trim_end_matches("_count");
            assert!(text.contains(&format!("# TYPE {base} ")) || text.contains(&format!("# TYPE {name} ")), "{line}");
        }
    }
}

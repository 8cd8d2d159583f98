//! The Prometheus alert rules and the Grafana dashboard in `monitoring/` use only metrics the real binary serves at
//! `/metrics` (with a phone attached and its health read), and the rules cover the alerts operators need. Parsed
//! minimally (every `expr:` of the rules, every `expr` of the dashboard's targets); `promtool` is not needed.

mod common;
mod wall_support;

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::adb::*;
use common::*;
use serde_json::Value;
use wall_support::{bearer, KEY};

fn read(name: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("monitoring").join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Metric names in a PromQL expression: identifiers outside label matchers, `by (…)`/`on (…)` lists and strings,
/// minus PromQL's own words.
fn metric_names(expr: &str) -> BTreeSet<String> {
    const WORDS: &[&str] = &[
        "sum",
        "by",
        "on",
        "and",
        "or",
        "unless",
        "rate",
        "increase",
        "histogram_quantile",
        "vector",
        "without",
        "ignoring",
        "group_left",
        "group_right",
        "avg",
        "max",
        "min",
        "count",
        "bool",
        "offset",
    ];
    let mut out = BTreeSet::new();
    let (mut braces, mut parens_after_grouping, mut in_str) = (0, false, false);
    let mut prev_word = String::new();
    let chars: Vec<char> = expr.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if in_str {
            in_str = c != '"';
            i += 1;
            continue;
        }
        match c {
            '"' => in_str = true,
            '{' => braces += 1,
            '}' => braces -= 1,
            '[' => {
                // A range `[5m]`: skip it.
                while i < chars.len() && chars[i] != ']' {
                    i += 1;
                }
            }
            '(' if matches!(prev_word.as_str(), "by" | "on" | "without" | "ignoring") => parens_after_grouping = true,
            ')' => parens_after_grouping = false,
            c if c.is_ascii_alphabetic() || c == '_' => {
                let start = i;
                while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_' || chars[i] == ':') {
                    i += 1;
                }
                let word: String = chars[start..i].iter().collect();
                let is_number_suffix = start > 0 && chars[start - 1].is_ascii_digit();
                if braces == 0 && !parens_after_grouping && !is_number_suffix && !WORDS.contains(&word.as_str()) {
                    out.insert(word.clone());
                }
                prev_word = word;
                continue;
            }
            _ => {}
        }
        if !c.is_whitespace() {
            prev_word.clear();
        }
        i += 1;
    }
    out
}

fn rule_exprs(yaml: &str) -> Vec<String> {
    yaml.lines().filter_map(|l| l.trim().strip_prefix("expr:")).map(|e| e.trim().to_owned()).collect()
}

fn dashboard_exprs(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                match (k.as_str(), x) {
                    ("expr", Value::String(s)) => out.push(s.clone()),
                    _ => dashboard_exprs(x, out),
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|x| dashboard_exprs(x, out)),
        _ => {}
    }
}

#[test]
fn the_expression_parser_finds_metrics_and_nothing_else() {
    let e = r#"xagent_device_battery_level_percent < 15 and on (instance, serial) xagent_device_power_plugged{job="x"} == 0"#;
    let want: BTreeSet<String> =
        ["xagent_device_battery_level_percent", "xagent_device_power_plugged"].iter().map(|s| s.to_string()).collect();
    assert_eq!(metric_names(e), want);
    let e = "histogram_quantile(0.95, sum by (instance, le) (rate(xagent_tool_latency_seconds_bucket[5m]))) < 500e6";
    assert_eq!(metric_names(e).into_iter().collect::<Vec<_>>(), ["xagent_tool_latency_seconds_bucket"]);
}

/// Every alert the issue names is in the rules file, each with an expression, a `for`/severity and a summary.
#[test]
fn the_rules_cover_hot_battery_unhealthy_adb_server_and_connector_down() {
    let yaml = read("xagent-adb-connector.rules.yml");
    for alert in [
        "XagentPhoneHot",
        "XagentPhoneBatteryLow",
        "XagentPhoneUnhealthy",
        "XagentAdbServerDown",
        "XagentConnectorDown",
        // Issue 34: an agent waits for a person.
        "XagentHumanRequested",
    ] {
        let at = yaml.find(&format!("- alert: {alert}\n")).unwrap_or_else(|| panic!("no alert {alert}"));
        let block = &yaml[at..];
        let block = &block[..block[1..].find("- alert:").map_or(block.len(), |n| n + 1)];
        assert!(block.contains("expr:") && block.contains("severity:") && block.contains("summary:"), "{block}");
    }
    assert!(!yaml.contains('\t'), "YAML forbids tabs");
}

/// What the rules and the dashboard query is what `/metrics` serves (plus Prometheus' own `up`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rules_and_dashboard_use_only_served_metrics() {
    tokio::time::timeout(Duration::from_secs(120), async {
        let (adb, _sim, serial) = setup().await.expect("adb is required (apt-get install adb)");
        let dir = tempfile::tempdir().unwrap();
        let key_file = dir.path().join("key");
        std::fs::write(&key_file, format!("{KEY}\n")).unwrap();
        let server = format!("127.0.0.1:{}", adb.port);
        let srv = Server::start(
            &dir.path().join("data"),
            &["--adb-server", &server, "--api-key-file", key_file.to_str().unwrap()],
            &[],
        );
        // Wait for the phone's first health read, so the per-phone families carry samples.
        let (k, v) = bearer();
        let deadline = Instant::now() + Duration::from_secs(60);
        let text = loop {
            let m = http(srv.addr, "GET", "/metrics", &[(k, &v)], b"").await;
            assert_eq!(m.status, 200);
            let t = m.text();
            if t.contains(&format!("xagent_device_battery_temperature_celsius{{serial=\"{serial}\"")) {
                break t;
            }
            assert!(Instant::now() < deadline, "no health read in /metrics:\n{t}");
            tokio::time::sleep(Duration::from_millis(250)).await;
        };
        // Served: every sample's name, and every declared family (a counter with no samples yet still is one; a
        // histogram family serves its _bucket, _sum and _count series).
        let mut served: BTreeSet<String> = text
            .lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
            .map(|l| l.split(['{', ' ']).next().unwrap().to_owned())
            .collect();
        for l in text.lines() {
            let Some(rest) = l.strip_prefix("# TYPE ") else { continue };
            let mut w = rest.split(' ');
            let (name, kind) = (w.next().unwrap().to_owned(), w.next().unwrap_or(""));
            if kind == "histogram" {
                served.extend(["_bucket", "_sum", "_count"].map(|s| format!("{name}{s}")));
            }
            served.insert(name);
        }

        let mut exprs = rule_exprs(&read("xagent-adb-connector.rules.yml"));
        let dashboard: Value = serde_json::from_str(&read("grafana-dashboard.json")).expect("the dashboard is JSON");
        let before = exprs.len();
        dashboard_exprs(&dashboard, &mut exprs);
        assert!(
            before >= 5 && exprs.len() > before + 5,
            "found {before} rule and {} dashboard expressions",
            exprs.len() - before
        );
        for e in &exprs {
            for name in metric_names(e) {
                if name == "up" {
                    assert!(e.contains(r#"up{job=~"xagent-adb-connector.*"}"#), "`up` of another job: {e}");
                    continue;
                }
                assert!(served.contains(&name), "{name} (in `{e}`) is not served by /metrics:\n{text}");
            }
        }
    })
    .await
    .expect("bounded");
}

//! BENCHMARKS.md opens with a dashboard generated from `bench/results.json` and `bench/targets.json` (issue 51):
//! the table cannot drift from the JSON, the page stays short before its method, and the diary lives elsewhere.
//! `UPDATE_BENCHMARKS=1 cargo test --test bench_dashboard` rewrites the table from the JSON.
use std::path::Path;

use serde_json::Value;

// The generator the bench itself runs after each run.
#[allow(dead_code)]
#[path = "../benches/e2e/dashboard.rs"]
mod dashboard;

fn read(rel: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join(rel);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn json(rel: &str) -> Value {
    serde_json::from_str(&read(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

#[test]
fn the_dashboard_is_the_table_the_json_gives() {
    let (results, targets) = (json("bench/results.json"), json("bench/targets.json"));
    let want = dashboard::table(&results, &targets).expect("the JSON makes a table");
    let doc = read("BENCHMARKS.md");
    if std::env::var("UPDATE_BENCHMARKS").is_ok_and(|v| v == "1") {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("BENCHMARKS.md");
        std::fs::write(path, dashboard::splice(&doc, &want).unwrap()).unwrap();
        return;
    }
    let got = dashboard::current(&doc).expect("BENCHMARKS.md has the dashboard markers");
    assert!(
        got == want,
        "BENCHMARKS.md's dashboard differs from bench/results.json + bench/targets.json; rewrite it with \
         `UPDATE_BENCHMARKS=1 cargo test --test bench_dashboard`.\nfirst difference: {:?}",
        got.lines().zip(want.lines()).find(|(a, b)| a != b).or(Some(("(length)", "(length)")))
    );
}

/// The table has a row per measured figure (every profile × step × side of the JSON but the baseline), and each
/// row's figures are the JSON's: a changed p50 or a target no longer met changes the table.
#[test]
fn every_measured_figure_has_its_row_and_a_change_shows() {
    let (results, targets) = (json("bench/results.json"), json("bench/targets.json"));
    let table = dashboard::table(&results, &targets).unwrap();
    let rows = table.lines().filter(|l| l.starts_with("| ") && !l.starts_with("| step")).count();
    let mut figures = 0;
    for profile in results["agent_step"].as_object().unwrap().values() {
        for step in profile.as_object().unwrap().values() {
            figures += step.as_object().unwrap().keys().filter(|k| *k != "adb CLI").count();
        }
    }
    assert!(figures >= 30, "the agent-step run has its figures: {figures}");
    assert_eq!(rows, figures, "one row per measured figure");
    let promised = targets["targets"].as_array().unwrap().len();
    assert_eq!(table.matches("(issue ").count(), promised, "every promised target shows in the table");

    // Make the Android 14 bare tap with the helper 10× slower: its row shows the new figure and misses its target.
    let mut slower = results.clone();
    slower["agent_step"]["android14"]["bare_tap"]["after"]["p50_ms"] = serde_json::json!(83.0);
    let changed = dashboard::table(&slower, &targets).unwrap();
    let row = changed.lines().find(|l| l.contains("bare tap") && l.contains("Android 14, helper on")).unwrap();
    assert!(row.contains("| 83.0 /") && row.ends_with("| ≤ 0.3 (issue 32) | **no** |"), "{row}");
    assert_ne!(changed, table);

    // A step the bench measures without a label, or a promise without a figure, is an error, not a silent gap.
    let mut unlabelled = results.clone();
    unlabelled["agent_step"]["android14"]["new_step"] = results["agent_step"]["android14"]["bare_tap"].clone();
    assert!(dashboard::table(&unlabelled, &targets).unwrap_err().contains("new_step"));
    let mut unmeasured = results.clone();
    unmeasured["agent_step"]["android11"].as_object_mut().unwrap().remove("observe");
    assert!(dashboard::table(&unmeasured, &targets).unwrap_err().contains("does not have"));
}

/// BENCHMARKS.md is a dashboard: at most 80 lines before its method, the phone costs after it, the per-issue diary
/// in docs/benchmarks-history.md (which it links).
#[test]
fn benchmarks_md_is_a_dashboard_and_the_history_lives_elsewhere() {
    let doc = read("BENCHMARKS.md");
    let before_method = doc.split("\n## Method\n").next().unwrap().lines().count();
    assert!(doc.contains("\n## Method\n"), "BENCHMARKS.md has its method section");
    assert!(before_method <= 80, "{before_method} lines before the method; the dashboard must come first and short");
    assert!(doc.find("\n## Phone costs\n").unwrap() > doc.find("\n## Method\n").unwrap(), "phone costs after method");
    assert!(doc.contains("](docs/benchmarks-history.md)"), "BENCHMARKS.md links the history");
    assert!(!doc.contains("\n## Issue "), "no per-issue section left in BENCHMARKS.md");
    let history = read("docs/benchmarks-history.md");
    for section in ["## Issue 31:", "## Issue 32:", "## Issue 24:", "## Stuck phones"] {
        assert!(history.contains(section), "docs/benchmarks-history.md keeps {section}");
    }
}

/// The agent-cost table (issue 49) is generated too: once bench/results.json holds the scenario, BENCHMARKS.md's
/// block between its markers is the table the JSON gives (`UPDATE_BENCHMARKS=1` rewrites it as well).
#[test]
fn the_agent_cost_table_is_the_one_the_json_gives() {
    let (results, targets) = (json("bench/results.json"), json("bench/targets.json"));
    let doc = read("BENCHMARKS.md");
    assert!(dashboard::current_cost(&doc).is_some(), "BENCHMARKS.md has the agent-cost markers");
    if results.get("agent_cost").is_none() {
        return;
    }
    let want = dashboard::cost_table(&results, &targets).expect("the JSON makes the agent-cost table");
    if std::env::var("UPDATE_BENCHMARKS").is_ok_and(|v| v == "1") {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("BENCHMARKS.md");
        std::fs::write(path, dashboard::splice_cost(&doc, &want).unwrap()).unwrap();
        return;
    }
    assert!(
        dashboard::current_cost(&doc) == Some(want.as_str()),
        "BENCHMARKS.md's agent-cost table differs from bench/results.json; rewrite it with \
         `UPDATE_BENCHMARKS=1 cargo test --test bench_dashboard`"
    );
    // A task whose bytes did not halve shows as a missed target.
    let mut worse = results.clone();
    let task = worse["agent_cost"]["tasks"].as_object().unwrap().keys().next().unwrap().clone();
    let before = worse["agent_cost"]["tasks"][&task]["before"]["bytes"].as_f64().unwrap();
    worse["agent_cost"]["tasks"][&task]["after"]["bytes"] = serde_json::json!(before * 0.9);
    let table = dashboard::cost_table(&worse, &targets).unwrap();
    let row = table.lines().find(|l| l.contains(&format!("(`{task}`)"))).unwrap();
    assert!(row.contains("| 0.900 | ≤ 0.5 (issue 49) | **no** |"), "{row}");
}

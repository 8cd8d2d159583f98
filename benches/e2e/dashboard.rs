//! BENCHMARKS.md's dashboard (issue 51): one table of every figure of `bench/results.json`'s agent-step scenario —
//! step, profile (Android 14 / 11, helper on / off), this build, the adb CLI measured in the same run, the ratio,
//! the target and whether it is met — generated from the JSON and `bench/targets.json` (the steps' labels and the
//! promised ratios). The bench rewrites it after every run; `tests/bench_dashboard.rs` includes this file and fails
//! when BENCHMARKS.md's table and the JSON disagree (`UPDATE_BENCHMARKS=1` rewrites it from the JSON instead).
//!
//! Only `serde_json`: the bench and the test both compile this file.

use serde_json::Value;

/// The generated block sits between these two lines of BENCHMARKS.md.
pub const BEGIN: &str = "<!-- dashboard: generated from bench/results.json and bench/targets.json; do not edit -->";
pub const END: &str = "<!-- dashboard end -->";

fn s<'a>(v: &'a Value, key: &str) -> Result<&'a str, String> {
    v[key].as_str().ok_or_else(|| format!("bench/targets.json: `{key}` must be a string in {v}"))
}

fn list<'a>(v: &'a Value, key: &str) -> Result<&'a Vec<Value>, String> {
    v[key].as_array().ok_or_else(|| format!("bench/targets.json: `{key}` must be a list"))
}

/// `p50 / p95 ms (streams)` of one side, rounded as a reader compares them.
fn figure(side: &Value) -> Result<String, String> {
    let (p50, p95) = (side["p50_ms"].as_f64(), side["p95_ms"].as_f64());
    let (Some(p50), Some(p95)) = (p50, p95) else { return Err(format!("a side without p50_ms/p95_ms: {side}")) };
    let ms = |x: f64| if x >= 100.0 { format!("{x:.0}") } else { format!("{x:.1}") };
    let streams = side["streams_per_step"].as_f64().map(|n| format!(" ({n:.0})")).unwrap_or_default();
    Ok(format!("{} / {}{streams}", ms(p50), ms(p95)))
}

/// The dashboard block (without the markers): a line on the run, then the table.
pub fn table(results: &Value, targets: &Value) -> Result<String, String> {
    let scenario = s(targets, "scenario")?;
    let baseline = s(targets, "baseline")?;
    let data = results
        .get(scenario)
        .and_then(Value::as_object)
        .ok_or_else(|| format!("bench/results.json has no `{scenario}` scenario"))?;
    let steps = list(targets, "steps")?;
    let profiles = list(targets, "profiles")?;
    let sides = list(targets, "sides")?;
    let promised = list(targets, "targets")?;

    // Every measured step has a label and every promised figure was measured: neither file may get ahead.
    for (profile, measured) in data {
        if !profiles.iter().any(|p| p["key"] == profile.as_str()) {
            return Err(format!("bench/results.json: profile `{profile}` has no label in bench/targets.json"));
        }
        for step in measured.as_object().into_iter().flat_map(|m| m.keys()) {
            if !steps.iter().any(|st| st["key"] == step.as_str()) {
                return Err(format!("bench/results.json: step `{step}` has no label in bench/targets.json"));
            }
        }
    }
    for t in promised {
        let side = &data.get(s(t, "profile")?).unwrap_or(&Value::Null)[s(t, "step")?][s(t, "side")?];
        if side.is_null() {
            return Err(format!("bench/targets.json promises a figure bench/results.json does not have: {t}"));
        }
    }

    // The run that measured this scenario: `runs` once results.json merges runs of different scenarios.
    let m = results.get("runs").and_then(|r| r.get(scenario)).unwrap_or(&results["machine"]);
    let mut out = format!(
        "Run of record: `{}` at `{}`, {} × {} ({} GiB), load at start `{}`; p50 / p95 ms (streams the phone opened \
         per step, p50); ratio = this build's p50 / the {baseline}'s p50 in the same run, lower is better.\n\n",
        m["connector_binary"].as_str().unwrap_or("?").rsplit('/').next().unwrap_or("?"),
        m["git"].as_str().unwrap_or("?"),
        m["nproc"],
        m["cpu"].as_str().unwrap_or("?"),
        m["mem_gib"],
        m["loadavg_at_start"].as_str().unwrap_or("?").split(' ').take(3).collect::<Vec<_>>().join(" "),
    );
    out.push_str(&format!(
        "| step | profile | this build | {baseline} (baseline) | ratio p50 | target | met |\n|---|---|---|---|---|---|---|\n"
    ));
    for p in profiles {
        let Some(measured) = data.get(s(p, "key")?) else { continue };
        for st in steps {
            let Some(step) = measured.get(s(st, "key")?) else { continue };
            let base = &step[baseline];
            if base.is_null() {
                return Err(format!("bench/results.json: {} {} has no `{baseline}` side", s(p, "key")?, s(st, "key")?));
            }
            for side in sides {
                let this = &step[s(side, "key")?];
                if this.is_null() {
                    continue;
                }
                let ratio = this["p50_ms"].as_f64().unwrap_or(f64::NAN) / base["p50_ms"].as_f64().unwrap_or(f64::NAN);
                let target = promised
                    .iter()
                    .find(|t| t["step"] == st["key"] && t["profile"] == p["key"] && t["side"] == side["key"]);
                let (target, met) = match target.map(|t| (t["max_ratio_p50"].as_f64(), &t["issue"])) {
                    Some((Some(max), issue)) => {
                        (format!("≤ {max} (issue {issue})"), if ratio <= max { "yes" } else { "**no**" })
                    }
                    Some((None, _)) => return Err("bench/targets.json: a target without max_ratio_p50".into()),
                    None => ("info".to_string(), "–"),
                };
                out.push_str(&format!(
                    "| {} | {}, {} | {} | {} | {ratio:.3} | {target} | {met} |\n",
                    s(st, "label")?,
                    s(p, "label")?,
                    s(side, "label")?,
                    figure(this)?,
                    figure(base)?,
                ));
            }
        }
    }
    // A blank line ends the table before the end marker (an HTML line right after a table may render as a row).
    out.push('\n');
    Ok(out)
}

/// `doc` with the block between [`BEGIN`] and [`END`] replaced by `block`.
pub fn splice(doc: &str, block: &str) -> Result<String, String> {
    let start = doc.find(BEGIN).ok_or("BENCHMARKS.md has no dashboard start marker")? + BEGIN.len();
    let end = doc[start..].find(END).ok_or("BENCHMARKS.md has no dashboard end marker")? + start;
    Ok(format!("{}\n{block}{}", &doc[..start], &doc[end..]))
}

/// The block as it stands in `doc` (for `tests/bench_dashboard.rs`; the bench only writes it).
#[allow(dead_code)]
pub fn current(doc: &str) -> Option<&str> {
    let start = doc.find(BEGIN)? + BEGIN.len() + 1;
    let end = doc[start..].find(END)? + start;
    Some(&doc[start..end])
}

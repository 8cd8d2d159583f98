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

// ---------------------------------------------------------------------------------------------------------------
// What an agent pays (issue 49 item 9): the agent-cost scenario's table, between its own markers.

/// The agent-cost block sits between these two lines of BENCHMARKS.md.
pub const COST_BEGIN: &str =
    "<!-- agent-cost: generated from bench/results.json and bench/targets.json; do not edit -->";
pub const COST_END: &str = "<!-- agent-cost end -->";

/// `calls · bytes · tokens (Anthropic / OpenAI) · ms · done` of one side of one task.
fn cost_cell(v: &Value) -> String {
    if v.is_null() {
        return "–".into();
    }
    let n = |k: &str| v[k].as_f64().unwrap_or(f64::NAN);
    format!(
        "{} · {:.0} B · {:.0} / {:.0} tok · {:.0} ms · {}",
        n("calls"),
        n("bytes"),
        n("tokens_anthropic"),
        n("tokens_openai"),
        n("tool_ms"),
        v["succeeded"].as_str().unwrap_or("?")
    )
}

fn promise<'a>(targets: &'a Value, what: &str) -> Result<Option<(f64, &'a Value)>, String> {
    let list =
        targets["agent_cost"]["targets"].as_array().ok_or("bench/targets.json: `agent_cost.targets` must be a list")?;
    let Some(t) = list.iter().find(|t| t["what"] == what) else { return Ok(None) };
    let max = t["max_ratio"]
        .as_f64()
        .ok_or_else(|| format!("bench/targets.json: agent_cost target without max_ratio: {t}"))?;
    Ok(Some((max, &t["issue"])))
}

fn verdict(ratio: f64, p: Option<(f64, &Value)>) -> (String, &'static str) {
    match p {
        Some((max, issue)) if ratio.is_finite() => {
            (format!("≤ {max} (issue {issue})"), if ratio <= max { "yes" } else { "**no**" })
        }
        Some((max, issue)) => (format!("≤ {max} (issue {issue})"), "not measured"),
        None => ("info".into(), "–"),
    }
}

/// The agent-cost block (without the markers): per task this build, the build before issue 49 and the peer, then
/// a default observation against the peer's list + screenshot per screen, then `max_side` against image tokens.
pub fn cost_table(results: &Value, targets: &Value) -> Result<String, String> {
    let r = results.get("agent_cost").ok_or("bench/results.json has no `agent_cost` scenario")?;
    let m = results.get("runs").and_then(|x| x.get("agent_cost")).unwrap_or(&results["machine"]);
    let num = |v: &Value, k: &str| v[k].as_f64().unwrap_or(f64::NAN);
    let mut out = format!(
        "Run of record: `{}`, {} × {}, load at start `{}`; {} round(s) per task; peer: {}. A cell: calls · bytes a \
         model reads (text + base64 images) · tokens (images by Anthropic's / OpenAI's formula, text bytes/4) · tool \
         time · rounds the phone showed done.\n\n",
        m["git"].as_str().unwrap_or("?"),
        m["nproc"],
        m["cpu"].as_str().unwrap_or("?"),
        m["loadavg_at_start"].as_str().unwrap_or("?").split(' ').take(3).collect::<Vec<_>>().join(" "),
        r["rounds"],
        r["peer"].as_str().unwrap_or("?"),
    );
    out.push_str("| task | this build | before issue 49 | mobile-mcp 1.0.4 | bytes this / before | target | met |\n");
    out.push_str("|---|---|---|---|---|---|---|\n");
    let tasks = r["tasks"].as_object().ok_or("agent_cost.tasks must be an object")?;
    let per_task = promise(targets, "bytes_per_task_vs_before")?;
    let (mut sum_after, mut sum_before) = (0.0, 0.0);
    for (key, t) in tasks {
        let (a, b) = (&t["after"], &t["before"]);
        let ratio = num(a, "bytes") / num(b, "bytes");
        sum_after += num(a, "bytes");
        sum_before += num(b, "bytes");
        let (target, met) = verdict(ratio, per_task);
        out.push_str(&format!(
            "| {} (`{key}`) | {} | {} | {} | {ratio:.3} | {target} | {met} |\n",
            t["label"].as_str().unwrap_or(key),
            cost_cell(a),
            cost_cell(b),
            cost_cell(&t["peer"]),
        ));
    }
    let total = sum_after / sum_before;
    let (target, met) = verdict(total, per_task);
    out.push_str(&format!(
        "| all tasks, bytes | {sum_after:.0} B | {sum_before:.0} B | | {total:.3} | {target} | {met} |\n"
    ));

    out.push_str(
        "\n| screen | `android_observe`, this build | before issue 49 | peer: list + screenshot | tokens this / peer \
         (Anthropic; OpenAI) | target | met |\n|---|---|---|---|---|---|---|\n",
    );
    let look = promise(targets, "observe_tokens_vs_peer_look")?;
    for (screen, row) in r["observe_vs_peer_look"].as_object().into_iter().flatten() {
        let (a, p) = (&row["after"], &row["peer"]);
        let ra = num(a, "tokens_anthropic") / num(p, "tokens_anthropic");
        let ro = num(a, "tokens_openai") / num(p, "tokens_openai");
        let (target, met) = verdict(ra.max(ro), look);
        let cell = |v: &Value| {
            if v.is_null() {
                return "–".to_string();
            }
            format!(
                "{:.0} B text + {} image {} B · {:.0} / {:.0} tok",
                num(v, "text_bytes"),
                v["image_px"].as_str().unwrap_or("no"),
                num(v, "image_bytes"),
                num(v, "tokens_anthropic"),
                num(v, "tokens_openai")
            )
        };
        out.push_str(&format!(
            "| {screen} | {} | {} | {} | {ra:.3}; {ro:.3} | {target} | {met} |\n",
            cell(a),
            cell(&row["before"]),
            cell(p)
        ));
    }

    out.push_str("\n| `android_observe` `max_side` (home screen) | picture | image bytes | image tokens Anthropic / OpenAI | text bytes |\n|---|---|---|---|---|\n");
    let mut sizes: Vec<(&String, &Value)> = r["observe_max_side"].as_object().into_iter().flatten().collect();
    sizes.sort_by_key(|(k, _)| std::cmp::Reverse(k.parse::<u32>().unwrap_or(0)));
    for (side, v) in sizes {
        out.push_str(&format!(
            "| {side} | {} | {:.0} | {:.0} / {:.0} | {:.0} |\n",
            v["image_px"].as_str().unwrap_or("?"),
            num(v, "image_bytes"),
            num(v, "image_tokens_anthropic"),
            num(v, "image_tokens_openai"),
            num(v, "text_bytes")
        ));
    }
    out.push('\n');
    Ok(out)
}

/// `doc` with the agent-cost block replaced by `block`.
pub fn splice_cost(doc: &str, block: &str) -> Result<String, String> {
    let start = doc.find(COST_BEGIN).ok_or("BENCHMARKS.md has no agent-cost start marker")? + COST_BEGIN.len();
    let end = doc[start..].find(COST_END).ok_or("BENCHMARKS.md has no agent-cost end marker")? + start;
    Ok(format!("{}\n{block}{}", &doc[..start], &doc[end..]))
}

/// The agent-cost block as it stands in `doc` (for `tests/bench_dashboard.rs`).
#[allow(dead_code)]
pub fn current_cost(doc: &str) -> Option<&str> {
    let start = doc.find(COST_BEGIN)? + COST_BEGIN.len() + 1;
    let end = doc[start..].find(COST_END)? + start;
    Some(&doc[start..end])
}

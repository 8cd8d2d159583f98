//! `xagent-adb-connector audit verify|tail`: check the audit chain, show recent device actions.

use std::path::Path;

use super::out::outln;
use super::settings::{self, StateProblem};
use crate::device::text::{terminal_json, terminal_text};
use crate::store::Store;

/// Opens the state read-only, or prints what is wrong (missing vs. permission) and returns the exit code.
fn open(data_dir: &Path) -> Result<Store, i32> {
    settings::open_state(data_dir).map_err(|p| {
        eprintln!("error: {}", p.message());
        match p {
            StateProblem::Missing(_) | StateProblem::Denied(_) => crate::config::exit::CONFIG,
            StateProblem::Other(_) => crate::config::exit::FAILURE,
        }
    })
}

/// Exit 0 when the chain (database and archive) is intact and no record younger than `retention` is missing; 1
/// naming the first bad record, or the missing ones, otherwise.
pub fn verify(data_dir: &Path, retention: std::time::Duration) -> i32 {
    let store = match open(data_dir) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let archive = crate::audit::archive::path(data_dir);
    match crate::audit::verify_all(&store, Some(&archive), retention, crate::protocol::now_ms()) {
        Ok(v) => {
            outln!("audit log intact: {} record(s)", v.records);
            if v.archived > 0 {
                outln!("audit archive intact: {} older record(s) in {}", v.archived, archive.display());
            }
            // What retention took is part of the answer: "intact" alone hid a flood that pushed real actions out.
            if let Ok(Some(r)) = store.audit_retention() {
                let when = if r.last_time_ms > 0 {
                    format!(", the newest of them from {}", utc(r.last_time_ms))
                } else {
                    String::new()
                };
                let archived = store.audit_archived_count().unwrap_or(0);
                outln!(
                    "retention removed {} older record(s) ({archived} of them to the archive): every record up to \
                     seq {}{when}",
                    r.pruned,
                    r.last_seq
                );
            }
            0
        }
        Err((0, why)) if why.starts_with("cannot") => {
            outln!("audit log cannot be verified: {why}");
            1
        }
        Err((seq, why)) if why.contains("evidence is missing") => {
            outln!("audit log INCOMPLETE: record {seq}: {why}");
            1
        }
        Err((seq, why)) => {
            outln!("audit log TAMPERED: record {seq}: {why}");
            1
        }
    }
}

/// The last `n` records, oldest first: a table with UTC times for people, or one JSON object per line (the same
/// values; DEL, C1 and bidi controls as `\uNNNN`, which `serde_json` writes raw).
pub fn tail(data_dir: &Path, n: u64, json: bool) -> i32 {
    let store = match open(data_dir) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let rows = match store.audit_tail(n) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot read the audit log: {e}");
            return crate::config::exit::FAILURE;
        }
    };
    if json {
        for r in rows {
            let v = serde_json::json!({
                "seq": r.seq,
                "time": utc(r.time_ms),
                "time_ms": r.time_ms,
                "connector_id": r.connector_id,
                "channel_id": r.channel_id,
                "tool_call_id": r.tool_call_id,
                "device": r.device,
                "tool_id": r.tool_id,
                "result": r.result,
                "arguments": serde_json::from_str::<serde_json::Value>(&r.arguments)
                    .unwrap_or(serde_json::Value::String(r.arguments.clone())),
            });
            outln!("{}", terminal_json(&v.to_string()));
        }
        return 0;
    }
    for line in table(&rows) {
        outln!("{line}");
    }
    0
}

/// The records as aligned columns: each column as wide as its widest cell (channel ids, tool call ids and
/// `serial@adb-server` device keys vary in length), the redacted arguments last and unpadded.
///
/// Every text cell is shown through [`terminal_text`]: an agent chooses its `tool_call_id` (control characters
/// allowed) and a phone its serial, and a line break, `ESC[1A ESC[2K` or a bidi override in them would forge or
/// erase lines of this table on the operator's terminal.
fn table(rows: &[crate::store::audit::AuditRow]) -> Vec<String> {
    const HEAD: [&str; 8] =
        ["SEQ", "TIME (UTC)", "CHANNEL", "TOOL CALL", "DEVICE", "TOOL", "RESULT", "ARGUMENTS (redacted)"];
    let shown = |s: &str| terminal_text(s).into_owned();
    let cells: Vec<[String; 8]> = rows
        .iter()
        .map(|r| {
            [
                r.seq.to_string(),
                utc(r.time_ms),
                shown(&r.channel_id),
                r.tool_call_id.as_deref().map_or_else(|| "-".into(), shown),
                shown(&r.device),
                shown(&r.tool_id),
                shown(&r.result),
                shown(&r.arguments),
            ]
        })
        .collect();
    let mut width = HEAD.map(|h| h.chars().count());
    for row in &cells {
        for (w, c) in width.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |row: [&str; 8]| {
        let mut out = format!("{:>w$}", row[0], w = width[0]);
        for (k, cell) in row.iter().enumerate().skip(1) {
            if k == 7 {
                out.push_str(&format!("  {cell}"));
            } else {
                out.push_str(&format!("  {cell:<w$}", w = width[k]));
            }
        }
        out
    };
    let mut out = vec![line(HEAD)];
    out.extend(cells.iter().map(|r| line(std::array::from_fn(|k| r[k].as_str()))));
    out
}

/// Milliseconds since the epoch as RFC 3339 UTC with milliseconds, e.g. `2026-11-30T12:00:00.123Z`.
pub fn utc(ms: u64) -> String {
    crate::protocol::utc(ms)
}

#[cfg(test)]
mod tests {
    use crate::store::audit::AuditRow;

    fn row(seq: i64, call: Option<&str>, device: &str, tool: &str) -> AuditRow {
        AuditRow {
            seq,
            time_ms: 1_790_000_000_000,
            connector_id: "conn_x".into(),
            channel_id: "cch_adb_0f80e01df6c6bc3947ee2517".into(),
            tool_call_id: call.map(str::to_owned),
            tool_id: tool.into(),
            device: device.into(),
            arguments: "{}".into(),
            result: "ok".into(),
            prev_hash: String::new(),
            hash: String::new(),
        }
    }

    /// Every column starts at the same character position in every line, whatever the cell widths.
    #[test]
    fn tail_columns_line_up_with_cells_of_any_width() {
        let rows = [
            row(7, None, "R58N123ABC@127.0.0.1:5037", "android_tap"),
            row(10_234, Some("call_with_a_rather_long_tool_call_identifier_0001"), "e@h:1", "android_app_clear_data"),
            row(10_235, Some("c"), "192.168.100.200:41234@10.0.0.1:15037", "android_ui_dump"),
        ];
        let lines = super::table(&rows);
        // Columns after the right-aligned SEQ: a non-space preceded by two spaces.
        let seq_end = lines[0].find("SEQ").unwrap() + 3;
        let starts = |l: &str| -> Vec<usize> {
            let c: Vec<char> = l.chars().collect();
            (seq_end..c.len()).filter(|&i| c[i] != ' ' && c[i - 1] == ' ' && c[i - 2] == ' ').collect()
        };
        let head = starts(&lines[0]);
        assert_eq!(head.len(), 7, "{lines:#?}");
        for l in &lines[1..] {
            assert_eq!(starts(l), head, "misaligned:\n{}", lines.join("\n"));
        }
    }

    #[test]
    fn utc_times() {
        assert_eq!(super::utc(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(super::utc(1_709_210_096_789), "2024-02-29T12:34:56.789Z");
    }
}

//! `xagent-adb-connector audit verify|tail`: check the audit chain, show recent device actions.

use std::path::Path;

use super::out::outln;
use super::settings::{self, StateProblem};
use crate::store::Store;

/// Opens the state read-only, or prints what is wrong (missing vs. permission) and returns the exit code.
fn open(data_dir: &Path) -> Result<Store, i32> {
    settings::open_state(data_dir).map_err(|p| {
        eprintln!("error: {}", p.message());
        match p {
            StateProblem::Missing(_) | StateProblem::Denied(_) => crate::cli::exit::CONFIG,
            StateProblem::Other(_) => crate::cli::exit::FAILURE,
        }
    })
}

/// Exit 0 when the chain is intact, 1 naming the first bad record otherwise.
pub fn verify(data_dir: &Path) -> i32 {
    let store = match open(data_dir) {
        Ok(s) => s,
        Err(code) => return code,
    };
    match crate::audit::verify(&store) {
        Ok(n) => {
            outln!("audit log intact: {n} record(s)");
            0
        }
        Err((seq, why)) => {
            outln!("audit log TAMPERED: record {seq}: {why}");
            1
        }
    }
}

/// The last `n` records, oldest first: a table with UTC times for people, or one JSON object per line.
pub fn tail(data_dir: &Path, n: u64, json: bool) -> i32 {
    let store = match open(data_dir) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let rows = match store.audit_tail(n) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot read the audit log: {e}");
            return crate::cli::exit::FAILURE;
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
            outln!("{v}");
        }
        return 0;
    }
    outln!(
        "{:>6}  {:<24}  {:<20}  {:<20}  {:<28}  {:<22}  {:<10}  ARGUMENTS (redacted)",
        "SEQ",
        "TIME (UTC)",
        "CHANNEL",
        "TOOL CALL",
        "DEVICE",
        "TOOL",
        "RESULT"
    );
    for r in rows {
        outln!(
            "{:>6}  {:<24}  {:<20}  {:<20}  {:<28}  {:<22}  {:<10}  {}",
            r.seq,
            utc(r.time_ms),
            r.channel_id,
            r.tool_call_id.as_deref().unwrap_or("-"),
            r.device,
            r.tool_id,
            r.result,
            r.arguments
        );
    }
    0
}

/// Milliseconds since the epoch as RFC 3339 UTC with milliseconds, e.g. `2026-11-30T12:00:00.123Z`.
pub fn utc(ms: u64) -> String {
    let secs = (ms / 1000) as i64;
    let (y, mo, d) = crate::build_info::civil_from_days(secs.div_euclid(86_400));
    let rem = secs.rem_euclid(86_400);
    format!("{y:04}-{mo:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z", rem / 3600, (rem % 3600) / 60, rem % 60, ms % 1000)
}

#[cfg(test)]
mod tests {
    #[test]
    fn utc_times() {
        assert_eq!(super::utc(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(super::utc(1_709_210_096_789), "2024-02-29T12:34:56.789Z");
    }
}

//! The audit log: every device action the connector performed — who (connector, channel, tool_call_id), what
//! (tool and its arguments, typed text redacted), on which device, with which result, when — appended to a SHA-256
//! hash chain in SQLite. Editing, deleting or reordering a record breaks the chain at that record, which
//! `xagent-adb-connector audit verify` names. (The chain detects tampering with the database; someone who can
//! rewrite the whole file can rewrite the whole chain — ship `audit tail` output elsewhere for that.)

use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

use crate::protocol::now_ms;
use crate::store::audit::AuditRow;
use crate::store::Store;

/// Argument keys whose values are never stored: what a person types may be a password.
const REDACTED: &[&str] = &["text"];

/// Arguments as recorded: sensitive values replaced by their length.
pub fn redact(args: &Map<String, Value>) -> String {
    let mut out = Map::new();
    for (k, v) in args {
        let v = if REDACTED.contains(&k.as_str()) {
            json!({"redacted": true, "chars": v.as_str().map_or(0, |s| s.chars().count())})
        } else {
            v.clone()
        };
        out.insert(k.clone(), v);
    }
    Value::Object(out).to_string()
}

/// The hash of a record: SHA-256 over the previous hash and every field, length-prefixed so that no two different
/// records serialise alike.
pub fn hash(r: &AuditRow) -> String {
    let mut h = Sha256::new();
    let time = r.time_ms.to_string();
    let fields: [&str; 9] = [
        &r.prev_hash,
        &time,
        &r.connector_id,
        &r.channel_id,
        r.tool_call_id.as_deref().unwrap_or("\u{0}none"),
        &r.tool_id,
        &r.device,
        &r.arguments,
        &r.result,
    ];
    for f in fields {
        h.update((f.len() as u64).to_le_bytes());
        h.update(f.as_bytes());
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

pub struct Action<'a> {
    pub connector_id: &'a str,
    pub channel_id: &'a str,
    pub tool_call_id: Option<&'a str>,
    pub tool_id: &'a str,
    pub device: &'a str,
    pub args: &'a Map<String, Value>,
    /// `ok` or the error code.
    pub result: &'a str,
}

pub fn record(store: &Store, a: Action<'_>) {
    let rec = AuditRow {
        seq: 0,
        time_ms: now_ms(),
        connector_id: a.connector_id.to_owned(),
        channel_id: a.channel_id.to_owned(),
        tool_call_id: a.tool_call_id.map(str::to_owned),
        tool_id: a.tool_id.to_owned(),
        device: a.device.to_owned(),
        arguments: redact(a.args),
        result: a.result.to_owned(),
        prev_hash: String::new(),
        hash: String::new(),
    };
    if let Err(e) = store.audit_append(rec, hash) {
        tracing::error!(error = %e, "could not append to the audit log");
    }
}

/// Checks the whole chain. `Ok(n)` = n records intact; `Err((seq, why))` names the first bad record.
pub fn verify(store: &Store) -> Result<usize, (i64, String)> {
    let rows = store.audit_all().map_err(|e| (0, format!("cannot read the audit log: {e}")))?;
    let mut prev = "0".repeat(64);
    for r in &rows {
        if r.prev_hash != prev {
            return Err((
                r.seq,
                "its link to the previous record is broken (a record before it was removed or changed)".into(),
            ));
        }
        if hash(r) != r.hash {
            return Err((r.seq, "its content does not match its hash (the record was edited)".into()));
        }
        prev = r.hash.clone();
    }
    Ok(rows.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store_with(n: usize) -> Store {
        let s = Store::open_in_memory().unwrap();
        for i in 0..n {
            let args: Map<String, Value> = serde_json::from_value(json!({"x": i, "text": "hunter2"})).unwrap();
            record(
                &s,
                Action {
                    connector_id: "conn",
                    channel_id: "cch",
                    tool_call_id: Some("call"),
                    tool_id: "android_tap",
                    device: "SER@srv",
                    args: &args,
                    result: "ok",
                },
            );
        }
        s
    }

    #[test]
    fn an_intact_chain_verifies_and_text_is_redacted() {
        let s = store_with(3);
        assert_eq!(verify(&s), Ok(3));
        let tail = s.audit_tail(2).unwrap();
        assert_eq!(tail.len(), 2);
        assert!(tail[0].seq < tail[1].seq);
        assert!(!tail[0].arguments.contains("hunter2"));
        assert!(tail[0].arguments.contains("\"chars\":7"));
    }

    #[test]
    fn tampering_is_caught_at_the_first_bad_record() {
        let s = store_with(4);
        s.audit_exec_for_tests("UPDATE audit SET result = 'device_timeout' WHERE seq = 2");
        assert_eq!(verify(&s).unwrap_err().0, 2);
        let s = store_with(4);
        s.audit_exec_for_tests("DELETE FROM audit WHERE seq = 3");
        assert_eq!(verify(&s).unwrap_err().0, 4, "the record after the gap no longer links");
    }
}

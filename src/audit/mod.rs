//! The audit log: every device action the connector performed — who (connector, channel, tool_call_id), what
//! (tool and its arguments, typed text redacted), on which device, with which result, when — appended to a SHA-256
//! hash chain in SQLite. Editing, deleting or reordering a record breaks the chain at that record, which
//! `xagent-adb-connector audit verify` names. The chain head (seq + hash of the last record appended) is kept beside
//! it, so removing the newest records — or all of them — is caught too. Retention ([`RETENTION`], [`MAX_RECORDS`])
//! prunes the oldest records and leaves a checkpoint carrying the seq and hash of the last pruned one, from which
//! the remaining chain still verifies. (The chain detects tampering with the database; someone who can rewrite
//! the whole file can rewrite the whole chain and its head — ship `audit tail` output elsewhere for that.)

pub mod reads;

use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

use crate::protocol::now_ms;
use crate::store::audit::AuditRow;
use crate::store::Store;

/// Records older than this are pruned (documented in device-profile/security-and-operations.md §12).
pub const RETENTION: std::time::Duration = std::time::Duration::from_secs(90 * 24 * 3600);
/// At most this many records are kept; older ones are pruned first.
pub const MAX_RECORDS: u64 = 200_000;

/// Applies the retention (blocking: call it from a blocking thread).
pub fn prune(store: &Store) {
    let now = now_ms();
    match store.audit_prune_counted(now.saturating_sub(RETENTION.as_millis() as u64), MAX_RECORDS, now) {
        Ok((0, _)) => {}
        Ok((n, 0)) => tracing::info!(removed = n, "audit log retention: pruned the oldest records (checkpoint kept)"),
        // Records younger than the retention period went: the log fills faster than it should (a flood of real
        // actions). Said loudly, counted in /metrics (`xagent_audit_pruned_young_records_total`, alerted on).
        Ok((n, young)) => tracing::warn!(
            removed = n,
            young,
            max_records = MAX_RECORDS,
            "audit log retention: the record cap removed records younger than the retention period"
        ),
        Err(e) => tracing::warn!(error = %e, "could not prune the audit log"),
    }
}

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
    if let Err(e) = store.commit(entry(a)) {
        tracing::error!(error = %e, "could not append to the audit log");
    }
}

/// The write that appends `a` to the chain, for callers that commit it with other writes of the same call.
pub fn entry(a: Action<'_>) -> crate::store::group::Write {
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
    crate::store::group::Write::Audit { rec, hash }
}

/// Checks the whole chain: from the checkpoint of pruned records (or the start) through every record to the
/// stored head. `Ok(n)` = n records intact; `Err((seq, why))` names the first bad record.
pub fn verify(store: &Store) -> Result<usize, (i64, String)> {
    let read = |e: rusqlite::Error| (0, format!("cannot read the audit log: {e}"));
    let rows = store.audit_all().map_err(read)?;
    let checkpoint = store.audit_checkpoint().map_err(read)?;
    let head = store.audit_head().map_err(read)?;
    let mut prev = checkpoint.as_ref().map_or_else(|| "0".repeat(64), |c| c.1.clone());
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
    let last = rows.last().map(|r| (r.seq, r.hash.clone())).or_else(|| checkpoint.map(|c| (c.0, c.1)));
    match (head, last) {
        (None, None) => Ok(0),
        (Some(h), Some(l)) if h == l => Ok(rows.len()),
        (Some((seq, _)), Some((l, _))) if l < seq => Err((
            seq,
            format!("the newest records were removed: the chain head is record {seq}, the log ends at record {l}"),
        )),
        (Some((seq, _)), None) => {
            Err((seq, format!("every record was removed: the chain head is record {seq}, the log is empty")))
        }
        (Some((seq, _)), Some(_)) => Err((seq, "the chain head does not match the last record".into())),
        (None, Some((l, _))) => Err((l, "the chain head is missing (it was removed)".into())),
    }
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

    #[test]
    fn removing_the_newest_or_all_records_is_caught() {
        let s = store_with(60);
        s.audit_exec_for_tests("DELETE FROM audit WHERE seq > 10");
        let (seq, why) = verify(&s).unwrap_err();
        assert_eq!(seq, 60);
        assert!(why.contains("newest records were removed"), "{why}");
        let s = store_with(5);
        s.audit_exec_for_tests("DELETE FROM audit");
        assert!(verify(&s).unwrap_err().1.contains("every record was removed"));
        let s = store_with(5);
        s.audit_exec_for_tests("DELETE FROM audit_head");
        assert!(verify(&s).unwrap_err().1.contains("head is missing"));
        assert_eq!(verify(&Store::open_in_memory().unwrap()), Ok(0), "an empty log is intact");
    }

    #[test]
    fn retention_keeps_the_chain_verifiable_through_a_checkpoint() {
        let s = store_with(10);
        // Keep the newest 4: six are pruned, the checkpoint carries record 6's hash.
        assert_eq!(s.audit_prune(0, 4, 1).unwrap(), 6);
        assert_eq!(verify(&s), Ok(4));
        let (seq, _, pruned) = s.audit_checkpoint().unwrap().unwrap();
        assert_eq!((seq, pruned), (6, 6));
        // All six went by the record cap while young (time ≥ 0): that is what verify and /metrics report.
        let ret = s.audit_retention().unwrap().unwrap();
        assert_eq!((ret.last_seq, ret.pruned, ret.pruned_young), (6, 6, 6));
        assert!(ret.last_time_ms > 0);
        // The chain continues after pruning, and pruning everything (by age) still verifies.
        let s2 = s.clone();
        record(
            &s2,
            Action {
                connector_id: "conn",
                channel_id: "cch",
                tool_call_id: None,
                tool_id: "android_key",
                device: "SER@srv",
                args: &Map::new(),
                result: "ok",
            },
        );
        assert_eq!(verify(&s), Ok(5));
        assert_eq!(s.audit_prune(u64::MAX, 1000, 2).unwrap(), 5);
        assert_eq!(verify(&s), Ok(0));
        assert_eq!(s.audit_checkpoint().unwrap().unwrap().2, 11);
        // A checkpoint cannot hide removed records: deleting after the checkpoint still breaks the link.
        let s = store_with(10);
        s.audit_prune(0, 5, 1).unwrap();
        s.audit_exec_for_tests("DELETE FROM audit WHERE seq = 6");
        assert_eq!(verify(&s).unwrap_err().0, 7);
    }
}

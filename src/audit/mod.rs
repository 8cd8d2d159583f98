//! The audit log: every device action the connector performed — who (connector, channel, tool_call_id), what
//! (tool and its arguments, typed text redacted), on which device, with which result, when — appended to a SHA-256
//! hash chain in SQLite. Editing, deleting or reordering a record breaks the chain at that record, which
//! `xagent-adb-connector audit verify` names. The chain head (seq + hash of the last record appended) is kept beside
//! it, so removing the newest records — or all of them — is caught too. Retention ([`RETENTION`], [`MAX_RECORDS`])
//! prunes the oldest records and leaves a checkpoint carrying the seq and hash of the last pruned one, from which
//! the remaining chain still verifies. (The chain detects tampering with the database; someone who can rewrite
//! the whole file can rewrite the whole chain and its head — ship `audit tail` output elsewhere for that.)

pub mod archive;
pub mod budget;
pub mod reads;

use std::time::Duration;

use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

use crate::protocol::now_ms;
use crate::store::audit::AuditRow;
use crate::store::Store;

pub use budget::{Settings, MAX_RECORDS, RETENTION};

/// Applies the retention (blocking: call it from a blocking thread): records older than the retention period go
/// (database and archive); past the record cap the oldest remaining records — younger than the retention period —
/// move to the archive, never deleted. If the archive cannot take them (its budget, no data dir), they stay and
/// the log is *full*: individual side effects are counted, not stored, until there is room ([`budget::Evidence`]).
pub fn prune(store: &Store, ev: &budget::Evidence) {
    ev.pruned();
    let s = &ev.settings;
    let now = now_ms();
    let before = now.saturating_sub(s.retention.as_millis() as u64);
    match store.audit_prune_counted(before, i64::MAX as u64, now) {
        Ok((0, _)) => {}
        Ok((n, _)) => tracing::info!(removed = n, "audit log retention: pruned the oldest records (checkpoint kept)"),
        Err(e) => tracing::warn!(error = %e, "could not prune the audit log"),
    }
    if let Some(file) = &s.archive {
        match archive::expire(file, before) {
            Ok(0) => {}
            Ok(n) => tracing::info!(removed = n, "audit archive retention: dropped segments past the retention period"),
            Err(e) => tracing::warn!(error = %e, "could not prune the audit archive"),
        }
    }
    let full = match archive_excess(store, s) {
        Ok(0) => false,
        Ok(n) => {
            // The cap bit: said loudly (a flood of real actions), counted in /metrics.
            tracing::warn!(
                archived = n,
                max_records = s.max_records,
                "audit log: the record cap moved records younger than the retention period to the archive"
            );
            false
        }
        Err(why) => {
            if !ev.is_full() {
                tracing::error!(
                    why = %why,
                    max_records = s.max_records,
                    "audit log FULL: records younger than the retention period are over the cap and cannot be \
                     archived; they are kept, and agents' side effects are now counted, not stored one by one \
                     (raise --audit-archive-max-bytes or --audit-max-records)"
                );
            }
            true
        }
    };
    if ev.is_full() && !full {
        tracing::info!("audit log: room again; side effects are stored one by one");
    }
    ev.set_full(full);
}

/// Moves the records over the cap to the archive, a segment at a time. `Ok(n)` records moved; `Err(why)`: some
/// could not be (they stay).
fn archive_excess(store: &Store, s: &Settings) -> Result<u64, String> {
    let mut moved = 0u64;
    loop {
        let Some((first, last)) = store.audit_bounds().map_err(|e| e.to_string())? else { return Ok(moved) };
        let count = (last - first + 1).max(0) as u64;
        if count <= s.max_records {
            return Ok(moved);
        }
        let Some(file) = &s.archive else { return Err("no archive (in-memory state)".into()) };
        let n = (count - s.max_records).min(archive::SEGMENT_RECORDS as u64) as i64;
        let rows = store.audit_range(first, first + n - 1).map_err(|e| e.to_string())?;
        let Some(newest) = rows.last().cloned() else { return Ok(moved) };
        // Records a crash left both in the archive and the database are not archived twice.
        let done = archive::segments(file)?.last().map_or(0, |seg| seg.last_seq);
        let todo: Vec<AuditRow> = rows.into_iter().filter(|r| r.seq > done).collect();
        if !todo.is_empty() && !archive::append(file, &todo, s.archive_max_bytes)? {
            return Err(format!(
                "the archive would exceed its {} bytes (--audit-archive-max-bytes)",
                s.archive_max_bytes
            ));
        }
        store
            .audit_archived(newest.seq, &newest.hash, newest.time_ms, todo.len() as u64, now_ms())
            .map_err(|e| e.to_string())?;
        moved += todo.len() as u64;
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

/// What [`verify_all`] found intact.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verified {
    /// Records in the database.
    pub records: usize,
    /// Records in the archive.
    pub archived: u64,
}

/// [`verify`], the archive (`archive`: its file, when there is a data dir), and the retention: exit-worthy
/// (`Err`) when records younger than `retention` are missing — removed from the database and not in the archive —
/// even if what is left links up (a record cap that deleted young records, or rows cut by hand with the checkpoint
/// moved along).
pub fn verify_all(
    store: &Store,
    archive_file: Option<&std::path::Path>,
    retention: Duration,
    now_ms: u64,
) -> Result<Verified, (i64, String)> {
    let records = verify(store)?;
    let summary = match archive_file {
        Some(f) => archive::verify(f, hash, |_| {})?,
        None => archive::Summary::default(),
    };
    let read = |e: rusqlite::Error| (0, format!("cannot read the audit log: {e}"));
    let cutoff = now_ms.saturating_sub(retention.as_millis() as u64);
    let archived_to = summary.last.as_ref().map_or(0, |l| l.0);
    if let Some(ckpt) = store.audit_retention().map_err(read)? {
        if ckpt.last_seq == archived_to {
            let (_, ckpt_hash, _) = store.audit_checkpoint().map_err(read)?.unwrap_or_default();
            if summary.last.as_ref().is_some_and(|l| l.1 != ckpt_hash) {
                return Err((
                    ckpt.last_seq,
                    "the archive's last record is not the one the database continues from".into(),
                ));
            }
        } else if ckpt.last_seq > archived_to {
            // Records up to ckpt.last_seq left the database and (past `archived_to`) are not in the archive: fine
            // when they were older than the retention period, evidence missing when not.
            let young = if ckpt.last_time_ms > 0 { ckpt.last_time_ms >= cutoff } else { ckpt.pruned_young > 0 };
            if young {
                let when = if ckpt.last_time_ms > 0 {
                    format!(" (the newest of them from {})", crate::protocol::utc(ckpt.last_time_ms))
                } else {
                    String::new()
                };
                return Err((
                    ckpt.last_seq,
                    format!(
                        "records up to {} were removed{when}, younger than the {}-day retention period, and are \
                         not in the archive: evidence is missing",
                        ckpt.last_seq,
                        retention.as_secs() / 86400
                    ),
                ));
            }
        }
    }
    Ok(Verified { records, archived: summary.records })
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

    /// Issue 48: the record cap moves young records to the archive, never deletes them; a full archive keeps them
    /// and stops individual records; records cut another way fail `verify_all`.
    #[test]
    fn the_cap_archives_young_records_and_verify_counts_what_is_missing() {
        let dir = tempfile::tempdir().unwrap();
        let file = archive::path(dir.path());
        let s = store_with(30);
        let settings = Settings { max_records: 10, archive: Some(file.clone()), ..Settings::default() };
        let ev = budget::Evidence::new(settings.clone());
        prune(&s, &ev);
        assert!(!ev.is_full());
        assert_eq!(s.audit_bounds().unwrap(), Some((21, 30)));
        let now = now_ms();
        let v = verify_all(&s, Some(&file), RETENTION, now).unwrap();
        assert_eq!(v, Verified { records: 10, archived: 20 });
        let mut seqs = Vec::new();
        archive::verify(&file, hash, |r| seqs.push(r.seq)).unwrap();
        assert_eq!(seqs, (1..=20).collect::<Vec<_>>(), "every record moved, in order");
        // The chain continues, and the next prune appends a second segment.
        for _ in 0..5 {
            record(
                &s,
                Action {
                    connector_id: "conn",
                    channel_id: "other",
                    tool_call_id: None,
                    tool_id: "android_key",
                    device: "SER@srv",
                    args: &Map::new(),
                    result: "ok",
                },
            );
        }
        prune(&s, &ev);
        assert_eq!(verify_all(&s, Some(&file), RETENTION, now).unwrap(), Verified { records: 10, archived: 25 });
        assert_eq!(archive::segments(&file).unwrap().len(), 2);

        // Without room in the archive nothing young is removed: the log is full.
        let s2 = store_with(30);
        let tiny = Settings {
            max_records: 10,
            archive: Some(dir.path().join("tiny.xaa")),
            archive_max_bytes: 100,
            ..Settings::default()
        };
        let ev2 = budget::Evidence::new(tiny);
        prune(&s2, &ev2);
        assert!(ev2.is_full(), "the cap could not be kept: said so");
        assert_eq!(s2.audit_bounds().unwrap(), Some((1, 30)), "no young record removed");
        assert_eq!(ev2.decide("c", "x", 1), budget::Decision::OverBudget);

        // Young records cut another way (the rows deleted, the checkpoint moved along, as a cap without an
        // archive did): the chain links, but evidence is missing.
        let s3 = store_with(30);
        assert_eq!(verify_all(&s3, None, RETENTION, now_ms()).unwrap().records, 30);
        s3.audit_prune(0, 10, now_ms()).unwrap();
        assert_eq!(verify(&s3), Ok(10), "the chain itself still verifies");
        let (seq, why) = verify_all(&s3, None, RETENTION, now_ms()).unwrap_err();
        assert_eq!(seq, 20);
        assert!(why.contains("evidence is missing"), "{why}");
        // Once they would have aged out anyway, nothing is missing.
        let later = now_ms() + RETENTION.as_millis() as u64 + 60_000;
        assert!(verify_all(&s3, None, RETENTION, later).is_ok());
    }
}

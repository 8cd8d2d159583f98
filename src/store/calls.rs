//! SQL of the idempotency records (`tool_calls`, migrations 4 and 7). See `crate::idempotency`.
//!
//! Compact on disk (issue 21, a settled tap's bytes): with 512-byte pages a record with its outcome in JSON text
//! (a settled tap's `effect` is ~220 bytes) took a page of its own per call. Since then a record stores the first
//! 128 bits of the arguments' SHA-256 as bytes (it only has to tell a reused id with other arguments — a client's
//! mistake, not an attack) and the outcome deflated against a fixed dictionary of the outcomes' common words
//! (219 → ~55 bytes for a settled tap). Both are BLOBs, while records written before are TEXT: the reader tells
//! them apart by type, so a database keeps working across the upgrade without a migration.

use rusqlite::{params, OptionalExtension};

use super::codec::{digest_hex, key_hash, unpack_outcome, ARGS_DIGEST_BYTES};
use super::db::{Result, Store};
use super::group::Write;

/// What is recorded about one side-effecting call: its state and the hash of its arguments.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallRecord {
    /// Hex of what is stored: the whole SHA-256 (records before issue 21's second round) or its first 128 bits.
    pub args_sha256: String,
    pub state: CallState,
}

impl CallRecord {
    /// Whether `sha256_hex` (the whole digest of a call's arguments) is the recorded one.
    pub fn same_args(&self, sha256_hex: &str) -> bool {
        self.args_sha256 == sha256_hex
            || (self.args_sha256.len() == ARGS_DIGEST_BYTES * 2
                && sha256_hex.len() == 64
                && sha256_hex.starts_with(&self.args_sha256))
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CallState {
    /// Started and not finished: if no live task owns it, the process died during the call.
    Running,
    /// Finished; the JSON outcome to answer repeats with.
    Done(String),
}

impl Store {
    pub fn call_record(&self, channel: &str, tool: &str, call_id: &str) -> Result<Option<CallRecord>> {
        self.db()
            .query_row(
                "SELECT o.outcome, c.args_sha256 FROM tool_calls c LEFT JOIN tool_outcomes o ON o.id = c.id
                 WHERE c.key_hash = ?4 AND c.channel_id = ?1 AND c.tool_id = ?2 AND c.tool_call_id = ?3",
                params![channel, tool, call_id, key_hash(channel, tool, call_id)],
                |r| {
                    let outcome = unpack_outcome(r.get_ref(0)?).map_err(|e| {
                        rusqlite::Error::FromSqlConversionFailure(0, rusqlite::types::Type::Blob, e.into())
                    })?;
                    let state = outcome.map_or(CallState::Running, CallState::Done);
                    Ok(CallRecord { args_sha256: digest_hex(r.get_ref(1)?), state })
                },
            )
            .optional()
    }

    /// Records the start of a call (group commit; returns once committed). Fails if a record exists (the caller
    /// checked first, under its own lock).
    pub fn call_started(&self, channel: &str, tool: &str, call_id: &str, args_sha256: &str, now_ms: u64) -> Result<()> {
        self.commit(Write::CallStarted {
            channel: channel.into(),
            tool: tool.into(),
            call_id: call_id.into(),
            args_sha256: args_sha256.into(),
            now_ms,
        })
    }

    /// Records the outcome of a call (group commit; returns once committed).
    pub fn call_finished(&self, channel: &str, tool: &str, call_id: &str, outcome: &str, now_ms: u64) -> Result<()> {
        self.call_finished_with(channel, tool, call_id, outcome, now_ms, Vec::new())
    }

    /// [`Store::call_finished`] and `also` (the call's audit row, read counts) in one transaction.
    pub fn call_finished_with(
        &self,
        channel: &str,
        tool: &str,
        call_id: &str,
        outcome: &str,
        now_ms: u64,
        also: Vec<Write>,
    ) -> Result<()> {
        let finished = Write::CallFinished {
            channel: channel.into(),
            tool: tool.into(),
            call_id: call_id.into(),
            outcome: outcome.into(),
            now_ms,
        };
        self.commit_all(std::iter::once(finished).chain(also).collect())
    }

    /// Drops finished records older than `before_ms` and, beyond `keep`, the oldest ones. Returns rows removed.
    pub fn prune_calls(&self, before_ms: u64, keep: u64) -> Result<usize> {
        let db = self.db();
        // Older than `before_ms`: walked from the oldest record (id order is time order), so the cost is what is
        // removed, not the table.
        let first_young: Option<i64> = db
            .query_row(
                "SELECT id FROM tool_calls WHERE created_ms >= ?1 ORDER BY id LIMIT 1",
                params![before_ms as i64],
                |r| r.get(0),
            )
            .optional()?;
        // A record and its outcome share the id; records still running (no outcome) are kept.
        let cut = |db: &rusqlite::Connection, below: Option<i64>| -> Result<usize> {
            let below = below.unwrap_or(i64::MAX);
            let n = db.execute(
                "DELETE FROM tool_calls WHERE id < ?1 AND id IN (SELECT id FROM tool_outcomes WHERE id < ?1)",
                params![below],
            )?;
            db.execute("DELETE FROM tool_outcomes WHERE id < ?1", params![below])?;
            Ok(n)
        };
        let mut n = cut(&db, first_young)?;
        // Beyond `keep`: the oldest finished ones, by id (records are appended in time order; since migration 7
        // there is no age index for every call to write).
        let oldest_kept: Option<i64> = db
            .query_row(
                "SELECT id FROM tool_outcomes ORDER BY id DESC LIMIT 1 OFFSET ?1",
                params![keep.min(i64::MAX as u64) as i64],
                |r| r.get(0),
            )
            .optional()?;
        if let Some(id) = oldest_kept {
            n += cut(&db, Some(id + 1))?;
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A record round-trips through the packed form, and a settled tap's outcome fits in a fraction of its text
    /// (what lets two records share a 512-byte page).
    #[test]
    fn outcomes_and_digests_are_stored_compactly_and_read_back() {
        let s = Store::open_in_memory().unwrap();
        s.upsert_instance("conn", &[], 1).unwrap();
        s.insert_channel("c1", "conn", 1).unwrap();
        let outcome = json!({"result": {"x": 100, "y": 300, "effect": {"screen_changed": true,
            "foreground_changed": true, "foreground": "com.example.demo/.MainActivity", "keyboard_shown": false,
            "settled": true, "settle_ms": 312}}})
        .to_string();
        let digest = "ab".repeat(32);
        s.call_started("c1", "android_tap", "k1", &digest, 5).unwrap();
        let rec = s.call_record("c1", "android_tap", "k1").unwrap().unwrap();
        assert_eq!(rec.state, CallState::Running);
        assert!(rec.same_args(&digest) && !rec.same_args(&"ac".repeat(32)));
        s.call_finished("c1", "android_tap", "k1", &outcome, 6).unwrap();
        assert_eq!(s.call_record("c1", "android_tap", "k1").unwrap().unwrap().state, CallState::Done(outcome.clone()));
        let stored: (usize, usize) = s
            .db()
            .query_row(
                "SELECT length(o.outcome), length(c.args_sha256) FROM tool_calls c JOIN tool_outcomes o USING (id)",
                [],
                |r| Ok((r.get::<_, i64>(0)? as usize, r.get::<_, i64>(1)? as usize)),
            )
            .unwrap();
        eprintln!("settled tap outcome: {} B as text, {} B stored", outcome.len(), stored.0);
        assert!(stored.0 * 3 <= outcome.len(), "{} of {} bytes", stored.0, outcome.len());
        assert_eq!(stored.1, ARGS_DIGEST_BYTES);
        // Records written before (TEXT outcome, whole hex digest; key_hash filled by migration 9) still read.
        s.db()
            .execute(
                "INSERT INTO tool_calls (id, key_hash, channel_id, tool_id, tool_call_id, args_sha256, created_ms)
                 VALUES (100, ?2, 'c1', 'android_tap', 'old', ?1, 7)",
                params![&digest, key_hash("c1", "android_tap", "old")],
            )
            .unwrap();
        s.db()
            .execute("INSERT INTO tool_outcomes (id, outcome, finished_ms) VALUES (100, '{\"result\":{}}', 8)", [])
            .unwrap();
        let old = s.call_record("c1", "android_tap", "old").unwrap().unwrap();
        assert_eq!(old.state, CallState::Done("{\"result\":{}}".into()));
        assert!(old.same_args(&digest) && !old.same_args(&"ac".repeat(32)));
        // A corrupt packed outcome is an error, not garbage replayed (nor a panic).
        s.db().execute("UPDATE tool_outcomes SET outcome = x'01ffff00' WHERE id = 1", []).unwrap();
        assert!(s.call_record("c1", "android_tap", "k1").is_err());
        s.db().execute("UPDATE tool_outcomes SET outcome = x'07' WHERE id = 1", []).unwrap();
        assert!(s.call_record("c1", "android_tap", "k1").is_err());
    }
}

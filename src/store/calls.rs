//! SQL of the idempotency records (`tool_calls`, migrations 4 and 7). See `crate::idempotency`.
//!
//! Compact on disk (issue 21, a settled tap's bytes): with 512-byte pages a record with its outcome in JSON text
//! (a settled tap's `effect` is ~220 bytes) took a page of its own per call. Since then a record stores the first
//! 128 bits of the arguments' SHA-256 as bytes (it only has to tell a reused id with other arguments — a client's
//! mistake, not an attack) and the outcome deflated against a fixed dictionary of the outcomes' common words
//! (219 → ~55 bytes for a settled tap). Both are BLOBs, while records written before are TEXT: the reader tells
//! them apart by type, so a database keeps working across the upgrade without a migration.

use rusqlite::types::ValueRef;
use rusqlite::{params, OptionalExtension};

use super::group::Write;
use super::{Result, Store};

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

/// Bytes of the arguments' SHA-256 a record keeps.
const ARGS_DIGEST_BYTES: usize = 16;

/// The first byte of a packed outcome: how the rest is encoded. Never change what a shipped version means (records
/// live 24 hours and across upgrades): add a version.
const PACK_V1: u8 = 1;

/// The preset dictionary of [`PACK_V1`] (raw deflate): the words every recorded outcome repeats — the envelope,
/// the input tools' result keys and a settled tap's `effect` (serde_json writes keys sorted). zlib matches best
/// against the dictionary's end, so the most common text comes last. Frozen with `PACK_V1`.
const DICT_V1: &[u8] = br#"{"error":{"code":"tool_invoke_failed","details":null,"message":"device_timeout did not finish within its ms deadline"}}{"result":{"duration_ms":0,"element":{"bounds":[0,0,0,0],"class":"android.widget.","resource_id":"","text":""},"key":"","long_press":false,"method":"","opened":true,"submitted":false,"typed_chars":0,"url":"","woke":true,"effect":{"foreground":"com.android./.MainActivity","foreground_changed":false,"keyboard_shown":false,"screen_changed":false,"settle_ms":0,"settled":true},"x":0,"y":0}}"#;

/// Largest outcome a packed record may inflate to: an outcome is a tool's ack (kilobytes); a record that claims
/// more is corrupt, and reading it must not take the memory.
const MAX_OUTCOME: usize = 1 << 20;

/// `[PACK_V1] + raw deflate(outcome, DICT_V1)` as a BLOB; the TEXT itself should compression fail (it cannot, in
/// memory) — readable either way.
pub(super) fn pack_outcome(json: &str) -> rusqlite::types::Value {
    use rusqlite::types::Value;
    let packed = (|| {
        let mut c = flate2::Compress::new(flate2::Compression::best(), false);
        c.set_dictionary(DICT_V1).ok()?;
        // Deflate never grows text by more than a few bytes per 16 KiB block: one call with room to spare.
        let mut out = Vec::with_capacity(json.len() + json.len() / 8 + 64);
        out.push(PACK_V1);
        match c.compress_vec(json.as_bytes(), &mut out, flate2::FlushCompress::Finish).ok()? {
            flate2::Status::StreamEnd => Some(out),
            _ => None,
        }
    })();
    packed.map_or_else(|| Value::Text(json.to_owned()), Value::Blob)
}

/// The outcome JSON of a stored value: TEXT as written before, or a packed BLOB.
fn unpack_outcome(v: ValueRef<'_>) -> std::result::Result<Option<String>, String> {
    match v {
        ValueRef::Null => Ok(None),
        ValueRef::Text(t) => Ok(Some(String::from_utf8_lossy(t).into_owned())),
        ValueRef::Blob([PACK_V1, rest @ ..]) => {
            let corrupt = |why: &str| format!("a recorded outcome is corrupt: {why}");
            let mut d = flate2::Decompress::new(false);
            d.set_dictionary(DICT_V1).map_err(|e| corrupt(&e.to_string()))?;
            let mut out = Vec::with_capacity(rest.len() * 4);
            loop {
                let consumed = d.total_in() as usize;
                if out.len() == out.capacity() {
                    if out.len() >= MAX_OUTCOME {
                        return Err(corrupt("it inflates beyond 1 MiB"));
                    }
                    out.reserve(out.len().max(256));
                }
                let before = (d.total_in(), d.total_out());
                let input = rest.get(consumed..).unwrap_or_default();
                match d.decompress_vec(input, &mut out, flate2::FlushDecompress::Finish) {
                    Ok(flate2::Status::StreamEnd) => break,
                    Ok(_) if (d.total_in(), d.total_out()) == before && out.len() < out.capacity() => {
                        return Err(corrupt("the stream ends early"))
                    }
                    Ok(_) => {}
                    Err(e) => return Err(corrupt(&e.to_string())),
                }
            }
            String::from_utf8(out).map(Some).map_err(|_| corrupt("it is not UTF-8"))
        }
        ValueRef::Blob(b) => Err(format!("a recorded outcome has an unknown encoding (first byte {:?})", b.first())),
        _ => Err("a recorded outcome is neither text nor bytes".into()),
    }
}

/// The record's index key: the first 64 bits of SHA-256 over the length-prefixed key (channel, tool, call id).
/// The index on it is UNIQUE, so two different keys with the same hash cannot both be recorded: with 100,000
/// records (the cap) the chance that a new call collides with one is 100,000 / 2^64 ≈ 5·10^-15, and the call would
/// then fail with the store's error — never be answered with another call's outcome (lookups compare the key
/// strings as well).
pub(super) fn key_hash(channel: &str, tool: &str, call_id: &str) -> i64 {
    use sha2::Digest;
    let mut h = sha2::Sha256::new();
    for part in [channel, tool, call_id] {
        h.update((part.len() as u64).to_le_bytes());
        h.update(part.as_bytes());
    }
    let d = h.finalize();
    i64::from_le_bytes(d[..8].try_into().expect("SHA-256 has 32 bytes"))
}

/// Hex of a stored arguments digest (TEXT hex before, bytes now).
fn digest_hex(v: ValueRef<'_>) -> String {
    match v {
        ValueRef::Text(t) => String::from_utf8_lossy(t).into_owned(),
        ValueRef::Blob(b) => b.iter().map(|x| format!("{x:02x}")).collect(),
        _ => String::new(),
    }
}

/// What a record keeps of the arguments' SHA-256 (hex): its first [`ARGS_DIGEST_BYTES`] as bytes; anything that
/// is not a SHA-256 in lower-case hex is kept as it is.
pub(super) fn pack_digest(sha256_hex: &str) -> rusqlite::types::Value {
    use rusqlite::types::Value;
    let b = sha256_hex.as_bytes();
    if b.len() != 64 || !b.iter().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f')) {
        return Value::Text(sha256_hex.to_owned());
    }
    let nibble = |c: u8| if c <= b'9' { c - b'0' } else { c - b'a' + 10 };
    Value::Blob((0..ARGS_DIGEST_BYTES).map(|i| nibble(b[2 * i]) << 4 | nibble(b[2 * i + 1])).collect())
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

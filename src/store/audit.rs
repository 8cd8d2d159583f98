//! SQL of the audit log (migrations 5, 6, 10 and 12). The chain itself is defined in `crate::audit`.

use rusqlite::params;

use super::db::{Result, Store};
use super::rows::{hash_hex, row, COLUMNS};

pub use super::rows::AuditRow;

/// What retention removed ([`Store::audit_retention`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Retention {
    /// The newest removed record's seq: every record up to it is gone.
    pub last_seq: i64,
    /// Records removed in all.
    pub pruned: u64,
    /// Of them, records removed while younger than the age limit (by the record cap).
    pub pruned_young: u64,
    /// The newest removed record's time (ms since the epoch; 0 when pruned before this was kept).
    pub last_time_ms: u64,
}

impl Store {
    /// Appends one record through the group commit ([`super::group`]): `hash_of` computes its hash once its
    /// `prev_hash` is set from the record before it (in the same transaction, so concurrent appends cannot fork
    /// the chain). Returns once it is committed.
    pub fn audit_append(&self, rec: AuditRow, hash_of: fn(&AuditRow) -> String) -> Result<()> {
        self.commit(super::group::Write::Audit { rec, hash: hash_of })
    }

    /// The chain head: (seq, hash) of the last record ever appended.
    pub fn audit_head(&self) -> Result<Option<(i64, String)>> {
        use rusqlite::OptionalExtension;
        self.db()
            .query_row("SELECT seq, hash FROM audit_head WHERE id = 1", [], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()
    }

    /// The checkpoint of pruned records: (seq, hash) of the last pruned record, and how many were pruned in all.
    pub fn audit_checkpoint(&self) -> Result<Option<(i64, String, u64)>> {
        use rusqlite::OptionalExtension;
        self.db()
            .query_row("SELECT seq, hash, pruned FROM audit_checkpoint WHERE id = 1", [], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get::<_, i64>(2)? as u64))
            })
            .optional()
    }

    /// What retention removed so far (`None`: nothing yet).
    pub fn audit_retention(&self) -> Result<Option<Retention>> {
        use rusqlite::OptionalExtension;
        self.db()
            .query_row("SELECT seq, pruned, pruned_young, last_time_ms FROM audit_checkpoint WHERE id = 1", [], |r| {
                Ok(Retention {
                    last_seq: r.get(0)?,
                    pruned: r.get::<_, i64>(1)? as u64,
                    pruned_young: r.get::<_, i64>(2)? as u64,
                    last_time_ms: r.get::<_, i64>(3)? as u64,
                })
            })
            .optional()
    }

    /// Retention: removes records older than `before_ms` and all but the newest `keep`, oldest first, and moves
    /// the checkpoint to the last removed record (its seq and hash), in one transaction. Returns how many went.
    pub fn audit_prune(&self, before_ms: u64, keep: u64, now_ms: u64) -> Result<u64> {
        self.audit_prune_counted(before_ms, keep, now_ms).map(|(n, _)| n)
    }

    /// [`Store::audit_prune`], also returning how many of the removed records were not older than `before_ms`
    /// (removed by the `keep` cap: the log fills faster than the age limit empties it).
    pub fn audit_prune_counted(&self, before_ms: u64, keep: u64, now_ms: u64) -> Result<(u64, u64)> {
        use rusqlite::OptionalExtension;
        let mut db = self.db();
        let tx = db.transaction()?;
        let max_seq: Option<i64> = tx.query_row("SELECT MAX(seq) FROM audit", [], |r| r.get(0))?;
        let Some(max_seq) = max_seq else { return Ok((0, 0)) };
        let by_count = max_seq - keep as i64;
        // Records are appended in time order, so the records older than `before_ms` are the ones before the first
        // younger record: found by walking from the oldest (cost ∝ what is pruned) instead of keeping an index on
        // time that every append would have to write (migration 7 dropped it). Should the clock have stepped
        // back, a few old records are kept a little longer, never a recent one pruned.
        let first_young: Option<i64> = tx
            .query_row(
                "SELECT seq FROM audit WHERE time_ms >= ?1 ORDER BY seq LIMIT 1",
                params![before_ms.min(i64::MAX as u64) as i64],
                |r| r.get(0),
            )
            .optional()?;
        let by_age = first_young.map_or(max_seq, |s| s - 1);
        let cut = by_count.max(by_age);
        let last: Option<(i64, String, i64)> = tx
            .query_row(
                "SELECT seq, hash, time_ms FROM audit WHERE seq <= ?1 ORDER BY seq DESC LIMIT 1",
                params![cut],
                |r| Ok((r.get(0)?, hash_hex(r.get_ref(1)?), r.get(2)?)),
            )
            .optional()?;
        let Some((seq, hash, last_time)) = last else { return Ok((0, 0)) };
        let young: i64 = if seq > by_age {
            tx.query_row("SELECT COUNT(*) FROM audit WHERE seq > ?1 AND seq <= ?2", params![by_age, seq], |r| r.get(0))?
        } else {
            0
        };
        let n = tx.execute("DELETE FROM audit WHERE seq <= ?1", params![seq])? as u64;
        tx.execute(
            "INSERT INTO audit_checkpoint (id, seq, hash, pruned, time_ms, last_time_ms, pruned_young)
             VALUES (1, ?1, ?2, ?3, ?4, ?5, ?6)
             ON CONFLICT(id) DO UPDATE SET seq = excluded.seq, hash = excluded.hash,
                                           pruned = audit_checkpoint.pruned + excluded.pruned, time_ms = excluded.time_ms,
                                           last_time_ms = excluded.last_time_ms,
                                           pruned_young = audit_checkpoint.pruned_young + excluded.pruned_young",
            params![seq, hash, n as i64, now_ms as i64, last_time, young],
        )?;
        tx.commit()?;
        Ok((n, young as u64))
    }

    /// (first, last) seq of the records in the database (they are contiguous: only the oldest are ever removed).
    pub fn audit_bounds(&self) -> Result<Option<(i64, i64)>> {
        self.db().query_row("SELECT MIN(seq), MAX(seq) FROM audit", [], |r| {
            Ok(match (r.get::<_, Option<i64>>(0)?, r.get::<_, Option<i64>>(1)?) {
                (Some(a), Some(b)) => Some((a, b)),
                _ => None,
            })
        })
    }

    /// The records `from..=to`, in order.
    pub fn audit_range(&self, from: i64, to: i64) -> Result<Vec<AuditRow>> {
        let db = self.db();
        let mut st = db.prepare(&format!("SELECT {COLUMNS} FROM audit WHERE seq >= ?1 AND seq <= ?2 ORDER BY seq"))?;
        let rows = st.query_map(params![from, to], row)?;
        rows.collect()
    }

    /// Removes the records up to `seq` once they are in the archive, moving the checkpoint to it (its `hash`,
    /// `time_ms`) and counting `archived` (migration 12), in one transaction.
    pub fn audit_archived(&self, seq: i64, hash: &str, time_ms: u64, archived: u64, now_ms: u64) -> Result<()> {
        let mut db = self.db();
        let tx = db.transaction()?;
        let n = tx.execute("DELETE FROM audit WHERE seq <= ?1", params![seq])? as i64;
        tx.execute(
            "INSERT INTO audit_checkpoint (id, seq, hash, pruned, time_ms, last_time_ms, pruned_young, archived)
             VALUES (1, ?1, ?2, ?3, ?4, ?5, 0, ?6)
             ON CONFLICT(id) DO UPDATE SET seq = excluded.seq, hash = excluded.hash,
                                           pruned = audit_checkpoint.pruned + excluded.pruned, time_ms = excluded.time_ms,
                                           last_time_ms = excluded.last_time_ms,
                                           archived = audit_checkpoint.archived + excluded.archived",
            params![seq, hash, n, now_ms as i64, time_ms as i64, archived as i64],
        )?;
        tx.commit()
    }

    /// Records moved to the archive so far (migration 12).
    pub fn audit_archived_count(&self) -> Result<u64> {
        use rusqlite::OptionalExtension;
        Ok(self
            .db()
            .query_row("SELECT archived FROM audit_checkpoint WHERE id = 1", [], |r| r.get::<_, i64>(0))
            .optional()?
            .unwrap_or(0) as u64)
    }

    /// Every record in order (for verification).
    pub fn audit_all(&self) -> Result<Vec<AuditRow>> {
        let db = self.db();
        let mut st = db.prepare(&format!("SELECT {COLUMNS} FROM audit ORDER BY seq"))?;
        let rows = st.query_map([], row)?;
        rows.collect()
    }

    /// The last `n` records, oldest first.
    pub fn audit_tail(&self, n: u64) -> Result<Vec<AuditRow>> {
        let db = self.db();
        let mut st = db.prepare(&format!("SELECT {COLUMNS} FROM audit ORDER BY seq DESC LIMIT ?1"))?;
        let mut rows: Vec<AuditRow> = st.query_map(params![n as i64], row)?.collect::<Result<_>>()?;
        rows.reverse();
        Ok(rows)
    }
}

impl Store {
    /// Up to `limit` records after `seq`, oldest first: the device wall follows the log incrementally by primary
    /// key instead of scanning it per device.
    pub fn audit_after(&self, seq: i64, limit: u64) -> Result<Vec<AuditRow>> {
        let db = self.db();
        let mut st = db.prepare(&format!("SELECT {COLUMNS} FROM audit WHERE seq > ?1 ORDER BY seq LIMIT ?2"))?;
        let rows = st.query_map(params![seq, limit as i64], row)?;
        rows.collect()
    }
}

#[cfg(test)]
impl Store {
    /// Raw SQL for tamper tests.
    pub fn audit_exec_for_tests(&self, sql: &str) {
        self.db().execute_batch(sql).unwrap();
    }
}

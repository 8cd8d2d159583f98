//! SQL of the audit log (migration 5). The chain itself is defined in `crate::audit`.

use rusqlite::params;

use super::{Result, Store};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuditRow {
    pub seq: i64,
    pub time_ms: u64,
    pub connector_id: String,
    pub channel_id: String,
    pub tool_call_id: Option<String>,
    pub tool_id: String,
    pub device: String,
    pub arguments: String,
    pub result: String,
    pub prev_hash: String,
    pub hash: String,
}

const COLUMNS: &str =
    "seq, time_ms, connector_id, channel_id, tool_call_id, tool_id, device, arguments, result, prev_hash, hash";

fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<AuditRow> {
    Ok(AuditRow {
        seq: r.get(0)?,
        time_ms: r.get::<_, i64>(1)? as u64,
        connector_id: r.get(2)?,
        channel_id: r.get(3)?,
        tool_call_id: r.get(4)?,
        tool_id: r.get(5)?,
        device: r.get(6)?,
        arguments: r.get(7)?,
        result: r.get(8)?,
        prev_hash: r.get(9)?,
        hash: r.get(10)?,
    })
}

impl Store {
    /// Appends one record; `hash_of(prev_hash)` computes its hash from the previous record's (read in the same
    /// transaction, so concurrent appends cannot fork the chain).
    pub fn audit_append(&self, mut rec: AuditRow, hash_of: impl FnOnce(&AuditRow) -> String) -> Result<()> {
        let mut db = self.db();
        let tx = db.transaction()?;
        let prev: Option<String> =
            tx.query_row("SELECT hash FROM audit ORDER BY seq DESC LIMIT 1", [], |r| r.get(0)).ok();
        rec.prev_hash = prev.unwrap_or_else(|| "0".repeat(64));
        rec.hash = hash_of(&rec);
        tx.execute(
            "INSERT INTO audit (time_ms, connector_id, channel_id, tool_call_id, tool_id, device, arguments, result,
                                prev_hash, hash) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            params![
                rec.time_ms as i64,
                rec.connector_id,
                rec.channel_id,
                rec.tool_call_id,
                rec.tool_id,
                rec.device,
                rec.arguments,
                rec.result,
                rec.prev_hash,
                rec.hash
            ],
        )?;
        tx.commit()
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

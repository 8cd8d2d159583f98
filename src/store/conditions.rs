//! SQL of lease conditions (`lease_conditions`, migration 11): per phone, each setting a lease changed with its
//! value before (NULL = it was unset). `device::conditions` writes through a ledger `run.rs` wires to these.

use rusqlite::params;

use super::db::{Result, Store};

/// One recorded setting: (namespace, name, old value).
pub type ConditionRow = (String, String, Option<String>);

impl Store {
    /// Records old values; a setting already recorded for the phone keeps the value first recorded (the phone's
    /// own, not one of ours from a lease whose restore has not happened yet).
    pub fn record_conditions(&self, server: &str, serial: &str, rows: &[ConditionRow], now_ms: u64) -> Result<()> {
        let mut db = self.db();
        let tx = db.transaction()?;
        for (ns, name, old) in rows {
            tx.execute(
                "INSERT OR IGNORE INTO lease_conditions (server, serial, namespace, name, old_value, set_ms) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![server, serial, ns, name, old, i64::try_from(now_ms).unwrap_or(i64::MAX)],
            )?;
        }
        tx.commit()
    }

    pub fn recorded_conditions(&self, server: &str, serial: &str) -> Result<Vec<ConditionRow>> {
        let db = self.db();
        let mut st = db.prepare(
            "SELECT namespace, name, old_value FROM lease_conditions WHERE server = ?1 AND serial = ?2 \
             ORDER BY namespace, name",
        )?;
        let rows = st.query_map(params![server, serial], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
        rows.collect()
    }

    pub fn forget_conditions(&self, server: &str, serial: &str) -> Result<()> {
        self.db().execute("DELETE FROM lease_conditions WHERE server = ?1 AND serial = ?2", params![server, serial])?;
        Ok(())
    }

    pub fn forget_condition(&self, server: &str, serial: &str, namespace: &str, name: &str) -> Result<()> {
        self.db().execute(
            "DELETE FROM lease_conditions WHERE server = ?1 AND serial = ?2 AND namespace = ?3 AND name = ?4",
            params![server, serial, namespace, name],
        )?;
        Ok(())
    }

    /// Every phone (server, serial) with recorded conditions.
    pub fn phones_with_conditions(&self) -> Result<Vec<(String, String)>> {
        let db = self.db();
        let mut st = db.prepare("SELECT DISTINCT server, serial FROM lease_conditions ORDER BY server, serial")?;
        let rows = st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
        rows.collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_recorded_value_wins_until_forgotten() {
        let s = Store::open_in_memory().unwrap();
        let row = |v: Option<&str>| ("global".to_owned(), "x".to_owned(), v.map(str::to_owned));
        s.record_conditions("srv", "A", &[row(Some("1"))], 1).unwrap();
        s.record_conditions("srv", "A", &[row(Some("0")), ("system".into(), "y".into(), None)], 2).unwrap();
        assert_eq!(s.recorded_conditions("srv", "A").unwrap(), [row(Some("1")), ("system".into(), "y".into(), None)]);
        assert_eq!(s.phones_with_conditions().unwrap(), [("srv".to_owned(), "A".to_owned())]);
        s.forget_conditions("srv", "A").unwrap();
        assert!(s.recorded_conditions("srv", "A").unwrap().is_empty());
        assert!(s.phones_with_conditions().unwrap().is_empty());
    }
}

//! SQL of phones' recent disconnect times (`disconnects`, migration 8). The health book (`device::health`) keeps
//! them in memory; these rows only carry the last hour across a restart. Every insert prunes that phone's rows
//! past the window and beyond a count, so the table stays a few KB however a phone flaps.

use rusqlite::params;

use super::db::{Result, Store};

fn to_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

impl Store {
    /// Records a disconnect of the phone at `at_ms`, then forgets its disconnects before `keep_from_ms` and all
    /// but its newest `max_per_phone`.
    pub fn add_disconnect(
        &self,
        server: &str,
        serial: &str,
        at_ms: u64,
        keep_from_ms: u64,
        max_per_phone: usize,
    ) -> Result<()> {
        let mut db = self.db();
        let tx = db.transaction()?;
        tx.execute(
            "INSERT INTO disconnects (server, serial, at_ms) VALUES (?1, ?2, ?3)",
            params![server, serial, to_i64(at_ms)],
        )?;
        tx.execute(
            "DELETE FROM disconnects WHERE server = ?1 AND serial = ?2 AND at_ms < ?3",
            params![server, serial, to_i64(keep_from_ms)],
        )?;
        tx.execute(
            "DELETE FROM disconnects WHERE rowid IN (SELECT rowid FROM disconnects WHERE server = ?1 AND serial = ?2 \
             ORDER BY at_ms DESC LIMIT -1 OFFSET ?3)",
            params![server, serial, to_i64(max_per_phone as u64)],
        )?;
        tx.commit()
    }

    /// Every phone's disconnects since `since_ms` (oldest first, at most `max_rows`), after deleting older ones.
    pub fn recent_disconnects(&self, since_ms: u64, max_rows: usize) -> Result<Vec<(String, String, u64)>> {
        let db = self.db();
        db.execute("DELETE FROM disconnects WHERE at_ms < ?1", params![to_i64(since_ms)])?;
        let mut st = db.prepare("SELECT server, serial, at_ms FROM disconnects ORDER BY at_ms LIMIT ?1")?;
        let rows = st.query_map(params![to_i64(max_rows as u64)], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?, u64::try_from(r.get::<_, i64>(2)?).unwrap_or(0)))
        })?;
        rows.collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn disconnects_are_pruned_by_age_and_capped_per_phone() {
        let s = Store::open_in_memory().unwrap();
        for t in 0..10u64 {
            s.add_disconnect("srv", "A", 1_000 + t, 0, 4).unwrap();
        }
        s.add_disconnect("srv", "B", 500, 0, 4).unwrap();
        let rows = s.recent_disconnects(0, 100).unwrap();
        let a: Vec<u64> = rows.iter().filter(|r| r.1 == "A").map(|r| r.2).collect();
        assert_eq!(a, [1_006, 1_007, 1_008, 1_009], "the newest 4 of A");
        // An insert prunes that phone's old rows; a read prunes everyone's.
        s.add_disconnect("srv", "A", 2_000, 1_008, 4).unwrap();
        let rows = s.recent_disconnects(600, 100).unwrap();
        assert_eq!(
            rows,
            [("srv".into(), "A".into(), 1_008), ("srv".into(), "A".into(), 1_009), ("srv".into(), "A".into(), 2_000)]
        );
    }
}

//! SQL of the transfer-plane file cache (`files`, migration 3). The cache logic (disk layout, limits, eviction,
//! sweeping) lives in `crate::files`; this module only reads and writes rows.

use rusqlite::{params, OptionalExtension, Row};

use super::db::{Result, Store};

/// One cached file. `path` is relative to the cache directory (so a moved data dir keeps working); `token` is the
/// download secret and must never be logged.
#[derive(Clone, PartialEq, Eq)]
pub struct FileRow {
    pub file_ref: String,
    pub token: String,
    pub channel_id: String,
    pub filename: String,
    pub mime: String,
    pub byte_size: u64,
    pub sha256: String,
    pub created_ms: u64,
    pub expires_ms: u64,
    pub consumed_ms: Option<u64>,
    pub path: String,
}

/// Debug output leaves the token out: rows end up in test failure messages and, potentially, logs.
impl std::fmt::Debug for FileRow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileRow")
            .field("file_ref", &self.file_ref)
            .field("token", &"<redacted>")
            .field("channel_id", &self.channel_id)
            .field("filename", &self.filename)
            .field("mime", &self.mime)
            .field("byte_size", &self.byte_size)
            .field("created_ms", &self.created_ms)
            .field("expires_ms", &self.expires_ms)
            .field("consumed_ms", &self.consumed_ms)
            .finish()
    }
}

const COLUMNS: &str =
    "file_ref, token, channel_id, filename, mime, byte_size, sha256, created_ms, expires_ms, consumed_ms, path";

fn row(r: &Row<'_>) -> rusqlite::Result<FileRow> {
    Ok(FileRow {
        file_ref: r.get(0)?,
        token: r.get(1)?,
        channel_id: r.get(2)?,
        filename: r.get(3)?,
        mime: r.get(4)?,
        byte_size: r.get::<_, i64>(5)? as u64,
        sha256: r.get(6)?,
        created_ms: r.get::<_, i64>(7)? as u64,
        expires_ms: r.get::<_, i64>(8)? as u64,
        consumed_ms: r.get::<_, Option<i64>>(9)?.map(|v| v as u64),
        path: r.get(10)?,
    })
}

impl Store {
    pub fn insert_file(&self, f: &FileRow) -> Result<()> {
        self.db().execute(
            &format!("INSERT INTO files ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)"),
            params![
                f.file_ref,
                f.token,
                f.channel_id,
                f.filename,
                f.mime,
                f.byte_size as i64,
                f.sha256,
                f.created_ms as i64,
                f.expires_ms as i64,
                f.consumed_ms.map(|v| v as i64),
                f.path,
            ],
        )?;
        Ok(())
    }

    pub fn file(&self, file_ref: &str) -> Result<Option<FileRow>> {
        self.db()
            .query_row(&format!("SELECT {COLUMNS} FROM files WHERE file_ref = ?1"), params![file_ref], row)
            .optional()
    }

    /// Marks a file's download as done. `false` when it was already consumed (or is gone): exactly one caller wins.
    pub fn consume_file(&self, file_ref: &str, now_ms: u64) -> Result<bool> {
        let n = self.db().execute(
            "UPDATE files SET consumed_ms = ?2 WHERE file_ref = ?1 AND consumed_ms IS NULL",
            params![file_ref, now_ms as i64],
        )?;
        Ok(n == 1)
    }

    pub fn delete_file(&self, file_ref: &str) -> Result<()> {
        self.db().execute("DELETE FROM files WHERE file_ref = ?1", params![file_ref])?;
        Ok(())
    }

    /// Drops every row (the cache moved); returns how many there were.
    pub fn delete_all_files(&self) -> Result<usize> {
        self.db().execute("DELETE FROM files", [])
    }

    /// Every row, oldest first (the eviction order).
    pub fn files_oldest_first(&self) -> Result<Vec<FileRow>> {
        let db = self.db();
        let mut st = db.prepare(&format!("SELECT {COLUMNS} FROM files ORDER BY created_ms, rowid"))?;
        let rows = st.query_map([], row)?;
        rows.collect()
    }

    /// Rows whose TTL has passed at `now_ms`.
    pub fn expired_files(&self, now_ms: u64) -> Result<Vec<FileRow>> {
        let db = self.db();
        let mut st = db.prepare(&format!("SELECT {COLUMNS} FROM files WHERE expires_ms <= ?1"))?;
        let rows = st.query_map(params![now_ms as i64], row)?;
        rows.collect()
    }

    /// (number of files, total bytes) in the index.
    pub fn file_totals(&self) -> Result<(u64, u64)> {
        self.db().query_row("SELECT COUNT(*), COALESCE(SUM(byte_size), 0) FROM files", [], |r| {
            Ok((r.get::<_, i64>(0)? as u64, r.get::<_, i64>(1)? as u64))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(file_ref: &str, created: u64) -> FileRow {
        FileRow {
            file_ref: file_ref.into(),
            token: format!("tok-{file_ref}"),
            channel_id: "cch_adb_1".into(),
            filename: "a.png".into(),
            mime: "image/png".into(),
            byte_size: 10,
            sha256: "00".into(),
            created_ms: created,
            expires_ms: created + 100,
            consumed_ms: None,
            path: file_ref.into(),
        }
    }

    #[test]
    fn insert_consume_expire_delete() {
        let s = Store::open_in_memory().unwrap();
        s.insert_file(&sample("f2", 20)).unwrap();
        s.insert_file(&sample("f1", 10)).unwrap();
        assert_eq!(s.file_totals().unwrap(), (2, 20));
        let order: Vec<String> = s.files_oldest_first().unwrap().into_iter().map(|r| r.file_ref).collect();
        assert_eq!(order, ["f1", "f2"]);
        assert!(s.consume_file("f1", 50).unwrap());
        assert!(!s.consume_file("f1", 51).unwrap(), "a second consumer loses");
        assert_eq!(s.file("f1").unwrap().unwrap().consumed_ms, Some(50));
        let expired: Vec<String> = s.expired_files(115).unwrap().into_iter().map(|r| r.file_ref).collect();
        assert_eq!(expired, ["f1"]);
        s.delete_file("f1").unwrap();
        assert!(s.file("f1").unwrap().is_none());
        assert!(s.insert_file(&FileRow { file_ref: "f3".into(), ..sample("f2", 1) }).is_err(), "tokens are unique");
        assert!(!format!("{:?}", s.file("f2").unwrap().unwrap()).contains("tok-"), "Debug hides the token");
    }
}

//! The database: opening it (WAL, 512-byte pages, owner-only files), the versioned migrations, and the SQL of
//! connector instances, channels, bindings and auth sessions. The other tables' SQL is in the files beside it.

use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};

use rusqlite::{params, Connection, OptionalExtension};

use super::codec::key_hash;
use super::group::{self, Activity, Write};
use super::private;

/// Ordered migrations; index + 1 is the schema version they produce. Never edit a shipped entry: append.
const MIGRATIONS: &[&str] = &[
    // 1: connector instances (the §8.2 lease), channels, device bindings, auth sessions.
    "CREATE TABLE instances (
        connector_id     TEXT PRIMARY KEY,
        profiles         TEXT NOT NULL,
        created_ms       INTEGER NOT NULL,
        lease_expires_ms INTEGER
    );
    CREATE TABLE channels (
        channel_id   TEXT PRIMARY KEY,
        connector_id TEXT NOT NULL REFERENCES instances(connector_id) ON DELETE CASCADE,
        created_ms   INTEGER NOT NULL
    );
    CREATE INDEX channels_by_instance ON channels(connector_id);
    CREATE TABLE bindings (
        channel_id TEXT PRIMARY KEY REFERENCES channels(channel_id) ON DELETE CASCADE,
        server     TEXT NOT NULL,
        serial     TEXT NOT NULL,
        bound_ms   INTEGER NOT NULL
    );
    CREATE UNIQUE INDEX bindings_device ON bindings(server, serial);
    CREATE TABLE auth_sessions (
        auth_session_id TEXT PRIMARY KEY,
        channel_id      TEXT NOT NULL REFERENCES channels(channel_id) ON DELETE CASCADE,
        flow_id         TEXT NOT NULL,
        status          TEXT NOT NULL,
        message         TEXT NOT NULL,
        created_ms      INTEGER NOT NULL,
        expires_ms      INTEGER NOT NULL
    );",
    // 2: an auth session waiting for a device to be authorised remembers which device it waits for.
    "ALTER TABLE auth_sessions ADD COLUMN device_server TEXT;
    ALTER TABLE auth_sessions ADD COLUMN device_serial TEXT;",
    // 3: the transfer-plane file cache index (files live under DATA_DIR/files/, named by `path`).
    "CREATE TABLE files (
        file_ref    TEXT PRIMARY KEY,
        token       TEXT NOT NULL UNIQUE,
        channel_id  TEXT NOT NULL,
        filename    TEXT NOT NULL,
        mime        TEXT NOT NULL,
        byte_size   INTEGER NOT NULL,
        sha256      TEXT NOT NULL,
        created_ms  INTEGER NOT NULL,
        expires_ms  INTEGER NOT NULL,
        consumed_ms INTEGER,
        path        TEXT NOT NULL
    );
    CREATE INDEX files_by_age ON files(created_ms);
    CREATE INDEX files_by_expiry ON files(expires_ms);",
    // 4: idempotency records of side-effecting tool calls (per channel + tool + tool_call_id).
    "CREATE TABLE tool_calls (
        channel_id   TEXT NOT NULL REFERENCES channels(channel_id) ON DELETE CASCADE,
        tool_id      TEXT NOT NULL,
        tool_call_id TEXT NOT NULL,
        args_sha256  TEXT NOT NULL,
        state        TEXT NOT NULL,
        outcome      TEXT,
        created_ms   INTEGER NOT NULL,
        finished_ms  INTEGER,
        PRIMARY KEY (channel_id, tool_id, tool_call_id)
    );
    CREATE INDEX tool_calls_by_age ON tool_calls(created_ms);",
    // 5: the audit log: every device action, chained by SHA-256 so that an edited or deleted row is detectable.
    "CREATE TABLE audit (
        seq          INTEGER PRIMARY KEY AUTOINCREMENT,
        time_ms      INTEGER NOT NULL,
        connector_id TEXT NOT NULL,
        channel_id   TEXT NOT NULL,
        tool_call_id TEXT,
        tool_id      TEXT NOT NULL,
        device       TEXT NOT NULL,
        arguments    TEXT NOT NULL,
        result       TEXT NOT NULL,
        prev_hash    TEXT NOT NULL,
        hash         TEXT NOT NULL
    );",
    // 6: the audit chain's head (last appended record) and the checkpoint of pruned records, so that removing the
    // newest records, all of them, or old ones outside retention is told apart.
    "CREATE TABLE audit_head (
        id   INTEGER PRIMARY KEY CHECK (id = 1),
        seq  INTEGER NOT NULL,
        hash TEXT NOT NULL
    );
    INSERT INTO audit_head (id, seq, hash) SELECT 1, seq, hash FROM audit ORDER BY seq DESC LIMIT 1;
    CREATE TABLE audit_checkpoint (
        id       INTEGER PRIMARY KEY CHECK (id = 1),
        seq      INTEGER NOT NULL,
        hash     TEXT NOT NULL,
        pruned   INTEGER NOT NULL,
        time_ms  INTEGER NOT NULL
    );
    CREATE INDEX audit_by_time ON audit(time_ms);",
    // 7: fewer pages written per call (the SD card's lifetime, BENCHMARKS.md "footprint-writes"). Idempotency
    // records are appended in time order (rowid), so a burst of calls on several phones shares the table's tail
    // page and finishing a call rewrites only that page; the one index (the key: written once per call, and what
    // the channel's ON DELETE CASCADE uses) replaces the text primary key plus an age index; the audit log loses its time index (retention walks from the oldest
    // record instead) and AUTOINCREMENT, whose `sqlite_sequence` row was one more page per commit: the next seq
    // is the chain head's + 1 (the head survives pruning, so a seq is never reused either).
    "CREATE TABLE tool_calls_v7 (
        id           INTEGER PRIMARY KEY,
        channel_id   TEXT NOT NULL REFERENCES channels(channel_id) ON DELETE CASCADE,
        tool_id      TEXT NOT NULL,
        tool_call_id TEXT NOT NULL,
        args_sha256  TEXT NOT NULL,
        state        TEXT NOT NULL,
        outcome      TEXT,
        created_ms   INTEGER NOT NULL,
        finished_ms  INTEGER
    );
    INSERT INTO tool_calls_v7 (channel_id, tool_id, tool_call_id, args_sha256, state, outcome, created_ms, finished_ms)
        SELECT channel_id, tool_id, tool_call_id, args_sha256, state, outcome, created_ms, finished_ms FROM tool_calls
        ORDER BY created_ms;
    CREATE UNIQUE INDEX tool_calls_by_key ON tool_calls_v7(channel_id, tool_call_id, tool_id);
    DROP TABLE tool_calls;
    ALTER TABLE tool_calls_v7 RENAME TO tool_calls;
    CREATE TABLE audit_v7 (
        seq          INTEGER PRIMARY KEY,
        time_ms      INTEGER NOT NULL,
        connector_id TEXT NOT NULL,
        channel_id   TEXT NOT NULL,
        tool_call_id TEXT,
        tool_id      TEXT NOT NULL,
        device       TEXT NOT NULL,
        arguments    TEXT NOT NULL,
        result       TEXT NOT NULL,
        prev_hash    TEXT NOT NULL,
        hash         TEXT NOT NULL
    );
    INSERT INTO audit_v7 SELECT seq, time_ms, connector_id, channel_id, tool_call_id, tool_id, device, arguments,
                                result, prev_hash, hash FROM audit;
    DROP TABLE audit;
    ALTER TABLE audit_v7 RENAME TO audit;
    DELETE FROM sqlite_sequence WHERE name = 'audit';",
    // 8: phones' disconnect times of the last hour (`health.rs`), so "disconnects in the last hour" survives a
    // restart; pruned by age and capped per phone on every insert.
    "CREATE TABLE disconnects (
        server TEXT NOT NULL,
        serial TEXT NOT NULL,
        at_ms  INTEGER NOT NULL
    );
    CREATE INDEX disconnects_by_phone ON disconnects(server, serial, at_ms);",
    // 9: a settled tap's record in fewer pages (issue 21, second round; tests/footprint.rs prints where a burst's
    // pages go). (a) The key index held the three key strings in channel order, so every call's start inserted
    // ~70 bytes into the middle of a B-tree of half-full leaves (2.3 pages written per call in a 5-phone burst):
    // it is replaced by a 64-bit hash of the key (`key_hash`, filled for the records already there by
    // `migrate_fixup`, then indexed there), ~12 bytes an entry. (b) The outcome moves to its own table, appended
    // when the call finishes: a record is never rewritten, where filling in the outcome used to grow a row that
    // other phones' records had packed in, and split its page (3.9 pages per call). `state` goes: a call is done
    // when its outcome exists. (c) The reference to `channels` goes: its ON DELETE CASCADE needed an index on
    // `channel_id`, and a closed channel's records can never match a call again (the key includes the channel);
    // retention removes them within 24 hours like any other.
    "CREATE TABLE tool_calls_v9 (
        id           INTEGER PRIMARY KEY,
        key_hash     INTEGER,
        channel_id   TEXT NOT NULL,
        tool_id      TEXT NOT NULL,
        tool_call_id TEXT NOT NULL,
        args_sha256  TEXT NOT NULL,
        created_ms   INTEGER NOT NULL
    );
    CREATE TABLE tool_outcomes (
        id          INTEGER PRIMARY KEY,
        outcome     TEXT NOT NULL,
        finished_ms INTEGER NOT NULL
    );
    INSERT INTO tool_calls_v9 (id, channel_id, tool_id, tool_call_id, args_sha256, created_ms)
        SELECT id, channel_id, tool_id, tool_call_id, args_sha256, created_ms FROM tool_calls ORDER BY id;
    INSERT INTO tool_outcomes (id, outcome, finished_ms)
        SELECT id, outcome, COALESCE(finished_ms, created_ms) FROM tool_calls
        WHERE state = 'done' AND outcome IS NOT NULL ORDER BY id;
    DROP TABLE tool_calls;
    ALTER TABLE tool_calls_v9 RENAME TO tool_calls;",
    // 10: what retention removed, for `audit verify` and `/metrics` (issue 36: a flood pushed a real action out
    // unnoticed): the time of the newest pruned record, and how many pruned records were younger than the age
    // limit (removed by the record cap).
    "ALTER TABLE audit_checkpoint ADD COLUMN last_time_ms INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE audit_checkpoint ADD COLUMN pruned_young INTEGER NOT NULL DEFAULT 0;",
    // 11: the settings a lease changed on a phone, as they were before (`conditions.rs`; NULL = unset), written
    // before the phone changes and deleted once the phone confirmed their restore (issue 34 item 4).
    "CREATE TABLE lease_conditions (
        server    TEXT NOT NULL,
        serial    TEXT NOT NULL,
        namespace TEXT NOT NULL,
        name      TEXT NOT NULL,
        old_value TEXT,
        set_ms    INTEGER NOT NULL,
        PRIMARY KEY (server, serial, namespace, name)
    );",
    // 12: how many records the record cap moved to the audit archive instead of deleting them (issue 48: the cap
    // never removes records younger than the retention period; `audit verify` reports them as archived).
    "ALTER TABLE audit_checkpoint ADD COLUMN archived INTEGER NOT NULL DEFAULT 0;",
];

/// What a migration needs beyond SQL, in its transaction, right after its SQL (`version` = the one it produces).
fn migrate_fixup(tx: &rusqlite::Transaction<'_>, version: usize) -> Result<()> {
    if version == 9 {
        let keys: Vec<(i64, String, String, String)> = tx
            .prepare("SELECT id, channel_id, tool_id, tool_call_id FROM tool_calls")?
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?
            .collect::<Result<_>>()?;
        for (id, channel, tool, call_id) in keys {
            tx.execute(
                "UPDATE tool_calls SET key_hash = ?1 WHERE id = ?2",
                params![key_hash(&channel, &tool, &call_id), id],
            )?;
        }
        tx.execute_batch("CREATE UNIQUE INDEX tool_calls_by_hash ON tool_calls(key_hash);")?;
    }
    Ok(())
}

/// Page size of a new database. Every commit appends each page it changed to the WAL, whole, and a tap changes a
/// few rows of a few hundred bytes: with SQLite's default 4 KiB pages that was ~33 KiB per tap. Measured with a
/// 5-phone tap burst (tests/footprint.rs, same code): 1 KiB pages ≈ 5 KiB per tap, 512-byte pages ≈ 3.4 KiB (rows
/// still fit a page: the largest, an audit row, is ~300 bytes). An existing database keeps its page size (changing
/// it takes a VACUUM; docs/storage.md).
const PAGE_SIZE: i64 = 512;

/// WAL pages between automatic checkpoints (see `init`).
const WAL_AUTOCHECKPOINT: i64 = 4000;

#[derive(Clone)]
pub struct Store {
    conn: Arc<Mutex<Connection>>,
    /// The group-commit writer of per-call writes (`group.rs`).
    group: Arc<group::Group>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InstanceRow {
    pub connector_id: String,
    pub profiles: Vec<String>,
    pub lease_expires_ms: Option<u64>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChannelRow {
    pub channel_id: String,
    pub connector_id: String,
    pub binding: Option<(String, String)>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuthRow {
    pub auth_session_id: String,
    pub channel_id: String,
    pub flow_id: String,
    pub status: String,
    pub message: String,
    pub expires_ms: u64,
    /// The device a `pending` session waits for (server, serial).
    pub device: Option<(String, String)>,
}

pub type Result<T> = std::result::Result<T, rusqlite::Error>;

impl Store {
    /// Opens (creating if needed) `DIR/connector.db` and brings the schema up to date.
    pub fn open(dir: &Path) -> Result<Store> {
        // Owner-only whatever the umask: SQLite gives the -wal and -shm files the database file's mode.
        let db = dir.join("connector.db");
        if !db.exists() {
            let io = |e: std::io::Error| rusqlite::Error::ToSqlConversionFailure(Box::new(e));
            private::file(&db).map_err(io)?;
        }
        // An existing state (perhaps of an older version) is tightened; best effort, so that a read-side command
        // run by another user (`audit verify`) still works.
        for f in ["connector.db", "connector.db-wal", "connector.db-shm"] {
            if let Err(e) = private::tighten(&dir.join(f), 0o600) {
                tracing::warn!(file = f, error = %e, "cannot make the state file owner-only");
            }
        }
        Self::init(Connection::open(db)?)
    }

    /// Opens the state of `dir` only if it already exists (read-side commands must not create a database).
    pub fn open_existing(dir: &Path) -> Option<Store> {
        dir.join("connector.db").exists().then(|| Self::open(dir).ok()).flatten()
    }

    /// Opens `DIR/connector.db` strictly read-only, for commands that only inspect (`doctor`, `devices`, `audit`):
    /// no migration, no journal-mode change, and no file is created — a root `doctor` run before the service's
    /// first start must not leave a root-owned database behind that the service user then cannot write.
    ///
    /// A read-only SQLite connection to a WAL database still creates `-wal` and `-shm` when they are missing —
    /// owned by whoever runs the command. Without them there is nothing uncommitted to read, so the file is then
    /// opened `immutable` (no side files, no locks); while the service runs they exist and are shared as usual.
    pub fn open_read_only(dir: &Path) -> Result<Store> {
        use rusqlite::OpenFlags;
        let path = dir.join("connector.db");
        let wal = dir.join("connector.db-wal");
        let immutable = !wal.exists();
        let mut uri = String::from("file:");
        for b in path.to_string_lossy().bytes() {
            match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => uri.push(b as char),
                _ => uri.push_str(&format!("%{b:02X}")),
            }
        }
        uri.push_str(if immutable { "?mode=ro&immutable=1" } else { "?mode=ro" });
        let conn = Connection::open_with_flags(
            uri,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX | OpenFlags::SQLITE_OPEN_URI,
        )?;
        conn.busy_timeout(std::time::Duration::from_secs(2))?;
        Ok(Store { conn: Arc::new(Mutex::new(conn)), group: Arc::default() })
    }

    /// Proves the database accepts writes now: SQLite silently opens a file it may not write read-only, and then
    /// only the first write fails ("attempt to write a readonly database"). Creates and drops a scratch table in
    /// one committed transaction, so the file really is written (WAL frame, schema cookie) and left unchanged.
    pub fn probe_write(&self) -> Result<()> {
        let db = self.db();
        let tx = db.unchecked_transaction()?;
        tx.execute_batch("CREATE TABLE write_probe (x INTEGER); DROP TABLE write_probe;")?;
        tx.commit()
    }

    /// Takes and releases the write lock without writing: cheap enough for every `/health`, and fails when the
    /// connection is read-only or another process holds the database.
    pub fn probe_write_lock(&self) -> Result<()> {
        let db = self.db();
        db.execute_batch("BEGIN IMMEDIATE; ROLLBACK;")
    }

    pub fn open_in_memory() -> Result<Store> {
        Self::init(Connection::open_in_memory()?)
    }

    fn init(conn: Connection) -> Result<Store> {
        // Only takes effect on a database not written yet (before WAL mode is set, which writes the header).
        conn.pragma_update(None, "page_size", PAGE_SIZE)?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        // Checkpoints copy every page changed since the last one into the database file and fsync both files:
        // with 512-byte pages SQLite's default (1000 pages) would checkpoint every 0.5 MB of WAL. 4000 pages
        // (2 MB) rewrite a hot page (a table's tail, the audit head) four times less often (BENCHMARKS.md).
        conn.pragma_update(None, "wal_autocheckpoint", WAL_AUTOCHECKPOINT)?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        let version = conn.pragma_query_value(None, "user_version", |r| r.get::<_, i64>(0))? as usize;
        if version > MIGRATIONS.len() {
            return Err(rusqlite::Error::InvalidParameterName(format!(
                "database schema version {version} is newer than this binary understands ({}); upgrade the binary",
                MIGRATIONS.len()
            )));
        }
        for (i, sql) in MIGRATIONS.iter().enumerate().skip(version) {
            let tx = conn.unchecked_transaction()?;
            tx.execute_batch(sql)?;
            migrate_fixup(&tx, i + 1)?;
            tx.pragma_update(None, "user_version", (i + 1) as i64)?;
            tx.commit()?;
        }
        Ok(Store { conn: Arc::new(Mutex::new(conn)), group: Arc::default() })
    }

    /// Marks a tool call as running until the guard is dropped.
    pub fn call_activity(&self) -> Activity {
        self.group.activity()
    }

    /// Queues `write` for the next group commit and waits until it is committed (blocking: call it from a
    /// blocking thread). The error of a write that failed is its own: a failed batch is retried write by write.
    pub fn commit(&self, write: Write) -> Result<()> {
        self.commit_all(vec![write])
    }

    /// [`Store::commit`] of several writes that belong together: all in the same transaction.
    pub fn commit_all(&self, writes: Vec<Write>) -> Result<()> {
        self.group.commit_all(&self.conn, writes)
    }

    pub(super) fn db(&self) -> MutexGuard<'_, Connection> {
        // A panic while holding the lock cannot leave SQLite half-written (statements are atomic), so poisoning
        // carries no information here.
        self.conn.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn schema_version(&self) -> Result<usize> {
        self.db().pragma_query_value(None, "user_version", |r| r.get::<_, i64>(0)).map(|v| v as usize)
    }

    // ---- instances -------------------------------------------------------------------------------------------

    pub fn upsert_instance(&self, connector_id: &str, profiles: &[String], now_ms: u64) -> Result<()> {
        let profiles = serde_json::to_string(profiles).expect("strings serialise");
        self.db().execute(
            "INSERT INTO instances (connector_id, profiles, created_ms, lease_expires_ms) VALUES (?1, ?2, ?3, NULL)
             ON CONFLICT(connector_id) DO UPDATE SET profiles = excluded.profiles, lease_expires_ms = NULL",
            params![connector_id, profiles, now_ms as i64],
        )?;
        Ok(())
    }

    pub fn set_lease(&self, connector_id: &str, expires_ms: Option<u64>) -> Result<()> {
        self.db().execute(
            "UPDATE instances SET lease_expires_ms = ?2 WHERE connector_id = ?1",
            params![connector_id, expires_ms.map(|v| v as i64)],
        )?;
        Ok(())
    }

    pub fn delete_instance(&self, connector_id: &str) -> Result<()> {
        self.db().execute("DELETE FROM instances WHERE connector_id = ?1", params![connector_id])?;
        Ok(())
    }

    pub fn instances(&self) -> Result<Vec<InstanceRow>> {
        let db = self.db();
        let mut st =
            db.prepare("SELECT connector_id, profiles, lease_expires_ms FROM instances ORDER BY created_ms")?;
        let rows = st.query_map([], |r| {
            let profiles: String = r.get(1)?;
            Ok(InstanceRow {
                connector_id: r.get(0)?,
                profiles: serde_json::from_str(&profiles).unwrap_or_default(),
                lease_expires_ms: r.get::<_, Option<i64>>(2)?.map(|v| v as u64),
            })
        })?;
        rows.collect()
    }

    // ---- channels and bindings -------------------------------------------------------------------------------

    pub fn insert_channel(&self, channel_id: &str, connector_id: &str, now_ms: u64) -> Result<()> {
        self.db().execute(
            "INSERT INTO channels (channel_id, connector_id, created_ms) VALUES (?1, ?2, ?3)",
            params![channel_id, connector_id, now_ms as i64],
        )?;
        Ok(())
    }

    pub fn delete_channel(&self, channel_id: &str) -> Result<()> {
        self.db().execute("DELETE FROM channels WHERE channel_id = ?1", params![channel_id])?;
        Ok(())
    }

    pub fn channels(&self) -> Result<Vec<ChannelRow>> {
        let db = self.db();
        let mut st = db.prepare(
            "SELECT c.channel_id, c.connector_id, b.server, b.serial FROM channels c
             LEFT JOIN bindings b ON b.channel_id = c.channel_id ORDER BY c.created_ms",
        )?;
        let rows = st.query_map([], |r| {
            let server: Option<String> = r.get(2)?;
            let serial: Option<String> = r.get(3)?;
            Ok(ChannelRow { channel_id: r.get(0)?, connector_id: r.get(1)?, binding: server.zip(serial) })
        })?;
        rows.collect()
    }

    pub fn set_binding(&self, channel_id: &str, binding: Option<(&str, &str)>, now_ms: u64) -> Result<()> {
        let db = self.db();
        match binding {
            Some((server, serial)) => db.execute(
                "INSERT INTO bindings (channel_id, server, serial, bound_ms) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT(channel_id) DO UPDATE SET server = excluded.server, serial = excluded.serial,
                 bound_ms = excluded.bound_ms",
                params![channel_id, server, serial, now_ms as i64],
            )?,
            None => db.execute("DELETE FROM bindings WHERE channel_id = ?1", params![channel_id])?,
        };
        Ok(())
    }

    /// When the channel's current binding was made (Unix ms), for the operator's device wall.
    pub fn bound_since(&self, channel_id: &str) -> Result<Option<u64>> {
        let db = self.db();
        let r = db.query_row("SELECT bound_ms FROM bindings WHERE channel_id = ?1", params![channel_id], |r| {
            r.get::<_, i64>(0)
        });
        match r {
            Ok(ms) => Ok(Some(ms as u64)),
            Err(rusqlite::Error::QueryReturnedNoRows) => Ok(None),
            Err(e) => Err(e),
        }
    }

    // ---- auth sessions ---------------------------------------------------------------------------------------

    pub fn put_auth_session(&self, row: &AuthRow, now_ms: u64) -> Result<()> {
        self.db().execute(
            "INSERT INTO auth_sessions (auth_session_id, channel_id, flow_id, status, message, created_ms, expires_ms,
                                        device_server, device_serial)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
             ON CONFLICT(auth_session_id) DO UPDATE SET status = excluded.status, message = excluded.message",
            params![
                row.auth_session_id,
                row.channel_id,
                row.flow_id,
                row.status,
                row.message,
                now_ms as i64,
                row.expires_ms as i64,
                row.device.as_ref().map(|d| d.0.as_str()),
                row.device.as_ref().map(|d| d.1.as_str()),
            ],
        )?;
        Ok(())
    }

    pub fn auth_session(&self, id: &str) -> Result<Option<AuthRow>> {
        self.db()
            .query_row(
                "SELECT auth_session_id, channel_id, flow_id, status, message, expires_ms, device_server, device_serial
                 FROM auth_sessions WHERE auth_session_id = ?1",
                params![id],
                |r| {
                    Ok(AuthRow {
                        auth_session_id: r.get(0)?,
                        channel_id: r.get(1)?,
                        flow_id: r.get(2)?,
                        status: r.get(3)?,
                        message: r.get(4)?,
                        expires_ms: r.get::<_, i64>(5)? as u64,
                        device: r.get::<_, Option<String>>(6)?.zip(r.get::<_, Option<String>>(7)?),
                    })
                },
            )
            .optional()
    }

    /// Removes auth sessions that expired before `before_ms` (finished ones stay queryable until then).
    pub fn prune_auth_sessions(&self, before_ms: u64) -> Result<usize> {
        self.db().execute("DELETE FROM auth_sessions WHERE expires_ms < ?1", params![before_ms as i64])
    }

    pub fn delete_auth_sessions_of(&self, channel_id: &str) -> Result<usize> {
        self.db().execute("DELETE FROM auth_sessions WHERE channel_id = ?1", params![channel_id])
    }

    pub fn count(&self, table: &str) -> Result<u64> {
        // Table names cannot be bound as parameters; only our own constants reach here.
        assert!(["instances", "channels", "bindings", "auth_sessions"].contains(&table));
        self.db().query_row(&format!("SELECT COUNT(*) FROM {table}"), [], |r| r.get::<_, i64>(0)).map(|n| n as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{audit, calls};

    #[test]
    fn migrations_apply_once_and_data_survives_reopen() {
        let dir = tempfile::tempdir().unwrap();
        {
            let s = Store::open(dir.path()).unwrap();
            assert_eq!(s.schema_version().unwrap(), MIGRATIONS.len());
            s.upsert_instance("conn_1", &["xagent.device.v1".into()], 1).unwrap();
            s.insert_channel("cch_adb_1", "conn_1", 2).unwrap();
            s.set_binding("cch_adb_1", Some(("127.0.0.1:5037", "emu-1")), 3).unwrap();
            s.set_lease("conn_1", Some(99)).unwrap();
        }
        let s = Store::open(dir.path()).unwrap();
        assert_eq!(s.schema_version().unwrap(), MIGRATIONS.len());
        let inst = s.instances().unwrap();
        assert_eq!(
            inst,
            vec![InstanceRow {
                connector_id: "conn_1".into(),
                profiles: vec!["xagent.device.v1".into()],
                lease_expires_ms: Some(99)
            }]
        );
        let ch = s.channels().unwrap();
        assert_eq!(ch[0].binding, Some(("127.0.0.1:5037".into(), "emu-1".into())));
    }

    #[test]
    fn deleting_an_instance_cascades_to_channels_bindings_and_auth_sessions() {
        let s = Store::open_in_memory().unwrap();
        s.upsert_instance("conn_1", &[], 1).unwrap();
        s.insert_channel("c1", "conn_1", 1).unwrap();
        s.set_binding("c1", Some(("srv", "ser")), 1).unwrap();
        let row = AuthRow {
            auth_session_id: "a1".into(),
            channel_id: "c1".into(),
            flow_id: "adb_device".into(),
            status: "authenticated".into(),
            message: String::new(),
            expires_ms: 5,
            device: None,
        };
        s.put_auth_session(&row, 1).unwrap();
        s.delete_instance("conn_1").unwrap();
        for t in ["instances", "channels", "bindings", "auth_sessions"] {
            assert_eq!(s.count(t).unwrap(), 0, "{t}");
        }
    }

    #[test]
    fn expired_auth_sessions_are_pruned() {
        let s = Store::open_in_memory().unwrap();
        s.upsert_instance("conn_1", &[], 1).unwrap();
        s.insert_channel("c1", "conn_1", 1).unwrap();
        for (id, expires) in [("old", 100), ("new", 10_000)] {
            let row = AuthRow {
                auth_session_id: id.into(),
                channel_id: "c1".into(),
                flow_id: "adb_device".into(),
                status: "authenticated".into(),
                message: String::new(),
                expires_ms: expires,
                device: None,
            };
            s.put_auth_session(&row, 1).unwrap();
        }
        assert_eq!(s.prune_auth_sessions(5_000).unwrap(), 1);
        assert!(s.auth_session("old").unwrap().is_none());
        assert!(s.auth_session("new").unwrap().is_some());
    }

    #[test]
    fn one_device_cannot_be_bound_twice() {
        let s = Store::open_in_memory().unwrap();
        s.upsert_instance("conn_1", &[], 1).unwrap();
        s.insert_channel("c1", "conn_1", 1).unwrap();
        s.insert_channel("c2", "conn_1", 1).unwrap();
        s.set_binding("c1", Some(("srv", "ser")), 1).unwrap();
        assert!(s.set_binding("c2", Some(("srv", "ser")), 1).is_err());
    }

    /// Migration 7 rebuilds `tool_calls` and `audit`: records, the chain and its head come through, a replay still
    /// finds its record, and the next audit record continues the seqs and the chain.
    #[test]
    fn migration_7_keeps_records_and_the_chain() {
        let dir = tempfile::tempdir().unwrap();
        {
            let c = Connection::open(dir.path().join("connector.db")).unwrap();
            for (i, sql) in MIGRATIONS.iter().enumerate().take(6) {
                c.execute_batch(sql).unwrap();
                c.pragma_update(None, "user_version", (i + 1) as i64).unwrap();
            }
            c.execute_batch(
                "INSERT INTO instances VALUES ('conn', '[]', 1, NULL);
                 INSERT INTO channels VALUES ('c1', 'conn', 1);
                 INSERT INTO tool_calls VALUES ('c1', 'android_tap', 'k1', 'h', 'done', '{\"result\":{}}', 5, 6);
                 INSERT INTO tool_calls VALUES ('c1', 'android_tap', 'k2', 'h', 'running', NULL, 7, NULL);",
            )
            .unwrap();
        }
        // Two records through the old schema's code path (AUTOINCREMENT seqs 1, 2), then migrate.
        let old = Connection::open(dir.path().join("connector.db")).unwrap();
        let mut prev = "0".repeat(64);
        for seq in 1..=2 {
            let mut r = audit::AuditRow {
                seq,
                time_ms: 10,
                connector_id: "conn".into(),
                channel_id: "c1".into(),
                tool_call_id: Some(format!("k{seq}")),
                tool_id: "android_tap".into(),
                device: "d".into(),
                arguments: "{}".into(),
                result: "ok".into(),
                prev_hash: prev.clone(),
                hash: String::new(),
            };
            r.hash = format!("{:064x}", seq);
            old.execute(
                "INSERT INTO audit (time_ms, connector_id, channel_id, tool_call_id, tool_id, device, arguments, result,
                 prev_hash, hash) VALUES (10, 'conn', 'c1', ?1, 'android_tap', 'd', '{}', 'ok', ?2, ?3)",
                params![r.tool_call_id, r.prev_hash, r.hash],
            )
            .unwrap();
            old.execute(
                "INSERT INTO audit_head (id, seq, hash) VALUES (1, ?1, ?2)
                 ON CONFLICT(id) DO UPDATE SET seq = excluded.seq, hash = excluded.hash",
                params![seq, r.hash],
            )
            .unwrap();
            prev = r.hash;
        }
        drop(old);
        let s = Store::open(dir.path()).unwrap();
        assert_eq!(s.schema_version().unwrap(), MIGRATIONS.len());
        let k1 = s.call_record("c1", "android_tap", "k1").unwrap().unwrap();
        assert_eq!(k1.state, calls::CallState::Done("{\"result\":{}}".into()));
        assert_eq!(s.call_record("c1", "android_tap", "k2").unwrap().unwrap().state, calls::CallState::Running);
        assert!(s.call_started("c1", "android_tap", "k1", "h", 9).is_err(), "the key stays unique");
        let rows = s.audit_all().unwrap();
        assert_eq!(rows.iter().map(|r| r.seq).collect::<Vec<_>>(), vec![1, 2]);
        let rec = audit::AuditRow { seq: 0, prev_hash: String::new(), hash: String::new(), ..rows[1].clone() };
        s.audit_append(rec, |r| format!("{:0>64}", r.prev_hash.len())).unwrap();
        let rows = s.audit_all().unwrap();
        assert_eq!(rows[2].seq, 3, "seqs continue from the head");
        assert_eq!(rows[2].prev_hash, rows[1].hash, "the chain continues");
        assert_eq!(s.audit_head().unwrap().unwrap(), (3, rows[2].hash.clone()));
    }

    #[test]
    fn a_newer_schema_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let c = Connection::open(dir.path().join("connector.db")).unwrap();
        c.pragma_update(None, "user_version", 999).unwrap();
        drop(c);
        let e = Store::open(dir.path()).err().unwrap().to_string();
        assert!(e.contains("newer than this binary"), "{e}");
    }
}

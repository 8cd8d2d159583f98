//! The transfer plane's local file cache: screenshots, pulled device files, large logs and uploads live here between
//! the tool call (or upload) that produced them and the download (or tool) that uses them.
//!
//! Layout: one file per entry in the cache folder ([`Location`]: in memory by default, so that screenshots never
//! wear an SD card), named by its `file_ref`; the index (owner channel, download token, size, SHA-256, expiry) is
//! the `files` table (`crate::store::files`) of the store the cache is given — an in-memory one of its own for a
//! memory cache, the state database for one on disk. Writes go to a `.staging-*` file first and are renamed into
//! place only when complete, so a half-written file never has an index row.
//!
//! Policies (documented for the device profile's "finite TTL, capacity and cleanup period"):
//! - TTL: every entry expires `ttl` after it was created (default 10 min); expired entries are invisible at once
//!   and deleted by the sweeper, which runs every [`SWEEP_INTERVAL`] until shutdown.
//! - Capacity: at most `max_bytes` and `max_files`; inserting beyond either evicts fairly: every channel holding
//!   files has an equal share, a channel over its share loses its own oldest first, a channel within its share
//!   never loses a file to another one ([`FileCache::make_room`]).
//! - Restart: a memory cache starts empty (its index was in memory); on disk, entries survive a restart until they
//!   expire. At start-up, rows whose file is missing, files without a row (including staging leftovers of a crash)
//!   and expired entries are removed.
//! - Downloads are one-time: see `crate::server::transfer`. A consumed entry stays usable by tools (e.g.
//!   `android_file_push`) until it expires; only its download URL is dead.

pub mod names;

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use tokio::io::AsyncWriteExt;
use tokio::sync::watch;

use crate::protocol::errors::{ErrorCode, ProtoError};
use crate::protocol::{ids, now_ms};
use crate::store::files::FileRow;
use crate::store::private;
use crate::store::Store;

pub use names::{file_type, guess_mime, sanitize_filename};

/// How often expired entries are deleted from disk and index.
pub const SWEEP_INTERVAL: Duration = Duration::from_secs(30);

/// Prefix of staging files; anything with it at start-up is a leftover of an interrupted write.
const STAGING_PREFIX: &str = ".staging-";

/// Where the cache lives and whether its index is kept in the state database.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Location {
    pub dir: PathBuf,
    /// On tmpfs/ramfs: nothing of the cache reaches persistent storage; its index lives in memory too, and a
    /// restart starts empty. Otherwise (an operator's `--cache-dir` on disk, or no tmpfs found) files and index
    /// survive restarts as before, at the price of SD card writes per screenshot.
    pub volatile: bool,
}

impl Location {
    /// `--cache-dir` when given; otherwise a folder of this data dir under the first of `$RUNTIME_DIRECTORY`
    /// (systemd's `RuntimeDirectory=`, under /run), `$XDG_RUNTIME_DIR`, `/dev/shm` that exists; else
    /// `DATA_DIR/files` (on disk, with a warning at start).
    pub fn resolve(cache_dir: Option<&Path>, data_dir: &Path) -> Location {
        if let Some(dir) = cache_dir {
            return Location { dir: dir.to_owned(), volatile: is_tmpfs(dir) };
        }
        let runtime = std::env::var_os("RUNTIME_DIRECTORY")
            // systemd joins several RuntimeDirectory= entries with ':'; ours is the first.
            .map(|v| PathBuf::from(v.to_string_lossy().split(':').next().unwrap_or_default()))
            .into_iter()
            .chain(std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from))
            .chain(std::iter::once(PathBuf::from("/dev/shm")))
            .filter(|p| p.is_absolute() && p.is_dir())
            .find(|p| is_tmpfs(p));
        match runtime {
            // One folder per data dir: two connectors (or test servers) on one host never share a cache.
            Some(base) => {
                Location { dir: base.join(format!("xagent-adb-cache-{}", dir_tag(data_dir))), volatile: true }
            }
            None => Location { dir: data_dir.join("files"), volatile: false },
        }
    }
}

/// 16 hex digits of the SHA-256 of the data dir's absolute path.
fn dir_tag(data_dir: &Path) -> String {
    let abs = std::fs::canonicalize(data_dir).unwrap_or_else(|_| data_dir.to_owned());
    hex(&Sha256::digest(abs.as_os_str().as_encoded_bytes())[..8])
}

/// Whether `dir` (or its nearest existing ancestor) is on a memory file system (tmpfs, ramfs).
pub fn is_tmpfs(dir: &Path) -> bool {
    const TMPFS_MAGIC: i64 = 0x0102_1994;
    const RAMFS_MAGIC: i64 = 0x8584_58f6;
    fs_stat(dir).is_some_and(|(kind, _)| kind == TMPFS_MAGIC || kind == RAMFS_MAGIC)
}

/// Size in bytes of the file system holding `dir` (or its nearest existing ancestor).
pub fn fs_size(dir: &Path) -> Option<u64> {
    fs_stat(dir).map(|(_, size)| size)
}

#[cfg(target_os = "linux")]
fn fs_stat(dir: &Path) -> Option<(i64, u64)> {
    use std::os::unix::ffi::OsStrExt;
    let existing = dir.ancestors().find(|p| p.exists())?;
    let c = std::ffi::CString::new(existing.as_os_str().as_bytes()).ok()?;
    let mut st = std::mem::MaybeUninit::<libc::statfs>::zeroed();
    // SAFETY: `c` is a valid NUL-terminated path and `st` is a writable statfs buffer.
    if unsafe { libc::statfs(c.as_ptr(), st.as_mut_ptr()) } != 0 {
        return None;
    }
    // SAFETY: statfs returned 0, so it filled the buffer.
    let st = unsafe { st.assume_init() };
    #[allow(clippy::unnecessary_cast, clippy::useless_conversion)]
    Some((st.f_type as i64, (st.f_blocks as u64).saturating_mul(st.f_bsize as u64)))
}

#[cfg(not(target_os = "linux"))]
fn fs_stat(_dir: &Path) -> Option<(i64, u64)> {
    None
}

/// Cache limits (see the module docs).
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub ttl: Duration,
    pub max_bytes: u64,
    pub max_files: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { ttl: Duration::from_secs(600), max_bytes: 512 << 20, max_files: 2000 }
    }
}

/// Why a file could not be stored.
#[derive(Debug)]
pub enum CacheError {
    /// The content exceeded the writer's limit (or the whole cache's capacity).
    TooLarge {
        limit: u64,
    },
    /// Files being written right now (uploads, pulls) already stage as many bytes as the cache holds.
    StagingFull {
        limit: u64,
    },
    /// The cache is full and the file's channel already holds its share of it (the other channels are within
    /// theirs): its own files must be downloaded or expire first.
    ShareFull {
        files: u64,
        bytes: u64,
    },
    Io(std::io::Error),
    Db(rusqlite::Error),
}

impl std::fmt::Display for CacheError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CacheError::TooLarge { limit } => write!(f, "the file is larger than the limit of {limit} bytes"),
            CacheError::StagingFull { limit } => {
                write!(f, "files being written already stage {limit} bytes (the cache capacity); retry later")
            }
            CacheError::ShareFull { files, bytes } => write!(
                f,
                "the file cache is full and this channel holds its share of it ({files} files, {bytes} bytes)"
            ),
            CacheError::Io(e) => write!(f, "file cache I/O failed: {e}"),
            CacheError::Db(e) => write!(f, "file cache index failed: {e}"),
        }
    }
}

impl From<std::io::Error> for CacheError {
    fn from(e: std::io::Error) -> Self {
        CacheError::Io(e)
    }
}

impl From<rusqlite::Error> for CacheError {
    fn from(e: rusqlite::Error) -> Self {
        CacheError::Db(e)
    }
}

impl CacheError {
    /// For tool results: a limit is the caller's business (`invalid_arguments`), anything else is ours.
    pub fn into_proto(self, what: &str) -> ProtoError {
        match self {
            CacheError::TooLarge { limit } => ProtoError::new(
                ErrorCode::InvalidArguments,
                format!("{what} is larger than the limit of {} MiB", limit.div_ceil(1 << 20)),
            ),
            CacheError::StagingFull { .. } => ProtoError::new(
                ErrorCode::RateLimited,
                "the file cache is busy storing other files (staging is at its capacity); retry shortly",
            ),
            CacheError::ShareFull { files, .. } => ProtoError::new(
                ErrorCode::RateLimited,
                format!(
                    "the file cache is full and this channel holds its share ({files} files): download or wait for \
                     its earlier files to expire, then retry"
                ),
            ),
            other => {
                tracing::error!(error = %other, "file cache failure");
                ProtoError::new(ErrorCode::Internal, "the connector's file cache failed; see the connector log")
            }
        }
    }
}

/// Metadata of a file being stored.
#[derive(Clone, Debug)]
pub struct NewFile {
    /// The channel the entry is bound to (§5.1: "file_ref must be bound to connector_channel_id").
    pub channel_id: String,
    pub filename: String,
    pub mime: String,
}

pub struct FileCache {
    store: Store,
    dir: PathBuf,
    limits: Limits,
    /// Serialises eviction + insert so two commits cannot both see room for one more file.
    commit: Mutex<()>,
    /// file_refs with a download in progress: one at a time per entry (see `crate::server::transfer`).
    downloads: Mutex<HashSet<String>>,
    /// Bytes in staging files now, across writers; reserved chunk by chunk against `limits.max_bytes` before the
    /// chunk is written, so concurrent uploads cannot fill the disk beyond the cache's capacity.
    staged: Arc<std::sync::atomic::AtomicU64>,
}

/// Accumulates size and SHA-256 of content as it streams past, enforces a size cap, and deletes the staging file
/// unless it was committed (dropped on any error path, including a client breaking off an upload).
struct Staging {
    path: PathBuf,
    hasher: Sha256,
    size: u64,
    cap: u64,
    overflow: bool,
    committed: bool,
    /// The cache-wide staging count this writer's bytes are reserved in, and its bound.
    staged: Arc<std::sync::atomic::AtomicU64>,
    staged_max: u64,
    staging_full: bool,
}

impl Staging {
    fn absorb(&mut self, chunk: &[u8]) -> std::io::Result<()> {
        use std::sync::atomic::Ordering;
        if self.size + chunk.len() as u64 > self.cap {
            self.overflow = true;
            return Err(std::io::Error::new(std::io::ErrorKind::FileTooLarge, "size limit exceeded"));
        }
        let n = chunk.len() as u64;
        if self.staged.fetch_add(n, Ordering::SeqCst) + n > self.staged_max {
            self.staged.fetch_sub(n, Ordering::SeqCst);
            self.staging_full = true;
            return Err(std::io::Error::new(std::io::ErrorKind::StorageFull, "cache staging is full"));
        }
        self.size += chunk.len() as u64;
        self.hasher.update(chunk);
        Ok(())
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        self.staged.fetch_sub(self.size, std::sync::atomic::Ordering::SeqCst);
        if !self.committed {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// A blocking writer into the cache (for `adb_client` transfers and encoders on blocking threads).
pub struct SyncWriter {
    file: std::io::BufWriter<std::fs::File>,
    st: Staging,
}

impl SyncWriter {
    /// True once a write was refused because it would pass the cap.
    pub fn overflowed(&self) -> bool {
        self.st.overflow
    }
    pub fn len(&self) -> u64 {
        self.st.size
    }
    pub fn is_empty(&self) -> bool {
        self.st.size == 0
    }
    pub fn cap(&self) -> u64 {
        self.st.cap
    }
    /// The cache error behind a failed write (size cap, staging full, or I/O).
    pub fn error_of(&self, e: std::io::Error) -> CacheError {
        if self.st.staging_full {
            CacheError::StagingFull { limit: self.st.staged_max }
        } else if self.st.overflow {
            CacheError::TooLarge { limit: self.st.cap }
        } else {
            e.into()
        }
    }
}

impl Write for SyncWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.st.absorb(buf)?;
        self.file.write_all(buf)?;
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}

/// An async writer into the cache (uploads).
pub struct AsyncWriter {
    file: tokio::io::BufWriter<tokio::fs::File>,
    st: Staging,
}

impl AsyncWriter {
    /// Appends a chunk; `Err(TooLarge)` as soon as the cap would be passed (nothing of the chunk is written).
    pub async fn write(&mut self, chunk: &[u8]) -> Result<(), CacheError> {
        if self.st.absorb(chunk).is_err() {
            if self.st.staging_full {
                return Err(CacheError::StagingFull { limit: self.st.staged_max });
            }
            return Err(CacheError::TooLarge { limit: self.st.cap });
        }
        self.file.write_all(chunk).await?;
        Ok(())
    }
}

impl FileCache {
    /// Opens the cache in `dir` (created if missing) and reconciles it with the index: see the module docs.
    pub fn open(store: Store, dir: &Path, limits: Limits) -> Result<Arc<FileCache>, CacheError> {
        private::dir(dir)?;
        let cache = FileCache {
            store,
            dir: dir.to_owned(),
            limits,
            commit: Mutex::new(()),
            downloads: Mutex::new(HashSet::new()),
            staged: Arc::default(),
        };
        cache.reconcile()?;
        Ok(Arc::new(cache))
    }

    /// An older version's on-disk cache (`DATA_DIR/files` and its rows in the state database), once the cache
    /// moved to a memory file system: its download URLs die with the restart anyway. Does nothing (writes
    /// nothing) when there is no such folder.
    pub fn retire(store: &Store, dir: &Path) -> Result<(), CacheError> {
        if !dir.is_dir() {
            return Ok(());
        }
        let rows = store.delete_all_files()?;
        std::fs::remove_dir_all(dir)?;
        tracing::info!(dir = %dir.display(), rows, "removed the on-disk file cache of an older version");
        Ok(())
    }

    /// (files, bytes) held now, for metrics.
    pub fn totals(&self) -> (u64, u64) {
        self.store.file_totals().unwrap_or((0, 0))
    }

    pub fn limits(&self) -> Limits {
        self.limits
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn path_of(&self, row: &FileRow) -> PathBuf {
        self.dir.join(&row.path)
    }

    /// Start-up clean-up: expired entries, rows without a file, files without a row.
    fn reconcile(&self) -> Result<(), CacheError> {
        let now = now_ms();
        let mut keep: HashMap<String, u64> = HashMap::new();
        let (mut dropped_rows, mut orphans) = (0usize, 0usize);
        for row in self.store.files_oldest_first()? {
            let on_disk = std::fs::metadata(self.path_of(&row)).ok().filter(|m| m.is_file()).map(|m| m.len());
            if row.expires_ms <= now || on_disk != Some(row.byte_size) || !names::is_plain_name(&row.path) {
                self.store.delete_file(&row.file_ref)?;
                dropped_rows += 1;
            } else {
                // Files cached by an older version may be world-readable.
                private::tighten(&self.path_of(&row), 0o600)?;
                keep.insert(row.path.clone(), row.byte_size);
            }
        }
        for entry in std::fs::read_dir(&self.dir)? {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if keep.contains_key(&name) {
                continue;
            }
            let path = entry.path();
            let r =
                if entry.file_type()?.is_dir() { std::fs::remove_dir_all(&path) } else { std::fs::remove_file(&path) };
            if let Err(e) = r {
                tracing::warn!(path = %path.display(), error = %e, "cannot remove an orphaned cache file");
            }
            orphans += 1;
        }
        tracing::info!(
            files = keep.len(),
            bytes = keep.values().sum::<u64>(),
            dropped_rows,
            orphans,
            dir = %self.dir.display(),
            "file cache ready"
        );
        Ok(())
    }

    fn staging(&self, cap: u64) -> Result<(std::fs::File, Staging), CacheError> {
        let path = self.dir.join(format!("{STAGING_PREFIX}{}", ids::random_hex(8)));
        let file = private::new_file_options().open(&path)?;
        let st = Staging {
            path,
            hasher: Sha256::new(),
            size: 0,
            cap,
            overflow: false,
            committed: false,
            staged: self.staged.clone(),
            staged_max: self.limits.max_bytes,
            staging_full: false,
        };
        Ok((file, st))
    }

    /// A blocking writer that accepts at most `cap` bytes.
    pub fn writer(&self, cap: u64) -> Result<SyncWriter, CacheError> {
        let (file, st) = self.staging(cap.min(self.limits.max_bytes))?;
        Ok(SyncWriter { file: std::io::BufWriter::with_capacity(256 * 1024, file), st })
    }

    /// An async writer that accepts at most `cap` bytes.
    pub async fn async_writer(&self, cap: u64) -> Result<AsyncWriter, CacheError> {
        let (file, st) = self.staging(cap.min(self.limits.max_bytes))?;
        let file = tokio::io::BufWriter::with_capacity(256 * 1024, tokio::fs::File::from_std(file));
        Ok(AsyncWriter { file, st })
    }

    /// Finishes a blocking write and indexes the file.
    pub fn commit_sync(&self, mut w: SyncWriter, meta: NewFile) -> Result<FileRow, CacheError> {
        w.file.flush()?;
        self.finish(w.st, meta)
    }

    /// Finishes an async write and indexes the file.
    pub async fn commit(&self, mut w: AsyncWriter, meta: NewFile) -> Result<FileRow, CacheError> {
        // No fsync: this is a cache. After a power loss a short file no longer matches its row's size and the
        // start-up reconciliation drops both.
        w.file.flush().await?;
        self.finish(w.st, meta)
    }

    /// Stores `bytes` in one go (small, already-in-memory content: encoded screenshots, log text).
    pub fn store_bytes(&self, bytes: &[u8], meta: NewFile) -> Result<FileRow, CacheError> {
        let mut w = self.writer(u64::MAX)?;
        w.write_all(bytes).map_err(|e| w.error_of(e))?;
        self.commit_sync(w, meta)
    }

    /// Renames the staging file into place, makes room (oldest first) and inserts the row. Runs on the caller's
    /// thread: a rename, a few unlinks and three small SQLite statements.
    fn finish(&self, mut st: Staging, meta: NewFile) -> Result<FileRow, CacheError> {
        if st.size > self.limits.max_bytes {
            return Err(CacheError::TooLarge { limit: self.limits.max_bytes });
        }
        let now = now_ms();
        let file_ref = format!("file_{}", ids::random_hex(12));
        let row = FileRow {
            token: ids::random_hex(24),
            channel_id: meta.channel_id,
            filename: sanitize_filename(&meta.filename, "file"),
            mime: meta.mime,
            byte_size: st.size,
            sha256: hex(&std::mem::take(&mut st.hasher).finalize()),
            created_ms: now,
            expires_ms: now + self.limits.ttl.as_millis() as u64,
            consumed_ms: None,
            path: file_ref.clone(),
            file_ref,
        };
        let _guard = self.commit.lock().unwrap_or_else(|e| e.into_inner());
        self.make_room(row.byte_size, &row.channel_id)?;
        let target = self.path_of(&row);
        std::fs::rename(&st.path, &target)?;
        st.committed = true;
        if let Err(e) = self.store.insert_file(&row) {
            let _ = std::fs::remove_file(&target);
            return Err(e.into());
        }
        tracing::info!(file_ref = %row.file_ref, channel = %row.channel_id, bytes = row.byte_size, mime = %row.mime,
                       "file cached");
        Ok(row)
    }

    /// Evicts entries until one more file of `incoming` bytes for `channel` fits both limits, fairly (issue 36:
    /// oldest-first across channels let one channel's 2,001 one-byte uploads evict another agent's screenshot
    /// before it was downloaded). Each channel holding files (and `channel`) has an equal share of both limits.
    /// A channel over its share — counting the incoming file — evicts its own oldest first; otherwise the oldest
    /// file of a channel that is over its share goes. A channel within its share never loses a file to another
    /// one; when nothing else can go, the incoming file is refused (`ShareFull`).
    fn make_room(&self, incoming: u64, channel: &str) -> Result<(), CacheError> {
        let (max_files, max_bytes) = (self.limits.max_files, self.limits.max_bytes);
        let rows = self.store.files_oldest_first()?;
        let mut count = rows.len() as u64;
        let mut bytes: u64 = rows.iter().map(|r| r.byte_size).sum();
        let fits = |count: u64, bytes: u64| count < max_files && bytes + incoming <= max_bytes;
        if fits(count, bytes) {
            return Ok(());
        }
        let mut usage: HashMap<&str, (u64, u64)> = HashMap::new();
        for r in &rows {
            let u = usage.entry(r.channel_id.as_str()).or_default();
            *u = (u.0 + 1, u.1 + r.byte_size);
        }
        let own = usage.entry(channel).or_default();
        *own = (own.0 + 1, own.1 + incoming);
        let n = usage.len() as u64;
        let (share_files, share_bytes) = ((max_files / n).max(1), max_bytes / n);
        let over = |u: (u64, u64)| u.0 > share_files || u.1 > share_bytes;
        let mut gone = vec![false; rows.len()];
        while !fits(count, bytes) {
            let pick = |mine: bool| {
                rows.iter().enumerate().position(|(i, r)| {
                    !gone[i] && (r.channel_id == channel) == mine && over(usage[r.channel_id.as_str()])
                })
            };
            let victim = if over(usage[channel]) { pick(true) } else { None }.or_else(|| pick(false));
            let Some(i) = victim else {
                return Err(CacheError::ShareFull { files: share_files, bytes: share_bytes });
            };
            let row = &rows[i];
            self.remove(row)?;
            gone[i] = true;
            count -= 1;
            bytes -= row.byte_size;
            let u = usage.get_mut(row.channel_id.as_str()).expect("counted above");
            *u = (u.0 - 1, u.1 - row.byte_size);
            tracing::info!(file_ref = %row.file_ref, channel = %row.channel_id, bytes = row.byte_size,
                           "file cache full: evicted the oldest file of a channel over its share");
        }
        Ok(())
    }

    /// Deletes an entry: index row first (so it is never served again), then the file. An open download keeps
    /// reading the unlinked file until it finishes.
    fn remove(&self, row: &FileRow) -> Result<(), CacheError> {
        self.store.delete_file(&row.file_ref)?;
        if let Err(e) = std::fs::remove_file(self.path_of(row)) {
            if e.kind() != std::io::ErrorKind::NotFound {
                tracing::warn!(file_ref = %row.file_ref, error = %e, "cannot delete a cached file");
            }
        }
        Ok(())
    }

    /// A live (present, not expired) entry, consumed or not.
    pub fn get(&self, file_ref: &str) -> Option<FileRow> {
        if !names::is_file_ref(file_ref) {
            return None;
        }
        let row = match self.store.file(file_ref) {
            Ok(r) => r?,
            Err(e) => {
                tracing::error!(error = %e, "file cache index read failed");
                return None;
            }
        };
        (row.expires_ms > now_ms()).then_some(row)
    }

    /// The entry's file on disk.
    pub fn path(&self, row: &FileRow) -> PathBuf {
        self.path_of(row)
    }

    /// A live entry that a tool of `channel_id` may use: `invalid_arguments` when unknown or expired,
    /// `permission_denied` when it belongs to another channel.
    pub fn for_channel(&self, file_ref: &str, channel_id: &str) -> Result<FileRow, ProtoError> {
        let row = self.get(file_ref).ok_or_else(|| {
            ProtoError::new(
                ErrorCode::InvalidArguments,
                format!("file_ref {file_ref:?} is unknown or expired (files live {} s)", self.limits.ttl.as_secs()),
            )
        })?;
        if row.channel_id != channel_id {
            return Err(ProtoError::new(
                ErrorCode::PermissionDenied,
                format!("file_ref {file_ref} belongs to another channel"),
            ));
        }
        Ok(row)
    }

    /// Claims the right to stream `file_ref`: `Busy` while another download of it is running, `Gone` once it was
    /// downloaded (or expired). One compare-and-set under the claims mutex: the in-memory claim and the store's
    /// consumed flag are checked together, and [`FileCache::consume`] writes the flag before the claim is released,
    /// so exactly one request ever streams the whole file.
    pub fn begin_download(self: &Arc<Self>, file_ref: &str) -> Result<DownloadClaim, ClaimRefused> {
        let mut set = self.downloads.lock().unwrap_or_else(|e| e.into_inner());
        if set.contains(file_ref) {
            return Err(ClaimRefused::Busy);
        }
        if self.get(file_ref).is_none_or(|row| row.consumed_ms.is_some()) {
            return Err(ClaimRefused::Gone);
        }
        set.insert(file_ref.to_owned());
        Ok(DownloadClaim { cache: self.clone(), file_ref: file_ref.to_owned() })
    }

    /// Marks an entry's download as complete; its URL answers 404 from now on.
    pub fn consume(&self, file_ref: &str) {
        match self.store.consume_file(file_ref, now_ms()) {
            Ok(true) => tracing::info!(%file_ref, "file downloaded; its download URL is now spent"),
            Ok(false) => {}
            Err(e) => tracing::error!(%file_ref, error = %e, "cannot mark a download as done"),
        }
    }

    /// Deletes every expired entry; returns how many.
    pub fn sweep(&self) -> usize {
        let rows = match self.store.expired_files(now_ms()) {
            Ok(r) => r,
            Err(e) => {
                tracing::error!(error = %e, "file cache sweep failed");
                return 0;
            }
        };
        let _guard = self.commit.lock().unwrap_or_else(|e| e.into_inner());
        let mut n = 0;
        for row in &rows {
            match self.remove(row) {
                Ok(()) => n += 1,
                Err(e) => tracing::error!(file_ref = %row.file_ref, error = %e, "cannot delete an expired file"),
            }
        }
        if n > 0 {
            tracing::info!(removed = n, "file cache: expired files deleted");
        }
        n
    }

    /// Sweeps every [`SWEEP_INTERVAL`] until `shutdown` flips.
    pub async fn run_sweeper(self: Arc<Self>, mut shutdown: watch::Receiver<bool>) {
        let mut tick = tokio::time::interval(SWEEP_INTERVAL);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tick.tick().await; // the first tick is immediate; start-up already reconciled
        loop {
            tokio::select! {
                _ = shutdown.changed() => return,
                _ = tick.tick() => {
                    let cache = self.clone();
                    // Unlinks and SQL: keep them off the async workers.
                    let _ = tokio::task::spawn_blocking(move || cache.sweep()).await;
                }
            }
        }
    }
}

/// Why [`FileCache::begin_download`] refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClaimRefused {
    /// Another download of the entry is streaming now.
    Busy,
    /// The entry was downloaded already, expired or is gone.
    Gone,
}

/// Held while a download streams; releases the entry for another attempt when dropped (after a complete download
/// the entry is consumed first, so the release lets nobody in).
pub struct DownloadClaim {
    cache: Arc<FileCache>,
    file_ref: String,
}

impl DownloadClaim {
    pub fn file_ref(&self) -> &str {
        &self.file_ref
    }
    pub fn cache(&self) -> &Arc<FileCache> {
        &self.cache
    }
}

impl Drop for DownloadClaim {
    fn drop(&mut self) {
        self.cache.downloads.lock().unwrap_or_else(|e| e.into_inner()).remove(&self.file_ref);
    }
}

/// The relative download URL of an entry. It authorises by itself (xAgent's download chain sends no header, §3):
/// the token is 192 random bits, one-time and short-lived. Never log it.
pub fn download_url(row: &FileRow) -> String {
    format!("/files/refs/{}?token={}", row.file_ref, row.token)
}

/// The `files[]` item of a tool result.
pub fn describe(row: &FileRow) -> Value {
    json!({
        "file_ref": row.file_ref,
        "file_type": file_type(&row.mime, &row.filename),
        "filename": row.filename,
        "mime_type": row.mime,
        "byte_size": row.byte_size,
        "download_url": download_url(row),
        "expires_at": row.expires_ms,
    })
}

/// JSON schema of one `files[]` item (tool output schemas).
pub fn file_item_schema() -> Value {
    // Prose, not nested properties: the same shape in four tools' results, each copy paid for in tokens.
    json!({"type": "object", "description": "file_ref, file_type, filename, mime_type, byte_size, \
           download_url (one-time, relative), expires_at (Unix ms)"})
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(name: &str) -> NewFile {
        NewFile { channel_id: "cch_adb_1".into(), filename: name.into(), mime: guess_mime(name).into() }
    }

    fn cache(dir: &Path, limits: Limits) -> (Store, Arc<FileCache>) {
        let store = Store::open(dir).unwrap();
        let c = FileCache::open(store.clone(), &dir.join("files"), limits).unwrap();
        (store, c)
    }

    #[test]
    fn store_hash_evict_and_reconcile() {
        let dir = tempfile::tempdir().unwrap();
        let limits = Limits { ttl: Duration::from_secs(60), max_bytes: 100, max_files: 2 };
        let (store, c) = cache(dir.path(), limits);
        let a = c.store_bytes(b"abc", meta("a.txt")).unwrap();
        assert_eq!(a.sha256, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        assert_eq!(std::fs::read(c.path(&a)).unwrap(), b"abc");
        assert!(names::is_file_ref(&a.file_ref) && a.token.len() == 48);
        let b = c.store_bytes(&[1u8; 60], meta("b.bin")).unwrap();
        // A third file: over max_files → the oldest (a) goes.
        let d = c.store_bytes(&[2u8; 30], meta("d.bin")).unwrap();
        assert!(c.get(&a.file_ref).is_none() && !c.path(&a).exists());
        // Over max_bytes (60 + 30 + 50 > 100): b goes, then d stays.
        let e = c.store_bytes(&[3u8; 50], meta("e.bin")).unwrap();
        assert!(c.get(&b.file_ref).is_none());
        assert!(c.get(&d.file_ref).is_some() && c.get(&e.file_ref).is_some());
        assert!(matches!(c.store_bytes(&[0u8; 101], meta("x")), Err(CacheError::TooLarge { limit: 100 })));
        assert_eq!(store.file_totals().unwrap(), (2, 80));

        // Orphans and missing files are cleaned at the next open; live entries survive.
        std::fs::write(dir.path().join("files/.staging-deadbeef"), b"half").unwrap();
        std::fs::write(dir.path().join("files/stray"), b"x").unwrap();
        std::fs::remove_file(c.path(&d)).unwrap();
        drop(c);
        let (_, c) = cache(dir.path(), limits);
        assert!(c.get(&d.file_ref).is_none(), "row without a file is dropped");
        assert_eq!(std::fs::read(c.path(&e)).unwrap(), vec![3u8; 50]);
        let mut names: Vec<String> = std::fs::read_dir(c.dir())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, vec![e.file_ref.clone()]);
    }

    #[test]
    fn expiry_sweep_claims_and_channel_checks() {
        let dir = tempfile::tempdir().unwrap();
        let (_, c) = cache(dir.path(), Limits { ttl: Duration::from_millis(0), ..Limits::default() });
        let a = c.store_bytes(b"x", meta("a.txt")).unwrap();
        assert!(c.get(&a.file_ref).is_none(), "ttl 0: expired at once");
        assert_eq!(c.sweep(), 1);
        assert!(!c.path(&a).exists());

        let (_, c) = cache(dir.path(), Limits::default());
        let a = c.store_bytes(b"x", meta("a.txt")).unwrap();
        assert_eq!(c.for_channel(&a.file_ref, "other").unwrap_err().code, ErrorCode::PermissionDenied);
        assert_eq!(c.for_channel("file_0000", "cch_adb_1").unwrap_err().code, ErrorCode::InvalidArguments);
        let claim = c.begin_download(&a.file_ref).unwrap();
        assert_eq!(c.begin_download(&a.file_ref).err(), Some(ClaimRefused::Busy), "one download at a time");
        drop(claim);
        let claim = c.begin_download(&a.file_ref).unwrap();
        // A complete download consumes before it releases: nobody claims it again.
        claim.cache().consume(claim.file_ref());
        drop(claim);
        assert_eq!(c.begin_download(&a.file_ref).err(), Some(ClaimRefused::Gone));
    }

    #[test]
    fn eviction_is_fair_between_channels() {
        let dir = tempfile::tempdir().unwrap();
        let (_, c) = cache(dir.path(), Limits { ttl: Duration::from_secs(60), max_bytes: 100, max_files: 4 });
        let of = |ch: &str| NewFile { channel_id: ch.into(), filename: "f".into(), mime: "text/plain".into() };
        let a1 = c.store_bytes(&[1; 20], of("a")).unwrap();
        let a2 = c.store_bytes(&[1; 20], of("a")).unwrap();
        let b1 = c.store_bytes(b"b", of("b")).unwrap();
        let b2 = c.store_bytes(b"b", of("b")).unwrap();
        // Full (4 files, 2 each): b's third evicts b's own oldest, not a's older files.
        let b3 = c.store_bytes(b"b", of("b")).unwrap();
        assert!(c.get(&b1.file_ref).is_none());
        for f in [&a1, &a2, &b2, &b3] {
            assert!(c.get(&f.file_ref).is_some(), "{} kept", f.file_ref);
        }
        // A file beyond b's share of the bytes (50) while a is within its own: refused, a keeps its files.
        let big = c.store_bytes(&[2; 70], of("b"));
        assert!(matches!(big, Err(CacheError::ShareFull { files: 2, bytes: 50 })), "{big:?}");
        assert!(c.get(&a1.file_ref).is_some() && c.get(&a2.file_ref).is_some());
        // A third channel halves nobody's files by itself: the channels over their new share (4/3 → 1) pay.
        let c1 = c.store_bytes(b"c", of("c")).unwrap();
        assert!(c.get(&c1.file_ref).is_some());
        assert!(c.get(&a1.file_ref).is_none() || c.get(&b2.file_ref).is_none(), "an over-share channel paid");
    }

    #[test]
    fn writers_enforce_their_cap_and_leave_nothing_behind() {
        let dir = tempfile::tempdir().unwrap();
        let (_, c) = cache(dir.path(), Limits::default());
        let mut w = c.writer(4).unwrap();
        assert!(w.write_all(b"12345").is_err());
        assert!(w.overflowed());
        drop(w);
        assert_eq!(std::fs::read_dir(c.dir()).unwrap().count(), 0);
    }
}

//! Private state on disk: the data dir, the cache folder and every file in them are created owner-only (0700 /
//! 0600) whatever the process umask, and existing ones are tightened at start-up. Why: outside systemd (which sets
//! `UMask=0077`) the usual umask 022 made `connector.db` (live download tokens) and cached screenshots readable
//! by every local user. SQLite creates its `-wal` and `-shm` files with the database file's mode, so creating
//! `connector.db` as 0600 first covers them too. The data dir is prepared (and every state folder proved writable)
//! here as well, for the wiring at start-up and for `/health`.

use std::io;
use std::path::Path;

#[cfg(unix)]
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};

/// Creates `dir` (and missing parents) as 0700 and removes group/other bits from an existing one.
pub fn dir(dir: &Path) -> io::Result<()> {
    let mut b = std::fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    b.mode(0o700);
    b.create(dir)?;
    tighten(dir, 0o700)
}

/// Removes group/other permission bits from an existing file or folder (a missing one is fine).
pub fn tighten(path: &Path, #[allow(unused_variables)] keep: u32) -> io::Result<()> {
    #[cfg(unix)]
    match std::fs::metadata(path) {
        Ok(m) => {
            let mode = m.permissions().mode();
            if mode & 0o077 != 0 {
                match std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode & keep)) {
                    // Not ours (e.g. left root-owned by a `sudo` run): the writability check that follows gives the
                    // operator the real problem and its fix; a failed chmod would only hide it.
                    Err(e) if e.kind() == io::ErrorKind::PermissionDenied => {
                        tracing::warn!(path = %path.display(), "cannot make private (not its owner)");
                    }
                    r => r?,
                }
            }
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    Ok(())
}

/// Options that create a file as 0600 (`create_new`, write).
pub fn new_file_options() -> std::fs::OpenOptions {
    let mut o = std::fs::OpenOptions::new();
    o.write(true).create_new(true);
    #[cfg(unix)]
    o.mode(0o600);
    o
}

/// Makes sure `path` exists as an owner-only file (created 0600, or tightened), without touching its content.
pub fn file(path: &Path) -> io::Result<()> {
    let mut o = std::fs::OpenOptions::new();
    o.append(true).create(true);
    #[cfg(unix)]
    o.mode(0o600);
    o.open(path)?;
    tighten(path, 0o600)
}

/// Creates the data dir if needed (owner-only) and proves it is writable; the error is the operator's message.
pub fn prepare_data_dir(dir: &Path) -> Result<(), String> {
    let err = |what: &str, e: io::Error| {
        format!("data dir {} {what}: {e}; choose another with --data-dir or fix its permissions", dir.display())
    };
    // Owner-only (0700) whatever the umask: it holds download tokens and cached screenshots.
    self::dir(dir).map_err(|e| err("cannot be created", e))?;
    prove_writable(dir).map_err(|e| err("is not writable", e))
}

/// Creates and removes a probe file in `dir`: permission bits say little (root, ACLs, read-only mounts).
pub fn prove_writable(dir: &Path) -> io::Result<()> {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let probe = dir.join(format!(".write-probe-{}-{n}", std::process::id()));
    std::fs::write(&probe, b"ok")?;
    std::fs::remove_file(probe)
}

//! The installed service's settings, for the commands that inspect an installation (`doctor`, `devices`, `audit`).
//!
//! On a Pi the service reads `/etc/xagent-adb-connector/env`, gets its key from
//! `/etc/xagent-adb-connector/api-key` and keeps its state in `/var/lib/xagent-adb-connector` (systemd's
//! `StateDirectory=`). An operator typing `xagent-adb-connector doctor` must check *that* installation, not
//! `./data` on `127.0.0.1:8790` without a key. So when the env file exists its `XAGENT_ADB_*` variables become
//! defaults (a flag or a variable already in the environment still wins), the state dir and key file are filled
//! in the same way, and a file that exists but cannot be read is reported as a permission problem.

use std::path::{Path, PathBuf};

/// Where `install.sh` puts `env` and `api-key`; `XAGENT_ADB_CONFIG_DIR` moves it (tests, other layouts).
pub const DEFAULT_CONFIG_DIR: &str = "/etc/xagent-adb-connector";
/// The unit's `StateDirectory=`.
pub const SERVICE_STATE_DIR: &str = "/var/lib/xagent-adb-connector";
/// The unit's `User=`; `XAGENT_ADB_SERVICE_USER` overrides it for checks that compare owners.
pub const SERVICE_USER: &str = "xagent-adb";

/// What was taken from the service's settings.
#[derive(Debug, Default)]
pub struct ServiceSettings {
    /// The env file that was read.
    pub env_file: Option<PathBuf>,
    /// A settings file exists but could not be read (with what to do).
    pub problem: Option<String>,
}

pub fn config_dir() -> PathBuf {
    std::env::var_os("XAGENT_ADB_CONFIG_DIR").map_or_else(|| PathBuf::from(DEFAULT_CONFIG_DIR), PathBuf::from)
}

pub fn service_user() -> String {
    std::env::var("XAGENT_ADB_SERVICE_USER").unwrap_or_else(|_| SERVICE_USER.to_owned())
}

/// Reads the service's env file (if any) into this process's environment as defaults. Call before parsing the
/// command line and before any thread starts.
pub fn apply() -> ServiceSettings {
    let dir = config_dir();
    let env_file = dir.join("env");
    let mut out = ServiceSettings::default();
    let text = match std::fs::read_to_string(&env_file) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return out,
        Err(e) => {
            out.problem =
                Some(format!("cannot read the service's settings {}: {e}{}", env_file.display(), sudo_hint(&e)));
            return out;
        }
    };
    for (k, v) in parse_env(&text) {
        if k.starts_with("XAGENT_ADB_") && std::env::var_os(&k).is_none() {
            std::env::set_var(k, v);
        }
    }
    if std::env::var_os("XAGENT_ADB_DATA_DIR").is_none() {
        std::env::set_var("XAGENT_ADB_DATA_DIR", SERVICE_STATE_DIR);
    }
    let key = dir.join("api-key");
    if std::env::var_os("XAGENT_ADB_API_KEY_FILE").is_none()
        && std::env::var_os("XAGENT_CONNECTOR_API_KEY").is_none()
        && std::fs::symlink_metadata(&key).is_ok()
    {
        std::env::set_var("XAGENT_ADB_API_KEY_FILE", &key);
    }
    out.env_file = Some(env_file);
    out
}

/// `KEY=VALUE` lines as systemd's `EnvironmentFile=` reads them (comments, blank lines, optional quotes).
pub fn parse_env(text: &str) -> Vec<(String, String)> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#') && !l.starts_with(';'))
        .filter_map(|l| {
            let (k, v) = l.split_once('=')?;
            let v = v.trim();
            let v = v
                .strip_prefix('"')
                .and_then(|v| v.strip_suffix('"'))
                .or_else(|| v.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')))
                .unwrap_or(v);
            Some((k.trim().to_owned(), v.to_owned()))
        })
        .collect()
}

/// Whether this process runs as root (uid 0), from `/proc/self`'s owner: no unsafe call needed.
pub fn is_root() -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
    }
    #[cfg(not(unix))]
    false
}

/// " — run with sudo" for permission errors of a user who is not root, nothing otherwise.
pub fn sudo_hint(e: &std::io::Error) -> &'static str {
    if e.kind() == std::io::ErrorKind::PermissionDenied && !is_root() {
        " (permission denied: run with sudo, the files belong to the service)"
    } else {
        ""
    }
}

/// Why the state of `dir` cannot be inspected, in words for the operator; `Ok` when `connector.db` is readable.
pub fn check_state_readable(dir: &Path) -> Result<PathBuf, StateProblem> {
    let db = dir.join("connector.db");
    match std::fs::metadata(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(StateProblem::Missing(format!(
                "no connector state: {} does not exist (pass the service's --data-dir)",
                dir.display()
            )))
        }
        Err(e) => return Err(StateProblem::Denied(format!("cannot read {}: {e}", dir.display()))),
        Ok(_) => {}
    }
    match std::fs::File::open(&db) {
        Ok(_) => Ok(db),
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => Err(StateProblem::Denied(format!(
            "cannot read {}: permission denied{}",
            db.display(),
            if is_root() { "" } else { "; run with sudo (the service user owns the state)" }
        ))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(StateProblem::Missing(format!(
            "no connector state in {}: {} does not exist (the service creates it at its first start; pass the \
             service's --data-dir)",
            dir.display(),
            db.display()
        ))),
        Err(e) => Err(StateProblem::Other(format!("cannot read {}: {e}", db.display()))),
    }
}

#[derive(Debug)]
pub enum StateProblem {
    Missing(String),
    Denied(String),
    Other(String),
}

impl StateProblem {
    pub fn message(&self) -> &str {
        match self {
            Self::Missing(m) | Self::Denied(m) | Self::Other(m) => m,
        }
    }
}

/// Opens the state of `dir` read-only for inspection (never creates or migrates anything).
pub fn open_state(dir: &Path) -> Result<crate::store::Store, StateProblem> {
    check_state_readable(dir)?;
    crate::store::Store::open_read_only(dir)
        .map_err(|e| StateProblem::Other(format!("cannot open {}: {e}", dir.join("connector.db").display())))
}

/// A user name from `/etc/passwd` → uid (no NSS: enough for system users created by `useradd`).
pub fn uid_of(user: &str) -> Option<u32> {
    let text = std::fs::read_to_string("/etc/passwd").ok()?;
    text.lines().find_map(|l| {
        let mut f = l.split(':');
        (f.next()? == user).then(|| f.nth(1)?.parse().ok()).flatten()
    })
}

/// uid → user name from `/etc/passwd`.
pub fn user_of(uid: u32) -> Option<String> {
    let text = std::fs::read_to_string("/etc/passwd").ok()?;
    text.lines().find_map(|l| {
        let f: Vec<&str> = l.split(':').collect();
        (f.len() > 2 && f[2].parse::<u32>().ok()? == uid).then(|| f[0].to_owned())
    })
}

/// The uid owning the TCP socket listening on `port` on this machine (`/proc/net/tcp{,6}`), when determinable.
pub fn listener_uid(port: u16) -> Option<u32> {
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = std::fs::read_to_string(table) else { continue };
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            // sl local_address rem_address st tx:rx tr:tm retrnsmt uid ...
            if f.len() < 8 || f[3] != "0A" {
                continue;
            }
            let lport = f[1].rsplit_once(':').and_then(|(_, p)| u16::from_str_radix(p, 16).ok());
            if lport == Some(port) {
                return f[7].parse().ok();
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_file_lines() {
        let v = parse_env("# c\n\nXAGENT_ADB_LISTEN=0.0.0.0:8790\n X = \"a b\" \nY='q'\nbad line\n");
        assert_eq!(
            v,
            vec![
                ("XAGENT_ADB_LISTEN".into(), "0.0.0.0:8790".into()),
                ("X".into(), "a b".into()),
                ("Y".into(), "q".into())
            ]
        );
    }
}

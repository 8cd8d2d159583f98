//! Configuration: the validated settings `serve` runs with ([`Resolved`], [`ServeConfig`], [`TransferConfig`]),
//! the checks and value grammars that make them (key file, exposure, policy, adb server addresses, durations,
//! listen addresses), and the exit codes their errors map to. The command line (`cli.rs`) only parses flags into
//! these; the wiring (`run.rs`) only consumes them. Errors here are for people: they say what is wrong and what to
//! do.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Exit codes (documented in docs/commands.md and `--help`).
pub mod exit {
    /// Runtime failure after start-up.
    pub const FAILURE: i32 = 1;
    /// Bad command line (clap's own code).
    pub const USAGE: i32 = 2;
    /// Configuration unusable: unreadable or empty key file, data dir not writable, bad value.
    pub const CONFIG: i32 = 3;
    /// Could not listen: address in use or not permitted.
    pub const LISTEN: i32 = 4;
}

/// Everything `serve` needs, already validated.
pub struct ServeConfig {
    pub listen: SocketAddr,
    pub data_dir: Option<PathBuf>,
    pub api_key: Option<String>,
    pub allow_serials: Vec<String>,
    /// Operator labels per serial (policy file), for device matching at bind.
    pub labels: crate::policy::Labels,
    pub lease_grace: Duration,
    pub max_message_bytes: usize,
    pub drain_timeout: Duration,
    /// Caps against hostile clients (sessions, channels, per-address connections, timeouts).
    pub limits: crate::server::Limits,
    /// Host names a browser may use for the wall when there is no key (`--allowed-host`).
    pub allowed_hosts: Vec<String>,
    /// The audit log's cap, retention, per-channel budget and archive budget (`--audit-*`; the archive's path is
    /// set from the data dir by run.rs).
    pub audit: crate::audit::Settings,
}

/// Transfer-plane settings (kept apart from [`ServeConfig`] so that embedders that do not care get the defaults
/// through [`start`]).
#[derive(Clone, Debug)]
pub struct TransferConfig {
    pub cache: crate::files::Limits,
    pub upload_max_bytes: u64,
    /// `--cache-dir`; default: memory (see `crate::files::Location::resolve`).
    pub cache_dir: Option<PathBuf>,
}

impl Default for TransferConfig {
    fn default() -> Self {
        TransferConfig { cache: crate::files::Limits::default(), upload_max_bytes: 256 << 20, cache_dir: None }
    }
}

/// A validated `serve` configuration.
pub struct Resolved {
    pub serve: ServeConfig,
    /// Where the key came from, for the file-mode warning at start-up.
    pub key_file: Option<PathBuf>,
    pub transfer: TransferConfig,
    pub adb_servers: Vec<std::net::SocketAddrV4>,
    pub policy: crate::policy::Policy,
    /// The operator's device wall (`/`).
    pub wall: crate::wall::WallConfig,
    /// The operator's part of the recovery ladder of stuck phones.
    pub recovery: crate::device::recovery_config::Config,
    /// `--capture-compression auto`.
    pub capture_compression: bool,
    /// `--capture-streams`: most parallel streams per compressed capture (1..=4).
    pub capture_streams: usize,
    /// `--phone-helper auto`: the resident phone helper where it works (`device::helper`).
    pub phone_helper: bool,
    /// `--notify-url`: the webhook told of requests for a person.
    pub notify_url: Option<crate::notify::NotifyUrl>,
}

/// No key and a non-loopback listen address: every host that reaches the port drives the phones. Refused unless
/// the operator says so with `--allow-no-api-key-on-network` (exit 3, like every unusable configuration).
pub fn check_exposure(listen: SocketAddr, has_key: bool, allowed: bool) -> Result<(), ConfigError> {
    if has_key || allowed || listen.ip().is_loopback() {
        return Ok(());
    }
    Err(ConfigError {
        code: exit::CONFIG,
        message: format!(
            "refusing to serve on {listen} without an API key: anyone who reaches it could drive the phones. Give a \
             key with --api-key-file, listen on 127.0.0.1, or pass --allow-no-api-key-on-network if that is really \
             what you want"
        ),
    })
}

/// `--listen`: `IP:PORT`, or `HOST:PORT` resolved now (first address). A clap value parser, so a bad value exits
/// 2 (bad command line) like every other malformed flag.
pub fn parse_listen(s: &str) -> Result<SocketAddr, String> {
    use std::net::ToSocketAddrs;
    if let Ok(a) = s.parse::<SocketAddr>() {
        return Ok(a);
    }
    let hint = "use IP:PORT such as 0.0.0.0:8790 (all interfaces) or 127.0.0.1:8790, or HOST:PORT";
    if s.rsplit_once(':').is_none_or(|(h, p)| h.is_empty() || p.parse::<u16>().is_err()) {
        return Err(format!("{s:?} is not an address with a port; {hint}"));
    }
    match s.to_socket_addrs() {
        Ok(mut addrs) => addrs.next().ok_or_else(|| format!("{s:?} resolves to no address; {hint}")),
        Err(e) => Err(format!("cannot resolve {s:?}: {e}; {hint}")),
    }
}

/// The permission bits that make a key file readable by group or others (`None` when fine or not on Unix).
pub fn key_file_too_open(path: &Path) -> Option<u32> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(path).ok()?.permissions().mode() & 0o777;
        (mode & 0o077 != 0).then_some(mode)
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        None
    }
}

/// Loads `--policy` (or the default policy) and checks its tool names against this binary's tools.
pub fn load_policy(path: Option<&Path>) -> Result<crate::policy::Policy, ConfigError> {
    let policy = match path {
        Some(p) => crate::policy::Policy::load(p).map_err(|message| ConfigError { code: exit::CONFIG, message })?,
        None => crate::policy::Policy::default(),
    };
    let adb = crate::device::adb::AdbBackend::new(Vec::new());
    let everything = crate::policy::Policy {
        enabled_risky_tools: crate::policy::RISKY_TOOLS.iter().map(|s| s.to_string()).collect(),
        shell_allow_prefixes: vec!["true".into()],
        ..Default::default()
    };
    let all = crate::tools::Registry::device_tools_with(&adb, &std::sync::Arc::new(everything));
    let ids: Vec<&str> = all.ids().collect();
    policy.check_tool_names(&ids).map_err(|m| ConfigError { code: exit::CONFIG, message: format!("policy: {m}") })?;
    Ok(policy)
}

/// Parses `500ms`, `90s`, `15m`, `1h` (a bare number is seconds).
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit() && c != '.').unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let n: f64 = num.parse().map_err(|_| format!("{s:?} is not a duration (examples: 500ms, 90s, 15m, 1h, 90d)"))?;
    let secs = match unit {
        "ms" => n / 1000.0,
        "" | "s" => n,
        "d" => n * 86400.0,
        "m" => n * 60.0,
        "h" => n * 3600.0,
        _ => return Err(format!("unknown unit {unit:?} in {s:?} (use ms, s, m, h or d)")),
    };
    if !secs.is_finite() || secs < 0.0 {
        return Err(format!("{s:?} is not a valid duration"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// A size in bytes: a whole number with an optional binary unit (`B`, `KiB`, `MiB`, `GiB`; `K`, `M`, `G` mean the
/// same), so that `--help` can show `512MiB` instead of `536870912`.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let n: u64 = num.parse().map_err(|_| format!("{s:?} is not a size (examples: 1048576, 64KiB, 1MiB, 2GiB)"))?;
    let shift = match unit.trim() {
        "" | "B" => 0,
        "K" | "KiB" => 10,
        "M" | "MiB" => 20,
        "G" | "GiB" => 30,
        u => return Err(format!("unknown unit {u:?} in {s:?} (use B, KiB, MiB or GiB)")),
    };
    n.checked_mul(1 << shift).ok_or_else(|| format!("{s:?} is too large"))
}

/// [`parse_size`] for a value held in memory at once (a WebSocket message).
pub fn parse_size_usize(s: &str) -> Result<usize, String> {
    usize::try_from(parse_size(s)?).map_err(|_| format!("{s:?} is too large for this machine"))
}

/// A configuration problem, with the exit code it maps to.
#[derive(Debug)]
pub struct ConfigError {
    pub code: i32,
    pub message: String,
}

/// Resolves the system API key: `--api-key-file`, else `XAGENT_CONNECTOR_API_KEY`, else none.
/// The key's value never appears in an error or log line.
pub fn resolve_api_key(api_key_file: Option<&Path>) -> Result<Option<String>, ConfigError> {
    if let Some(path) = api_key_file {
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
            code: exit::CONFIG,
            message: format!("cannot read the API key file {}: {e}", path.display()),
        })?;
        let key = text.lines().next().unwrap_or("").trim().to_owned();
        if key.is_empty() {
            return Err(ConfigError {
                code: exit::CONFIG,
                message: format!("the API key file {} is empty", path.display()),
            });
        }
        return Ok(Some(key));
    }
    match std::env::var("XAGENT_CONNECTOR_API_KEY") {
        Ok(k) if !k.trim().is_empty() => Ok(Some(k.trim().to_owned())),
        _ => Ok(None),
    }
}

/// Resolves `HOST:PORT` adb server addresses to IPv4 socket addresses (the adb client library speaks IPv4).
/// A bad address is a bad command line (exit 2), like a bad `--listen`.
pub fn resolve_adb_servers(list: &[String]) -> Result<Vec<std::net::SocketAddrV4>, ConfigError> {
    use std::net::ToSocketAddrs;
    let mut out = Vec::new();
    for s in list {
        let err = |why: String| ConfigError { code: exit::USAGE, message: format!("--adb-server {s:?}: {why}") };
        let addrs = s.to_socket_addrs().map_err(|e| err(format!("{e} (expected HOST:PORT, e.g. 127.0.0.1:5037)")))?;
        let v4 = addrs
            .filter_map(|a| match a {
                SocketAddr::V4(v4) => Some(v4),
                SocketAddr::V6(_) => None,
            })
            .next()
            .ok_or_else(|| err("no IPv4 address (adb servers are reached over IPv4)".into()))?;
        if !out.contains(&v4) {
            out.push(v4);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("1h").unwrap(), Duration::from_secs(3600));
        assert_eq!(parse_duration("90s").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("90").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("1.5m").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("90d").unwrap(), Duration::from_secs(90 * 86400));
        assert!(parse_duration("1w").unwrap_err().contains("unknown unit"));
        assert!(parse_duration("abc").is_err());
    }

    #[test]
    fn adb_servers_resolve_to_ipv4() {
        let v =
            resolve_adb_servers(&["127.0.0.1:5037".into(), "localhost:5038".into(), "127.0.0.1:5037".into()]).unwrap();
        assert_eq!(v.len(), 2);
        assert_eq!(v[0].port(), 5037);
        let e = resolve_adb_servers(&["nonsense".into()]).unwrap_err();
        assert_eq!(e.code, exit::USAGE);
        assert!(e.message.contains("HOST:PORT"), "{}", e.message);
    }
}

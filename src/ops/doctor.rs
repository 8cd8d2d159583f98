//! `xagent-adb-connector doctor`: checks everything `serve` depends on and says how to fix what is wrong.
//!
//! It only inspects: it never creates the data dir or the database and opens SQLite read-only (a root `doctor`
//! before the service's first start used to leave a root-owned `connector.db` that the service could not write).
//! On a running install the port is held by the service, so a port in use is probed with `GET /health` instead.
//! A bare `doctor` (no `--adb-server`, no `--data-dir`, from flags, environment or the installed service's settings)
//! next to a running connector asks that connector (`/health`, `/api/v1/devices` on the listen address) which adb
//! servers it uses and checks those, leaves its state to it instead of looking at the default `./data`, and says
//! which connector it asked (issue 50).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4};
use std::path::Path;
use std::time::Duration;

use super::out::outln;
use super::settings::{self, is_root, ServiceSettings, StateProblem};
use crate::device::host;

#[derive(Default)]
struct Report {
    failures: usize,
    /// Failures that are only "this user may not read that": fixed by running doctor with sudo.
    denied: usize,
    warnings: usize,
}

impl Report {
    fn ok(&mut self, what: &str) {
        outln!("  ok    {what}");
    }
    fn warn(&mut self, what: &str, fix: &str) {
        self.warnings += 1;
        outln!("  warn  {what}\n        fix: {fix}");
    }
    fn fail(&mut self, what: &str, fix: &str) {
        self.failures += 1;
        outln!("  FAIL  {what}\n        fix: {fix}");
    }
    /// A check that failed only because of a permission failure already reported (e.g. no key to probe with).
    fn follows_denied(&mut self, what: &str) {
        self.failures += 1;
        if !is_root() {
            self.denied += 1;
        }
        outln!("  FAIL  {what}\n        fix: see the permission failure above");
    }
    /// A file this user may not read. "Run with sudo" is the fix only for someone who is not root already.
    fn denied(&mut self, what: &str) {
        self.failures += 1;
        if is_root() {
            outln!(
                "  FAIL  {what}\n        fix: even root may not read it: check the path, ACLs and the mount (read-only, \
                 network file system with root squash)"
            );
        } else {
            self.denied += 1;
            outln!(
                "  FAIL  {what}\n        fix: run `sudo xagent-adb-connector doctor` (the service's files are not yours)"
            );
        }
    }
}

pub struct DoctorInput<'a> {
    pub servers: &'a [SocketAddrV4],
    pub data_dir: &'a Path,
    pub listen: SocketAddr,
    /// The key as `serve` would resolve it; an unreadable key file is an error message here, not an abort.
    pub api_key: Result<Option<String>, (String, bool)>,
    pub key_file: Option<&'a Path>,
    /// `Err` when the policy file is unusable.
    pub policy: Result<(), String>,
    pub settings: &'a ServiceSettings,
    /// `--adb-server` / `--data-dir` came from a flag or the environment (the installed service's settings
    /// included), not the defaults: a running connector is not asked for them.
    pub adb_given: bool,
    pub data_dir_given: bool,
}

/// What a running connector on the listen address said about itself.
struct Asked {
    /// The address asked (loopback for an unspecified listen address).
    target: SocketAddr,
    /// Its `/health` status.
    status: String,
    /// Its adb servers (from `/api/v1/devices`; empty when that needs a key doctor does not have).
    adb_servers: Vec<SocketAddrV4>,
}

/// Asks the connector on `listen`, if one of ours answers there.
async fn ask_running(listen: SocketAddr, key: Option<&str>) -> Option<Asked> {
    let target = loopback_for(listen);
    let (code, body) = probe(target, "/health", key).await.ok()?;
    if !matches!(code, 200 | 503) || !is_ours(&body) {
        return None;
    }
    let v: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
    let status = v["status"].as_str().unwrap_or("?").to_owned();
    let adb_servers = match probe(target, "/api/v1/devices", key).await {
        Ok((200, body)) => serde_json::from_str::<serde_json::Value>(&body)
            .ok()
            .and_then(|d| {
                d["connector"]["adb_servers"]
                    .as_array()
                    .map(|a| a.iter().filter_map(|s| s["address"].as_str()?.parse::<SocketAddrV4>().ok()).collect())
            })
            .unwrap_or_default(),
        _ => Vec::new(),
    };
    Some(Asked { target, status, adb_servers })
}

/// Runs every check; returns the exit code (1 when any check failed).
pub async fn run(input: DoctorInput<'_>) -> i32 {
    let mut r = Report::default();
    outln!("xagent-adb-connector {}", crate::build_info::LONG_VERSION);
    outln!("settings");
    match (&input.settings.env_file, &input.settings.problem) {
        (_, Some(p)) => r.denied(p),
        (Some(f), None) => r.ok(&format!("the service's settings: {} (flags and environment override)", f.display())),
        (None, None) => r.ok("no installed service settings; using flags, environment and defaults"),
    }
    if let Err(m) = &input.policy {
        r.fail(m, "fix the policy file (see docs/policy.md); serve refuses to start with it");
    }
    let key = input.api_key.as_ref().ok().cloned().flatten();
    let asked =
        if input.adb_given && input.data_dir_given { None } else { ask_running(input.listen, key.as_deref()).await };
    let mut servers = input.servers.to_vec();
    if let Some(a) = &asked {
        let mut what = format!("asked the connector running on {} (GET /health: {})", a.target, a.status);
        if !input.adb_given && !a.adb_servers.is_empty() {
            servers = a.adb_servers.clone();
            let list: Vec<String> = servers.iter().map(ToString::to_string).collect();
            what.push_str(&format!("; checking its adb server(s) {}", list.join(", ")));
        }
        r.ok(&what);
    }

    outln!("adb");
    match super::adb_process::adb_version() {
        Some(v) => r.ok(&format!("adb binary: {v}")),
        None => r.warn("no `adb` binary on PATH", "apt-get install adb (needed to run an adb server on this box)"),
    }
    for &server in &servers {
        match host::version(SocketAddr::V4(server)).await {
            Ok(v) => r.ok(&format!("adb server {server} answers (protocol version {v})")),
            Err(e) => {
                r.fail(
                    // `e` already says "adb server unreachable: …".
                    &format!("{server}: {e}"),
                    "start it: `sudo systemctl start adb-server` (or `adb -P <port> start-server` on a dev box)",
                );
                continue;
            }
        }
        adb_server_owner(&mut r, server);
        match host::devices(SocketAddr::V4(server)).await {
            Ok(list) if list.is_empty() => r.warn(
                &format!("adb server {server} sees no device"),
                "plug a phone in with USB debugging enabled (Settings › Developer options), or `adb connect HOST:PORT`",
            ),
            Ok(list) => {
                for d in list {
                    match d.state.as_str() {
                        "device" => r.ok(&format!("device {} online", d.serial)),
                        "unauthorized" => r.fail(
                            &format!("device {} is unauthorized", d.serial),
                            "unlock the phone and accept \"Allow USB debugging?\" (tick \"Always allow\")",
                        ),
                        other => r.fail(
                            &format!("device {} is {other}", d.serial),
                            "replug the cable; if it stays offline run `adb reconnect offline`",
                        ),
                    }
                }
            }
            Err(e) => r.fail(&format!("{server} device list: {e}"), "restart the adb server"),
        }
    }

    outln!("state");
    match &asked {
        // Bare doctor beside a running connector: its state is wherever that one keeps it, not ./data.
        Some(a) if !input.data_dir_given => r.ok(&format!(
            "state: the connector on {} keeps its own (its /health checks that it can write it: {}); pass its \
             --data-dir to inspect the files",
            a.target, a.status
        )),
        _ => state_checks(&mut r, input.data_dir),
    }

    outln!("security");
    match &input.api_key {
        Ok(Some(_)) => r.ok("system API key configured"),
        Ok(None) => r.warn(
            "no system API key: /health, /ws and uploads are open",
            "write a random key to a file and pass --api-key-file (the systemd unit uses LoadCredential)",
        ),
        Err((m, true)) => r.denied(m),
        Err((m, false)) => r.fail(m, "write the key (one line) to the file, mode 0600; serve refuses to start"),
    }
    if let Some(path) = input.key_file {
        if let Some(mode) = crate::config::key_file_too_open(path) {
            r.warn(
                &format!("API key file {} is readable by group/others (mode {mode:04o})", path.display()),
                &format!("chmod 600 {}", path.display()),
            );
        }
    }

    outln!("network");
    match std::net::TcpListener::bind(input.listen) {
        Ok(_) => r.ok(&format!("{} is free to listen on", input.listen)),
        Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => {
            let key_problem = input.api_key.as_ref().err().map(|(_, denied)| *denied);
            running_connector(&mut r, input.listen, key, key_problem).await
        }
        Err(e) => r.fail(
            &format!("cannot listen on {}: {e}", input.listen),
            "choose another --listen (ports below 1024 need privileges)",
        ),
    }

    outln!("clock");
    let now_s = crate::protocol::now_ms() / 1000;
    // 2024-01-01: a Raspberry Pi without RTC boots in 1970 until NTP syncs; file expiry and leases need real time.
    if now_s < 1_704_067_200 {
        r.fail("the system clock is before 2024", "enable time sync: timedatectl set-ntp true (Pi boards have no RTC)");
    } else {
        r.ok("system clock looks sane");
    }

    outln!();
    if r.failures > 0 {
        outln!("{} problem(s), {} warning(s)", r.failures, r.warnings);
        if r.failures == r.denied {
            outln!("every problem is a permission problem: run `sudo xagent-adb-connector doctor`");
        }
        1
    } else {
        outln!("all checks passed ({} warning(s))", r.warnings);
        0
    }
}

/// Who may write the state: the service user when it exists on this box, else whoever runs doctor.
fn writer_uid() -> Option<(u32, String)> {
    let user = settings::service_user();
    if let Some(uid) = settings::uid_of(&user) {
        return Some((uid, user));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let uid = std::fs::metadata("/proc/self").ok()?.uid();
        Some((uid, settings::user_of(uid).unwrap_or_else(|| format!("uid {uid}"))))
    }
    #[cfg(not(unix))]
    None
}

/// Read-only checks of the data dir, `connector.db` and the file cache: existence, owner (can the service write
/// them?) and modes (state and cache are private: 0700 dirs, 0600 files).
fn state_checks(r: &mut Report, dir: &Path) {
    #[cfg(unix)]
    use std::os::unix::fs::MetadataExt;
    let writer = writer_uid();
    let check = |r: &mut Report, path: &Path, is_dir: bool| -> bool {
        let meta = match std::fs::metadata(path) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
                r.denied(&format!("cannot inspect {}: permission denied", path.display()));
                return false;
            }
            Err(_) => return false,
        };
        #[cfg(unix)]
        {
            if let Some((uid, name)) = &writer {
                if *uid != 0 && meta.uid() != *uid {
                    let owner = settings::user_of(meta.uid()).unwrap_or_else(|| format!("uid {}", meta.uid()));
                    r.fail(
                        &format!("{} belongs to {owner}, not {name}: the connector cannot write it", path.display()),
                        &format!("chown -R {name}: {} (was doctor or serve run as root before?)", dir.display()),
                    );
                    return true;
                }
            }
            let mode = meta.mode() & 0o777;
            let loose = if is_dir { mode & 0o027 != 0 } else { mode & 0o077 != 0 };
            if loose {
                let want = if is_dir { "0700" } else { "0600" };
                r.warn(
                    &format!("{} is mode {mode:04o}; state is private to the service", path.display()),
                    &format!("chmod {want} {}", path.display()),
                );
            }
        }
        true
    };
    if !check(r, dir, true) {
        if !dir.exists() && r.denied == 0 {
            r.warn(
                &format!("data dir {} does not exist yet", dir.display()),
                "serve creates it at its first start (pass the service's --data-dir to check an installation)",
            );
        }
        return;
    }
    r.ok(&format!("data dir {}", dir.display()));
    for name in ["connector.db", "connector.db-wal", "connector.db-shm"] {
        check(r, &dir.join(name), false);
    }
    // The file cache is in memory unless the operator put it on disk (`--cache-dir`, from the service's env file):
    // a memory cache (under the service's RuntimeDirectory in /run) exists only while `serve` runs.
    match std::env::var_os("XAGENT_ADB_CACHE_DIR").map(std::path::PathBuf::from) {
        Some(cache) => {
            if check(r, &cache, true) {
                let kind = if crate::files::is_tmpfs(&cache) { "in memory" } else { "on disk" };
                r.ok(&format!("file cache {} ({kind}, XAGENT_ADB_CACHE_DIR)", cache.display()));
            }
        }
        None => {
            // An older version's on-disk cache; `serve` removes it at its next start.
            check(r, &dir.join("files"), true);
        }
    }
    match settings::open_state(dir) {
        Ok(store) => match store.schema_version() {
            Ok(v) => r.ok(&format!("state database readable (schema v{v}; opened read-only)")),
            Err(e) => r.fail(
                &format!("state database: {e}"),
                "check disk space; if connector.db is damaged, restore it from backup",
            ),
        },
        Err(StateProblem::Missing(_)) => {
            r.ok("no state database yet (serve creates connector.db at its first start)");
        }
        Err(StateProblem::Denied(m)) => r.denied(&m),
        Err(StateProblem::Other(m)) => {
            r.fail(&m, "check disk space; if connector.db is damaged, restore it from backup")
        }
    }
}

/// A local adb server should belong to the service user: one started by an operator's `adb devices` runs with
/// the operator's `~/.android/adbkey`, so phones authorised for the service show as `unauthorized`.
fn adb_server_owner(r: &mut Report, server: SocketAddrV4) {
    if !server.ip().is_loopback() {
        return;
    }
    let Some(uid) = settings::listener_uid(server.port()) else { return };
    let owner = settings::user_of(uid).unwrap_or_else(|| format!("uid {uid}"));
    let service = settings::service_user();
    match settings::uid_of(&service) {
        Some(s) if s != uid => r.warn(
            &format!("adb server {server} runs as {owner}, not as the service user {service}"),
            "it was probably spawned by someone's `adb devices` before adb-server.service started, and uses their \
             adb key: `adb kill-server; sudo systemctl restart adb-server`",
        ),
        _ => r.ok(&format!("adb server {server} runs as {owner}")),
    }
}

/// The port is taken: is it our own connector (a running install) or something else?
/// `key_problem`: the key file could not be used — `Some(true)` for lack of permission, `Some(false)` otherwise.
async fn running_connector(r: &mut Report, listen: SocketAddr, key: Option<String>, key_problem: Option<bool>) {
    let target = loopback_for(listen);
    match probe(target, "/health", key.as_deref()).await {
        Ok((200, body)) | Ok((503, body)) if is_ours(&body) => {
            let v: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
            let status = v["status"].as_str().unwrap_or("?");
            let what = format!(
                "a connector is running on {listen}: status {status}, version {}, {} device(s) online",
                v["build"]["version"].as_str().unwrap_or("?"),
                v["devices_online"]
            );
            if status == "ok" {
                r.ok(&what);
                // What each phone's resident helper does (issue 32): running, or why the shell path is used.
                for (serial, line) in v["phone_helpers"].as_object().into_iter().flatten() {
                    let line = crate::device::text::terminal_text(line.as_str().unwrap_or(""));
                    r.ok(&format!("phone helper on {}: {line}", crate::device::text::terminal_text(serial)));
                }
                // What the operator should do (issue 46 item 5): a refused injection names Xiaomi's toggle, typed
                // text not seen arriving says so; an operation on the shell path is only information.
                for (serial, items) in v["phone_helper_attention"].as_object().into_iter().flatten() {
                    let serial = crate::device::text::terminal_text(serial);
                    for item in items.as_array().into_iter().flatten() {
                        let text =
                            |k: &str| crate::device::text::terminal_text(item[k].as_str().unwrap_or("")).into_owned();
                        let what = format!("phone helper on {serial}: {}", text("message"));
                        match item["problem"].as_str() {
                            Some("injection_refused" | "input_unverified") => r.warn(&what, &text("action")),
                            _ => r.ok(&what),
                        }
                    }
                }
            } else {
                let problems = v["problems"]
                    .as_array()
                    .map(|a| a.iter().filter_map(|p| p.as_str()).collect::<Vec<_>>().join("; "));
                r.fail(
                    &format!("{what}: {}", problems.unwrap_or_default()),
                    "see `journalctl -u xagent-adb-connector`",
                );
            }
        }
        // No key at all (none given, none installed): not a permission problem — the operator has to name it.
        // An installed key file doctor may not read was already reported (and counted) under "security".
        Ok((401 | 403, _)) if key.is_none() => {
            let what = format!("a connector answers on {listen} but wants its system API key, and doctor has none");
            match key_problem {
                // Follows from the unreadable key file: part of that permission problem, not another one.
                Some(true) => r.follows_denied(&what),
                Some(false) => r.fail(&what, "see the API key failure above"),
                None => r.fail(
                    &what,
                    &format!(
                        "pass the key it was started with: `xagent-adb-connector doctor --listen {listen} \
                         --api-key-file FILE` (or set XAGENT_CONNECTOR_API_KEY)"
                    ),
                ),
            }
        }
        Ok((401 | 403, _)) => r.fail(
            &format!("a connector answers on {listen} but refuses this API key"),
            "use the service's key (/etc/xagent-adb-connector/api-key)",
        ),
        Ok((code, _)) => r.fail(
            &format!("{listen} is in use by something that is not this connector (HTTP {code} on /health)"),
            "stop it or choose another --listen",
        ),
        Err(e) => r.fail(
            &format!("{listen} is in use and does not answer /health ({e})"),
            "stop what holds the port (`ss -ltnp`) or choose another --listen",
        ),
    }
}

/// Where to reach a connector listening on `listen` from this box (loopback for an unspecified address).
fn loopback_for(listen: SocketAddr) -> SocketAddr {
    match listen.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), listen.port()),
        IpAddr::V6(ip) if ip.is_unspecified() => SocketAddr::new(IpAddr::V6(Ipv6Addr::LOCALHOST), listen.port()),
        _ => listen,
    }
}

fn is_ours(body: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(body)
        .is_ok_and(|v| v["connector_card_id"] == crate::protocol::CONNECTOR_CARD_ID)
}

/// A minimal `GET path` (HTTP/1.1, `Connection: close`) with a deadline; returns status and body.
async fn probe(addr: SocketAddr, path: &str, key: Option<&str>) -> Result<(u16, String), String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let work = async {
        let mut s = tokio::net::TcpStream::connect(addr).await.map_err(|e| e.to_string())?;
        let auth = key.map(|k| format!("Authorization: Bearer {k}\r\n")).unwrap_or_default();
        let req = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\n{auth}Connection: close\r\n\r\n");
        s.write_all(req.as_bytes()).await.map_err(|e| e.to_string())?;
        let mut buf = Vec::new();
        s.take(1 << 20).read_to_end(&mut buf).await.map_err(|e| e.to_string())?;
        let text = String::from_utf8_lossy(&buf);
        let (head, body) = text.split_once("\r\n\r\n").ok_or("no HTTP answer")?;
        let code = head.split_whitespace().nth(1).and_then(|c| c.parse().ok()).ok_or("no HTTP status")?;
        let chunked = head.to_ascii_lowercase().contains("transfer-encoding: chunked");
        Ok((code, if chunked { dechunk(body) } else { body.to_owned() }))
    };
    tokio::time::timeout(Duration::from_secs(3), work).await.map_err(|_| "no answer within 3 s".to_owned())?
}

fn dechunk(mut s: &str) -> String {
    let mut out = String::new();
    while let Some((len, rest)) = s.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(len.trim(), 16) else { break };
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        s = rest[n..].trim_start_matches("\r\n");
    }
    out
}

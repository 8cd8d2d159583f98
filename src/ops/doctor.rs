//! `xagent-adb-connector doctor`: checks everything `serve` depends on and says how to fix what is wrong.

use std::net::{SocketAddr, SocketAddrV4};
use std::path::Path;

use crate::device::host;

#[derive(Default)]
struct Report {
    failures: usize,
    warnings: usize,
}

impl Report {
    fn ok(&mut self, what: &str) {
        println!("  ok    {what}");
    }
    fn warn(&mut self, what: &str, fix: &str) {
        self.warnings += 1;
        println!("  warn  {what}\n        fix: {fix}");
    }
    fn fail(&mut self, what: &str, fix: &str) {
        self.failures += 1;
        println!("  FAIL  {what}\n        fix: {fix}");
    }
}

pub struct DoctorInput<'a> {
    pub servers: &'a [SocketAddrV4],
    pub data_dir: &'a Path,
    pub listen: SocketAddr,
    pub api_key: Option<&'a str>,
    pub key_file: Option<&'a Path>,
}

/// Runs every check; returns the exit code (1 when any check failed).
pub async fn run(input: DoctorInput<'_>) -> i32 {
    let mut r = Report::default();
    println!("xagent-adb-connector {}", crate::build_info::LONG_VERSION);

    println!("adb");
    match super::adb_process::adb_version() {
        Some(v) => r.ok(&format!("adb binary: {v}")),
        None => r.warn("no `adb` binary on PATH", "apt-get install adb (needed to run an adb server on this box)"),
    }
    for &server in input.servers {
        match host::version(SocketAddr::V4(server)).await {
            Ok(v) => r.ok(&format!("adb server {server} answers (protocol version {v})")),
            Err(e) => {
                r.fail(
                    &format!("adb server {server}: {e}"),
                    "start it: `adb -P <port> start-server` or the adb-server systemd unit",
                );
                continue;
            }
        }
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
            Err(e) => r.fail(&format!("adb server {server} device list: {e}"), "restart the adb server"),
        }
    }

    println!("state");
    match crate::cli::prepare_data_dir(input.data_dir) {
        Ok(()) => r.ok(&format!("data dir {} is writable", input.data_dir.display())),
        Err(e) => r.fail(&e.message, "create it or fix its owner (the service user must own it)"),
    }
    match crate::store::Store::open(input.data_dir) {
        Ok(s) => r.ok(&format!("state database opens (schema v{})", s.schema_version().unwrap_or(0))),
        Err(e) => r.fail(&format!("state database: {e}"), "check disk space; restore connector.db from backup"),
    }

    println!("security");
    match input.api_key {
        Some(_) => r.ok("system API key configured"),
        None => r.warn(
            "no system API key: /health, /ws and uploads are open",
            "write a random key to a file and pass --api-key-file (the systemd unit uses LoadCredential)",
        ),
    }
    #[cfg(unix)]
    if let Some(path) = input.key_file {
        use std::os::unix::fs::PermissionsExt;
        if let Ok(meta) = std::fs::metadata(path) {
            if meta.permissions().mode() & 0o077 != 0 {
                r.warn(
                    &format!("API key file {} is readable by group/others", path.display()),
                    &format!("chmod 600 {}", path.display()),
                );
            }
        }
    }

    println!("network");
    match std::net::TcpListener::bind(input.listen) {
        Ok(_) => r.ok(&format!("{} is free to listen on", input.listen)),
        Err(e) => r.fail(
            &format!("cannot listen on {}: {e}", input.listen),
            "another connector may be running (systemctl status xagent-adb-connector); or choose --listen",
        ),
    }

    println!("clock");
    let now_s = crate::protocol::now_ms() / 1000;
    // 2024-01-01: a Raspberry Pi without RTC boots in 1970 until NTP syncs; file expiry and leases need real time.
    if now_s < 1_704_067_200 {
        r.fail("the system clock is before 2024", "enable time sync: timedatectl set-ntp true (Pi boards have no RTC)");
    } else {
        r.ok("system clock looks sane");
    }

    println!();
    if r.failures > 0 {
        println!("{} problem(s), {} warning(s)", r.failures, r.warnings);
        1
    } else {
        println!("all checks passed ({} warning(s))", r.warnings);
        0
    }
}

//! The operator's experience through the real binary: a state the connector cannot write (at start and while
//! running), `doctor` that only inspects and understands a running service, quiet exits into closed pipes, and
//! consistent exit codes.
//!
//! Read-only files as root: root ignores file modes, so these tests run the connector (or `doctor`) as the
//! unprivileged user `nobody` through `setpriv` when the test itself runs as root, and directly otherwise (then
//! the modes apply to the test's own user). Either way the process really meets a file it may not write.

mod common;

use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::adb::*;
use common::*;

const BIN: &str = env!("CARGO_BIN_EXE_xagent-adb-connector");
const NOBODY: u32 = 65534;

fn is_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").map(|m| m.uid() == 0).unwrap_or(false)
}

/// The binary, run as an unprivileged user (see the module docs).
fn unprivileged() -> Command {
    if is_root() {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", BIN]);
        c
    } else {
        Command::new(BIN)
    }
}

/// Hands `path` to the unprivileged user (a no-op when not root: it is ours already).
fn give_to_unprivileged(path: &Path) {
    if is_root() {
        std::os::unix::fs::chown(path, Some(NOBODY), Some(NOBODY)).unwrap();
    }
}

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// A temp dir the unprivileged user can enter (tempdir() makes 0700 dirs).
fn shared_tempdir() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    chmod(d.path(), 0o755);
    d
}

/// `serve` with JSON logs; waits for "connector listening" and returns the child and its address.
fn spawn_serve(mut cmd: Command, data: &Path, extra: &[&str]) -> (Child, std::net::SocketAddr) {
    // The file cache on disk (`--cache-dir`), where these tests make it unwritable; the default is in memory.
    cmd.args(["--log-format", "json", "serve", "--data-dir"])
        .arg(data)
        .arg("--cache-dir")
        .arg(data.join("files"))
        .args(extra)
        .env_remove("XAGENT_CONNECTOR_API_KEY")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if !extra.contains(&"--listen") {
        cmd.args(["--listen", "127.0.0.1:0"]);
    }
    if !extra.contains(&"--adb-server") {
        cmd.args(["--adb-server", "127.0.0.1:1"]);
    }
    let mut child = cmd.spawn().unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut all = Vec::new();
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Ok(v) = serde_json::from_str::<serde_json::Value>(&line) {
                if v["message"] == "connector listening" {
                    let _ = tx.send(Ok(v["addr"].as_str().unwrap().to_owned()));
                }
            }
            all.push(line);
        }
        let _ = tx.send(Err(all.join("\n")));
    });
    match rx.recv_timeout(T) {
        Ok(Ok(a)) => (child, a.parse().unwrap()),
        other => {
            let _ = child.kill();
            panic!("serve did not start: {other:?}");
        }
    }
}

fn stop(mut child: Child) {
    let _ = child.kill();
    let _ = child.wait();
}

/// SIGTERM, then wait (bounded) for the clean exit that checkpoints and removes `-wal`/`-shm`.
fn stop_cleanly(mut child: Child) {
    let _ = Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
    let deadline = Instant::now() + Duration::from_secs(30);
    while child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "serve did not stop on SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Runs to completion within 30 s (a `serve` that wrongly starts is killed, and its output returned).
fn output_bounded(mut cmd: Command) -> std::process::Output {
    let child = cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let pid = child.id();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(Duration::from_secs(30)) {
        Ok(out) => out.unwrap(),
        Err(_) => {
            let _ = Command::new("kill").args(["-KILL", &pid.to_string()]).status();
            let out = rx.recv().unwrap().unwrap();
            panic!("still running after 30 s: {}", String::from_utf8_lossy(&out.stderr));
        }
    }
}

/// Polls `/health` until `pred` holds (bounded); returns the last answer.
async fn health_until(
    addr: std::net::SocketAddr,
    what: &str,
    pred: impl Fn(u16, &serde_json::Value) -> bool,
) -> HttpResponse {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let r = get(addr, "/health").await;
        if pred(r.status, &r.json()) {
            return r;
        }
        assert!(Instant::now() < deadline, "/health never became {what}: {} {}", r.status, r.text());
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// A state dir with a real `connector.db` (made by a `serve` that ran and stopped), owned by the unprivileged user.
fn make_state(parent: &Path) -> std::path::PathBuf {
    let data = parent.join("data");
    let (child, _) = spawn_serve(Command::new(BIN), &data, &[]);
    stop_cleanly(child);
    for entry in walk(&data) {
        give_to_unprivileged(&entry);
    }
    data
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut v = vec![dir.to_owned()];
    for e in std::fs::read_dir(dir).unwrap().map(Result::unwrap) {
        if e.file_type().unwrap().is_dir() {
            v.extend(walk(&e.path()));
        } else {
            v.push(e.path());
        }
    }
    v
}

#[test]
fn serve_refuses_a_state_database_it_cannot_write() {
    let dir = shared_tempdir();
    let data = make_state(dir.path());
    // The realistic way in: `sudo … doctor` or `sudo … serve` before the service's first start left a database
    // the service user may read but not write. SQLite opens such a file read-only without a word.
    let db = data.join("connector.db");
    if is_root() {
        std::os::unix::fs::chown(&db, Some(0), Some(0)).unwrap();
    }
    chmod(&db, 0o444);
    let mut cmd = unprivileged();
    cmd.args(["serve", "--listen", "127.0.0.1:0", "--adb-server", "127.0.0.1:1", "--data-dir"])
        .arg(&data)
        .arg("--cache-dir")
        .arg(data.join("files"));
    let out = output_bounded(cmd);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("does not accept writes") && err.contains("chown"), "{err}");
    assert!(!err.contains("connector listening"), "{err}");

    // A file cache it cannot write is refused the same way.
    // (SQLite gave the `-wal`/`-shm` it created the database file's mode: fix them all.)
    for f in walk(&data).iter().filter(|p| p.is_file()) {
        chmod(f, 0o644);
        give_to_unprivileged(f);
    }
    if is_root() {
        std::os::unix::fs::chown(data.join("files"), Some(0), Some(0)).unwrap();
    }
    chmod(&data.join("files"), 0o555);
    let mut cmd = unprivileged();
    cmd.args(["serve", "--listen", "127.0.0.1:0", "--adb-server", "127.0.0.1:1", "--data-dir"])
        .arg(&data)
        .arg("--cache-dir")
        .arg(data.join("files"));
    let out = output_bounded(cmd);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("file cache") && err.contains("not writable"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_fails_when_the_state_stops_accepting_writes() {
    // A reachable adb server: an unreachable one is itself a `degraded` problem (see the next test).
    let Some(adb) = AdbServer::start() else { return };
    let adb_addr = format!("127.0.0.1:{}", adb.port);
    let dir = shared_tempdir();
    let data = make_state(dir.path());
    let (child, addr) = spawn_serve(unprivileged(), &data, &["--adb-server", &adb_addr]);
    let ok = health_until(addr, "ok", |s, v| s == 200 && v["status"] == "ok").await;
    assert!(ok.json().get("problems").is_none(), "{}", ok.text());

    // The file cache turns read-only (as after an SD card remount): degraded, still 200.
    chmod(&data.join("files"), 0o555);
    let r = health_until(addr, "degraded", |s, v| s == 200 && v["status"] == "degraded").await;
    assert!(r.text().contains("file cache"), "{}", r.text());

    // The data dir as well: failed, 503, so xAgent stops sending sessions it would refuse.
    chmod(&data, 0o555);
    let r = health_until(addr, "failed", |s, v| s == 503 && v["status"] == "failed").await;
    assert!(r.text().contains("data dir"), "{}", r.text());
    assert_eq!(r.json()["connector_card_id"], "device.adb", "still identifies itself");

    // Fixed: back to ok without a restart.
    chmod(&data, 0o755);
    chmod(&data.join("files"), 0o755);
    health_until(addr, "ok again", |s, v| s == 200 && v["status"] == "ok").await;

    // Another process holding the database's write lock (a `sqlite3` shell mid-transaction, a backup): failed.
    let locker = rusqlite::Connection::open(data.join("connector.db")).unwrap();
    locker.execute_batch("BEGIN IMMEDIATE;").unwrap();
    let r = health_until(addr, "failed (locked)", |s, v| s == 503 && v["status"] == "failed").await;
    assert!(r.text().contains("state database"), "{}", r.text());
    locker.execute_batch("ROLLBACK;").unwrap();
    drop(locker);
    health_until(addr, "ok after the lock", |s, v| s == 200 && v["status"] == "ok").await;
    stop(child);
}

/// The `xagent_adb_server_up` sample of `server` in a `/metrics` text, if any.
fn adb_server_up(metrics: &str, server: &str) -> Option<String> {
    let prefix = format!("xagent_adb_server_up{{server=\"{server}\"}} ");
    metrics.lines().find_map(|l| l.strip_prefix(&prefix).map(str::to_owned))
}

/// Polls `/metrics` (bounded) until `server`'s gauge reads `want`.
async fn gauge_until(addr: std::net::SocketAddr, server: &str, want: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let m = get(addr, "/metrics").await;
        assert_eq!(m.status, 200, "{}", m.text());
        if adb_server_up(&m.text(), server).as_deref() == Some(want) {
            return;
        }
        assert!(Instant::now() < deadline, "xagent_adb_server_up never became {want}:\n{}", m.text());
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// A dead adb server (the real one, killed) turns `/health` `degraded` (still 200) with a problem naming it and
/// the fix, and its `xagent_adb_server_up` gauge to 0; started again on the same port, both recover by themselves.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_and_metrics_follow_an_adb_server_that_dies_and_returns() {
    let Some(adb) = AdbServer::start() else { return };
    let server = format!("127.0.0.1:{}", adb.port);
    let dir = tempfile::tempdir().unwrap();
    let srv = Server::start(dir.path(), &["--adb-server", &server], &[]);
    health_until(srv.addr, "ok", |s, v| s == 200 && v["status"] == "ok").await;
    gauge_until(srv.addr, &server, "1").await;

    let out = adb.adb(&["kill-server"]);
    assert_eq!(out.status, Some(0), "adb kill-server: {}", out.stderr);
    let killed = Instant::now();
    let r = health_until(srv.addr, "degraded", |s, v| s == 200 && v["status"] == "degraded").await;
    // Not on the first failed retry: the outage must last UNREACHABLE_AFTER (10 s) before it shows.
    assert!(killed.elapsed() >= Duration::from_secs(9), "degraded after only {:?}", killed.elapsed());
    let problems = r.json()["problems"].to_string();
    assert!(problems.contains(&server) && problems.contains("systemctl status adb-server"), "{problems}");
    assert_eq!(r.json()["connector_card_id"], "device.adb", "still identifies itself");
    gauge_until(srv.addr, &server, "0").await;

    // doctor, probing the running connector, reads the degraded answer: the status and the problem, and fails.
    let (addr, data, conf, s) =
        (srv.addr, srv.data_dir.clone(), dir.path().join("no-installed-service"), server.clone());
    let out = tokio::task::spawn_blocking(move || {
        output_bounded({
            let mut c = Command::new(BIN);
            c.args(["doctor", "--adb-server", &s, "--listen", &addr.to_string(), "--data-dir"])
                .arg(&data)
                .env("XAGENT_ADB_CONFIG_DIR", &conf)
                .env_remove("XAGENT_CONNECTOR_API_KEY")
                .env_remove("XAGENT_ADB_API_KEY_FILE");
            c
        })
    })
    .await
    .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert_eq!(out.status.code(), Some(1), "{text}");
    let line = text.lines().find(|l| l.contains("a connector is running on")).unwrap_or_default();
    assert!(line.contains("status degraded") && line.contains(&format!("the adb server {server}")), "{text}");

    let out = adb.adb(&["start-server"]);
    assert_eq!(out.status, Some(0), "adb start-server: {}", out.stderr);
    let ok = health_until(srv.addr, "ok again", |s, v| s == 200 && v["status"] == "ok").await;
    assert!(ok.json().get("problems").is_none(), "{}", ok.text());
    gauge_until(srv.addr, &server, "1").await;

    // A restart (what `systemctl restart adb-server` does) is not an outage: neither /health nor the gauge flaps.
    let restart = Instant::now();
    assert_eq!(adb.adb(&["kill-server"]).status, Some(0));
    assert_eq!(adb.adb(&["start-server"]).status, Some(0));
    let took = restart.elapsed();
    // Only meaningful when the restart itself was quick (a loaded machine may take longer; then say nothing).
    if took < Duration::from_secs(5) {
        while restart.elapsed() < Duration::from_secs(13) {
            let h = get(srv.addr, "/health").await;
            assert_eq!(h.json()["status"], "ok", "a {took:?} restart flapped /health: {}", h.text());
            let m = get(srv.addr, "/metrics").await.text();
            assert_eq!(adb_server_up(&m, &server).as_deref(), Some("1"), "a {took:?} restart flapped the gauge");
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }
}

#[test]
fn doctor_creates_and_alters_nothing() {
    let dir = shared_tempdir();
    let missing = dir.path().join("nothing-here");
    let out = Command::new(BIN)
        .args(["doctor", "--adb-server", "127.0.0.1:1", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(&missing)
        .env("XAGENT_ADB_CONFIG_DIR", dir.path().join("no-config"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!missing.exists(), "doctor created the data dir:\n{text}");
    assert!(text.contains("does not exist yet"), "{text}");

    // An existing, stopped state: read as is, nothing added (no root-owned -wal/-shm), nothing changed.
    let data = make_state(dir.path());
    let before: Vec<_> = walk(&data).into_iter().map(|p| (p.clone(), std::fs::read(&p).ok())).collect();
    for args in [
        &["doctor", "--adb-server", "127.0.0.1:1", "--listen", "127.0.0.1:0"][..],
        &["audit", "verify"],
        &["devices", "--adb-server", "127.0.0.1:1"],
    ] {
        let out = Command::new(BIN)
            .args(args)
            .arg("--data-dir")
            .arg(&data)
            .env("XAGENT_ADB_CONFIG_DIR", dir.path().join("no-config"))
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        if args[0] == "doctor" {
            assert!(text.contains("state database readable"), "{text}");
        }
    }
    let after: Vec<_> = walk(&data).into_iter().map(|p| (p.clone(), std::fs::read(&p).ok())).collect();
    let names = |v: &[(std::path::PathBuf, Option<Vec<u8>>)]| v.iter().map(|(p, _)| p.clone()).collect::<Vec<_>>();
    assert_eq!(names(&before), names(&after), "doctor/audit/devices created or removed files");
    for ((p, a), (_, b)) in before.iter().zip(&after) {
        // `-shm` is SQLite's shared-memory WAL index, not state: every reader updates its read marks there.
        if !p.to_string_lossy().ends_with("-shm") {
            assert!(a == b, "doctor/audit/devices changed {}", p.display());
        }
    }
}

/// A config dir as `install.sh` writes it, pointing at this test's service.
fn service_config(dir: &Path, listen: &str, data: &Path, adb: &str, key: &str) -> std::path::PathBuf {
    let conf = dir.join("etc");
    std::fs::create_dir_all(&conf).unwrap();
    chmod(&conf, 0o755);
    std::fs::write(
        conf.join("env"),
        format!(
            "# written by the test\nXAGENT_ADB_LISTEN={listen}\nXAGENT_ADB_SERVER={adb}\nXAGENT_ADB_DATA_DIR={}\n",
            data.display()
        ),
    )
    .unwrap();
    chmod(&conf.join("env"), 0o644);
    std::fs::write(conf.join("api-key"), format!("{key}\n")).unwrap();
    chmod(&conf.join("api-key"), 0o600);
    conf
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_checks_a_running_service_with_its_own_settings() {
    let (adb, _sim, serial) = setup().await.expect("adb");
    let dir = shared_tempdir();
    let data = dir.path().join("state");
    let adb_addr = format!("127.0.0.1:{}", adb.port);
    let key = "doctor-test-key-0123456789";
    let kf = dir.path().join("service-key");
    std::fs::write(&kf, key).unwrap();
    chmod(&kf, 0o600);
    let (child, addr) =
        spawn_serve(Command::new(BIN), &data, &["--adb-server", &adb_addr, "--api-key-file", kf.to_str().unwrap()]);
    chmod(&data, 0o700);
    // The state belongs to the service user (here: nobody when root runs the test); the connector itself runs as
    // root in this test, which keeps writing regardless.
    let owned_by = |uid: u32| {
        if is_root() {
            for p in walk(&data) {
                std::os::unix::fs::chown(&p, Some(uid), Some(uid)).unwrap();
            }
        }
    };
    owned_by(NOBODY);
    let conf = service_config(dir.path(), &addr.to_string(), &data, &adb_addr, key);

    // As root (the operator with sudo), with nothing but the service's settings: all checks pass, and the port
    // the service holds is recognised as the running connector.
    let c = conf.clone();
    let out = blocking(move || {
        Command::new(BIN)
            .arg("doctor")
            .env("XAGENT_ADB_CONFIG_DIR", &c)
            .env_remove("XAGENT_ADB_DATA_DIR")
            .env_remove("XAGENT_ADB_API_KEY_FILE")
            .env_remove("XAGENT_CONNECTOR_API_KEY")
            .env("XAGENT_ADB_SERVICE_USER", "nobody")
            .output()
            .unwrap()
    })
    .await;
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(text.contains(&format!("a connector is running on {addr}: status ok")), "{text}");
    assert!(text.contains(&format!("device {serial} online")), "{text}");
    assert!(text.contains("system API key configured"), "{text}");
    assert!(text.contains("state database readable"), "{text}");
    assert!(!text.contains("adb server adb server") && !text.contains("unreachable: adb server"), "{text}");
    if is_root() {
        // The test's adb server runs as root, not as the service user (here: nobody): what an operator's own
        // `adb devices` before adb-server.service leaves behind.
        assert!(text.contains("runs as root, not as the service user nobody"), "{text}");
    }
    assert_eq!(out.status.code(), Some(0), "{text}");

    if is_root() {
        owned_by(0);
        // Without sudo: the key and the state are the service's (here: root's). Each is one failed check, doctor goes on to the
        // end and says that sudo is the fix.
        let c = conf.clone();
        let out = blocking(move || {
            Command::new("setpriv")
                .args(["--reuid=65534", "--regid=65534", "--clear-groups", BIN, "doctor"])
                .env("XAGENT_ADB_CONFIG_DIR", &c)
                .env_remove("XAGENT_ADB_DATA_DIR")
                .env_remove("XAGENT_ADB_API_KEY_FILE")
                .env_remove("XAGENT_CONNECTOR_API_KEY")
                .env("XAGENT_ADB_SERVICE_USER", "root")
                .output()
                .unwrap()
        })
        .await;
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        assert_eq!(out.status.code(), Some(1), "{text}");
        assert!(text.contains("api-key") && text.contains("Permission denied"), "{text}");
        assert!(text.contains("clock"), "doctor must not abort at the key:\n{text}");
        assert!(text.contains("every problem is a permission problem: run `sudo"), "{text}");
        assert!(!text.contains("restore"), "no restore-from-backup advice for a permission problem:\n{text}");
    }
    stop(child);
}

/// Runs the binary with stdout a pipe whose reader is already gone: every write fails with EPIPE.
fn into_closed_pipe(args: &[&str], data: &Path) -> std::process::Output {
    // A FIFO opened read-write (never blocks on Linux) lets us open a write end, then drop the only reader.
    let fifo = data.parent().unwrap().join(format!("fifo-{}", args.join("-").replace('/', "_")));
    let _ = std::fs::remove_file(&fifo);
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let reader = std::fs::OpenOptions::new().read(true).write(true).open(&fifo).unwrap();
    let writer = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
    drop(reader);
    Command::new(BIN)
        .args(args)
        .env("XAGENT_ADB_DATA_DIR", data)
        .env("XAGENT_ADB_CONFIG_DIR", data.join("no-config"))
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .unwrap()
}

#[test]
fn output_into_a_closed_pipe_ends_quietly() {
    let dir = shared_tempdir();
    let data = make_state(dir.path());
    for args in [
        &["card"][..],
        &["--help"],
        &["serve", "--help"],
        &["--version"],
        &["audit", "tail"],
        &["audit", "tail", "--json"],
        &["audit", "verify"],
        &["devices", "--adb-server", "127.0.0.1:1"],
        &["doctor", "--adb-server", "127.0.0.1:1", "--listen", "127.0.0.1:0"],
    ] {
        let out = into_closed_pipe(args, &data);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("panicked") && !err.contains("Broken pipe"), "{args:?}: {err}");
        // Stopped at their first line (the header), before their own verdict: exit 0 (documented).
        assert_eq!(out.status.code(), Some(0), "{args:?}: {err}");
    }
}

#[test]
fn bad_addresses_are_a_bad_command_line_and_host_names_work() {
    let dir = shared_tempdir();
    for args in
        [&["--listen", "foo"][..], &["--listen", "8790"], &["--adb-server", "foo"], &["--adb-server", "no-port"]]
    {
        let out =
            Command::new(BIN).arg("serve").args(args).arg("--data-dir").arg(dir.path().join("d")).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        if args[0] == "--listen" {
            assert!(err.contains("0.0.0.0:8790"), "{err}");
        }
    }
    // `devices` and `doctor` agree.
    for cmd in ["devices", "doctor"] {
        let out = Command::new(BIN).args([cmd, "--adb-server", "foo"]).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{cmd}: {}", String::from_utf8_lossy(&out.stderr));
    }
    // A host name is resolved.
    let (child, addr) = spawn_serve(Command::new(BIN), &dir.path().join("d"), &["--listen", "localhost:0"]);
    assert!(addr.ip().is_loopback(), "{addr}");
    stop(child);
}

#[test]
fn serve_warns_about_a_readable_key_file_and_a_remote_adb_server() {
    let dir = shared_tempdir();
    let kf = dir.path().join("key");
    std::fs::write(&kf, "k-0123456789").unwrap();
    chmod(&kf, 0o644);
    // 0.0.0.0 is not a loopback address (connecting to it stays on this machine, so no traffic leaves the box).
    let (child, _) = spawn_serve_logged(
        &dir.path().join("d"),
        &["--api-key-file", kf.to_str().unwrap(), "--adb-server", "0.0.0.0:1"],
    );
    let logs = child.1.join("\n");
    stop(child.0);
    assert!(logs.contains("the API key file is readable by group/others") && logs.contains("0644"), "{logs}");
    assert!(logs.contains("adb server is not on loopback") && logs.contains("0.0.0.0:1"), "{logs}");
    assert!(!logs.contains("k-0123456789"), "the key leaked into the log");
}

/// `serve` until it listens; returns the child and the log lines up to then.
fn spawn_serve_logged(data: &Path, extra: &[&str]) -> ((Child, Vec<String>), std::net::SocketAddr) {
    let mut child = Command::new(BIN)
        .args(["--log-format", "json", "serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(data)
        .args(extra)
        .env_remove("XAGENT_CONNECTOR_API_KEY")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut seen = Vec::new();
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            seen.push(line.clone());
            if line.contains("connector listening") {
                let v: serde_json::Value = serde_json::from_str(&line).unwrap();
                let _ = tx.send((seen.clone(), v["addr"].as_str().unwrap().to_owned()));
            }
        }
    });
    match rx.recv_timeout(T) {
        Ok((logs, addr)) => ((child, logs), addr.parse().unwrap()),
        Err(_) => {
            let _ = child.kill();
            panic!("serve did not start");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn audit_tail_reads_for_people_and_machines_and_says_what_is_wrong() {
    let (adb, _sim, serial) = setup().await.expect("adb");
    let dir = shared_tempdir();
    let data = dir.path().join("data");
    let adb_addr = format!("127.0.0.1:{}", adb.port);
    let srv = Server::start(&data, &["--adb-server", &adb_addr], &[]);
    let mut c = ws(srv.addr, None).await;
    c.hello(None).await;
    let ch = c.bind(None).await;
    let tap = serde_json::json!({"tool_id": "android_tap", "arguments": {"connector_channel_id": ch, "x": 3, "y": 4},
                                 "context": {"tool_call_id": "call_tap_1"}});
    assert!(c.request("tool.invoke", Some(&ch), tap).await["error"].is_null());
    let no_conf = dir.path().join("no-config");
    let run = move |args: Vec<String>, as_nobody: bool| {
        let mut cmd = if as_nobody { unprivileged() } else { Command::new(BIN) };
        let out = cmd.args(&args).env("XAGENT_ADB_CONFIG_DIR", &no_conf).output().unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).to_string(),
            String::from_utf8_lossy(&out.stderr).to_string(),
        )
    };
    let d = data.to_str().unwrap().to_owned();
    let args = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();

    let r = run.clone();
    let a = args(&["audit", "tail", "--data-dir", &d]);
    let (code, out, err) = blocking(move || r(a, false)).await;
    assert_eq!(code, Some(0), "{err}");
    let mut lines = out.lines();
    assert!(lines.next().unwrap().contains("TIME (UTC)"), "a header first:\n{out}");
    let row = lines.find(|l| l.contains("call_tap_1")).unwrap_or_else(|| panic!("{out}"));
    let time = row.split_whitespace().nth(1).unwrap();
    assert!(time.len() == 24 && time.as_bytes()[10] == b'T' && time.ends_with('Z'), "RFC 3339 UTC: {row}");

    let r = run.clone();
    let a = args(&["audit", "tail", "--json", "--data-dir", &d]);
    let (code, out, _) = blocking(move || r(a, false)).await;
    assert_eq!(code, Some(0));
    let rec: serde_json::Value = out
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|v| v["tool_call_id"] == "call_tap_1")
        .unwrap();
    assert_eq!(rec["tool_id"], "android_tap");
    assert!(rec["time"].as_str().unwrap().ends_with('Z') && rec["time_ms"].is_u64(), "{rec}");
    assert_eq!(rec["arguments"]["x"], 3, "arguments as JSON: {rec}");

    // Missing state vs. unreadable state: two different messages.
    let r = run.clone();
    let a = args(&["audit", "verify", "--data-dir", dir.path().join("nope").to_str().unwrap()]);
    let (code, _, err) = blocking(move || r(a, false)).await;
    assert_eq!(code, Some(3), "{err}");
    assert!(err.contains("does not exist"), "{err}");
    if is_root() {
        chmod(&data, 0o700); // root's, as the service's state is the service user's
        let r = run.clone();
        let a = args(&["audit", "verify", "--data-dir", &d]);
        let (code, _, err) = blocking(move || r(a, true)).await;
        assert_eq!(code, Some(3), "{err}");
        assert!(err.contains("permission denied") && err.contains("sudo"), "{err}");
        assert!(!err.contains("no connector state"), "{err}");
        // `devices` still lists the phones, but cannot tell who holds them: `?`, and why.
        let r = run.clone();
        let a = args(&["devices", "--adb-server", &adb_addr, "--data-dir", &d]);
        let (code, out, err) = blocking(move || r(a, true)).await;
        assert_eq!(code, Some(0), "{err}");
        let row = out.lines().find(|l| l.contains(&serial)).unwrap_or_else(|| panic!("{out}"));
        assert!(row.trim_end().ends_with('?'), "{row}");
        assert!(err.contains("sudo"), "{err}");
    }
}

#[test]
fn version_says_build_time_in_rfc3339() {
    let out = Command::new(BIN).arg("--version").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let built = text.split("built ").nth(1).and_then(|r| r.split(',').next()).unwrap_or_else(|| panic!("{text}"));
    let b = built.as_bytes();
    assert!(built.len() == 20 && b[4] == b'-' && b[10] == b'T' && b[13] == b':' && built.ends_with('Z'), "{text}");
}

/// Issue 37 item 3, ripgrep's way: `-h` is the short summary (one line a flag, no examples) and says where the rest
/// is; `--help` is the long one with the examples, and both have the same flags in the same headed groups.
#[test]
fn short_help_is_a_summary_and_long_help_has_the_examples() {
    let run = |args: &[&str]| {
        let out = Command::new(BIN).args(args).output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    for sub in ["serve", "doctor"] {
        let short = run(&[sub, "-h"]);
        let long = run(&[sub, "--help"]);
        assert!(short.contains("(see more with '--help')"), "{sub} -h says where the rest is:\n{short}");
        assert!(short.lines().count() * 2 <= long.lines().count(), "{sub} -h is not a summary of --help");
        assert!(!short.contains("Examples:") && long.contains("Examples:"), "{sub}: examples only in --help");
        let flags = |text: &str| -> Vec<String> {
            text.lines()
                .filter_map(|l| l.split_whitespace().find(|w| w.starts_with("--")))
                .map(|w| w.trim_end_matches(',').to_owned())
                .collect()
        };
        let (fs, fl) = (flags(&short), flags(&long));
        assert!(fs.len() > 10, "{sub} -h lists its flags: {fs:?}");
        for f in &fs {
            assert!(fl.contains(f), "{sub} --help lacks {f}");
        }
        for heading in ["Network and access:", "Phones:"] {
            assert!(short.contains(heading) && long.contains(heading), "{sub}: {heading} in both");
        }
    }
}

//! A private adb server (the real `adb` binary) on an ephemeral port, and the simulated phone beside it.
//! Never touches the default port 5037.
#![allow(dead_code)]

use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use xagent_adb_connector::sim::{SimConfig, SimPhone};

pub const TEST_TIMEOUT: Duration = Duration::from_secs(90);
pub const CMD_TIMEOUT: Duration = Duration::from_secs(30);

pub struct Out {
    pub status: Option<i32>,
    pub stdout: Vec<u8>,
    pub stderr: String,
}

impl Out {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }
}

/// A private adb server; killed (via `adb -P PORT kill-server`) on drop.
pub struct AdbServer {
    pub port: u16,
    home: tempfile::TempDir,
    seq: std::sync::atomic::AtomicU32,
}

pub fn skip_requested() -> bool {
    std::env::var("XAGENT_SKIP_ADB_TESTS").map(|v| v == "1").unwrap_or(false)
}

impl AdbServer {
    /// `None` when adb is unavailable and skipping was requested.
    pub fn start() -> Option<AdbServer> {
        let ok = Command::new("adb")
            .arg("version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        if !ok {
            if skip_requested() {
                eprintln!("adb not installed; skipping because XAGENT_SKIP_ADB_TESTS=1");
                return None;
            }
            panic!("the `adb` binary is required for tests/sim_adb.rs (apt-get install adb), or set XAGENT_SKIP_ADB_TESTS=1 to skip");
        }
        let port =
            TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("ephemeral port");
        let server = AdbServer { port, home: tempfile::tempdir().expect("tempdir"), seq: Default::default() };
        let out = server.adb(&["start-server"]);
        assert_eq!(out.status, Some(0), "adb start-server failed: {}", out.stderr);
        Some(server)
    }

    /// Runs `adb -P PORT ARGS` with a timeout. Output goes through files (not pipes) so a large
    /// output or the forked server daemon can never deadlock us.
    pub fn adb(&self, args: &[&str]) -> Out {
        let n = self.seq.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let out_path = self.home.path().join(format!("out{n}"));
        let err_path = self.home.path().join(format!("err{n}"));
        let mut child = Command::new("adb")
            .arg("-P")
            .arg(self.port.to_string())
            .args(args)
            .env("HOME", self.home.path())
            .env_remove("ANDROID_SDK_HOME")
            .env_remove("ANDROID_USER_HOME")
            .env_remove("ANDROID_SERIAL")
            .env_remove("ADB_VENDOR_KEYS")
            .env("TMPDIR", self.home.path())
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&out_path).expect("stdout file"))
            .stderr(std::fs::File::create(&err_path).expect("stderr file"))
            .spawn()
            .expect("spawn adb");
        let deadline = Instant::now() + CMD_TIMEOUT;
        let status = loop {
            match child.try_wait() {
                Ok(Some(s)) => break s.code(),
                Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
                _ => {
                    let _ = child.kill();
                    let _ = child.wait();
                    panic!("adb {args:?} timed out");
                }
            }
        };
        Out {
            status,
            stdout: std::fs::read(&out_path).unwrap_or_default(),
            stderr: String::from_utf8_lossy(&std::fs::read(&err_path).unwrap_or_default()).into_owned(),
        }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.home.path().join(name)
    }

    pub fn state_of(&self, serial: &str) -> Option<String> {
        let out = self.adb(&["devices"]);
        out.text().lines().find_map(|l| {
            let (s, st) = l.split_once('\t')?;
            (s.trim() == serial).then(|| st.trim().to_string())
        })
    }

    /// Polls `adb devices` until `serial` is in `want` state.
    pub fn wait_state(&self, serial: &str, want: &str) {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let st = self.state_of(serial);
            if st.as_deref() == Some(want) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "device {serial} never reached state {want:?} (last: {st:?}); devices: {}",
                self.adb(&["devices"]).text()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    pub fn connect(&self, serial: &str) {
        let out = self.adb(&["connect", serial]);
        assert!(out.text().contains("connected to"), "adb connect: {} {}", out.text(), out.stderr);
    }
}

impl Drop for AdbServer {
    fn drop(&mut self) {
        let _ = Command::new("adb")
            .arg("-P")
            .arg(self.port.to_string())
            .arg("kill-server")
            .env("HOME", self.home.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

pub async fn start_sim() -> SimPhone {
    start_sim_with(SimConfig::default()).await
}

pub async fn start_sim_with(cfg: SimConfig) -> SimPhone {
    let addr: SocketAddr = "127.0.0.1:0".parse().unwrap();
    SimPhone::start(addr, cfg).await.expect("sim start")
}

/// Runs blocking adb interactions off the async runtime (the sim serves on it).
pub async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(f).await.expect("blocking task panicked")
}

/// Starts an adb server and a sim, connects them, waits for `device`. `None` = skipped.
pub async fn setup() -> Option<(std::sync::Arc<AdbServer>, SimPhone, String)> {
    setup_with(SimConfig::default()).await
}

/// [`setup`] with a custom simulated phone.
pub async fn setup_with(cfg: SimConfig) -> Option<(std::sync::Arc<AdbServer>, SimPhone, String)> {
    let adb = blocking(AdbServer::start).await?;
    let adb = std::sync::Arc::new(adb);
    let sim = start_sim_with(cfg).await;
    let serial = sim.serial();
    let (a, s) = (adb.clone(), serial.clone());
    blocking(move || {
        a.connect(&s);
        a.wait_state(&s, "device");
    })
    .await;
    Some((adb, sim, serial))
}

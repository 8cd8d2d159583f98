//! Running the Debian/platform-tools `adb` binary as a private server on its own port, with its own HOME (so its
//! RSA key and device list are separate from the operator's). Used by `demo`; never by `serve`, which only talks
//! to adb servers the operator runs.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

pub struct AdbProcess {
    pub port: u16,
    home: PathBuf,
}

/// `adb version`'s first line, or `None` when no `adb` is on PATH.
pub fn adb_version() -> Option<String> {
    let out = Command::new("adb").arg("version").stdin(Stdio::null()).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).lines().next().unwrap_or("").to_owned())
}

impl AdbProcess {
    /// Starts `adb -P PORT start-server` (it forks its own daemon) with HOME = `home`.
    pub fn start(port: u16, home: &Path) -> Result<AdbProcess, String> {
        std::fs::create_dir_all(home).map_err(|e| format!("cannot create {}: {e}", home.display()))?;
        let p = AdbProcess { port, home: home.to_owned() };
        let out = p.run(&["start-server"])?;
        if !out.0 {
            return Err(format!("adb start-server failed: {}", out.1));
        }
        Ok(p)
    }

    /// Runs `adb -P PORT ARGS`; returns (success, combined output). Bounded to 20 s.
    pub fn run(&self, args: &[&str]) -> Result<(bool, String), String> {
        let mut child = Command::new("adb")
            .arg("-P")
            .arg(self.port.to_string())
            .args(args)
            .env("HOME", &self.home)
            .env_remove("ANDROID_SERIAL")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot run adb: {e}"))?;
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            match child.try_wait() {
                Ok(Some(_)) => break,
                Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
                _ => {
                    let _ = child.kill();
                    return Err(format!("adb {args:?} did not finish in 20 s"));
                }
            }
        }
        let out = child.wait_with_output().map_err(|e| e.to_string())?;
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        Ok((out.status.success(), text))
    }
}

impl Drop for AdbProcess {
    fn drop(&mut self) {
        let _ = self.run(&["kill-server"]);
    }
}

//! Headless Chromium driven over the DevTools protocol with the crate's own WebSocket client: the wall tests'
//! browser (tests/wall.rs, tests/wall_users.rs).

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::Message;

const CHROMIUM: &str = "/usr/bin/chromium";

/// Headless Chromium with its own profile; killed on drop.
pub struct Browser {
    child: Child,
    _profile: tempfile::TempDir,
    pub ws_url: String,
}

impl Browser {
    pub fn launch() -> Browser {
        let bin = std::env::var("XAGENT_CHROMIUM").unwrap_or_else(|_| CHROMIUM.to_owned());
        assert!(
            std::path::Path::new(&bin).exists(),
            "tests/wall.rs needs Chromium at {bin}: install it with `apt-get install -y chromium` (CI's .ci/run \
             does), or point XAGENT_CHROMIUM at a Chromium binary"
        );
        let profile = tempfile::tempdir().unwrap();
        let mut child = Command::new(&bin)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--hide-scrollbars",
                "--remote-debugging-port=0",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {bin}: {e}"));
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut tx = Some(tx);
            // Keep draining so Chromium never blocks on a full pipe.
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(url) = line.strip_prefix("DevTools listening on ") {
                    if let Some(tx) = tx.take() {
                        let _ = tx.send(url.trim().to_owned());
                    }
                }
            }
        });
        let ws_url = match rx.recv_timeout(Duration::from_secs(30)) {
            Ok(u) => u,
            Err(_) => {
                let _ = child.kill();
                panic!("Chromium did not print its DevTools URL within 30 s");
            }
        };
        Browser { child, _profile: profile, ws_url }
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A DevTools protocol client attached to one page (flattened session).
pub struct Cdp {
    ws: Ws,
    next: u64,
    session: Option<String>,
}

impl Cdp {
    pub async fn connect(url: &str) -> Cdp {
        let (ws, _) = tokio::time::timeout(T, tokio_tungstenite::connect_async(url))
            .await
            .expect("DevTools connect timed out")
            .expect("DevTools connect failed");
        Cdp { ws, next: 0, session: None }
    }

    pub async fn call(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = self.next;
        let mut msg = json!({"id": id, "method": method, "params": params});
        if let Some(s) = &self.session {
            msg["sessionId"] = json!(s);
        }
        self.ws.send(Message::text(msg.to_string())).await.unwrap();
        loop {
            let m = tokio::time::timeout(Duration::from_secs(30), self.ws.next())
                .await
                .unwrap_or_else(|_| panic!("no DevTools answer to {method}"));
            let Some(Ok(Message::Text(t))) = m else { continue };
            let v: Value = serde_json::from_str(t.as_str()).unwrap();
            if v["id"] == json!(id) {
                assert!(v.get("error").is_none(), "{method} failed: {v}");
                return v["result"].clone();
            }
        }
    }

    /// Opens a new page and attaches to it.
    pub async fn page(&mut self) {
        let t = self.call("Target.createTarget", json!({"url": "about:blank"})).await;
        let a = self.call("Target.attachToTarget", json!({"targetId": t["targetId"], "flatten": true})).await;
        self.session = Some(a["sessionId"].as_str().unwrap().to_owned());
        self.call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": 1180, "height": 760, "deviceScaleFactor": 1, "mobile": false}),
        )
        .await;
    }

    /// Evaluates `expr` in the page (promises awaited) and returns its value.
    pub async fn eval(&mut self, expr: &str) -> Value {
        let r = self
            .call("Runtime.evaluate", json!({"expression": expr, "returnByValue": true, "awaitPromise": true}))
            .await;
        assert!(r.get("exceptionDetails").is_none(), "{expr} threw: {r}");
        r["result"]["value"].clone()
    }

    /// Polls `expr` until it is `true`; returns how long that took. Panics with `what` after `within`.
    pub async fn wait_for(&mut self, expr: &str, within: Duration, what: &str) -> Duration {
        let started = Instant::now();
        loop {
            if self.eval(expr).await == json!(true) {
                return started.elapsed();
            }
            if started.elapsed() > within {
                let html = self.eval("document.body.innerText").await;
                panic!("{what}: not true within {within:?}: {expr}\npage text:\n{html}");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

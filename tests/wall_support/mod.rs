//! Shared rig of the device-wall tests: a private adb server, simulated phones, the real binary with an API key.
#![allow(dead_code)]

pub mod browser;

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common::adb::*;
use crate::common::*;
use serde_json::Value;
use xagent_adb_connector::sim::{SimConfig, SimPhone};

pub const KEY: &str = "wall-test-key-5a7c0e11";

pub struct Rig {
    pub adb: Arc<AdbServer>,
    pub sims: Vec<SimPhone>,
    pub srv: Server,
    pub _dir: tempfile::TempDir,
}

/// Phones with the given screens, one adb server, the connector (with [`KEY`] unless `key` is false).
pub async fn rig(screens: &[(u32, u32)], key: bool) -> Rig {
    rig_with(screens, key, &[]).await
}

/// [`rig`] with more `serve` arguments.
pub async fn rig_with(screens: &[(u32, u32)], key: bool, extra: &[&str]) -> Rig {
    let adb = Arc::new(blocking(AdbServer::start).await.expect("adb is required (apt-get install adb)"));
    let mut sims = Vec::new();
    for (i, &(w, h)) in screens.iter().enumerate() {
        let cfg = SimConfig {
            model: format!("Sim {} ({w}x{h})", ["Alpha", "Bravo", "Charlie", "Delta"][i % 4]),
            screen_width: w,
            screen_height: h,
            ..SimConfig::default()
        };
        let sim = start_sim_with(cfg).await;
        let (a, s) = (adb.clone(), sim.serial());
        blocking(move || {
            a.connect(&s);
            a.wait_state(&s, "device");
        })
        .await;
        sims.push(sim);
    }
    let dir = tempfile::tempdir().unwrap();
    let server = format!("127.0.0.1:{}", adb.port);
    let key_file = dir.path().join("key");
    std::fs::write(&key_file, format!("{KEY}\n")).unwrap();
    let kf = key_file.to_str().unwrap().to_owned();
    let mut args = vec!["--adb-server", server.as_str()];
    if key {
        args.extend(["--api-key-file", kf.as_str()]);
    }
    args.extend_from_slice(extra);
    let srv = Server::start(&dir.path().join("data"), &args, &[]);
    Rig { adb, sims, srv, _dir: dir }
}

pub fn bearer() -> (&'static str, String) {
    ("Authorization", format!("Bearer {KEY}"))
}

impl Rig {
    /// `GET /api/v1/devices` with the key.
    pub async fn devices(&self) -> Value {
        let (k, v) = bearer();
        let r = http(self.srv.addr, "GET", "/api/v1/devices", &[(k, &v)], b"").await;
        assert_eq!(r.status, 200, "{}", r.text());
        r.json()
    }

    /// Polls the devices API until every phone is listed online (the tracker verifies phones after start-up).
    pub async fn wait_all_online(&self) -> Value {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let d = self.devices().await;
            let online = d["devices"].as_array().unwrap().iter().filter(|x| x["state"] == "online").count();
            if online == self.sims.len() {
                return d;
            }
            assert!(Instant::now() < deadline, "phones never all online: {d:#}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The wall's id of a phone.
    pub async fn id_of(&self, serial: &str) -> String {
        let d = self.devices().await;
        d["devices"].as_array().unwrap().iter().find(|x| x["serial"] == serial).expect("listed")["id"]
            .as_str()
            .unwrap()
            .to_owned()
    }

    /// Logs in through the API; returns (cookie header value, csrf token).
    pub async fn login(&self) -> (String, String) {
        let body = serde_json::json!({"api_key": KEY}).to_string();
        let r =
            http(self.srv.addr, "POST", "/api/v1/session", &[("Content-Type", "application/json")], body.as_bytes())
                .await;
        assert_eq!(r.status, 200, "{}", r.text());
        let set = r.header("set-cookie").expect("a session cookie").to_owned();
        let cookie = set.split(';').next().unwrap().to_owned();
        (cookie, r.json()["csrf_token"].as_str().unwrap().to_owned())
    }
}

/// Counts the phone's captures (each one wall or agent capture).
pub fn captures(sim: &SimPhone) -> usize {
    // A capture is, where the phone has gzip (issue 24), the parallel one (its first command writes the frame to a
    // temp file) or the single `screencap | gzip -1` stream, else `framebuffer:`.
    let gzip = xagent_adb_connector::pixels::capture::GZIP_CAPTURE;
    let to_file = |c: &str| c.starts_with("umask 077; screencap /data/local/tmp/xagent-");
    sim.commands().iter().filter(|c| c.as_str() == "framebuffer:" || c.as_str() == gzip || to_file(c)).count()
}

/// An agent on a socket of its own, bound to `serial`, that has sent `android_request_human` with `args`; the task
/// answers the call's ack (read straight off the socket: the wait may outlast [`Client::recv`]'s timeout), or
/// panics after `within`.
pub async fn request_human(
    addr: std::net::SocketAddr,
    serial: &str,
    args: Value,
    within: Duration,
) -> (String, tokio::task::JoinHandle<Value>) {
    use futures_util::StreamExt;
    let mut c = ws(addr, Some(KEY)).await;
    c.hello(None).await;
    let ch = c.bind(Some(serial)).await;
    let mut args = args;
    args["connector_channel_id"] = serde_json::json!(ch);
    let (_, rid) = c
        .send("tool.invoke", Some(&ch), serde_json::json!({"tool_id": "android_request_human", "arguments": args}))
        .await;
    let task = tokio::spawn(async move {
        let deadline = Instant::now() + within;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let m = tokio::time::timeout(left, c.ws.next()).await.expect("android_request_human never answered");
            let Some(Ok(tokio_tungstenite::tungstenite::Message::Text(t))) = m else { continue };
            let v: Value = serde_json::from_str(t.as_str()).unwrap();
            if v["request_id"] == serde_json::json!(rid) {
                return v;
            }
        }
    });
    (ch, task)
}

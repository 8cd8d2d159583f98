//! The integration rig: a private adb server, one simulated phone behind it, the real binary driving it, and one
//! data-plane session bound to the phone. The suites that drive a phone through its tools (`observe`, `device`,
//! `cancel`, `states`) share it; what only one suite needs stays there as its own `impl Rig` block.
#![allow(dead_code)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use xagent_adb_connector::sim::{SimConfig, SimPhone};

use super::adb::{blocking, setup_with, AdbServer};
use super::{error_code, ws, Client, Server};

pub struct Rig {
    pub adb: Arc<AdbServer>,
    pub sim: SimPhone,
    pub serial: String,
    pub srv: Server,
    pub c: Client,
    /// The bound channel.
    pub ch: String,
    /// The connector instance of the session (`connector.hello`), to come back as after a reconnect.
    pub cid: String,
    /// The channel's connection descriptor when it was bound (`auth.start` answering `authenticated`).
    pub bound: Value,
    /// The connector's data dir.
    pub dir: tempfile::TempDir,
}

impl Rig {
    /// The default phone, the connector with default flags.
    pub async fn start() -> Rig {
        Rig::with(SimConfig::default(), &[], None).await
    }

    /// A phone configured by `cfg`; `flags` follow `--adb-server`; `policy` is written into the data dir and given
    /// with `--policy`. Binds with pool semantics (no serial), retrying until the tracker has seen the phone.
    pub async fn with(cfg: SimConfig, flags: &[&str], policy: Option<Value>) -> Rig {
        let (adb, sim, serial) = setup_with(cfg).await.expect("adb is required (apt-get install adb)");
        Rig::bind(adb, sim, serial, flags, policy).await
    }

    /// The connector started on a phone a test prepared first (files, processes left from an earlier run).
    pub async fn attach(adb: Arc<AdbServer>, sim: SimPhone, serial: String, flags: &[&str]) -> Rig {
        Rig::bind(adb, sim, serial, flags, None).await
    }

    async fn bind(adb: Arc<AdbServer>, sim: SimPhone, serial: String, flags: &[&str], policy: Option<Value>) -> Rig {
        let dir = tempfile::tempdir().unwrap();
        let server = format!("127.0.0.1:{}", adb.port);
        let mut args = vec!["--adb-server".to_owned(), server];
        args.extend(flags.iter().map(|f| f.to_string()));
        if let Some(p) = policy {
            let path = dir.path().join("policy.json");
            std::fs::write(&path, p.to_string()).unwrap();
            args.extend(["--policy".to_owned(), path.to_str().unwrap().to_owned()]);
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let srv = Server::start(dir.path(), &args, &[]);
        let mut c = ws(srv.addr, None).await;
        let cid = c.hello(None).await;
        let (ch, _) = c.open(None).await;
        // The tracker needs a moment to see the device after start-up.
        let deadline = Instant::now() + Duration::from_secs(15);
        let bound = loop {
            let a = c.request("auth.start", Some(&ch), json!({"flow_id": "adb_device", "input": {}})).await;
            if a["payload"]["status"] == "authenticated" {
                break a["payload"]["connection_descriptor"].clone();
            }
            assert!(Instant::now() < deadline, "never bound: {a}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        Rig { adb, sim, serial, srv, c, ch, cid, bound, dir }
    }

    /// Changes the phone's state behind the connector's back, as a person, the app itself or another tool would.
    pub async fn sim_shell(&self, cmd: &str) {
        let (adb, serial, cmd) = (self.adb.clone(), self.serial.clone(), cmd.to_owned());
        let out = blocking(move || adb.adb(&["-s", &serial, "shell", &cmd])).await;
        assert_eq!(out.status, Some(0), "{}", out.stderr);
    }

    /// `tool.invoke` on the bound channel; whatever answers.
    pub async fn invoke_raw(&mut self, tool: &str, args: Value) -> Value {
        let ch = self.ch.clone();
        self.c.invoke(&ch, tool, args).await
    }

    /// `tool.invoke` on the bound channel; the ack (anything else fails the test).
    pub async fn invoke(&mut self, tool: &str, args: Value) -> Value {
        let ack = self.invoke_raw(tool, args).await;
        assert_eq!(ack["type"], "tool.invoke.ack", "{ack}");
        ack
    }

    /// The result of a call that must succeed.
    pub async fn ok(&mut self, tool: &str, args: Value) -> Value {
        let ack = self.invoke(tool, args).await;
        assert!(ack.get("error").is_none(), "{tool} failed: {ack}");
        ack["payload"]["result"].clone()
    }

    /// The error code and message of a call that must fail.
    pub async fn err(&mut self, tool: &str, args: Value) -> (String, String) {
        let ack = self.invoke(tool, args).await;
        (error_code(&ack).to_owned(), ack["error"]["message"].as_str().unwrap_or("").to_owned())
    }

    /// Waits for the next descriptor push of the bound channel.
    pub async fn push(&mut self) -> Value {
        loop {
            let v = self.c.recv().await;
            if v["type"] == "connection.descriptor.push" {
                assert_eq!(v["connector_channel_id"], json!(self.ch));
                return v["payload"]["connection_descriptor"].clone();
            }
        }
    }
}

//! Issue 50 item 4: the demo world's tasks, each completed by a scripted agent through `/mcp` (tests/mcp/world.py,
//! the official MCP Python SDK) on a simulated phone behind the real adb server, with the connector's defaults
//! (phone helper on). The agent finds what to tap by text in its observations; this test checks what it read and
//! what the phone did: Settings → Network & internet → Internet (Wi-Fi) and About phone; a link to an article and
//! its title; a one-time code requested on a login form, read from the notification, signed in with; a PIN lock
//! after POWER, opened by a person on the wall whom the agent asked (the connector never types credentials).

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::adb::{setup_with, AdbServer};
use common::{http, ws, Server};
use serde_json::{json, Value};
use xagent_adb_connector::sim::SimConfig;

const KEY: &str = "demo-world-test-key-5b1e93c7d2";
const PIN: &str = "1234";

fn bounded<F: std::future::Future>(f: F) -> tokio::time::Timeout<F> {
    tokio::time::timeout(Duration::from_secs(300), f)
}

/// The interpreter with the MCP SDK: a missing one fails the test (never a skip).
fn python() -> PathBuf {
    let p = std::env::var_os("MCP_PYTHON").map_or_else(|| PathBuf::from("/opt/mcpvenv/bin/python"), PathBuf::from);
    let ok = std::process::Command::new(&p).args(["-c", "import mcp"]).output().is_ok_and(|o| o.status.success());
    assert!(ok, "{} cannot import the MCP Python SDK (see tests/mcp.rs), or set MCP_PYTHON", p.display());
    p
}

struct Lab {
    adb: std::sync::Arc<AdbServer>,
    serial: String,
    sim: xagent_adb_connector::sim::SimPhone,
    srv: Server,
    _dir: tempfile::TempDir,
}

async fn lab() -> Lab {
    let (adb, sim, serial) = setup_with(SimConfig::default()).await.expect("adb is required (apt-get install adb)");
    let dir = tempfile::tempdir().unwrap();
    let keyfile = dir.path().join("key");
    std::fs::write(&keyfile, format!("{KEY}\n")).unwrap();
    let server = format!("127.0.0.1:{}", adb.port);
    let data = dir.path().join("data");
    let srv = Server::start(
        &data,
        &["--adb-server", &server, "--api-key-file", keyfile.to_str().unwrap(), "--phone-helper", "auto"],
        &[],
    );
    // Wait until the connector sees the phone (a bind and a release).
    let mut c = ws(srv.addr, Some(KEY)).await;
    c.hello(None).await;
    let ch = c.bind(None).await;
    let out = c.request("auth.logout", Some(&ch), json!({})).await;
    assert!(out.get("error").is_none(), "{out}");
    Lab { adb, serial, sim, srv, _dir: dir }
}

/// A shell command on the phone through the adb server; its stdout.
async fn sh(lab: &Lab, cmd: &str) -> String {
    let (adb, serial, cmd) = (lab.adb.clone(), lab.serial.clone(), cmd.to_owned());
    let out = common::adb::blocking(move || adb.adb(&["-s", &serial, "shell", &cmd])).await;
    assert_eq!(out.status, Some(0), "{}", out.stderr);
    out.text()
}

fn agent(lab: &Lab, task: &str) -> tokio::process::Child {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/world.py");
    let url = format!("http://{}/mcp", lab.srv.addr);
    let mut cmd = tokio::process::Command::new(python());
    cmd.arg(script).args(["http", &url, KEY, task]).kill_on_drop(true);
    cmd.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
    cmd.spawn().expect("python")
}

async fn finish(child: tokio::process::Child) -> Value {
    let out = tokio::time::timeout(Duration::from_secs(240), child.wait_with_output())
        .await
        .expect("the MCP agent timed out")
        .unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "MCP agent failed: {stderr}\n{stdout}");
    let v: Value =
        serde_json::from_str(stdout.lines().last().unwrap_or("")).unwrap_or_else(|e| panic!("{e}: {stdout}\n{stderr}"));
    assert_eq!(v["ok"], true, "the agent did not finish: {}\n{:#}", v["failure"], v["calls"]);
    v
}

async fn run(lab: &Lab, task: &str) -> Value {
    finish(agent(lab, task)).await
}

fn has(list: &Value, text: &str) -> bool {
    list.as_array().is_some_and(|l| l.iter().any(|t| t == text))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_opens_wifi_settings_and_reads_about_phone() {
    bounded(async {
        let lab = lab().await;
        let out = run(&lab, "settings").await;
        for row in ["Internet", "Calls & SMS", "Private DNS"] {
            assert!(has(&out["network_page"], row), "{row}: {}", out["network_page"]);
        }
        for row in ["Internet", "Wi-Fi", "SimWifi", "Add network"] {
            assert!(has(&out["internet_page"], row), "{row}: {}", out["internet_page"]);
        }
        assert_eq!(out["wifi_switch"]["checked"], true, "{}", out["wifi_switch"]);
        assert_eq!(out["connected"], "Connected");
        assert!(has(&out["after_back"], "Network & internet") && has(&out["after_back"], "Private DNS"));
        assert!(has(&out["after_back_2"], "Settings") && !has(&out["after_back_2"], "Private DNS"));
        let cfg = SimConfig::default();
        assert_eq!(
            out["about"],
            json!({"Model": cfg.model, "Android version": cfg.android_version, "Build number": "UQ1A.240105.004"}),
        );
        assert!(has(&out["after_up"], "About phone") && !has(&out["after_up"], "Build number"), "{}", out["after_up"]);
        assert!(lab.sim.clicks().iter().any(|c| c == "Internet"), "{:?}", lab.sim.clicks());
    })
    .await
    .expect("timed out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_follows_a_link_to_an_article_and_reads_its_title() {
    bounded(async {
        let lab = lab().await;
        let out = run(&lab, "article").await;
        assert_eq!(out["start_title"], "Sim Start Page");
        assert_eq!(out["news_url"], "https://sim.example/news");
        assert_eq!(out["picked"], "Library opens late on Fridays", "{}", out["news_links"]);
        assert_eq!(out["article_title"], "Library opens late on Fridays");
        assert_eq!(out["article_heading"], "Library opens late on Fridays");
        assert_eq!(out["article_url"], "https://sim.example/article/1");
        assert_eq!(out["back_url"], "https://sim.example/news", "BACK goes one page back");
        assert!(has(&out["error_page"], "This site can\u{2019}t be reached"), "{}", out["error_page"]);
        assert!(has(&out["error_page"], "DNS_PROBE_FINISHED_NXDOMAIN"), "{}", out["error_page"]);
        assert_eq!(lab.sim.browser_at(), "nowhere.invalid/page");
    })
    .await
    .expect("timed out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_signs_in_with_the_code_from_the_sms_notification() {
    bounded(async {
        let lab = lab().await;
        let out = run(&lab, "otp").await;
        let sms = lab.sim.sms();
        assert_eq!(sms.len(), 1, "{sms:?}");
        let code = out["code"].as_str().unwrap_or_else(|| panic!("no code read: {out:#}"));
        assert!(sms[0].1.contains(code), "{sms:?} vs {code}");
        let n = &out["notification"];
        assert_eq!(n["package"], "com.google.android.apps.messaging", "{n}");
        assert_eq!(n["title"], "Sim Example", "{n}");
        assert!(has(&out["signed_in"], "Welcome, alice"), "{}", out["signed_in"]);
        assert_eq!(out["signed_in_url"], "https://sim.example/account");
        assert!(out["shade"].as_array().unwrap().iter().any(|t| t.as_str().is_some_and(|t| t.contains(code))));
        assert!(has(&out["messages"], "Sim Example"), "{}", out["messages"]);
        assert!(out["conversation"].as_array().unwrap().iter().any(|t| t.as_str().is_some_and(|t| t.contains(code))));
        // The password never showed in what the tools answered (the agent's own arguments aside).
        for c in out["calls"].as_array().unwrap() {
            assert!(!c["text"].as_str().unwrap_or("").contains("correct-horse"), "{c}");
        }
    })
    .await
    .expect("timed out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pin_lock_after_power_is_opened_by_the_person_the_agent_asked() {
    bounded(async {
        let lab = lab().await;
        lab.sim.set_pin_lock(PIN);
        let child = agent(&lab, "lock");
        // The person: waits for the agent's request on the wall, takes the phone over, types the PIN, returns it.
        let auth = format!("Bearer {KEY}");
        let headers = [("authorization", auth.as_str()), ("content-type", "application/json")];
        let mut id = None;
        for _ in 0..600 {
            let devices = http(lab.srv.addr, "GET", "/api/v1/devices", &headers, b"").await.json();
            let d = &devices["devices"][0];
            if !d["human_request"].is_null() {
                id = d["id"].as_str().map(str::to_owned);
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let id = id.expect("the agent asked for a person");
        assert!(lab.sim.locked(), "locked when the person comes");
        let base = format!("/api/v1/devices/{id}");
        let r = http(lab.srv.addr, "POST", &format!("{base}/takeover"), &headers, b"{}").await;
        assert_eq!(r.status, 200, "{}", r.text());
        for body in [json!({"action": "text", "text": PIN}), json!({"action": "key", "key": "ENTER"})] {
            let r = http(lab.srv.addr, "POST", &format!("{base}/input"), &headers, body.to_string().as_bytes()).await;
            assert_eq!(r.status, 200, "{body}: {}", r.text());
        }
        assert!(!lab.sim.locked(), "the PIN opened the keyguard");
        let note = json!({"note": "unlocked"}).to_string();
        let r = http(lab.srv.addr, "POST", &format!("{base}/return"), &headers, note.as_bytes()).await;
        assert_eq!(r.status, 200, "{}", r.text());

        let out = finish(child).await;
        assert_eq!(out["after_power"]["screen_on"], false, "{}", out["after_power"]);
        let woke = &out["after_wake"];
        assert_eq!(
            (&woke["screen_on"], &woke["locked"], &woke["lock_secure"]),
            (&json!(true), &json!(true), &json!(true))
        );
        assert_eq!(out["locked_seen"], true);
        for t in ["Enter PIN", "1", "0", "Enter"] {
            assert!(has(&out["lock_screen"], t), "{t}: {}", out["lock_screen"]);
        }
        assert!(out["unlock"]["error"].as_str().unwrap_or("").contains("secure_lock"), "{}", out["unlock"]);
        assert_eq!(out["human"]["note"], "unlocked", "{}", out["human"]);
        assert_eq!(out["after_unlock"]["locked"], false, "{}", out["after_unlock"]);
        assert!(has(&out["home"], "Sim Home"), "{}", out["home"]);
        // The agent never sent the PIN (the person typed it).
        for c in out["calls"].as_array().unwrap() {
            assert!(!c["args"].to_string().contains(PIN), "{c}");
        }
    })
    .await
    .expect("timed out");
}

/// A wrong PIN is refused and cleared; the keyguard stays.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_pin_keeps_the_phone_locked() {
    bounded(async {
        let lab = lab().await;
        lab.sim.set_pin_lock(PIN);
        lab.sim.set_screen_on(false);
        lab.sim.set_screen_on(true);
        assert!(lab.sim.locked());
        sh(&lab, "input text 9999").await;
        sh(&lab, "input keyevent KEYCODE_ENTER").await;
        assert!(lab.sim.locked(), "a wrong PIN opened it");
        let dump = sh(&lab, "uiautomator dump /dev/tty").await;
        assert!(dump.contains("text=\"Wrong PIN\""), "{dump}");
        assert!(dump.contains("resource-id=\"com.android.systemui:id/key_enter\""), "{dump}");
        sh(&lab, "input text 1234").await;
        sh(&lab, "input keyevent KEYCODE_ENTER").await;
        assert!(!lab.sim.locked());
    })
    .await
    .expect("timed out");
}

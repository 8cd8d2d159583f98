//! Issue 38: the MCP endpoint (`/mcp`, Streamable HTTP) and the stdio bridge (`mcp --url`), driven by a real MCP
//! client no one here wrote — the official Python SDK (`mcp` on PyPI, pinned in tests/mcp/requirements.txt,
//! installed by README's test command into /opt/mcpvenv; `MCP_PYTHON` names another interpreter) — against the
//! simulated phone through the real adb server. Beside it, raw HTTP: the tool list is the card's, a session holds its
//! phone until it ends, and the key and the Origin/Host rules refuse what they must.

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::adb::{setup_with, AdbServer};
use common::{http, mcp_post, ws, HttpResponse, Server};
use serde_json::{json, Value};
use xagent_adb_connector::sim::{InputEvent, SimConfig, SimPhone};

const KEY: &str = "mcp-test-key-5f1c2a9e7b3d";

fn bounded<F: std::future::Future>(f: F) -> tokio::time::Timeout<F> {
    tokio::time::timeout(Duration::from_secs(240), f)
}

/// The interpreter with the MCP SDK: a missing one fails the test (never a skip), saying how to install it.
fn python() -> PathBuf {
    let p = std::env::var_os("MCP_PYTHON").map_or_else(|| PathBuf::from("/opt/mcpvenv/bin/python"), PathBuf::from);
    let ok = std::process::Command::new(&p).args(["-c", "import mcp"]).output().is_ok_and(|o| o.status.success());
    assert!(
        ok,
        "{} cannot import the MCP Python SDK: python3 -m venv /opt/mcpvenv && /opt/mcpvenv/bin/pip install -r \
         tests/mcp/requirements.txt (README's test command does this), or set MCP_PYTHON",
        p.display()
    );
    p
}

/// A connector with a key, one simulated phone behind the real adb server, the phone seen and free.
struct Lab {
    _adb: std::sync::Arc<AdbServer>,
    sim: SimPhone,
    srv: Server,
    dir: tempfile::TempDir,
    keyfile: PathBuf,
}

async fn lab() -> Lab {
    lab_with(&[]).await
}

/// The lab on the shell path (`--phone-helper off`): for the tests that hold a tap on the phone by stalling its
/// `input` command (the sim cannot hold a tap the phone helper carries out; its taps do not run as commands).
async fn shell_lab() -> Lab {
    lab_with(&["--phone-helper", "off"]).await
}

async fn lab_with(extra: &[&str]) -> Lab {
    let (adb, sim, _serial) = setup_with(SimConfig::default()).await.expect("adb is required (apt-get install adb)");
    let dir = tempfile::tempdir().unwrap();
    let keyfile = dir.path().join("key");
    std::fs::write(&keyfile, format!("{KEY}\n")).unwrap();
    let server = format!("127.0.0.1:{}", adb.port);
    let data = dir.path().join("data");
    // These tests count the phone's `input` commands: a release's Home press (clean by default, issue 47) is
    // opted out of; the rest of the clean release runs as it does without a policy.
    let policy = dir.path().join("policy.json");
    std::fs::write(&policy, json!({"lease_conditions": {"release": {"home": false}}}).to_string()).unwrap();
    let mut args = vec![
        "--adb-server",
        &server,
        "--api-key-file",
        keyfile.to_str().unwrap(),
        "--policy",
        policy.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let srv = Server::start(&data, &args, &[]);
    // Wait until the tracker has the phone (bound once over the data plane, then given back).
    let mut c = ws(srv.addr, Some(KEY)).await;
    c.hello(None).await;
    let ch = c.bind(None).await;
    let out = c.request("auth.logout", Some(&ch), json!({})).await;
    assert!(out.get("error").is_none(), "{out}");
    Lab { _adb: adb, sim, srv, dir, keyfile }
}

/// Runs tests/mcp/client.py; the JSON it printed.
async fn client(args: &[&str]) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/client.py");
    let mut cmd = tokio::process::Command::new(python());
    cmd.arg(script).args(args).kill_on_drop(true);
    let out =
        tokio::time::timeout(Duration::from_secs(180), cmd.output()).await.expect("MCP client timed out").unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "MCP client failed: {stderr}\n{stdout}");
    serde_json::from_str(stdout.lines().last().unwrap_or("")).unwrap_or_else(|e| panic!("{e}: {stdout}\n{stderr}"))
}

/// What the client saw of one observe → tap "Increment" → observe round, and of a call with bad arguments.
fn check_round(out: &Value, sim: &SimPhone) {
    let tools: Vec<&str> = out["tools"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(tools.contains(&"select_device") && tools.contains(&"android_observe"), "{tools:?}");
    assert_eq!(out["observe_error"], false, "{out}");
    // Issue 49: the home screen's elements describe it, so a default observe leaves the picture out and says how
    // to get it; `picture: true` attaches it.
    assert_eq!(out["lean_images"], 0, "{out}");
    assert!(out["lean_text"].as_str().unwrap().contains("picture: true attaches it"), "{out}");
    assert_eq!(out["images"][0]["mime"], "image/jpeg", "the marked screenshot comes as MCP image content: {out}");
    assert_eq!(out["jpeg"], true, "{out}");
    assert_eq!(out["tap_error"], false, "{out}");
    assert_eq!(out["tap"]["element"]["text"], "Increment", "{out}");
    // Settle ran around the tap and its effect came back (tests/settle.rs owns its values; on a loaded box the frame
    // before the tap may miss its deadline, which leaves `screen_changed` null, never false).
    let effect = &out["tap"]["effect"];
    assert!(effect["settled"].is_boolean() && effect["settle_ms"].is_u64(), "{out}");
    assert!(effect["foreground"].as_str().is_some_and(|f| f.starts_with("com.android.launcher3/")), "{out}");
    assert_ne!(effect["screen_changed"], false, "{out}");
    assert!(out["texts_after"].as_array().unwrap().contains(&json!("Count: 1")), "{out}");
    assert_eq!(sim.counter(), 1, "the phone saw one tap");
    assert_eq!(out["bad"]["is_error"], true, "{out}");
    assert_eq!(out["bad"]["structured"]["error"]["code"], "invalid_arguments", "{out}");
    assert!(out["bad"]["text"].as_str().unwrap().starts_with("invalid_arguments: "), "{out}");
}

/// The session ended with the client (its DELETE): the phone is free for the data plane again, and the tap is in
/// the audit chain like any other call.
async fn check_released_and_audited(lab: &Lab) {
    let mut c = ws(lab.srv.addr, Some(KEY)).await;
    c.hello(None).await;
    let (ch, _) = c.open(None).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let a = c.request("auth.start", Some(&ch), json!({"flow_id": "adb_device", "input": {}})).await;
        if a["payload"]["status"] == "authenticated" {
            break;
        }
        assert!(Instant::now() < deadline, "the MCP session did not give its phone back: {a}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let data = lab.dir.path().join("data");
    let audit = std::process::Command::new(env!("CARGO_BIN_EXE_xagent-adb-connector"))
        .args(["audit", "tail", "--json", "--data-dir", data.to_str().unwrap()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&audit.stdout);
    assert!(text.contains("android_tap"), "the MCP tap is audited: {text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_mcp_client_observes_taps_an_element_and_reads_the_effect() {
    bounded(async {
        let lab = lab().await;
        let url = format!("http://{}/mcp", lab.srv.addr);
        let out = client(&["round", "http", &url, KEY]).await;
        assert_eq!(out["server"], "xagent-adb-connector");
        check_round(&out, &lab.sim);
        check_released_and_audited(&lab).await;
    })
    .await
    .expect("test timed out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stdio_bridge_carries_a_real_mcp_client_to_the_same_phone() {
    bounded(async {
        let lab = lab().await;
        let url = format!("http://{}", lab.srv.addr);
        let bin = env!("CARGO_BIN_EXE_xagent-adb-connector");
        let out = client(&["round", "stdio", bin, &url, lab.keyfile.to_str().unwrap()]).await;
        check_round(&out, &lab.sim);
        check_released_and_audited(&lab).await;
    })
    .await
    .expect("test timed out");
}

/// One JSON-RPC request to `/mcp`.
async fn rpc(srv: &Server, session: Option<&str>, headers: &[(&str, &str)], msg: Value) -> HttpResponse {
    mcp_post(srv.addr, KEY, session, headers, &msg).await
}

async fn initialize(srv: &Server) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                      "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}});
    let r = rpc(srv, None, &[], init).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["result"]["protocolVersion"], "2025-06-18");
    r.header("mcp-session-id").expect("a session id").to_owned()
}

fn call(id: u64, name: &str, args: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": args}})
}

/// The MCP tool list and the card agree: the same tools in the same order, each input schema the card's without
/// `connector_channel_id` (the session's channel fills it in), after the MCP-only tools: `select_device` with the auth
/// flow's fields, `list_devices`, `release_device`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_mcp_tool_list_is_the_cards() {
    bounded(async {
        let dir = tempfile::tempdir().unwrap();
        let srv = Server::start(dir.path(), &[], &[("XAGENT_CONNECTOR_API_KEY", KEY)]);
        let card = http(srv.addr, "GET", "/connector-card.json", &[], b"").await.json();
        let sid = initialize(&srv).await;
        let list = rpc(&srv, Some(&sid), &[], json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})).await;
        assert_eq!(list.status, 200);
        let listed = list.json()["result"]["tools"].as_array().unwrap().clone();
        let (mcp_only, rest) = listed.split_at(3);
        let names: Vec<&Value> = mcp_only.iter().map(|t| &t["name"]).collect();
        assert_eq!(names, [&json!("select_device"), &json!("list_devices"), &json!("release_device")]);
        let select = &mcp_only[0];
        let fields: Vec<&str> =
            card["auth_flows"][0]["fields"].as_array().unwrap().iter().map(|f| f["name"].as_str().unwrap()).collect();
        let props: Vec<&str> =
            select["inputSchema"]["properties"].as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(props.len(), fields.len());
        assert!(fields.iter().all(|f| props.contains(f)), "{props:?} vs {fields:?}");
        let card_tools = card["tools"].as_array().unwrap();
        assert_eq!(rest.len(), card_tools.len());
        for (m, c) in rest.iter().zip(card_tools) {
            assert_eq!(m["name"], c["tool_id"]);
            assert_eq!((&m["title"], &m["description"]), (&c["title"], &c["description"]));
            let mut want = c["input_schema"].clone();
            want["properties"].as_object_mut().unwrap().remove("connector_channel_id");
            want["required"].as_array_mut().unwrap().retain(|v| v != "connector_channel_id");
            assert_eq!(m["inputSchema"], want, "{}", c["tool_id"]);
        }
        let bytes = list.body.len();
        let card_tools_bytes = serde_json::to_string(&card["tools"]).unwrap().len();
        eprintln!("tools/list answer: {bytes} bytes; the card's tools: {card_tools_bytes} bytes");
        let annotations: usize =
            rest.iter().map(|t| t["annotations"].to_string().len() + r#","annotations":"#.len()).sum();
        let mcp_only: Vec<usize> = mcp_only.iter().map(|t| t.to_string().len()).collect();
        eprintln!("… annotations of the card's tools: {annotations} bytes; the MCP-only tools: {mcp_only:?} bytes");
    })
    .await
    .expect("test timed out");
}

/// One session is one channel holding one phone: the wall lists it as held, a second session finds no free phone
/// (as a second `auth.start` would), and the phone is free again the moment the first session ends (`DELETE`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_session_holds_its_phone_until_it_ends() {
    bounded(async {
        let lab = lab().await;
        let a = initialize(&lab.srv).await;
        let status = rpc(&lab.srv, Some(&a), &[], call(2, "android_device_status", json!({}))).await.json();
        assert_eq!(status["result"]["isError"], Value::Null, "{status}");
        let auth = format!("Bearer {KEY}");
        let wall = http(lab.srv.addr, "GET", "/api/v1/devices", &[("Authorization", &auth)], b"").await;
        assert!(
            wall.text().contains("\"held_by\":{"),
            "the wall sees the MCP session's phone as held: {}",
            wall.text()
        );

        let b = initialize(&lab.srv).await;
        let busy = rpc(&lab.srv, Some(&b), &[], call(2, "android_device_status", json!({}))).await.json();
        assert_eq!(busy["result"]["isError"], true, "{busy}");

        let del = http(lab.srv.addr, "DELETE", "/mcp", &[("Authorization", &auth), ("Mcp-Session-Id", &a)], b"").await;
        assert_eq!(del.status, 204);
        let gone = rpc(&lab.srv, Some(&a), &[], json!({"jsonrpc": "2.0", "id": 3, "method": "ping"})).await;
        assert_eq!(gone.status, 404, "an ended session is unknown: {}", gone.text());
        let now = rpc(&lab.srv, Some(&b), &[], call(3, "android_device_status", json!({}))).await.json();
        assert_eq!(now["result"]["isError"], Value::Null, "the phone went to the waiting session: {now}");
        let del = http(lab.srv.addr, "DELETE", "/mcp", &[("Authorization", &auth), ("Mcp-Session-Id", &b)], b"").await;
        assert_eq!(del.status, 204);
    })
    .await
    .expect("test timed out");
}

/// The system API key as a Bearer token (under the per-source failure limit), and the transport's Origin rule:
/// a page of another origin is refused with or without a key; without a key, a foreign `Host` too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_refuses_no_key_a_wrong_key_and_foreign_pages() {
    bounded(async {
        let dir = tempfile::tempdir().unwrap();
        let srv = Server::start(dir.path(), &[], &[("XAGENT_CONNECTOR_API_KEY", KEY)]);
        let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}).to_string();
        let h = [("Content-Type", "application/json")];
        let none = http(srv.addr, "POST", "/mcp", &h, ping.as_bytes()).await;
        assert_eq!(none.status, 401, "{}", none.text());
        let wrong = [("Content-Type", "application/json"), ("Authorization", "Bearer not-the-key")];
        assert_eq!(http(srv.addr, "POST", "/mcp", &wrong, ping.as_bytes()).await.status, 401);
        let metrics =
            http(srv.addr, "GET", "/metrics", &[("Authorization", &format!("Bearer {KEY}"))], b"").await.text();
        assert!(metrics.contains("xagent_auth_failures_total{surface=\"mcp\"} 1"), "{metrics}");
        // The per-source limit counts /mcp like every surface: after its failures even the right key waits.
        for _ in 0..10 {
            http(srv.addr, "POST", "/mcp", &wrong, ping.as_bytes()).await;
        }
        let throttled =
            rpc(&srv, None, &[], json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}})).await;
        assert_eq!(throttled.status, 429, "{}", throttled.text());

        let dir = tempfile::tempdir().unwrap();
        let srv = Server::start(dir.path(), &[], &[("XAGENT_CONNECTOR_API_KEY", KEY)]);
        let foreign = rpc(
            &srv,
            None,
            &[("Origin", "http://evil.example")],
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}),
        )
        .await;
        assert_eq!(foreign.status, 403, "{}", foreign.text());
        assert_eq!(foreign.json()["error"]["code"], "origin_not_allowed");
        let own = format!("http://{}", srv.addr);
        assert_eq!(initialize_with(&srv, &[("Origin", &own)]).await, 200, "the connector's own origin is fine");

        // No key: a rebound name (`Host` the attacker's) is refused, an IP literal answered.
        let dir = tempfile::tempdir().unwrap();
        let open = Server::start(dir.path(), &[], &[]);
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}).to_string();
        let rebound = raw_post_status(open.addr, &format!("rebind.evil.example:{}", open.addr.port()), &init).await;
        assert_eq!(rebound, 403, "a rebound name is refused");
        let page = http(open.addr, "POST", "/mcp", &[("Origin", "http://evil.example")], init.as_bytes()).await;
        assert_eq!(page.status, 403, "{}", page.text());
        assert_eq!(http(open.addr, "POST", "/mcp", &[], init.as_bytes()).await.status, 200);
    })
    .await
    .expect("test timed out");
}

async fn initialize_with(srv: &Server, headers: &[(&str, &str)]) -> u16 {
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25"}});
    rpc(srv, None, headers, init).await.status
}

/// A POST to `/mcp` under the given `Host` (the shared helper always names the address); its status.
async fn raw_post_status(addr: std::net::SocketAddr, host: &str, body: &str) -> u16 {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let req = format!(
        "POST /mcp HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut raw)).await.unwrap().unwrap();
    String::from_utf8_lossy(&raw).split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or(0)
}

/// Polls `cond` every 20 ms until it holds; panics with `what` after `within`.
async fn eventually(within: Duration, what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + within;
    while !cond() {
        assert!(Instant::now() < deadline, "never happened within {within:?}: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// What the client heard of a wait that lasted (`Count: 1` appears when it taps, 3 s in): progress notifications
/// while it ran — the time elapsed at least every second and the wait's own polls — then the result.
fn check_progress(out: &Value, sim: &SimPhone) {
    assert_eq!(out["tap_error"], false, "{out}");
    assert_eq!(out["wait_error"], false, "{out}");
    assert_eq!(out["wait"]["found"], true, "{out}");
    assert!(out["wait"]["waited_ms"].as_u64().unwrap() >= 2500, "the wait lasted until the tap: {out}");
    assert_eq!(sim.counter(), 1);
    let notes = out["notes"].as_array().unwrap();
    let before = out["notes_before_result"].as_u64().unwrap() as usize;
    assert!(before >= 2, "at least two progress notifications came before the result: {out}");
    let values: Vec<f64> = notes.iter().map(|n| n["progress"].as_f64().unwrap()).collect();
    assert!(values.windows(2).all(|w| w[0] < w[1]), "progress grows with every notification: {values:?}");
    let says = |what: &str| notes.iter().any(|n| n["message"].as_str().is_some_and(|m| m.contains(what)));
    assert!(says("s elapsed"), "a heartbeat with the time elapsed: {out}");
    assert!(says("polled the screen: not on screen yet"), "the wait's own polls: {out}");
}

/// Issue 38: a long call with a progress token is answered as an event stream — progress while it runs, then the
/// result — heard by the real SDK's progress callback.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_call_streams_progress_to_a_real_mcp_client() {
    bounded(async {
        let lab = lab().await;
        let url = format!("http://{}/mcp", lab.srv.addr);
        let out = client(&["progress", "http", &url, KEY]).await;
        check_progress(&out, &lab.sim);
    })
    .await
    .expect("test timed out");
}

/// The stdio bridge relays the event stream as it comes: progress lines while the call runs, then its response.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stdio_bridge_relays_progress() {
    bounded(async {
        let lab = lab().await;
        let url = format!("http://{}", lab.srv.addr);
        let bin = env!("CARGO_BIN_EXE_xagent-adb-connector");
        let out = client(&["progress", "stdio", bin, &url, lab.keyfile.to_str().unwrap()]).await;
        check_progress(&out, &lab.sim);
    })
    .await
    .expect("test timed out");
}

/// The audit trail of the lab's connector (`audit tail --json`).
fn audit(lab: &Lab) -> String {
    let data = lab.dir.path().join("data");
    let audit = std::process::Command::new(env!("CARGO_BIN_EXE_xagent-adb-connector"))
        .args(["audit", "tail", "--json", "--data-dir", data.to_str().unwrap()])
        .output()
        .unwrap();
    String::from_utf8_lossy(&audit.stdout).into_owned()
}

/// Issue 38: the real SDK gives up on two taps the phone holds (one streamed, one plain JSON) and sends
/// `notifications/cancelled`: each call is stopped the way a channel close stops one — its device command hung up,
/// never sent again —, audited, and the session's next call works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_the_client_cancels_stops_on_the_phone() {
    bounded(async {
        let lab = shell_lab().await;
        lab.sim.stall("input");
        let url = format!("http://{}/mcp", lab.srv.addr);
        let out = client(&["cancel", "http", &url, KEY]).await;
        assert_eq!(out["status_error"], false, "{out}");
        assert_eq!((&out["streamed"], &out["plain"]), (&json!("cancelled"), &json!("cancelled")), "{out}");
        assert_eq!(out["after_error"], false, "the next call works: {out}");
        let sim = &lab.sim;
        eventually(Duration::from_secs(5), "both held taps hung up", || sim.hung_up().len() == 2).await;
        assert!(sim.hung_up().iter().all(|c| c.starts_with("input tap 10 10")), "{:?}", sim.hung_up());
        assert!(sim.stalled().is_empty(), "nothing left running on the phone: {:?}", sim.stalled());
        let taps = sim.commands().iter().filter(|c| c.starts_with("input")).count();
        assert_eq!(taps, 2, "a cancelled tap is not sent again: {:?}", sim.commands());
        let text = audit(&lab);
        assert!(
            text.matches("android_tap").count() >= 2 && text.contains("tool_invoke_failed"),
            "both cancelled taps are in the audit chain with their outcome: {text}"
        );
    })
    .await
    .expect("test timed out");
}

/// A raw POST to `/mcp` on a connection of its own, left open: the caller reads the answer as it streams.
async fn open_post(srv: &Server, session: &str, msg: &Value) -> tokio::net::TcpStream {
    use tokio::io::AsyncWriteExt;
    let body = msg.to_string();
    let mut s = tokio::net::TcpStream::connect(srv.addr).await.unwrap();
    let req = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {KEY}\r\nMcp-Session-Id: {session}\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\n\r\n{body}",
        srv.addr,
        body.len()
    );
    s.write_all(req.as_bytes()).await.unwrap();
    s
}

/// Reads `s` until `until` is in what was read (`None`: until the connection or the chunked body ends).
async fn read_until(s: &mut tokio::net::TcpStream, until: Option<&str>) -> String {
    use tokio::io::AsyncReadExt;
    let mut raw = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let text = String::from_utf8_lossy(&raw).into_owned();
        if until.is_some_and(|u| text.contains(u)) || (until.is_none() && text.contains("\r\n0\r\n\r\n")) {
            return text;
        }
        match tokio::time::timeout(Duration::from_secs(20), s.read(&mut buf)).await {
            Ok(Ok(0)) => return text,
            Ok(Ok(n)) => raw.extend_from_slice(&buf[..n]),
            other => panic!("no more of the answer ({other:?}); so far: {text}"),
        }
    }
}

/// The transport's rules for a cancelled request, on the wire: after `notifications/cancelled` the request's event
/// stream ends with no response in it; and a client that closes its connection (an event stream or a plain JSON
/// wait) cancels the call as well — in each case the phone's held command is hung up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_call_is_not_answered_and_a_closed_connection_cancels() {
    bounded(async {
        let lab = shell_lab().await;
        let sid = initialize(&lab.srv).await;
        let status = rpc(&lab.srv, Some(&sid), &[], call(2, "android_device_status", json!({}))).await.json();
        assert_eq!(status["result"]["isError"], Value::Null, "{status}");
        lab.sim.stall("input");
        let sim = &lab.sim;
        let tap = |id: u64, token: bool| {
            let mut m = call(id, "android_tap", json!({"x": 10, "y": 10, "settle": false}));
            if token {
                m["params"]["_meta"] = json!({"progressToken": format!("tok-{id}")});
            }
            m
        };

        // 1. notifications/cancelled: the stream had progress, then ends without the response.
        let mut s = open_post(&lab.srv, &sid, &tap(7, true)).await;
        let head = read_until(&mut s, Some("notifications/progress")).await;
        assert!(head.to_ascii_lowercase().contains("content-type: text/event-stream"), "{head}");
        assert!(head.contains("\"progressToken\":\"tok-7\""), "{head}");
        eventually(Duration::from_secs(5), "the tap is held on the phone", || sim.stalled().len() == 1).await;
        let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7, "reason": "test"}});
        assert_eq!(rpc(&lab.srv, Some(&sid), &[], cancel).await.status, 202);
        let rest = read_until(&mut s, None).await;
        assert!(!rest.contains("\"result\"") && !rest.contains("\"id\":7"), "a cancelled request is not answered: {rest}");
        eventually(Duration::from_secs(5), "the cancelled tap is hung up", || sim.hung_up().len() == 1).await;

        // 2. The client closes an event stream: the call is cancelled.
        let s = open_post(&lab.srv, &sid, &tap(8, true)).await;
        eventually(Duration::from_secs(5), "the second tap is held", || sim.stalled().len() == 1).await;
        drop(s);
        eventually(Duration::from_secs(5), "the abandoned streamed tap is hung up", || sim.hung_up().len() == 2).await;

        // 3. The client closes a plain JSON request's connection: the same.
        let s = open_post(&lab.srv, &sid, &tap(9, false)).await;
        eventually(Duration::from_secs(5), "the third tap is held", || sim.stalled().len() == 1).await;
        drop(s);
        eventually(Duration::from_secs(5), "the abandoned plain tap is hung up", || sim.hung_up().len() == 3).await;

        assert_eq!(sim.commands().iter().filter(|c| c.starts_with("input")).count(), 3, "{:?}", sim.commands());
        lab.sim.release("input");
        let next = rpc(&lab.srv, Some(&sid), &[], tap(10, false)).await.json();
        assert_eq!(next["result"]["isError"], Value::Null, "the session's next call works: {next}");
        assert_eq!(sim.commands().iter().filter(|c| c.starts_with("input")).count(), 4);
    })
    .await
    .expect("test timed out");
}

/// The same cancel with the phone helper on (what users run): a swipe the helper is playing cannot be hung up
/// like an `input` command, but the cancelled request is still not answered, nothing is sent again, and the
/// session's next call works. (Stopping what the helper still plays is the binding's end's: tests/lease_clean.rs.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_helper_swipe_is_not_answered_and_the_next_call_works() {
    bounded(async {
        let lab = lab().await;
        let sid = initialize(&lab.srv).await;
        let sim = &lab.sim;
        sim.clear_events();
        let mut swipe = call(7, "android_swipe", json!({"x1": 300, "y1": 1400, "x2": 300, "y2": 400,
                                                        "duration_ms": 6000, "settle": false}));
        swipe["params"]["_meta"] = json!({"progressToken": "tok-7"});
        let mut s = open_post(&lab.srv, &sid, &swipe).await;
        let head = read_until(&mut s, Some("notifications/progress")).await;
        assert!(head.contains("\"progressToken\":\"tok-7\""), "{head}");
        let first = InputEvent::Swipe { x1: 300, y1: 1400, x2: 300, y2: 400, duration_ms: 6000 };
        eventually(Duration::from_secs(30), "the swipe reached the phone", || sim.events().contains(&first)).await;
        assert!(!sim.commands().iter().any(|c| c.starts_with("input")), "through the helper: {:?}", sim.commands());
        let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7, "reason": "test"}});
        assert_eq!(rpc(&lab.srv, Some(&sid), &[], cancel).await.status, 202);
        let rest = read_until(&mut s, None).await;
        assert!(!rest.contains("\"result\"") && !rest.contains("\"id\":7"), "a cancelled request is not answered: {rest}");
        let next = rpc(&lab.srv, Some(&sid), &[], call(8, "android_tap", json!({"x": 10, "y": 10, "settle": false})))
            .await
            .json();
        assert_eq!(next["result"]["isError"], Value::Null, "the session's next call works: {next}");
        let swipes = sim.events().iter().filter(|e| matches!(e, InputEvent::Swipe { .. })).count();
        assert_eq!(swipes, 1, "the cancelled swipe was not sent again: {:?}", sim.events());
        assert!(sim.events().contains(&InputEvent::Tap { x: 10, y: 10 }), "{:?}", sim.events());
    })
    .await
    .expect("test timed out");
}

/// Issue 38: the wall names an MCP session's hold by the client's own words — cleaned (no controls, no bidi
/// overrides) and bounded — and an operator's takeover of that phone answers the MCP client's next input
/// `operator_control`, as it answers an xAgent channel.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_wall_names_an_mcp_session_and_a_takeover_stops_it() {
    bounded(async {
        let lab = lab().await;
        let name = format!("Edit\u{202e}or\u{7}<b>x</b>{}", "n".repeat(200));
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                          "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                                     "clientInfo": {"name": name, "version": "1.2\n3"}}});
        let r = rpc(&lab.srv, None, &[], init).await;
        let sid = r.header("mcp-session-id").expect("a session id").to_owned();
        let status = rpc(&lab.srv, Some(&sid), &[], call(2, "android_device_status", json!({}))).await.json();
        assert_eq!(status["result"]["isError"], Value::Null, "{status}");

        let auth = format!("Bearer {KEY}");
        let devices = http(lab.srv.addr, "GET", "/api/v1/devices", &[("Authorization", &auth)], b"").await.json();
        let dev = devices["devices"].as_array().unwrap().iter().find(|d| !d["held_by"].is_null()).cloned();
        let dev = dev.unwrap_or_else(|| panic!("the MCP session's phone is held: {devices}"));
        let label = dev["held_by"]["client"].as_str().unwrap_or_else(|| panic!("a client label: {dev}"));
        let want = format!("MCP: Editor<b>x</b>{} 1.2 3", "n".repeat(64 - "Editor<b>x</b>".len()));
        assert_eq!(label, want, "cleaned and bounded (the page escapes it like any text)");

        // The operator takes the phone over: the MCP client's next input is refused, nothing reaches the phone.
        let body = json!({"api_key": KEY}).to_string();
        let login =
            http(lab.srv.addr, "POST", "/api/v1/session", &[("Content-Type", "application/json")], body.as_bytes())
                .await;
        assert_eq!(login.status, 200, "{}", login.text());
        let cookie = login.header("set-cookie").unwrap().split(';').next().unwrap().to_owned();
        let csrf = login.json()["csrf_token"].as_str().unwrap().to_owned();
        let h = [("Cookie", cookie.as_str()), ("X-CSRF-Token", csrf.as_str()), ("Content-Type", "application/json")];
        let url = format!("/api/v1/devices/{}/takeover", dev["id"].as_str().unwrap());
        let t = http(lab.srv.addr, "POST", &url, &h, b"{}").await;
        assert_eq!(t.status, 200, "{}", t.text());
        lab.sim.clear_events();
        let tap = rpc(&lab.srv, Some(&sid), &[], call(3, "android_tap", json!({"x": 10, "y": 10, "settle": false})))
            .await
            .json();
        assert_eq!(tap["result"]["isError"], true, "{tap}");
        assert_eq!(tap["result"]["structuredContent"]["error"]["code"], "operator_control", "{tap}");
        assert!(lab.sim.events().is_empty(), "nothing reached the phone");
    })
    .await
    .expect("test timed out");
}

/// Issue 48 item 2: 64 MCP `initialize` requests (a crash-looping editor, a killed bridge) used to take every
/// `--max-sessions` place and made `/ws` answer 503 `too_many_sessions` for every agent. MCP sessions now have
/// their own budget (`--max-mcp-sessions`, 32): past it the least recently used idle session makes room, and the
/// data plane keeps its places.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixty_four_idle_mcp_sessions_leave_ws_open() {
    bounded(async {
        let dir = tempfile::tempdir().unwrap();
        let srv = Server::start(dir.path(), &[], &[("XAGENT_CONNECTOR_API_KEY", KEY)]);
        let mut sids = Vec::new();
        for _ in 0..64 {
            sids.push(initialize(&srv).await);
        }
        // The data plane still opens, and serves.
        let mut c = ws(srv.addr, Some(KEY)).await;
        c.hello(None).await;
        let (_ch, _) = c.open(None).await;
        // The newest sessions work; the oldest made room for them.
        let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
        let newest = rpc(&srv, Some(&sids[63]), &[], list.clone()).await;
        assert_eq!(newest.status, 200, "{}", newest.text());
        let oldest = rpc(&srv, Some(&sids[0]), &[], list.clone()).await;
        assert_ne!(oldest.status, 200, "the least recently used idle session was ended: {}", oldest.text());
        // A session used lately is not the one that goes: touch the 33rd newest, open one more.
        let touched = &sids[64 - 32];
        assert_eq!(rpc(&srv, Some(touched), &[], list.clone()).await.status, 200);
        initialize(&srv).await;
        assert_eq!(rpc(&srv, Some(touched), &[], list.clone()).await.status, 200, "a recently used session stays");
        assert_ne!(rpc(&srv, Some(&sids[64 - 31]), &[], list).await.status, 200, "the least recently used went");
        assert!(srv.wait_log("least recently used", Duration::from_secs(10)).await, "the log says why");
    })
    .await
    .expect("timed out");
}

/// Issue 48 item 2: MCP sessions holding no phone end after `--mcp-unbound-idle` without a request (2 s here; 2 min
/// by default), so `initialize` alone cannot keep places taken; a session holding a phone is left alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_sessions_holding_no_phone_expire_and_one_holding_a_phone_stays() {
    bounded(async {
        let (_adb, _sim, _serial) = setup_with(SimConfig::default()).await.expect("adb is required");
        let dir = tempfile::tempdir().unwrap();
        let keyfile = dir.path().join("key");
        std::fs::write(&keyfile, format!("{KEY}\n")).unwrap();
        let server = format!("127.0.0.1:{}", _adb.port);
        let args = ["--adb-server", &server, "--api-key-file", keyfile.to_str().unwrap(), "--mcp-unbound-idle", "2s"];
        let srv = Server::start(&dir.path().join("data"), &args, &[]);
        let holder = initialize(&srv).await;
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let st = rpc(&srv, Some(&holder), &[], call(2, "android_device_status", json!({}))).await.json();
            if st["result"]["isError"].is_null() {
                break;
            }
            assert!(Instant::now() < deadline, "the holder never bound the phone: {st}");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let mut idle = Vec::new();
        for _ in 0..5 {
            idle.push(initialize(&srv).await);
        }
        let ping = json!({"jsonrpc": "2.0", "id": 9, "method": "ping"});
        let deadline = Instant::now() + Duration::from_secs(90);
        loop {
            let mut alive = 0;
            for sid in &idle {
                if rpc(&srv, Some(sid), &[], ping.clone()).await.status != 404 {
                    alive += 1;
                }
            }
            if alive == 0 {
                break;
            }
            assert!(Instant::now() < deadline, "{alive} sessions holding no phone did not expire");
            // Asked less often than the idle setting: a ping is a request, and would keep a session alive.
            tokio::time::sleep(Duration::from_secs(5)).await;
        }
        let h = rpc(&srv, Some(&holder), &[], ping).await;
        assert_eq!(h.status, 200, "the session holding a phone stays: {}", h.text());
    })
    .await
    .expect("test timed out");
}

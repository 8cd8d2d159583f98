//! Issue 49 over `/mcp`, driven by the official MCP Python SDK (tests/mcp/agent.py; see tests/mcp.rs for how it is
//! installed) against the simulated phone behind the real adb server: the manual reaches an MCP host (instructions
//! carrying SKILL.md's ten rules, the skill as a resource and a prompt), every tool has its annotations, the device
//! tools (`list_devices`, `select_device`'s short answer, `release_device`) work, and errors speak MCP's words.

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::adb::{setup_with, AdbServer};
use common::{http, mcp_post, ws, HttpResponse, Server};
use serde_json::{json, Value};
use xagent_adb_connector::server::mcp_manual::{RULES, SKILL_PROMPT, SKILL_URI};
use xagent_adb_connector::sim::SimConfig;

const KEY: &str = "mcp-agent-test-key-0c4e7a19b2";
const SKILL: &str = include_str!("../skills/connector-device-adb/SKILL.md");

fn bounded<F: std::future::Future>(f: F) -> tokio::time::Timeout<F> {
    tokio::time::timeout(Duration::from_secs(240), f)
}

/// The interpreter with the MCP SDK: a missing one fails the test (never a skip).
fn python() -> PathBuf {
    let p = std::env::var_os("MCP_PYTHON").map_or_else(|| PathBuf::from("/opt/mcpvenv/bin/python"), PathBuf::from);
    let ok = std::process::Command::new(&p).args(["-c", "import mcp"]).output().is_ok_and(|o| o.status.success());
    assert!(ok, "{} cannot import the MCP Python SDK (see tests/mcp.rs), or set MCP_PYTHON", p.display());
    p
}

/// A connector with a key and one simulated phone, seen and free.
struct Lab {
    _adb: std::sync::Arc<AdbServer>,
    sim: xagent_adb_connector::sim::SimPhone,
    srv: Server,
    _dir: tempfile::TempDir,
}

async fn lab() -> Lab {
    let (adb, sim, _serial) = setup_with(SimConfig::default()).await.expect("adb is required (apt-get install adb)");
    let dir = tempfile::tempdir().unwrap();
    let keyfile = dir.path().join("key");
    std::fs::write(&keyfile, format!("{KEY}\n")).unwrap();
    let server = format!("127.0.0.1:{}", adb.port);
    let data = dir.path().join("data");
    let srv = Server::start(&data, &["--adb-server", &server, "--api-key-file", keyfile.to_str().unwrap()], &[]);
    let mut c = ws(srv.addr, Some(KEY)).await;
    c.hello(None).await;
    let ch = c.bind(None).await;
    let out = c.request("auth.logout", Some(&ch), json!({})).await;
    assert!(out.get("error").is_none(), "{out}");
    Lab { _adb: adb, sim, srv, _dir: dir }
}

async fn agent(url: &str) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/agent.py");
    let mut cmd = tokio::process::Command::new(python());
    cmd.arg(script).args(["http", url, KEY]).kill_on_drop(true);
    let out =
        tokio::time::timeout(Duration::from_secs(180), cmd.output()).await.expect("MCP client timed out").unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "MCP client failed: {stderr}\n{stdout}");
    serde_json::from_str(stdout.lines().last().unwrap_or("")).unwrap_or_else(|e| panic!("{e}: {stdout}\n{stderr}"))
}

/// The instructions carry the ten rules, each with the key phrase SKILL.md words it with (case aside): when either
/// side rewords a rule, this fails and names it.
#[test]
fn the_instructions_rules_are_skill_md_rules() {
    let skill = SKILL.to_lowercase();
    let instructions = xagent_adb_connector::server::mcp_manual::instructions().to_lowercase();
    assert_eq!(RULES.len(), 10);
    for (key, _) in RULES {
        let key = key.to_lowercase();
        assert!(skill.contains(&key), "SKILL.md no longer says {key:?}: reword the rule in src/server/mcp_manual.rs");
        assert!(instructions.contains(&key), "the MCP instructions lack {key:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_host_reads_the_manual_the_annotations_and_the_phones() {
    bounded(async {
        let lab = lab().await;
        let out = agent(&format!("http://{}/mcp", lab.srv.addr)).await;

        // The manual: instructions with every rule, the skill as /skill.md serves it, as a resource and a prompt.
        let instructions = out["instructions"].as_str().unwrap();
        for (key, _) in RULES {
            assert!(instructions.to_lowercase().contains(&key.to_lowercase()), "{key}: {instructions}");
        }
        assert!(instructions.contains(SKILL_URI) && instructions.contains(SKILL_PROMPT), "{instructions}");
        assert_eq!(out["capabilities"], json!({"resources": true, "prompts": true}));
        let served = http(lab.srv.addr, "GET", "/skill.md", &[], b"").await.text();
        assert_eq!(out["resources"], json!([{"uri": SKILL_URI, "mime": "text/markdown", "size": served.len()}]));
        assert_eq!(out["resource_text"], served, "the resource is the skill /skill.md serves");
        assert_eq!(out["prompts"], json!([{"name": SKILL_PROMPT, "arguments": ["task"]}]));
        let msg = &out["prompt_messages"][0];
        assert_eq!(msg["role"], "user");
        let text = msg["text"].as_str().unwrap();
        assert!(text.starts_with(&served) && text.ends_with("Make the counter show 3.\n"), "{text}");

        // Annotations: on every tool, all four hints; reads are read-only, actions are not, uninstall-like ones
        // are destructive (not enabled here), a tap reaches past the phone and is not idempotent.
        let ann = out["annotations"].as_object().unwrap();
        assert!(ann.len() > 20, "{ann:?}");
        for (name, a) in ann {
            for hint in ["readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"] {
                assert!(a[hint].is_boolean(), "{name}: {hint} missing: {a}");
            }
            if a["readOnlyHint"] == true {
                assert_eq!(a["destructiveHint"], false, "{name}");
            }
        }
        for read in
            ["android_observe", "android_ui_dump", "android_screenshot", "android_device_status", "list_devices"]
        {
            assert_eq!(ann[read]["readOnlyHint"], true, "{read}");
        }
        let tap = &ann["android_tap"];
        assert_eq!(
            tap,
            &json!({"readOnlyHint": false, "destructiveHint": false, "idempotentHint": false, "openWorldHint": true})
        );
        assert_eq!(ann["release_device"]["readOnlyHint"], false);
        assert_eq!(ann["select_device"]["readOnlyHint"], false);

        // The phones: one, free; selected by serial (a short answer: phone, screen, lease); held by this session;
        // released; free again; a second release says nothing was held.
        let before = &out["list_before"]["structured"];
        assert_eq!(before["devices"].as_array().unwrap().len(), 1, "{before}");
        let dev = &before["devices"][0];
        assert_eq!((&dev["held_by"], &dev["state"]), (&json!("free"), &json!("online")), "{dev}");
        assert_eq!(before["free"], 1);
        let sel = &out["select"]["structured"];
        assert_eq!(out["select"]["is_error"], false, "{}", out["select"]);
        assert_eq!(sel["serial"], dev["serial"], "{sel}");
        assert!(sel["model"].as_str().is_some_and(|m| !m.is_empty()), "{sel}");
        assert!(sel["screen"]["width"].as_u64().unwrap() > 0 && sel["screen"]["height"].as_u64().unwrap() > 0, "{sel}");
        assert_eq!(sel["lease"]["held_by"], "this session", "{sel}");
        let select_text = out["select"]["text"].as_str().unwrap();
        for xagent in ["connector_channel_id", "connector_card_id", "设备", "descriptor"] {
            assert!(!select_text.contains(xagent), "select_device answers xAgent data ({xagent}): {select_text}");
        }
        let bytes = out["select_bytes"].as_u64().unwrap();
        eprintln!("select_device answer: {bytes} bytes");
        assert!(bytes < 600, "select_device's answer is short: {bytes} bytes: {select_text}");
        assert_eq!(out["list_held"]["structured"]["devices"][0]["held_by"], "this session", "{}", out["list_held"]);
        assert_eq!(out["list_held"]["structured"]["free"], 0);
        assert_eq!(out["release"]["structured"], json!({"released": true, "serial": dev["serial"]}));
        assert_eq!(out["list_after"]["structured"]["devices"][0]["held_by"], "free", "{}", out["list_after"]);
        assert_eq!(out["release_again"]["structured"], json!({"released": false, "serial": null}));

        // An unknown tool: the error names tools/list, not the xAgent card.
        let unknown = out["unknown"]["text"].as_str().unwrap();
        assert_eq!(out["unknown"]["is_error"], true);
        assert!(unknown.starts_with("tool_not_found: ") && unknown.contains("tools/list"), "{unknown}");
        assert!(!unknown.contains("card"), "{unknown}");

        // android_batch (issue 49 item 5): three taps in one tool call, one combined effect; the phone counted 3.
        let batch = &out["batch"];
        assert_eq!(batch["is_error"], false, "{batch}");
        assert_eq!(batch["structured"]["completed"], 3, "{batch}");
        assert_eq!(batch["structured"]["steps"].as_array().map(Vec::len), Some(3), "{batch}");
        assert!(batch["structured"]["effect"].is_object(), "{batch}");
        assert_eq!(lab.sim.counter(), 3, "{batch}");
        // android_rotate (item 6): landscape reached; a bad orientation names the allowed ones.
        let rotate = &out["rotate"];
        assert_eq!(rotate["is_error"], false, "{rotate}");
        assert_eq!(rotate["structured"]["orientation"], "landscape", "{rotate}");
        assert_eq!(rotate["structured"]["rotation_degrees"], 90, "{rotate}");
        assert_eq!(out["rotate_bad"]["is_error"], true, "{}", out["rotate_bad"]);
        assert!(out["rotate_bad"]["text"].as_str().unwrap().contains("reverse_landscape"), "{}", out["rotate_bad"]);
        // Their annotations: a batch can hold any step (a tap reaching past the phone, a file push); rotating and
        // locking again leave the phone as the first call did.
        assert_eq!(
            ann["android_batch"],
            json!({"readOnlyHint": false, "destructiveHint": true, "idempotentHint": false, "openWorldHint": true})
        );
        for id in ["android_rotate", "android_lock"] {
            assert_eq!(
                ann[id],
                json!({"readOnlyHint": false, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false}),
                "{id}"
            );
        }
    })
    .await
    .expect("test timed out");
}

async fn rpc(srv: &Server, session: Option<&str>, msg: Value) -> HttpResponse {
    mcp_post(srv.addr, KEY, session, &[], &msg).await
}

async fn initialize(srv: &Server) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                      "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}});
    let r = rpc(srv, None, init).await;
    assert_eq!(r.status, 200, "{}", r.text());
    r.header("mcp-session-id").expect("a session id").to_owned()
}

fn call(id: u64, name: &str, args: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": args}})
}

/// A phone another MCP session holds: `select_device` on it and a plain call both fail `device_busy` in MCP words
/// (`select_device`, `release_device`, sessions — no `auth.start`/`auth.logout`, channels or the card); bad
/// `resources/read` and `prompts/get` names are invalid params naming what exists.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_over_mcp_speak_mcp() {
    bounded(async {
        let lab = lab().await;
        let a = initialize(&lab.srv).await;
        let held = rpc(&lab.srv, Some(&a), call(2, "select_device", json!({}))).await.json();
        let serial =
            held["result"]["structuredContent"]["serial"].as_str().unwrap_or_else(|| panic!("{held}")).to_owned();
        let b = initialize(&lab.srv).await;
        for (n, (tool, args)) in
            [("select_device", json!({"serial": serial})), ("android_device_status", json!({}))].into_iter().enumerate()
        {
            let busy = rpc(&lab.srv, Some(&b), call(3 + n as u64, tool, args)).await.json();
            let r = &busy["result"];
            assert_eq!(r["isError"], true, "{busy}");
            assert_eq!(r["structuredContent"]["error"]["code"], "device_busy", "{busy}");
            let text = r["content"][0]["text"].as_str().unwrap();
            for xagent in ["auth.start", "auth.logout", "channel", "card", "connector_channel_id"] {
                assert!(!text.contains(xagent), "{tool}: {xagent:?} in an MCP error: {text}");
            }
            assert!(text.contains("select_device") || text.contains("release_device"), "{tool}: {text}");
        }
        let bad = rpc(
            &lab.srv,
            Some(&b),
            json!({"jsonrpc": "2.0", "id": 9, "method": "resources/read",
                                                 "params": {"uri": "file:///etc/passwd"}}),
        )
        .await
        .json();
        assert_eq!(bad["error"]["code"], -32602, "{bad}");
        assert!(bad["error"]["message"].as_str().unwrap().contains(SKILL_URI), "{bad}");
        let bad = rpc(
            &lab.srv,
            Some(&b),
            json!({"jsonrpc": "2.0", "id": 10, "method": "prompts/get",
                                                 "params": {"name": "nope"}}),
        )
        .await
        .json();
        assert_eq!(bad["error"]["code"], -32602, "{bad}");
        assert!(bad["error"]["message"].as_str().unwrap().contains(SKILL_PROMPT), "{bad}");
    })
    .await
    .expect("test timed out");
}

/// What a model reads of one default `android_observe` over MCP: (text content bytes, image bytes, structured
/// content bytes), and the result.
async fn observe_cost(srv: &Server, session: &str, id: u64, args: Value) -> (usize, usize, usize, Value) {
    let r = rpc(srv, Some(session), call(id, "android_observe", args)).await.json();
    let result = &r["result"];
    assert_eq!(result["isError"], Value::Null, "{r}");
    let content = result["content"].as_array().unwrap();
    let text: usize = content.iter().filter(|c| c["type"] == "text").map(|c| c["text"].as_str().unwrap().len()).sum();
    let image: usize = content
        .iter()
        .filter(|c| c["type"] == "image")
        .map(|c| xagent_adb_connector::base64::decode(c["data"].as_str().unwrap()).unwrap().len())
        .sum();
    let structured = result["structuredContent"].to_string().len();
    (text, image, structured, result.clone())
}

/// Issue 49 item 2: an image inline is not listed again under `files` (name, one-time URL, size), and a screen that
/// is off costs a thumbnail, not a full-size black picture. Prints the figures (home screen, screen off).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_observation_over_mcp_carries_its_image_once_and_a_dark_screen_costs_a_thumbnail() {
    bounded(async {
        let lab = lab().await;
        let s = initialize(&lab.srv).await;
        // Issue 49: the home screen's elements describe it: by default no picture, and the text says how to get it.
        let (lean_text, lean_image, _, lean) = observe_cost(&lab.srv, &s, 9, json!({})).await;
        eprintln!("home screen, default android_observe over MCP: text {lean_text} B, image {lean_image} B");
        eprintln!("{}", lean["content"][0]["text"].as_str().unwrap_or_default());
        assert_eq!(lean_image, 0, "{lean}");
        assert!(lean["content"][0]["text"].as_str().unwrap().contains("picture: true attaches it"), "{lean}");
        let (text, image, structured, home) = observe_cost(&lab.srv, &s, 2, json!({"picture": true})).await;
        eprintln!("home screen, android_observe picture: true over MCP: text {text} B, image {image} B, structuredContent {structured} B");
        lab.sim.set_screen_on(false);
        let (off_text, off_image, _, off) = observe_cost(&lab.srv, &s, 3, json!({})).await;
        eprintln!("screen off, default android_observe over MCP: text {off_text} B, image {off_image} B");

        let images = home["content"].as_array().unwrap().iter().filter(|c| c["type"] == "image").count();
        assert_eq!(images, 1, "{home}");
        assert!(home["structuredContent"].get("files").is_none(), "the inline image is not listed again: {home}");
        assert!(!home["content"][0]["text"].as_str().unwrap().contains("download_url"), "{home}");
        assert!(image > 5000, "the home screen is a real picture: {image} B");
        // The text a model reads: the fields in JSON, then one line per element; structuredContent keeps the JSON.
        let text_lines: Vec<&str> = home["content"][0]["text"].as_str().unwrap().lines().collect();
        let elements = home["structuredContent"]["elements"].as_array().unwrap();
        assert_eq!(text_lines.len(), elements.len() + 1, "{text_lines:?}");
        let head: Value = serde_json::from_str(text_lines[0]).unwrap();
        assert_eq!(head["observation_id"], home["structuredContent"]["observation_id"]);
        assert_eq!(head["foreground_package"], "com.android.launcher3", "the package once: {head}");
        assert!(head.get("package").is_none(), "{head}");
        let inc = text_lines.iter().find(|l| l.contains("\"Increment\"")).unwrap_or_else(|| panic!("{text_lines:?}"));
        assert!(inc.starts_with('#') && inc.contains("id=increment") && !inc.contains("com.xagent.sim"), "{inc}");
        assert!(text * 4 < structured * 3, "compact: {text} B against {structured} B of JSON");
        assert_eq!(off["structuredContent"]["frame"], "screen_off", "{off}");
        assert!(off_image < 2000, "a dark screen costs a thumbnail: {off_image} B");
        lab.sim.set_screen_on(true);
        // An action that switches the screen: its effect's tree delta reads one element per line too.
        let args = json!({"package": "com.xagent.demo", "effect_tree": true});
        let launch = rpc(&lab.srv, Some(&s), call(5, "android_app_launch", args)).await.json();
        let launch = &launch["result"];
        assert_eq!(launch["isError"], Value::Null, "{launch}");
        let (launch_text, launch_json) =
            (launch["content"][0]["text"].as_str().unwrap(), launch["structuredContent"].to_string());
        eprintln!(
            "app launch with effect.tree over MCP: text {} B, structuredContent {} B",
            launch_text.len(),
            launch_json.len()
        );
        assert!(launch["structuredContent"]["effect"]["tree"]["appeared"].as_array().is_some_and(|a| !a.is_empty()));
        assert!(launch_text.lines().any(|l| l == "effect.tree.appeared:"), "{launch_text}");
        assert!(launch_text.len() * 4 < launch_json.len() * 3, "{launch_text}");
    })
    .await
    .expect("test timed out");
}

//! Operator policy (`--policy`): risky tools are absent unless enabled, and `android_shell` runs only its
//! allowlist — proven on the simulated phone's own command log.

mod common;

use common::adb::*;
use common::*;
use serde_json::{json, Value};

async fn card_tools(addr: std::net::SocketAddr) -> Vec<String> {
    get(addr, "/connector-card.json").await.json()["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["tool_id"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn risky_tools_exist_only_by_policy_and_shell_runs_only_its_allowlist() {
    let (adb, sim, _serial) = setup().await.expect("adb");
    let dir = tempfile::tempdir().unwrap();
    let server = format!("127.0.0.1:{}", adb.port);

    // Default: none of the risky tools is declared.
    let plain = Server::start(&dir.path().join("a"), &["--adb-server", &server], &[]);
    let tools = card_tools(plain.addr).await;
    for t in ["android_shell", "android_app_uninstall", "android_app_clear_data"] {
        assert!(!tools.contains(&t.to_string()), "{t} must not be in the default card");
    }
    drop(plain);

    let policy = dir.path().join("policy.json");
    std::fs::write(
        &policy,
        json!({
            "enabled_risky_tools": ["android_shell", "android_app_clear_data"],
            "disabled_tools": ["android_open_url"],
            "shell_allow_prefixes": ["getprop ", "dumpsys battery"]
        })
        .to_string(),
    )
    .unwrap();
    let srv =
        Server::start(&dir.path().join("b"), &["--adb-server", &server, "--policy", policy.to_str().unwrap()], &[]);
    let tools = card_tools(srv.addr).await;
    assert!(tools.contains(&"android_shell".to_string()) && tools.contains(&"android_app_clear_data".to_string()));
    assert!(!tools.contains(&"android_app_uninstall".to_string()), "not enabled");
    assert!(!tools.contains(&"android_open_url".to_string()), "disabled by the operator");

    let mut c = ws(srv.addr, None).await;
    c.hello(None).await;
    let ch = c.bind(None).await;
    let shell = |cmd: &'static str| {
        let ch = ch.clone();
        json!({"tool_id": "android_shell", "arguments": {"connector_channel_id": ch, "command": cmd}})
    };
    let ok = c.request("tool.invoke", Some(&ch), shell("getprop ro.product.model")).await;
    assert_eq!(ok["payload"]["result"]["stdout"], "Pixel 7 (sim)\n", "{ok}");
    assert_eq!(ok["payload"]["result"]["exit_code"], 0);
    let before = sim.commands().len();
    for bad in [
        "reboot",
        "getprop x; reboot",
        "getprop x && reboot",
        "getprop $(reboot)",
        "getprop `reboot`",
        "getprop x | sh",
        "getprop x > /sdcard/pwned",
        "dumpsys battery\nreboot",
        "pm uninstall com.android.settings",
    ] {
        let a = c.request("tool.invoke", Some(&ch), shell(bad)).await;
        assert_eq!(error_code(&a), "permission_denied", "{bad}: {a}");
    }
    assert_eq!(sim.commands().len(), before, "no refused command reached the phone: {:?}", &sim.commands()[before..]);
    let a = c
        .request(
            "tool.invoke",
            Some(&ch),
            json!({"tool_id": "android_open_url", "arguments": {"connector_channel_id": ch, "url": "https://example.com"}}),
        )
        .await;
    assert_eq!(error_code(&a), "tool_not_found");
    let cleared: Value = c
        .request(
            "tool.invoke",
            Some(&ch),
            json!({"tool_id": "android_app_clear_data", "arguments": {"connector_channel_id": ch, "package": "com.xagent.demo"}}),
        )
        .await;
    assert!(cleared.get("error").is_none(), "{cleared}");
    // System packages are refused unless the policy names them (issue #12).
    let refused: Value = c
        .request(
            "tool.invoke",
            Some(&ch),
            json!({"tool_id": "android_app_clear_data", "arguments": {"connector_channel_id": ch, "package": "com.android.settings"}}),
        )
        .await;
    assert_eq!(error_code(&refused), "permission_denied", "{refused}");
}

#[test]
fn a_bad_policy_file_is_refused_with_a_reason() {
    let dir = tempfile::tempdir().unwrap();
    let bin = env!("CARGO_BIN_EXE_xagent-adb-connector");
    for (content, needle) in [
        ("{not json", "is invalid"),
        (r#"{"enabled_risky_tools": ["android_shell"]}"#, "shell_allow_prefixes is empty"),
        (r#"{"disabled_tools": ["android_teleport"]}"#, "unknown tool \"android_teleport\""),
        (r#"{"typo": 1}"#, "unknown field"),
    ] {
        let p = dir.path().join("p.json");
        std::fs::write(&p, content).unwrap();
        let out = std::process::Command::new(bin).args(["card", "--policy", p.to_str().unwrap()]).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{content}: {err}");
        assert!(err.contains(needle), "{content}: {err}");
    }
}

//! The connector core, driven through the real binary over real HTTP and WebSocket on loopback.

mod common;

use std::time::Duration;

use common::*;
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::Message;

const KEY: &str = "sk-test-0123456789abcdef";

fn key_file(dir: &std::path::Path) -> String {
    let p = dir.join("api.key");
    std::fs::write(&p, format!("{KEY}\n")).unwrap();
    p.to_str().unwrap().to_owned()
}

#[tokio::test]
async fn control_plane_card_skill_health_and_errors() {
    let dir = tempfile::tempdir().unwrap();
    let kf = key_file(dir.path());
    let srv = Server::start(&dir.path().join("data"), &["--api-key-file", &kf], &[]);

    let card = get(srv.addr, "/connector-card.json").await;
    assert_eq!(card.status, 200, "the card is public (§3)");
    assert!(card.header("content-type").unwrap().starts_with("application/json"));
    let card = card.json();
    assert_valid(&schema("xagent.connector.v1.schema.json"), &card, "card");
    assert_eq!(card["connector_card_id"], "device.adb");
    assert_eq!(card["protocol_version"], "3.0");
    assert_eq!(card["supports"]["profiles"], json!(["xagent.device.v1"]));
    assert_eq!(card["supports"]["target_types"], json!(["device"]));
    assert_eq!(card["supports"]["user_channel_mode"], "multiple");
    assert_eq!(card["security"]["api_key_required"], true);
    assert!(!card.to_string().contains(KEY), "the key never appears in the card");

    let skill = get(srv.addr, "/skill.md").await;
    assert_eq!(skill.status, 200);
    assert!(skill.header("content-type").unwrap().starts_with("text/markdown"));
    assert!(skill.text().contains("\nname: connector-device-adb\n"));

    // /health: 401 without a key and with a wrong one, 200 with the right one (§4.3).
    assert_eq!(get(srv.addr, "/health").await.status, 401);
    let wrong = http(srv.addr, "GET", "/health", &[("Authorization", "Bearer nope")], b"").await;
    assert_eq!(wrong.status, 401);
    assert!(!wrong.text().contains(KEY));
    let h = http(srv.addr, "GET", "/health", &[("Authorization", &format!("Bearer {KEY}"))], b"").await;
    assert_eq!(h.status, 200);
    let h = h.json();
    // This server's adb server (127.0.0.1:1) never answers: past the 10 s outage grace that alone makes it
    // `degraded` (tests/operator.rs covers that); nothing else may be wrong.
    let adb_only = h["problems"].as_array().is_some_and(|p| p.iter().all(|x| x.to_string().contains("adb server")));
    assert!(h["status"] == "ok" || (h["status"] == "degraded" && adb_only), "{h}");
    assert_eq!(h["connector_card_id"], "device.adb");
    assert_eq!(h["protocol_version"], card["protocol_version"]);
    assert_eq!(h["connector_card_version"], card["connector"]["version"]);
    assert_eq!(h["build"], card["build"], "health and card report the same build (§4.3)");

    let nf = get(srv.addr, "/nope").await;
    assert_eq!(nf.status, 404);
    assert_eq!(nf.json()["error"]["code"], "not_found");
    let na = http(srv.addr, "POST", "/connector-card.json", &[], b"{}").await;
    assert_eq!(na.status, 405);
    assert_eq!(na.json()["error"]["code"], "method_not_allowed");
    assert!(na.header("allow").unwrap().contains("GET"));

    // No log line ever carries the key.
    assert!(srv.logs().iter().all(|l| !l.contains(KEY)));
}

#[tokio::test]
async fn without_a_key_health_is_open_and_a_warning_is_logged() {
    let dir = tempfile::tempdir().unwrap();
    let srv = Server::start(dir.path(), &[], &[]);
    assert_eq!(get(srv.addr, "/health").await.status, 200);
    assert_eq!(get(srv.addr, "/connector-card.json").await.json()["security"]["api_key_required"], false);
    let warnings = srv.logs().iter().filter(|l| l.contains("no system API key configured")).count();
    assert_eq!(warnings, 1, "warned exactly once");
}

#[tokio::test]
async fn the_key_can_come_from_the_environment() {
    let dir = tempfile::tempdir().unwrap();
    let srv = Server::start(dir.path(), &[], &[("XAGENT_CONNECTOR_API_KEY", KEY)]);
    assert_eq!(get(srv.addr, "/health").await.status, 401);
    assert_eq!(ws_connect(srv.addr, None, Some("xagent.connector.packet.v1")).await.err(), Some(401));
    ws(srv.addr, Some(KEY)).await;
}

#[tokio::test]
async fn websocket_upgrade_requires_key_and_subprotocol() {
    let dir = tempfile::tempdir().unwrap();
    let kf = key_file(dir.path());
    let srv = Server::start(&dir.path().join("data"), &["--api-key-file", &kf], &[]);
    assert_eq!(ws_connect(srv.addr, None, Some("xagent.connector.packet.v1")).await.err(), Some(401));
    assert_eq!(ws_connect(srv.addr, Some("wrong"), Some("xagent.connector.packet.v1")).await.err(), Some(401));
    assert_eq!(ws_connect(srv.addr, Some(KEY), None).await.err(), Some(400));
    assert_eq!(ws_connect(srv.addr, Some(KEY), Some("other.v1")).await.err(), Some(400));
    // A plain GET without upgrade is told what the endpoint is.
    let plain = http(srv.addr, "GET", "/ws", &[("Authorization", &format!("Bearer {KEY}"))], b"").await;
    assert_eq!(plain.status, 426);
    ws(srv.addr, Some(KEY)).await;
}

#[tokio::test]
async fn hello_is_required_first_and_strictly_validated() {
    let dir = tempfile::tempdir().unwrap();
    let srv = Server::start(dir.path(), &[], &[]);
    let mut c = ws(srv.addr, None).await;

    // ping is connection-level: answered before hello, echoing request_id (§8.22).
    let pong = c.request("ping", None, json!({})).await;
    assert_eq!(pong["type"], "pong");

    for kind in ["channel.open", "tool.invoke", "connection.descriptor.get", "auth.start"] {
        let e = c.request(kind, Some("cch_adb_x"), json!({})).await;
        assert_eq!((e["type"].as_str(), error_code(&e)), (Some("error"), "hello_required"), "{kind}");
    }
    let hello = |card: &str, version: Value, profiles: Value| {
        let mut p = json!({"connector_card_id": card, "protocol_version": version});
        if !profiles.is_null() {
            p["supported_profiles"] = profiles;
        }
        p
    };
    let cases = [
        (hello("im.wechat", json!("3.0"), json!(["xagent.device.v1"])), "connector_card_id_mismatch"),
        (hello("device.adb", json!("2.9"), json!(["xagent.device.v1"])), "protocol_version_unsupported"),
        (hello("device.adb", Value::Null, json!(["xagent.device.v1"])), "protocol_version_unsupported"),
        (hello("device.adb", json!("3.0"), Value::Null), "invalid_packet"),
        (hello("device.adb", json!("3.0"), json!(["xagent.im.v2"])), "profile_not_supported"),
    ];
    for (payload, code) in cases {
        let e = c.request("connector.hello", None, payload.clone()).await;
        assert_eq!((e["type"].as_str(), error_code(&e)), (Some("error"), code), "{payload}");
    }
    let id = c.hello(None).await;
    assert!(id.starts_with("conn_device_adb_"));
    // Same socket, other id: identity error.
    let e = c
        .request(
            "connector.hello",
            None,
            json!({"connector_card_id": "device.adb", "protocol_version": "3.0",
            "supported_profiles": ["xagent.device.v1"], "connector_id": "conn_device_adb_other"}),
        )
        .await;
    assert_eq!(error_code(&e), "connector_id_mismatch");
    // "a hello carrying the current id keeps it" (§8.2).
    let mut c2 = ws(srv.addr, None).await;
    assert_eq!(c2.hello(Some(&id)).await, id);
}

#[tokio::test]
async fn envelope_errors_and_frame_rules() {
    let dir = tempfile::tempdir().unwrap();
    let srv = Server::start(dir.path(), &["--max-message-bytes", "4096"], &[]);
    let mut c = ws(srv.addr, None).await;

    c.send_raw("{not json").await;
    let e = c.recv().await;
    assert_eq!((e["type"].as_str(), error_code(&e)), (Some("error"), "invalid_packet"));

    c.send_raw(
        r#"{"schema":"xagent.connector.packet/v1","packet_id":"p1","request_id":"r1","type":"ping","payload":[1]}"#,
    )
    .await;
    let e = c.recv().await;
    assert_eq!(error_code(&e), "invalid_packet");
    assert_eq!(e["request_id"], "r1", "the error is routed back by request_id");
    assert!(e["error"]["message"].as_str().unwrap().contains("payload"));

    c.send_raw(r#"{"schema":"xagent.connector.packet/v1","packet_id":"p2","type":"ping"}"#).await;
    assert!(c.recv().await["error"]["message"].as_str().unwrap().contains("request_id"));

    c.ws.send(Message::binary(vec![1u8, 2, 3])).await.unwrap();
    let e = c.recv().await;
    assert_eq!(error_code(&e), "invalid_packet");
    assert!(e["error"]["message"].as_str().unwrap().contains("binary"));

    c.hello(None).await;
    let e = c.request("message.push", None, json!({})).await;
    assert_eq!(error_code(&e), "unsupported_packet");

    // Over the limit: an error packet, then close 1009; the server lives on.
    let big = format!(
        r#"{{"schema":"xagent.connector.packet/v1","packet_id":"p","request_id":"r","type":"ping","payload":{{"x":"{}"}}}}"#,
        "a".repeat(8000)
    );
    c.send_raw(&big).await;
    let e = c.recv().await;
    assert_eq!(error_code(&e), "invalid_packet");
    assert!(e["error"]["message"].as_str().unwrap().contains("4096"));
    let close = tokio::time::timeout(T, c.ws.next()).await.unwrap();
    match close {
        Some(Ok(Message::Close(Some(f)))) => assert_eq!(u16::from(f.code), 1009),
        other => panic!("expected close 1009, got {other:?}"),
    }
    let mut again = ws(srv.addr, None).await;
    assert_eq!(again.request("ping", None, json!({})).await["type"], "pong");
}

#[tokio::test]
async fn channels_descriptor_auth_and_tool_routing() {
    let dir = tempfile::tempdir().unwrap();
    let srv = Server::start(dir.path(), &[], &[]);
    let mut c = ws(srv.addr, None).await;
    let cid = c.hello(None).await;

    let (ch, d) = c.open(None).await;
    assert!(ch.starts_with("cch_adb_"));
    assert_eq!(d["connection"]["status"], "created", "a created descriptor before binding (§14)");
    assert_eq!(d["connection"]["connector_id"], json!(cid));
    assert_eq!(d["connection"]["connector_channel_id"], json!(ch));
    assert_eq!(d["connection"]["target_type"], "device");
    assert_eq!(d["connection"]["profiles"], json!(["xagent.device.v1"]));
    assert_eq!(d["target"]["provider"], "adb");

    let g = c.request("connection.descriptor.get", Some(&ch), json!({})).await;
    assert_eq!(g["type"], "connection.descriptor.get.ack");
    assert_eq!(g["connector_channel_id"], json!(ch));
    assert_eq!(g["payload"]["connection_descriptor"], d);

    // Routing codes of §8.23.
    let e = c.request("connection.descriptor.get", None, json!({})).await;
    assert_eq!(error_code(&e), "connector_channel_id_required");
    let e = c.request("connection.descriptor.get", Some("cch_im_wechat_1"), json!({})).await;
    assert_eq!(error_code(&e), "connector_channel_connector_mismatch");
    let e = c.request("connection.descriptor.get", Some("cch_adb_ffffffffffffffffffffffff"), json!({})).await;
    assert_eq!(error_code(&e), "connection_not_found");
    let mut other = ws(srv.addr, None).await;
    other.hello(None).await;
    let e = other.request("connection.descriptor.get", Some(&ch), json!({})).await;
    assert_eq!(error_code(&e), "connector_channel_not_owned");

    // tool.invoke: unknown tool is a business failure on the ack; no binding is connection_not_authenticated.
    let a = c
        .request(
            "tool.invoke",
            Some(&ch),
            json!({"tool_id": "android_nope", "arguments": {"connector_channel_id": ch}}),
        )
        .await;
    assert_eq!((a["type"].as_str(), error_code(&a)), (Some("tool.invoke.ack"), "tool_not_found"));
    assert_eq!(a["payload"]["tool_id"], "android_nope");

    // No adb server answers here, so there is nothing to bind: a clear failure, not silence.
    let a = c.request("auth.start", Some(&ch), json!({"flow_id": "adb_device", "input": {}})).await;
    assert_eq!((a["type"].as_str(), error_code(&a)), (Some("auth.start.ack"), "device_not_found"));
    assert_eq!(a["payload"]["status"], "failed");
    let a = c.request("auth.start", Some(&ch), json!({"flow_id": "qr_login"})).await;
    assert_eq!(error_code(&a), "auth_flow_not_found");
    let a = c
        .request(
            "tool.invoke",
            Some(&ch),
            json!({"tool_id": "android_tap", "arguments": {"connector_channel_id": ch, "x": 1, "y": 1}}),
        )
        .await;
    assert_eq!(error_code(&a), "connection_not_authenticated");
    let a = c.request("auth.status", Some(&ch), json!({"auth_session_id": "auth_x"})).await;
    assert_eq!(error_code(&a), "auth_session_not_found");
    let a = c.request("auth.cancel", Some(&ch), json!({"auth_session_id": "auth_x"})).await;
    assert_eq!(a["payload"]["status"], "not_found");
    let a = c.request("auth.logout", Some(&ch), json!({})).await;
    assert_eq!(a["payload"]["status"], "ok");
    assert_eq!(a["payload"]["connection_descriptor"]["connection"]["status"], "created");

    let a = c.request("channel.close", Some(&ch), json!({})).await;
    assert_eq!((a["type"].as_str(), &a["payload"]["status"]), (Some("channel.close.ack"), &json!("ok")));
    let e = c.request("connection.descriptor.get", Some(&ch), json!({})).await;
    assert_eq!(error_code(&e), "channel_not_open");
    // Reopen by id restores the same channel.
    assert_eq!(c.open(Some(&ch)).await.0, ch);
    // An unknown id gets a new channel (§8.3).
    let (fresh, _) = c.open(Some("cch_adb_000000000000000000000000")).await;
    assert_ne!(fresh, ch);
}

#[tokio::test]
async fn state_survives_sigkill_and_restart() {
    let dir = tempfile::tempdir().unwrap();
    let (cid, ch) = {
        let mut srv = Server::start(dir.path(), &[], &[]);
        let mut c = ws(srv.addr, None).await;
        let cid = c.hello(None).await;
        let (ch, _) = c.open(None).await;
        srv.kill9();
        (cid, ch)
    };
    let srv = Server::start(dir.path(), &[], &[]);
    let mut c = ws(srv.addr, None).await;
    assert_eq!(c.hello(Some(&cid)).await, cid, "connector_id reused after restart");
    let (again, d) = c.open(Some(&ch)).await;
    assert_eq!(again, ch, "a reconnecting xAgent gets its channel back");
    assert_eq!(d["connection"]["connector_id"], json!(cid));
}

#[tokio::test]
async fn lease_expiry_unregisters_the_instance_and_its_channels() {
    let dir = tempfile::tempdir().unwrap();
    let srv = Server::start(dir.path(), &["--lease-grace", "300ms"], &[]);
    let (cid, ch) = {
        let mut c = ws(srv.addr, None).await;
        let cid = c.hello(None).await;
        let (ch, _) = c.open(None).await;
        (cid, ch)
    }; // socket dropped: the lease starts
       // Within the grace, a hello with the id resumes it.
    {
        let mut c = ws(srv.addr, None).await;
        assert_eq!(c.hello(Some(&cid)).await, cid);
        assert_eq!(c.open(Some(&ch)).await.0, ch);
    }
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let mut c = ws(srv.addr, None).await;
    let new_id = c.hello(Some(&cid)).await;
    assert_ne!(new_id, cid, "after the grace the old id is unregistered and a new one issued");
    let (new_ch, _) = c.open(Some(&ch)).await;
    assert_ne!(new_ch, ch, "its channels were unregistered with it");
    assert!(srv.wait_log("lease expired", std::time::Duration::from_secs(10)).await);
}

#[tokio::test]
async fn restored_channels_without_hello_are_cleaned_after_the_grace() {
    let dir = tempfile::tempdir().unwrap();
    let (cid, ch) = {
        let mut srv = Server::start(dir.path(), &[], &[]);
        let mut c = ws(srv.addr, None).await;
        let cid = c.hello(None).await;
        let (ch, _) = c.open(None).await;
        srv.kill9();
        (cid, ch)
    };
    let srv = Server::start(dir.path(), &["--lease-grace", "300ms"], &[]);
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let mut c = ws(srv.addr, None).await;
    assert_ne!(c.hello(Some(&cid)).await, cid);
    assert_ne!(c.open(Some(&ch)).await.0, ch);
}

#[tokio::test]
async fn sigterm_closes_sockets_with_1001_and_exits_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let mut srv = Server::start(dir.path(), &[], &[]);
    let mut c = ws(srv.addr, None).await;
    c.hello(None).await;
    let status = tokio::task::spawn_blocking(move || {
        let st = srv.term(Duration::from_secs(10));
        (st, srv)
    })
    .await
    .unwrap();
    assert!(status.0.expect("exited within 10 s").success());
    match tokio::time::timeout(T, c.ws.next()).await.unwrap() {
        Some(Ok(Message::Close(Some(f)))) => assert_eq!(u16::from(f.code), 1001),
        other => panic!("expected close 1001, got {other:?}"),
    }
}

#[test]
fn cli_errors_are_actionable_with_distinct_exit_codes() {
    let bin = env!("CARGO_BIN_EXE_xagent-adb-connector");
    let run = |args: &[&str]| {
        let out = std::process::Command::new(bin).args(args).env_remove("XAGENT_CONNECTOR_API_KEY").output().unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).to_string(),
            String::from_utf8_lossy(&out.stdout).to_string(),
        )
    };
    let (code, _, out) = run(&["--version"]);
    assert_eq!(code, Some(0));
    assert!(out.contains(env!("CARGO_PKG_VERSION")) && out.contains("git ") && out.contains("built "), "{out}");

    let (code, err, _) = run(&["serve", "--bogus"]);
    assert_eq!(code, Some(2), "{err}");

    let (code, err, _) = run(&["serve", "--api-key-file", "/nonexistent/key"]);
    assert_eq!(code, Some(3));
    assert!(err.contains("cannot read the API key file /nonexistent/key"), "{err}");

    // The recovery ladder's offline trigger: out of its bounds is a configuration error naming them.
    for bad in ["1s", "2h"] {
        let (code, err, _) = run(&["serve", "--recover-offline-after", bad]);
        assert_eq!(code, Some(3), "{err}");
        assert!(err.contains("--recover-offline-after must be between 2s and 1h"), "{err}");
    }

    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.key");
    std::fs::write(&empty, "\n").unwrap();
    let (code, err, _) = run(&["serve", "--api-key-file", empty.to_str().unwrap()]);
    assert_eq!(code, Some(3));
    assert!(err.contains("is empty"), "{err}");

    // A data dir under a regular file cannot be created, even for root.
    let file = dir.path().join("file");
    std::fs::write(&file, "x").unwrap();
    let bad = file.join("data");
    let (code, err, _) = run(&["serve", "--listen", "127.0.0.1:0", "--data-dir", bad.to_str().unwrap()]);
    assert_eq!(code, Some(3));
    assert!(err.contains("data dir") && err.contains("--data-dir"), "{err}");

    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = busy.local_addr().unwrap().to_string();
    let (code, err, _) = run(&["serve", "--listen", &addr, "--data-dir", dir.path().join("d").to_str().unwrap()]);
    assert_eq!(code, Some(4));
    assert!(err.contains("already in use") && err.contains("--listen"), "{err}");

    let (code, _, out) = run(&["card"]);
    assert_eq!(code, Some(0));
    let card: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(card["connector_card_id"], "device.adb");
}

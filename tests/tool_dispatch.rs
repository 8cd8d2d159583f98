//! `tool.invoke` dispatch through the registry, over a real WebSocket, with scripted tools and devices: argument
//! validation against the served schema, binding and device-state gates, deadlines, progress, and the ack shape.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use serde_json::{json, Value};
use xagent_adb_connector::config::ServeConfig;
use xagent_adb_connector::device::fake::FakeBackend;
use xagent_adb_connector::device::DeviceState;
use xagent_adb_connector::protocol::errors::ProtoError;
use xagent_adb_connector::run::start;
use xagent_adb_connector::tools::{BoxFuture, Registry, Tool, ToolCall, ToolSpec};

/// Echoes what it was given; sleeps `sleep_ms` first; reports progress.
struct Echo {
    spec: ToolSpec,
    seen: Arc<Mutex<Vec<ToolCall>>>,
}

impl Tool for Echo {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }
    fn call(&self, call: ToolCall) -> BoxFuture<Result<Value, ProtoError>> {
        let seen = self.seen.clone();
        Box::pin(async move {
            (call.progress)("halfway", Some(0.5));
            let ms = call.args.get("sleep_ms").and_then(Value::as_u64).unwrap_or(0);
            tokio::time::sleep(Duration::from_millis(ms)).await;
            let out = json!({"args": call.args, "serial": call.binding.as_ref().unwrap().serial, "tool_call_id": call.tool_call_id});
            seen.lock().unwrap().push(call);
            Ok(out)
        })
    }
}

async fn setup() -> (xagent_adb_connector::run::Running, Arc<FakeBackend>, Arc<Mutex<Vec<ToolCall>>>) {
    let devices = FakeBackend::new(&[("SIM0001", DeviceState::Online)]);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let echo = Echo {
        spec: ToolSpec {
            id: "test_echo",
            title: "Echo",
            description: "Echo arguments",
            input: json!({"type": "object", "additionalProperties": false, "required": ["x"], "properties": {
                "x": {"type": "integer", "minimum": 0, "maximum": 10},
                "sleep_ms": {"type": "integer", "minimum": 0}
            }}),
            output: json!({"type": "object"}),
            side_effect: false,
            settles: false,
            deadline: Duration::from_millis(300),
        },
        seen: seen.clone(),
    };
    let cfg = ServeConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        data_dir: None,
        api_key: None,
        allow_serials: vec![],
        labels: Default::default(),
        lease_grace: Duration::from_secs(60),
        max_message_bytes: 1 << 20,
        drain_timeout: Duration::from_secs(2),
        limits: Default::default(),
        allowed_hosts: Vec::new(),
        audit: Default::default(),
    };
    let reg = Registry::new(vec![Arc::new(echo)]).unwrap();
    let running = start(cfg, reg, devices.clone()).await.map_err(|e| e.message).unwrap();
    (running, devices, seen)
}

#[tokio::test]
async fn invoke_validates_gates_runs_and_acks() {
    let (srv, devices, seen) = setup().await;
    let card = get(srv.addr, "/connector-card.json").await.json();
    assert_valid(&schema("xagent.connector.v1.schema.json"), &card, "card");
    assert_eq!(card["tools"][0]["input_schema"]["required"], json!(["connector_channel_id", "x"]));
    assert_eq!(card["tools"][0]["related_skill_ids"], json!(["connector-device-adb"]));

    let mut c = ws(srv.addr, None).await;
    c.hello(None).await;
    let (ch, d) = c.open(None).await;
    assert_eq!(
        d["tools"][0],
        json!({"tool_id": "test_echo", "status": "unavailable", "target_permission_state": "unknown",
        "reason": "no device bound: run auth flow adb_device"})
    );
    let inv = |args: Value| json!({"tool_id": "test_echo", "arguments": args, "context": {"session_id": "s1", "tool_call_id": "call_1"}});

    let a = c.request("tool.invoke", Some(&ch), inv(json!({"connector_channel_id": ch, "x": 1}))).await;
    assert_eq!(error_code(&a), "connection_not_authenticated");

    let bound =
        c.request("auth.start", Some(&ch), json!({"flow_id": "adb_device", "input": {"serial": "SIM0001"}})).await;
    assert_eq!(bound["payload"]["status"], "authenticated", "{bound}");
    assert_eq!(bound["payload"]["connection_descriptor"]["tools"][0]["status"], "available");

    for (args, needle) in [
        (json!({"connector_channel_id": ch}), "argument `x` is required"),
        (json!({"connector_channel_id": ch, "x": 11}), "argument `x` must be ≤ 10"),
        // A numeric string is taken as its number (issue 35); a word is not.
        (json!({"connector_channel_id": ch, "x": "one"}), "argument `x` must be of type integer"),
        (json!({"connector_channel_id": ch, "x": 1, "serial": "OTHER"}), "argument `serial` is not a parameter"),
        (json!({"x": 1}), "argument `connector_channel_id` is required"),
    ] {
        let a = c.request("tool.invoke", Some(&ch), inv(args.clone())).await;
        assert_eq!((a["type"].as_str(), error_code(&a)), (Some("tool.invoke.ack"), "invalid_arguments"), "{args}");
        assert!(a["error"]["message"].as_str().unwrap().contains(needle), "{a}");
    }
    assert!(seen.lock().unwrap().is_empty(), "nothing invalid reached the tool");

    // A channel argument that is not the packet's is refused, naming both (issue 35; tests/agent_trips.rs has
    // the details) ...
    let a = c.request("tool.invoke", Some(&ch), inv(json!({"connector_channel_id": "model-said-so", "x": 3}))).await;
    assert_eq!(error_code(&a), "invalid_arguments", "{a}");
    assert!(a["error"]["message"].as_str().unwrap().contains("model-said-so"), "{a}");
    // Success: progress push first, then the ack with {tool_id, result}; the tool never sees connector_channel_id.
    let (pid, rid) = c.send("tool.invoke", Some(&ch), inv(json!({"connector_channel_id": ch, "x": 3}))).await;
    let progress = c.recv().await;
    assert_eq!(progress["type"], "tool.progress.push");
    assert_eq!(progress["connector_channel_id"], json!(ch));
    assert_eq!(progress["payload"]["progress"], 0.5);
    let ack = c.recv().await;
    assert_eq!(
        (ack["type"].as_str(), ack["request_id"].as_str(), ack["reply_to"].as_str()),
        (Some("tool.invoke.ack"), Some(rid.as_str()), Some(pid.as_str()))
    );
    assert_eq!(ack["payload"]["tool_id"], "test_echo");
    assert_eq!(ack["payload"]["result"], json!({"args": {"x": 3}, "serial": "SIM0001", "tool_call_id": "call_1"}));

    // Deadline: device_timeout, and the session keeps working.
    let (_, rid) =
        c.send("tool.invoke", Some(&ch), inv(json!({"connector_channel_id": ch, "x": 1, "sleep_ms": 5000}))).await;
    let ack = loop {
        let v = c.recv().await;
        if v["request_id"] == json!(rid) {
            break v;
        }
    };
    assert_eq!(error_code(&ack), "device_timeout");
    assert_eq!(c.request("ping", None, json!({})).await["type"], "pong");

    // Device state gates: unauthorized and offline have distinct codes.
    devices.devices.lock().unwrap()[0].state = DeviceState::Unauthorized;
    let a = c.request("tool.invoke", Some(&ch), inv(json!({"connector_channel_id": ch, "x": 1}))).await;
    assert_eq!(error_code(&a), "device_unauthorized");
    devices.devices.lock().unwrap().clear();
    let a = c.request("tool.invoke", Some(&ch), inv(json!({"connector_channel_id": ch, "x": 1}))).await;
    assert_eq!(error_code(&a), "device_offline");

    // A state change is pushed at once, without polling.
    devices.announce("SIM0001");
    let push = c.recv().await;
    assert_eq!(push["type"], "connection.descriptor.push");
    assert_eq!(push["payload"]["connection_descriptor"]["connection"]["status"], "offline");
    assert_eq!(push["payload"]["connection_descriptor"]["tools"][0]["status"], "unavailable");
    srv.shutdown().await;
}

#[tokio::test]
async fn shutdown_drains_running_tools_and_delivers_their_acks() {
    let (srv, _devices, seen) = setup().await;
    let mut c = ws(srv.addr, None).await;
    c.hello(None).await;
    let (ch, _) = c.open(None).await;
    c.request("auth.start", Some(&ch), json!({"flow_id": "adb_device"})).await;
    let (_, rid) = c
        .send(
            "tool.invoke",
            Some(&ch),
            json!({"tool_id": "test_echo", "arguments": {"connector_channel_id": ch, "x": 2, "sleep_ms": 200}}),
        )
        .await;
    assert_eq!(c.recv().await["type"], "tool.progress.push");
    let stopping = tokio::spawn(srv.shutdown());
    let ack = c.recv().await;
    assert_eq!(ack["request_id"], json!(rid));
    assert_eq!(ack["payload"]["result"]["args"]["x"], 2, "the in-flight call finished and was acked");
    tokio::time::timeout(T, stopping).await.unwrap().unwrap();
    assert_eq!(seen.lock().unwrap().len(), 1);
}

//! No silent misplacement (issue 19, item 4): a payload key where the protocol does not put it is refused with an
//! error naming the right place, and nothing happens — proven on the simulated phones' own event logs, through the
//! real binary, a real adb server and real WebSocket frames. Also: `unsupported_packet` lists what is accepted and
//! `device_busy` says what to do next.

mod common;

use std::time::{Duration, Instant};

use common::adb::*;
use common::*;
use serde_json::{json, Value};
use xagent_adb_connector::sim::{InputEvent, SimConfig, SimPhone};

fn homes(sim: &SimPhone) -> usize {
    sim.events().iter().filter(|e| **e == InputEvent::Key("KEYCODE_HOME".into())).count()
}

/// `auth.start` with the well-formed payload, retried (bounded) while the connector has not yet verified the phone.
async fn bind_serial(c: &mut Client, ch: &str, serial: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let a = c.request("auth.start", Some(ch), json!({"flow_id": "adb_device", "input": {"serial": serial}})).await;
        if a["payload"]["status"] == "authenticated" || Instant::now() > deadline {
            return a;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn message(v: &Value) -> &str {
    v["error"]["message"].as_str().unwrap_or("")
}

/// Two simulated phones behind one real adb server, the real binary, a client past hello. The temp dir and the
/// adb server live as long as the returned values.
struct Farm {
    _adb: std::sync::Arc<AdbServer>,
    _dir: tempfile::TempDir,
    _srv: Server,
    a: SimPhone,
    b: SimPhone,
    c: Client,
}

async fn farm() -> Farm {
    let (adb, a, _) = setup_with(SimConfig::default()).await.expect("adb is required");
    let b = start_sim_with(SimConfig::default()).await;
    let (ad, s) = (adb.clone(), b.serial());
    blocking(move || {
        ad.connect(&s);
        ad.wait_state(&s, "device");
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let server = format!("127.0.0.1:{}", adb.port);
    let srv = Server::start(&dir.path().join("data"), &["--adb-server", &server], &[]);
    let mut c = ws(srv.addr, None).await;
    c.hello(None).await;
    Farm { _adb: adb, _dir: dir, _srv: srv, a, b, c }
}

async fn bounded(f: impl std::future::Future<Output = ()>) {
    tokio::time::timeout(Duration::from_secs(120), f).await.expect("test timed out")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unsupported_packet_lists_the_packet_types_accepted() {
    bounded(async {
        let Farm { _adb, _dir, _srv, mut c, .. } = farm().await;
        let e = c.request("tool.call", None, json!({})).await;
        assert_eq!(e["type"], "error", "{e}");
        assert_eq!(error_code(&e), "unsupported_packet", "{e}");
        for kind in ["connector.hello", "channel.open", "auth.start", "tool.invoke", "auth.logout", "ping"] {
            assert!(message(&e).contains(kind), "{kind} missing from {e}");
        }
    })
    .await
}

/// §8.7: the auth.start payload is `{flow_id, input}`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auth_start_with_fields_instead_of_input_is_refused_and_binds_nothing() {
    bounded(async {
        let Farm { _adb, _dir, _srv, a: phone_a, b: phone_b, mut c } = farm().await;
        let (serial_a, serial_b) = (phone_a.serial(), phone_b.serial());
        // Let the connector verify the phones first, so that the old code would have bound one.
        let (probe, _) = c.open(None).await;
        assert_eq!(bind_serial(&mut c, &probe, &serial_a).await["payload"]["status"], "authenticated");
        let a = c.request("auth.logout", Some(&probe), json!({})).await;
        assert!(a.get("error").is_none(), "{a}");

        let (ch, _) = c.open(None).await;
        let a =
            c.request("auth.start", Some(&ch), json!({"flow_id": "adb_device", "fields": {"serial": serial_b}})).await;
        assert_eq!(a["type"], "auth.start.ack", "{a}");
        assert_eq!(a["payload"]["status"], "failed", "{a}");
        assert_eq!(error_code(&a), "invalid_packet", "{a}");
        assert!(message(&a).contains("\"fields\"") && message(&a).contains("payload.input"), "{a}");
        let a = c.request("auth.start", Some(&ch), json!({"flow_id": "adb_device", "serial": serial_b})).await;
        assert_eq!(error_code(&a), "invalid_packet", "{a}");
        assert!(message(&a).contains("payload.input.serial"), "{a}");
        let t = c.tap(&ch, 10, 10).await;
        assert_eq!(error_code(&t), "connection_not_authenticated", "nothing was bound: {t}");

        // The serial asked for was not taken by anyone: binding it properly succeeds, and it is that phone.
        let a = bind_serial(&mut c, &ch, &serial_b).await;
        assert_eq!(a["payload"]["status"], "authenticated", "{a}");
        phone_a.clear_events();
        phone_b.clear_events();
        let r = c.invoke(&ch, "android_key", json!({"key": "HOME"})).await;
        assert!(r.get("error").is_none(), "{r}");
        assert_eq!((homes(&phone_a), homes(&phone_b)), (0, 1));
    })
    .await
}

/// §8.18: the tool.invoke payload is `{tool_id, arguments, context: {session_id, tool_call_id}}`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_call_id_at_the_payload_top_level_is_refused_and_nothing_runs() {
    bounded(async {
        let Farm { _adb, _dir, _srv, a: phone_a, b: phone_b, mut c } = farm().await;
        let (ch, _) = c.open(None).await;
        let a = bind_serial(&mut c, &ch, &phone_b.serial()).await;
        assert_eq!(a["payload"]["status"], "authenticated", "{a}");
        phone_a.clear_events();
        phone_b.clear_events();
        let args = json!({"connector_channel_id": ch, "key": "HOME"});
        // Sent twice, as a retry would be: each refused, naming the right place.
        for _ in 0..2 {
            let p = json!({"tool_id": "android_key", "arguments": args, "tool_call_id": "call_misplaced_1"});
            let r = c.request("tool.invoke", Some(&ch), p).await;
            assert_eq!(r["type"], "tool.invoke.ack", "{r}");
            assert_eq!(error_code(&r), "invalid_packet", "{r}");
            assert!(message(&r).contains("payload.context.tool_call_id"), "{r}");
        }
        // Any other key §8.18 does not define, and a tool_call_id that is not a string, are refused too.
        let p = json!({"tool_id": "android_key", "arguments": args, "options": {"retry": true}});
        let r = c.request("tool.invoke", Some(&ch), p).await;
        assert_eq!(error_code(&r), "invalid_packet", "{r}");
        assert!(message(&r).contains("\"options\"") && message(&r).contains("tool_id, arguments, context"), "{r}");
        let p = json!({"tool_id": "android_key", "arguments": args, "context": {"tool_call_id": 7}});
        let r = c.request("tool.invoke", Some(&ch), p).await;
        assert_eq!(error_code(&r), "invalid_packet", "{r}");
        assert_eq!((homes(&phone_a), homes(&phone_b)), (0, 0), "a refused call pressed a key");

        // The well-formed retry runs once: the path the refusals guard does work.
        for _ in 0..2 {
            let p = json!({"tool_id": "android_key", "arguments": args, "context": {"tool_call_id": "call_ok_1"}});
            let r = c.request("tool.invoke", Some(&ch), p).await;
            assert!(r.get("error").is_none(), "{r}");
        }
        assert_eq!((homes(&phone_a), homes(&phone_b)), (0, 1), "one HOME press on the bound phone");
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn device_busy_says_what_to_do_next() {
    bounded(async {
        let Farm { _adb, _dir, _srv, a: phone_a, b: phone_b, mut c } = farm().await;
        let (ch, _) = c.open(None).await;
        let a = bind_serial(&mut c, &ch, &phone_b.serial()).await;
        assert_eq!(a["payload"]["status"], "authenticated", "{a}");
        // Another channel asking for the held phone: bind another one, or have it released.
        let (ch2, _) = c.open(None).await;
        let input = json!({"serial": phone_b.serial()});
        let a = c.request("auth.start", Some(&ch2), json!({"flow_id": "adb_device", "input": input})).await;
        assert_eq!(error_code(&a), "device_busy", "{a}");
        assert!(message(&a).contains("auth.start without `serial` takes any free one"), "{a}");
        assert!(message(&a).contains("Release on the device wall") && message(&a).contains("auth.logout"), "{a}");
        // A bound channel asking for a different phone: log out, or use a second channel.
        let input = json!({"serial": phone_a.serial()});
        let a = c.request("auth.start", Some(&ch), json!({"flow_id": "adb_device", "input": input})).await;
        assert_eq!(error_code(&a), "device_busy", "{a}");
        assert!(message(&a).contains("open another channel"), "{a}");
    })
    .await
}

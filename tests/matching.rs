//! Device matching at bind (device farms): the `adb_device` flow's constraints pick among several simulated phones
//! behind one real adb server, operator labels come from the policy file, and a bind that cannot be satisfied says
//! why. Which phone a channel got is proven on the phones' own event logs.

mod common;

use std::time::{Duration, Instant};

use common::adb::*;
use common::*;
use serde_json::{json, Value};
use xagent_adb_connector::sim::{InputEvent, SimConfig, SimPhone};

fn phone(model: &str, manufacturer: &str, sdk: u32) -> SimConfig {
    SimConfig { model: model.into(), manufacturer: manufacturer.into(), sdk, ..SimConfig::default() }
}

/// `auth.start` with `input`, retried (bounded) while the connector has not yet verified every phone.
async fn bind_with(c: &mut Client, input: Value) -> (String, Value) {
    let (ch, _) = c.open(None).await;
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let a = c.request("auth.start", Some(&ch), json!({"flow_id": "adb_device", "input": input})).await;
        if a["payload"]["status"] == "authenticated" || Instant::now() > deadline {
            return (ch, a);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Presses HOME through `ch`: the phone whose event log shows it is the one bound.
async fn press_home(c: &mut Client, ch: &str) {
    let args = json!({"connector_channel_id": ch, "key": "HOME"});
    let ack = c.request("tool.invoke", Some(ch), json!({"tool_id": "android_key", "arguments": args})).await;
    assert!(ack.get("error").is_none(), "{ack}");
}

fn pressed(sim: &SimPhone) -> bool {
    let got = sim.events().contains(&InputEvent::Key("KEYCODE_HOME".into()));
    sim.clear_events();
    got
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn binds_take_a_free_phone_matching_every_constraint_or_say_why_not() {
    tokio::time::timeout(Duration::from_secs(120), async {
        let (adb, pixel_a, _) = setup_with(phone("Pixel 7", "Google", 34)).await.expect("adb is required");
        let galaxy = start_sim_with(phone("Galaxy S23", "samsung", 33)).await;
        let pixel_c = start_sim_with(phone("Pixel 7", "Google", 34)).await;
        for s in [galaxy.serial(), pixel_c.serial()] {
            let a = adb.clone();
            blocking(move || {
                a.connect(&s);
                a.wait_state(&s, "device");
            })
            .await;
        }
        let dir = tempfile::tempdir().unwrap();
        let policy = dir.path().join("policy.json");
        std::fs::write(&policy, json!({"labels": {pixel_c.serial(): ["pool:checkout", "sim:carrier-x"]}}).to_string())
            .unwrap();
        let server = format!("127.0.0.1:{}", adb.port);
        let srv = Server::start(
            &dir.path().join("data"),
            &["--adb-server", &server, "--policy", policy.to_str().unwrap()],
            &[],
        );
        let mut c = ws(srv.addr, None).await;
        c.hello(None).await;

        // The card declares the constraint fields.
        let card = get(srv.addr, "/connector-card.json").await.json();
        let fields: Vec<&str> =
            card["auth_flows"][0]["fields"].as_array().unwrap().iter().map(|f| f["name"].as_str().unwrap()).collect();
        assert_eq!(fields, ["serial", "model", "manufacturer", "min_sdk", "max_sdk", "labels"]);

        // Labels from the policy file (form text, comma-separated).
        let (ch1, a) = bind_with(&mut c, json!({"model": "pixel 7", "labels": "pool:checkout"})).await;
        assert_eq!(a["payload"]["status"], "authenticated", "{a}");
        press_home(&mut c, &ch1).await;
        assert!(pressed(&pixel_c) && !pressed(&pixel_a) && !pressed(&galaxy), "the labelled Pixel was bound");

        // Manufacturer + SDK range (numbers as JSON numbers or as form text).
        let (ch2, a) = bind_with(&mut c, json!({"manufacturer": "Samsung", "min_sdk": "33", "max_sdk": 33})).await;
        assert_eq!(a["payload"]["status"], "authenticated", "{a}");
        press_home(&mut c, &ch2).await;
        assert!(pressed(&galaxy) && !pressed(&pixel_a));

        let (ch3, a) = bind_with(&mut c, json!({"model": "Pixel 7"})).await;
        assert_eq!(a["payload"]["status"], "authenticated", "{a}");
        press_home(&mut c, &ch3).await;
        assert!(pressed(&pixel_a));

        // Nothing left: the reasons.
        let (ch4, _) = c.open(None).await;
        let start = |input: Value| json!({"flow_id": "adb_device", "input": input});
        let a = c.request("auth.start", Some(&ch4), start(json!({"model": "Pixel 7"}))).await;
        assert_eq!(a["payload"]["status"], "failed");
        assert_eq!(error_code(&a), "device_busy", "{a}");
        let free_one = "try again when one is released (auth.logout of its channel, or Release on the device wall) or \
                        connect another phone";
        assert_eq!(
            a["payload"]["message"],
            format!("2 devices match model=\"Pixel 7\", both held by other channels; {free_one}")
        );
        // Plain pool binding with every phone held: busy (they exist; one will be free again), with what to do —
        // not device_not_found.
        let a = c.request("auth.start", Some(&ch4), start(json!({}))).await;
        assert_eq!(a["payload"]["status"], "failed");
        assert_eq!(error_code(&a), "device_busy", "{a}");
        assert_eq!(a["payload"]["message"], format!("all 3 devices are held by other channels; {free_one}"));
        let a = c.request("auth.start", Some(&ch4), start(json!({"min_sdk": 35}))).await;
        assert_eq!(error_code(&a), "device_not_found", "{a}");
        assert_eq!(
            a["payload"]["message"],
            "no device matches min_sdk=35 (online: Galaxy S23 (samsung, SDK 33); Pixel 7 (Google, SDK 34))"
        );
        let a = c.request("auth.start", Some(&ch4), start(json!({"labels": ["pool:none"]}))).await;
        assert_eq!(error_code(&a), "device_not_found", "{a}");
        let a = c.request("auth.start", Some(&ch4), start(json!({"min_sdk": "thirty"}))).await;
        assert_eq!(error_code(&a), "auth_input_invalid", "{a}");
        let a =
            c.request("auth.start", Some(&ch4), start(json!({"serial": pixel_a.serial(), "model": "Pixel 7"}))).await;
        assert_eq!(error_code(&a), "auth_input_invalid", "{a}");
        let a = c.request("auth.start", Some(&ch4), start(json!({"colour": "red"}))).await;
        assert_eq!(error_code(&a), "auth_input_invalid", "{a}");

        // A freed phone is matched again.
        c.request("auth.logout", Some(&ch3), json!({})).await;
        let a = c.request("auth.start", Some(&ch4), start(json!({"model": "Pixel 7", "max_sdk": 34}))).await;
        assert_eq!(a["payload"]["status"], "authenticated", "{a}");
        press_home(&mut c, &ch4).await;
        assert!(pressed(&pixel_a));
    })
    .await
    .expect("test timed out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_policy_with_a_bad_label_is_refused_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.json");
    std::fs::write(&policy, json!({"labels": {"R58N123ABC": ["has space"]}}).to_string()).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_xagent-adb-connector"))
        .args(["serve", "--data-dir", dir.path().join("d").to_str().unwrap(), "--policy", policy.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("\"has space\" is not a valid label"));
}

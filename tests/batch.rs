//! Issue 49 item 5: `android_batch` (steps in order through the call path's own checks, stop at the first error, one
//! settle and one `effect`, every step audited as an action of its own) and `repeat` on `android_tap`. Real connector
//! binary → real adb server → simulated phone; what reached the phone is read from the phone's own counter and
//! event log, the audit evidence from the connector's database.

mod common;

use std::time::Duration;

use common::rig::Rig;
use serde_json::{json, Value};
use xagent_adb_connector::sim::{InputEvent, SimConfig};

fn bounded<F: std::future::Future>(f: F) -> tokio::time::Timeout<F> {
    tokio::time::timeout(Duration::from_secs(180), f)
}

const INCREMENT: &str = "Increment";

impl Rig {
    fn taps(&self) -> usize {
        self.sim.events().into_iter().filter(|e| matches!(e, InputEvent::Tap { .. })).count()
    }

    /// `tool.invoke` of android_batch with a `tool_call_id`; the ack.
    async fn batch(&mut self, steps: Value, call_id: &str) -> Value {
        let ch = self.ch.clone();
        let args = json!({"steps": steps, "connector_channel_id": ch});
        self.c
            .request(
                "tool.invoke",
                Some(&ch),
                json!({"tool_id": "android_batch", "arguments": args, "context": {"tool_call_id": call_id}}),
            )
            .await
    }

    /// The audit rows (tool, tool_call_id) of the connector's database, in order.
    fn audit_rows(&self) -> Vec<(String, Option<String>, String)> {
        let db = rusqlite::Connection::open_with_flags(
            self.dir.path().join("connector.db"),
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
        )
        .unwrap();
        let mut st = db.prepare("SELECT tool_id, tool_call_id, arguments FROM audit ORDER BY seq").unwrap();
        st.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).unwrap().map(Result::unwrap).collect()
    }
}

/// Three taps of Increment in one call: the counter shows 3, the result lists three step results and one `effect`
/// (the batch settled once), and the audit log holds each tap as its own record carrying the batch's call id.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_taps_in_one_batch_count_three_with_one_effect_and_three_audited_taps() {
    bounded(async {
        let mut r = Rig::with(SimConfig::default(), &[], None).await;
        // Three different ways to name the same button: three distinct actions (identical ones are counted, not
        // recorded one by one: audit::budget), so the log shows each tap as a record.
        let steps = json!([
            {"tool_id": "android_tap", "arguments": {"element": {"text": INCREMENT}}},
            {"tool_id": "android_tap", "arguments": {"element": {"resource_id": "com.xagent.sim:id/increment"}}},
            {"tool_id": "android_tap", "arguments": {"element": {"text_contains": "increm"}}},
        ]);
        let ack = r.batch(steps, "batch-three").await;
        assert!(ack.get("error").is_none(), "{ack}");
        let res = &ack["payload"]["result"];
        assert_eq!(r.sim.counter(), 3, "{res}");
        assert_eq!(r.taps(), 3, "{res}");
        assert_eq!(res["completed"], 3, "{res}");
        assert!(res.get("failed").is_none(), "{res}");
        let steps = res["steps"].as_array().unwrap();
        assert_eq!(steps.len(), 3, "{res}");
        for (i, s) in steps.iter().enumerate() {
            assert_eq!(s["step"], i + 1, "{res}");
            assert_eq!(s["tool_id"], "android_tap", "{res}");
            assert_eq!(s["result"]["element"]["text"], INCREMENT, "{res}");
            assert!(s["result"].get("effect").is_none(), "a step does not settle on its own: {res}");
        }
        // One effect, of the whole batch: the screen changed (the counter's text).
        assert!(res["effect"].is_object(), "{res}");
        assert_eq!(res["effect"]["screen_changed"], true, "{res}");
        let rows = r.audit_rows();
        let taps: Vec<_> = rows.iter().filter(|(t, _, _)| t == "android_tap").collect();
        assert_eq!(taps.len(), 3, "each tap is an audited action: {rows:?}");
        assert!(taps.iter().all(|(_, id, _)| id.as_deref() == Some("batch-three")), "{rows:?}");
        assert!(taps[1].2.contains("com.xagent.sim:id/increment"), "the step's own arguments: {rows:?}");
        assert_eq!(rows.iter().filter(|(t, _, _)| t == "android_batch").count(), 1, "{rows:?}");
    })
    .await
    .expect("bounded");
}

/// A failing middle step stops the batch: the last step never runs, and the result names the step, its error and
/// what the first one returned.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_middle_step_stops_the_rest_and_is_named() {
    bounded(async {
        let mut r = Rig::with(SimConfig::default(), &[], None).await;
        let steps = json!([
            {"tool_id": "android_tap", "arguments": {"element": {"text": INCREMENT}}},
            {"tool_id": "android_tap", "arguments": {"element": {"text": "No Such Button"}}},
            {"tool_id": "android_tap", "arguments": {"element": {"text": INCREMENT}}},
        ]);
        let ack = r.batch(steps, "batch-fails").await;
        assert!(ack.get("error").is_none(), "{ack}");
        let res = &ack["payload"]["result"];
        assert_eq!(r.sim.counter(), 1, "the third step never ran: {res}");
        assert_eq!(r.taps(), 1, "{res}");
        assert_eq!(res["completed"], 1, "{res}");
        assert_eq!(res["failed"]["step"], 2, "{res}");
        assert_eq!(res["failed"]["tool_id"], "android_tap", "{res}");
        assert_eq!(res["failed"]["code"], "element_not_found", "{res}");
        assert!(res["failed"]["message"].as_str().unwrap().contains("No Such Button"), "{res}");
        assert_eq!(res["failed"]["not_run"], 1, "{res}");
        assert_eq!(res["steps"].as_array().unwrap().len(), 1, "{res}");
        assert_eq!(res["steps"][0]["result"]["element"]["text"], INCREMENT, "{res}");
        // The steps that ran still settle once.
        assert!(res["effect"].is_object(), "{res}");
    })
    .await
    .expect("bounded");
}

/// Refused before anything runs: a nested batch, an unknown tool, a step's invalid arguments, a tool that waits for
/// a person, the batch's own settle in a step, and 11 steps. The phone saw no tap.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_batches_are_refused_before_any_step_runs() {
    bounded(async {
        let mut r = Rig::with(SimConfig::default(), &[], None).await;
        let tap = json!({"tool_id": "android_tap", "arguments": {"element": {"text": INCREMENT}}});
        let cases = [
            (json!([tap, {"tool_id": "android_batch", "arguments": {"steps": [tap]}}]), "invalid_arguments", "nesting"),
            (json!([tap, {"tool_id": "android_rotat", "arguments": {}}]), "tool_not_found", "step 2 (android_rotat)"),
            (json!([tap, {"tool_id": "android_tap", "arguments": {"x": -5, "y": 1}}]), "invalid_arguments", "step 2"),
            (
                json!([tap, {"tool_id": "android_request_human", "arguments": {"reason": "help"}}]),
                "invalid_arguments",
                "waits for a person",
            ),
            (
                json!([{"tool_id": "android_tap", "arguments": {"x": 1, "y": 1, "settle": true}}]),
                "invalid_arguments",
                "the batch's own",
            ),
            (Value::Array(vec![tap.clone(); 11]), "invalid_arguments", "steps"),
            (json!([]), "invalid_arguments", "steps"),
        ];
        for (i, (steps, code, words)) in cases.into_iter().enumerate() {
            let ack = r.batch(steps.clone(), &format!("bad-{i}")).await;
            assert_eq!(ack["error"]["code"], code, "{steps}: {ack}");
            let msg = ack["error"]["message"].as_str().unwrap();
            assert!(msg.contains(words), "{steps}: {msg}");
        }
        assert_eq!(r.taps(), 0, "nothing ran");
        assert_eq!(r.sim.counter(), 0);
    })
    .await
    .expect("bounded");
}

/// `repeat` on android_tap: three taps on the point, one settle.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tap_repeat_three_counts_three() {
    bounded(async {
        let mut r = Rig::with(SimConfig::default(), &[], None).await;
        let res = r.ok("android_tap", json!({"element": {"text": INCREMENT}, "repeat": 3, "settle": true})).await;
        assert_eq!(r.sim.counter(), 3, "{res}");
        assert_eq!(r.taps(), 3, "{res}");
        assert_eq!(res["taps"], 3, "{res}");
        assert!(res["effect"].is_object(), "{res}");
        let (code, msg) = r.err("android_tap", json!({"x": 1, "y": 1, "repeat": 21})).await;
        assert_eq!(code, "invalid_arguments", "{msg}");
        assert!(msg.contains("repeat"), "{msg}");
        assert_eq!(r.sim.counter(), 3);
    })
    .await
    .expect("bounded");
}

/// The batch's cut applies to the steps it has not run: the lease ends (auth.logout) while the second step waits;
/// the batch answers as cut, the third step never reaches the phone, and the batch is audited `cut`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_end_cuts_the_batch_and_the_rest_never_runs() {
    bounded(async {
        let mut r = Rig::with(SimConfig::default(), &[], None).await;
        let ch = r.ch.clone();
        let steps = json!([
            {"tool_id": "android_tap", "arguments": {"element": {"text": INCREMENT}}},
            {"tool_id": "android_ui_wait", "arguments": {"text": "Never Shows", "timeout_ms": 30000}},
            {"tool_id": "android_tap", "arguments": {"element": {"text": INCREMENT}}},
        ]);
        let args = json!({"steps": steps, "connector_channel_id": ch});
        let (_, batch) =
            r.c.send("tool.invoke", Some(&ch), json!({"tool_id": "android_batch", "arguments": args})).await;
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while r.sim.counter() < 1 {
            assert!(std::time::Instant::now() < deadline, "the first step never tapped");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // The second step is waiting now (30 s at most).
        tokio::time::sleep(Duration::from_millis(500)).await;
        let (_, logout) = r.c.send("auth.logout", Some(&ch), json!({})).await;
        let mut ack = None;
        loop {
            let v = r.c.recv().await;
            let rid = v["request_id"].as_str().unwrap_or("").to_owned();
            if rid == batch {
                ack = Some(v);
            } else if rid == logout {
                assert_eq!(v["payload"]["status"], "ok", "{v}");
                break;
            }
        }
        let ack = ack.expect("the batch answered before the logout did");
        assert_eq!(ack["type"], "tool.invoke.ack", "{ack}");
        assert!(ack["error"]["message"].as_str().unwrap_or("").contains("cut"), "{ack}");
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert_eq!((r.sim.counter(), r.taps()), (1, 1), "the third step never ran");
        let rows = r.audit_rows();
        let db = rusqlite::Connection::open_with_flags(
            r.dir.path().join("connector.db"),
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
        )
        .unwrap();
        let result: String = db
            .query_row("SELECT result FROM audit WHERE tool_id = 'android_batch'", [], |row| row.get(0))
            .unwrap_or_else(|e| panic!("{e}: {rows:?}"));
        assert_eq!(result, "cut", "{rows:?}");
    })
    .await
    .expect("bounded");
}

//! What agents tripped over (issue 35 items 2–5), through the real binary, the real adb server and a simulated
//! phone: emptying a field and repeated keys, observations that survive errors and answer after they left, a
//! scroll's find acted on by number and counted as a change, lenient arguments with "did you mean", a channel id
//! in the arguments that is not the packet's, and a replayed call that says so. The operator-hold half of item 5 is
//! in `tests/wall_control.rs` (it needs the wall's takeover).

mod common;

use std::time::Duration;

use common::rig::Rig;
use common::*;
use serde_json::{json, Value};
use xagent_adb_connector::sim::InputEvent;
use xagent_adb_connector::tools::observe::OBSERVATIONS_PER_CHANNEL;

fn bounded<F: std::future::Future>(f: F) -> tokio::time::Timeout<F> {
    tokio::time::timeout(Duration::from_secs(150), f)
}

/// The home screen's text field as a dump lists it.
async fn field_text(r: &mut Rig) -> String {
    let d = r.ok("android_ui_dump", json!({})).await;
    let f = d["elements"].as_array().unwrap().iter().find(|e| e["resource_id"] == "com.xagent.sim:id/input");
    f.unwrap_or_else(|| panic!("no text field: {d}"))["text"].as_str().unwrap_or("").to_owned()
}

fn index_of(obs: &Value, resource_id: &str) -> u64 {
    let e = obs["elements"].as_array().unwrap().iter().find(|e| e["resource_id"] == resource_id);
    e.unwrap_or_else(|| panic!("{resource_id}: {obs}"))["index"].as_u64().unwrap()
}

/// Item 2: `text: ""` with `clear: true` empties the field (and says so when read back); `android_key` repeats.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_text_with_clear_empties_the_field_and_keys_repeat() {
    bounded(async {
        let mut r = Rig::start().await;
        let field = json!({"resource_id": "input"});
        r.ok("android_input_text", json!({"element": field, "text": "hello"})).await;
        assert_eq!(field_text(&mut r).await, "hello");
        let cleared = r.ok("android_input_text", json!({"text": "", "clear": true, "verify": true})).await;
        assert_eq!(
            (&cleared["field_text"], &cleared["verified"], &cleared["typed_chars"]),
            (&json!(""), &json!(true), &json!(0)),
            "{cleared}"
        );
        assert_eq!(field_text(&mut r).await, "");
        // Empty text without clear would do nothing: refused, saying what does.
        let (code, msg) = r.err("android_input_text", json!({"text": ""})).await;
        assert_eq!(code, "invalid_arguments");
        assert!(msg.contains("with clear: true, empty text empties the field"), "{msg}");

        r.ok("android_input_text", json!({"text": "abcde"})).await;
        r.sim.clear_events();
        let k = r.ok("android_key", json!({"key": "DEL", "repeat": 3})).await;
        assert_eq!(k["repeat"], 3, "{k}");
        assert_eq!(field_text(&mut r).await, "ab");
        let dels = r.sim.events().iter().filter(|e| **e == InputEvent::Key("KEYCODE_DEL".into())).count();
        assert_eq!(dels, 3, "{:?}", r.sim.events());
    })
    .await
    .expect("bounded");
}

/// Item 3: errors' dumps never push out the agent's observation; one that was dropped (or expired) answers with
/// its element where it is now and an id to act on it; scroll's find can be acted on by number, and a scroll that
/// moved the list counts as a change although look-alike rows leave the pixels the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn observations_survive_errors_and_answer_after_they_leave() {
    bounded(async {
        let mut r = Rig::start().await;
        let obs = r.ok("android_ui_dump", json!({})).await;
        let (id, inc) =
            (obs["observation_id"].as_str().unwrap().to_owned(), index_of(&obs, "com.xagent.sim:id/increment"));
        // More ambiguous taps than the channel keeps observations: each error offers a fresh id of its own ...
        for _ in 0..OBSERVATIONS_PER_CHANNEL + 2 {
            let a = r.invoke("android_tap", json!({"element": {"text_contains": "o"}})).await;
            assert_eq!(error_code(&a), "ambiguous_element", "{a}");
            assert!(a["error"]["details"]["observation_id"].is_string(), "{a}");
        }
        // ... and the agent's own observation is still there.
        let tap = r.ok("android_tap", json!({"element": {"index": inc, "observation_id": id}})).await;
        assert_eq!(tap["element"]["resource_id"], "com.xagent.sim:id/increment", "{tap}");

        // Dropped for newer observations: the answer names the element where it is now, with an id to act on.
        for _ in 0..OBSERVATIONS_PER_CHANNEL {
            r.ok("android_ui_dump", json!({})).await;
        }
        r.sim.clear_events();
        let a = r.invoke("android_tap", json!({"element": {"index": inc, "observation_id": id}})).await;
        assert_eq!(error_code(&a), "observation_expired", "{a}");
        let msg = a["error"]["message"].as_str().unwrap();
        assert!(msg.contains("was dropped for newer observations") && msg.contains("is on screen now as #"), "{msg}");
        let d = &a["error"]["details"];
        assert_eq!(d["candidates"][0]["resource_id"], "com.xagent.sim:id/increment", "{a}");
        assert!(r.sim.events().is_empty(), "nothing was done: {:?}", r.sim.events());
        let again = json!({"index": d["candidates"][0]["index"], "observation_id": d["observation_id"]});
        let tap = r.ok("android_tap", json!({ "element": again })).await;
        assert_eq!(tap["element"]["resource_id"], "com.xagent.sim:id/increment", "{tap}");

        // Scroll's find comes with the observation it was found in: acted on by number.
        r.ok("android_app_launch", json!({"package": "com.xagent.demo"})).await;
        let s = r.ok("android_scroll", json!({"direction": "down", "until": {"text": "Item 20"}})).await;
        assert_eq!(s["found"], true, "{s}");
        let by_number = json!({"index": s["element"]["index"], "observation_id": s["observation_id"]});
        let tap = r.ok("android_tap", json!({ "element": by_number })).await;
        assert_eq!((&tap["element"]["text"], &tap["re_resolved"]), (&json!("Item 20"), &json!(false)), "{tap}");
        // One swipe that moved the list: a change, from the trees it read.
        let s = r.invoke_raw("android_scroll", json!({"direction": "down", "settle": true})).await;
        let effect = &s["payload"]["result"]["effect"];
        assert_eq!((&effect["tree_changed"], &effect["screen_changed"]), (&json!(true), &json!(true)), "{s}");
        assert!(s["payload"]["result"].get("_tree_changed").is_none(), "{s}");
        // Issue 49: with its effect's tree, one observation: the found element is named in the newer tree.
        let s = r
            .ok(
                "android_scroll",
                json!({"direction": "down", "until": {"text": "Item 30"}, "settle": true, "effect_tree": true}),
            )
            .await;
        assert_eq!(s["found"], true, "{s}");
        let newer = &s["effect"]["tree"]["observation_id"];
        assert!(newer.is_string(), "{s}");
        assert_eq!(&s["observation_id"], newer, "one observation id per result: {s}");
        let by_number = json!({"index": s["element"]["index"], "observation_id": s["observation_id"]});
        let tap = r.ok("android_tap", json!({ "element": by_number })).await;
        assert_eq!((&tap["element"]["text"], &tap["re_resolved"]), (&json!("Item 30"), &json!(false)), "{tap}");
    })
    .await
    .expect("bounded");
}

/// Item 4: unambiguous spellings are taken; a mistyped name gets the nearest three; a text that differs only in
/// case says so, and `ignore_case` takes it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lenient_arguments_and_did_you_mean() {
    bounded(async {
        let mut r = Rig::start().await;
        let tap = r.ok("android_tap", json!({"x": "10", "y": " 20"})).await;
        assert_eq!((&tap["x"], &tap["y"]), (&json!(10), &json!(20)), "{tap}");
        r.sim.clear_events();
        for (given, sent) in [("back", "BACK"), ("KEYCODE_HOME", "HOME"), ("keycode_back", "BACK")] {
            let k = r.ok("android_key", json!({ "key": given })).await;
            assert_eq!(k["key"], sent, "{given}: {k}");
        }
        let keys: Vec<InputEvent> = r.sim.events();
        assert_eq!(keys.len(), 3, "{keys:?}");
        let (code, msg) = r.err("android_key", json!({"key": "HOM"})).await;
        assert_eq!(code, "invalid_arguments");
        assert!(msg.contains("did you mean \"HOME\", "), "{msg}");
        assert!(!msg.contains("MEDIA_PLAY_PAUSE") && msg.len() < 200, "three names, not all of them: {msg}");
        let (code, msg) = r.err("android_tpa", json!({})).await;
        assert_eq!(code, "tool_not_found");
        assert!(msg.contains("did you mean \"android_tap\""), "{msg}");
        // An opt-in tool the operator did not enable is not a typo (it used to answer "did you mean
        // android_scroll"): it says so, and what to do.
        let (code, msg) = r.err("android_shell", json!({"command": "id"})).await;
        assert_eq!(code, "tool_not_found");
        assert!(
            msg.contains("opt-in") && msg.contains("enabled_risky_tools") && !msg.contains("did you mean"),
            "{msg}"
        );

        let (code, msg) = r.err("android_tap", json!({"element": {"text": "increment"}})).await;
        assert_eq!(code, "element_not_found");
        assert!(msg.contains("\"increment\" matches #") && msg.contains("only ignoring case"), "{msg}");
        let tap = r.ok("android_tap", json!({"element": {"text": "increment", "ignore_case": true}})).await;
        assert_eq!(tap["element"]["text"], "Increment", "{tap}");
    })
    .await
    .expect("bounded");
}

/// Item 5: a channel id in the arguments that is not the packet's is refused naming both, and nothing runs; a
/// repeated tool_call_id answers the recorded outcome with `replayed: true`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_foreign_channel_argument_is_refused_and_a_replay_says_so() {
    bounded(async {
        let mut r = Rig::start().await;
        let ch = r.ch.clone();
        r.sim.clear_events();
        let args = json!({"connector_channel_id": "cch_someone_else", "x": 10, "y": 10, "settle": false});
        let a = r.c.request("tool.invoke", Some(&ch), json!({"tool_id": "android_tap", "arguments": args})).await;
        assert_eq!(error_code(&a), "invalid_arguments", "{a}");
        let msg = a["error"]["message"].as_str().unwrap();
        assert!(
            msg.contains("\"cch_someone_else\"") && msg.contains(&format!("{ch:?}")) && msg.contains("§8.18"),
            "{msg}"
        );
        assert!(r.sim.events().is_empty(), "the call acted: {:?}", r.sim.events());

        let payload = json!({"tool_id": "android_tap",
                             "arguments": {"connector_channel_id": ch, "x": 11, "y": 12, "settle": false},
                             "context": {"tool_call_id": "call_trips_1"}});
        let first = r.c.request("tool.invoke", Some(&ch), payload.clone()).await;
        assert!(first.get("error").is_none() && first["payload"]["result"].get("replayed").is_none(), "{first}");
        let again = r.c.request("tool.invoke", Some(&ch), payload).await;
        assert_eq!(again["payload"]["result"]["replayed"], true, "{again}");
        assert_eq!(again["payload"]["result"]["x"], 11, "{again}");
        assert_eq!(r.sim.events().len(), 1, "the replay acted again: {:?}", r.sim.events());
    })
    .await
    .expect("bounded");
}

//! `android_observe` and element-targeted actions end to end: real connector binary → real adb server → simulated
//! phone. Effects are asserted on the phone's own event log and click log (which element a tap hit).

mod common;

use std::time::Duration;

use common::rig::Rig;
use common::*;
use serde_json::{json, Value};
use xagent_adb_connector::sim::InputEvent;
use xagent_adb_connector::tools::observe::{glyph_on, mark_metrics, MARK_COLOR};

async fn rig() -> Rig {
    Rig::start().await
}

impl Rig {
    async fn demo_app(&mut self) {
        self.ok("android_app_launch", json!({"package": "com.xagent.demo"})).await;
    }
}

fn bounded<F: std::future::Future>(f: F) -> tokio::time::Timeout<F> {
    tokio::time::timeout(Duration::from_secs(120), f)
}

fn find<'a>(obs: &'a Value, text: &str) -> &'a Value {
    obs["elements"].as_array().unwrap().iter().find(|e| e["text"] == text).unwrap_or_else(|| panic!("{text}: {obs}"))
}

fn centre(e: &Value) -> (i32, i32) {
    (e["center"][0].as_i64().unwrap() as i32, e["center"][1].as_i64().unwrap() as i32)
}

fn luma(p: &image::Rgb<u8>) -> f64 {
    0.299 * f64::from(p.0[0]) + 0.587 * f64::from(p.0[1]) + 0.114 * f64::from(p.0[2])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn observe_returns_a_marked_screenshot_the_elements_and_the_phone_state() {
    bounded(async {
        let mut r = rig().await;
        let obs = r.ok("android_observe", json!({"quality": 90, "picture": true})).await;
        assert!(obs["observation_id"].as_str().unwrap().starts_with("obs_"), "{obs}");
        assert_eq!((obs["screen_width"].as_u64(), obs["screen_height"].as_u64()), (Some(1080), Some(2400)));
        // The default picture: 768 px long (picture::OBSERVE_SIDE, chosen from what a model pays for it).
        assert_eq!((obs["width"].as_u64(), obs["height"].as_u64()), (Some(346), Some(768)));
        assert_eq!(obs["orientation"], "portrait");
        assert_eq!(obs["foreground_package"], "com.android.launcher3");
        assert_eq!(obs["keyboard_shown"], false);
        let button = find(&obs, "Increment").clone();
        assert_eq!(button["marked"], true, "interactive elements are marked: {button}");
        assert!(find(&obs, "Sim Home").get("marked").is_none(), "plain text is listed but not marked");

        // The image: decode the downloaded JPEG and find the button's box and its number.
        let url = obs["files"][0]["download_url"].as_str().unwrap().to_owned();
        let resp = get(r.srv.addr, &url).await;
        assert_eq!(resp.status, 200);
        let img = image::load_from_memory(&resp.body).unwrap().into_rgb8();
        assert_eq!(img.dimensions(), (346, 768));
        let s = 346.0 / 1080.0;
        let b: Vec<f64> = button["bounds"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap() * s).collect();
        let (x0, y0, x1, y1) = (b[0].round() as u32, b[1].round() as u32, b[2].round() as u32, b[3].round() as u32);
        let (lw, cell) = mark_metrics(768);
        let is_mark = |p: &image::Rgb<u8>| (0..3).all(|i| (i32::from(p.0[i]) - i32::from(MARK_COLOR[i])).abs() < 60);
        let (mx, my) = ((x0 + x1) / 2, (y0 + y1) / 2);
        for (x, y) in [(mx, y0 + lw / 2), (mx, y1 - 1 - lw / 2), (x0 + lw / 2, my), (x1 - 1 - lw / 2, my)] {
            assert!(is_mark(img.get_pixel(x, y)), "box edge at ({x},{y}): {:?}", img.get_pixel(x, y));
        }
        assert!(!is_mark(img.get_pixel(mx, my)), "the box is an outline; the button shows through");
        // The label at the box's top-left corner reads the element's index.
        let index = button["index"].as_u64().unwrap().to_string();
        let (lx, ly) = (x0 + lw, y0 + lw);
        for (i, d) in index.bytes().enumerate() {
            let gx = lx + cell + i as u32 * 4 * cell;
            for row in 0..5 {
                for col in 0..3 {
                    let p = img.get_pixel(gx + col * cell + cell / 2, ly + cell + row * cell + cell / 2);
                    assert_eq!(luma(p) > 170.0, glyph_on(d - b'0', col, row), "label digit {d} ({col},{row}): {p:?}");
                }
            }
        }

        // Unchanged screen, same numbers; a focused field shows the keyboard.
        let again = r.ok("android_observe", json!({"marks": false})).await;
        assert_eq!(find(&again, "Increment")["index"], button["index"]);
        assert_ne!(again["observation_id"], obs["observation_id"]);
        let field = obs["elements"].as_array().unwrap().iter().find(|e| e["class"] == "EditText").unwrap().clone();
        let oid = obs["observation_id"].clone();
        r.ok("android_tap", json!({"element": {"index": field["index"], "observation_id": oid}})).await;
        let typing = r.ok("android_observe", json!({"only_interactive": true, "picture": true})).await;
        assert_eq!(typing["keyboard_shown"], true);
        assert!(typing["elements"].as_array().unwrap().iter().all(|e| e["marked"] == true), "{typing}");
    })
    .await
    .expect("test timed out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tap_by_index_lands_on_the_centre_re_resolves_a_moved_element_and_never_taps_a_stale_one() {
    bounded(async {
        let mut r = rig().await;
        r.demo_app().await;
        let obs = r.ok("android_observe", json!({})).await;
        let oid = obs["observation_id"].clone();
        let (item3, item5, item2) =
            (find(&obs, "Item 3").clone(), find(&obs, "Item 5").clone(), find(&obs, "Item 2").clone());

        // Unchanged screen: the tap lands on the element's centre.
        r.sim.clear_events();
        let tap = r.ok("android_tap", json!({"element": {"index": item3["index"], "observation_id": oid}})).await;
        let (x, y) = centre(&item3);
        assert_eq!(r.sim.events(), vec![InputEvent::Tap { x, y }]);
        assert_eq!(r.sim.clicks(), vec!["Item 3"]);
        assert_eq!((tap["x"].as_i64(), tap["y"].as_i64()), (Some(x.into()), Some(y.into())));
        assert_eq!((tap["element"]["text"].clone(), tap["re_resolved"].clone()), (json!("Item 3"), json!(false)));

        // The list scrolls between observe and act: the element is found again where it is now.
        r.sim_shell("input swipe 540 1500 540 1200 50").await;
        assert_eq!(r.sim.list_offset(), 300);
        r.sim.clear_events();
        let tap = r.ok("android_tap", json!({"element": {"index": item5["index"], "observation_id": oid}})).await;
        assert_eq!(tap["re_resolved"], true, "{tap}");
        let (x, y) = centre(&item5);
        assert_eq!(r.sim.events(), vec![InputEvent::Tap { x, y: y - 300 }], "moved with the list");
        assert_eq!(r.sim.clicks().last().map(String::as_str), Some("Item 5"));

        // Scrolled so far that the element left the screen: stale, and nothing is tapped.
        r.sim_shell("input swipe 540 2000 540 700 50").await;
        r.sim.clear_events();
        let (code, msg) =
            r.err("android_tap", json!({"element": {"index": item2["index"], "observation_id": oid}})).await;
        assert_eq!(code, "stale_element", "{msg}");
        assert!(msg.contains("\"Item 2\"") && msg.contains("On screen now: ") && msg.contains("\"Item 12\""), "{msg}");
        let (code, _) =
            r.err("android_long_press", json!({"element": {"index": item2["index"], "observation_id": oid}})).await;
        assert_eq!(code, "stale_element");
        assert_eq!(r.sim.events(), vec![], "a stale index never taps");

        // Unknown observation, both forms at once.
        let (code, msg) = r.err("android_tap", json!({"element": {"index": 1, "observation_id": "obs_nope"}})).await;
        assert_eq!(code, "observation_expired", "{msg}");
        let (code, msg) = r.err("android_tap", json!({"x": 5, "y": 5, "element": {"text": "OK", "nth": 0}})).await;
        assert_eq!(
            (code.as_str(), msg.as_str()),
            ("invalid_arguments", "give either `element` or `x` and `y`, not both")
        );
        let (code, _) = r.err("android_tap", json!({"x": 5})).await;
        assert_eq!(code, "invalid_arguments");
        assert_eq!(r.sim.events(), vec![]);
    })
    .await
    .expect("test timed out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn selectors_refuse_ambiguity_suggest_near_texts_and_type_into_fields() {
    bounded(async {
        let mut r = rig().await;
        r.demo_app().await;
        r.sim.clear_events();
        let (code, msg) = r.err("android_tap", json!({"element": {"text": "OK"}})).await;
        assert_eq!(code, "ambiguous_element");
        assert!(msg.starts_with("2 elements match text=\"OK\": #") && msg.contains("nth"), "{msg}");
        let (code, msg) = r.err("android_tap", json!({"element": {"text": "Okay"}})).await;
        assert_eq!(code, "element_not_found");
        assert!(msg.contains("nearest texts on screen: \"OK\""), "{msg}");
        assert_eq!(r.sim.events(), vec![], "no tap on a refused selector");

        let tap = r.ok("android_tap", json!({"element": {"text": "OK", "nth": 1}})).await;
        assert_eq!(tap["element"]["resource_id"], "com.xagent.demo:id/ok_right");
        let tap2 = r.ok("android_long_press", json!({"element": {"resource_id": "ok_left", "class": "Button"}})).await;
        assert_eq!(tap2["duration_ms"], 800);
        assert_eq!(r.sim.clicks(), vec!["OK (right)".to_owned()], "a long press is not a click");
        let (x, y) = (tap["x"].as_i64().unwrap() as i32, tap["y"].as_i64().unwrap() as i32);
        let (lx, ly) = (tap2["x"].as_i64().unwrap() as i32, tap2["y"].as_i64().unwrap() as i32);
        assert_eq!(
            r.sim.events(),
            vec![InputEvent::Tap { x, y }, InputEvent::Swipe { x1: lx, y1: ly, x2: lx, y2: ly, duration_ms: 800 }]
        );

        // Typing into a field by selector: focus tap on its centre, then the text.
        r.ok("android_key", json!({"key": "HOME"})).await;
        r.sim.clear_events();
        let typed = r.ok("android_input_text", json!({"text": "hi", "element": {"resource_id": "input"}})).await;
        assert_eq!(typed["element"]["class"], "EditText");
        let (x, y) = centre(&typed["element"]);
        assert_eq!(r.sim.events(), vec![InputEvent::Tap { x, y }, InputEvent::Text("hi".into())]);
    })
    .await
    .expect("test timed out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scroll_until_finds_the_row_or_says_what_it_saw() {
    bounded(async {
        let mut r = rig().await;
        r.demo_app().await;
        let found = r
            .ok(
                "android_scroll",
                json!({"direction": "down", "element": {"resource_id": "list"}, "until": {"text": "Item 25"}}),
            )
            .await;
        assert_eq!((found["found"].clone(), found["element"]["text"].clone()), (json!(true), json!("Item 25")));
        let swipes = found["swipes"].as_u64().unwrap();
        assert!((1..=5).contains(&swipes), "{found}");
        let swipe_count = r.sim.events().iter().filter(|e| matches!(e, InputEvent::Swipe { .. })).count();
        assert_eq!(swipe_count as u64, swipes);
        // The row it returned is where it is: tapping its centre clicks it.
        let (x, y) = centre(&found["element"]);
        r.ok("android_tap", json!({"x": x, "y": y})).await;
        assert_eq!(r.sim.clicks().last().map(String::as_str), Some("Item 25"));

        // Down to the end: the list stops moving, and the error lists what was seen.
        let (code, msg) =
            r.err("android_scroll", json!({"direction": "down", "until": {"text": "Item 99"}, "max_swipes": 10})).await;
        assert_eq!(code, "element_not_found");
        assert!(msg.contains("end reached") && msg.contains("\"Item 30\""), "{msg}");
        let (code, msg) = r.err("android_scroll", json!({"direction": "up", "max_swipes": 11})).await;
        assert_eq!(code, "invalid_arguments", "{msg}");
        let (code, _) =
            r.err("android_scroll", json!({"direction": "up", "until": {"index": 1, "observation_id": "obs_x"}})).await;
        assert_eq!(code, "invalid_arguments");
        // Without `until`: one swipe up.
        let before = r.sim.list_offset();
        let up = r.ok("android_scroll", json!({"direction": "up", "element": {"resource_id": "list"}})).await;
        assert_eq!(up["swipes"], 1);
        assert!(r.sim.list_offset() < before);
    })
    .await
    .expect("test timed out");
}

/// A phone turned to landscape captures a landscape frame and dumps its tree in the rotated space
/// (`<hierarchy rotation="1">`, tests/fixtures/real/INDEX.md): the screenshot is 2400 wide, observe's bounds lie
/// inside 2400×1080, and a tap by index lands on the element's centre there — which the phone's own click log
/// confirms is the element the agent saw.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_landscape_phone_is_seen_and_tapped_in_the_rotated_space() {
    bounded(async {
        let mut r = rig().await;
        r.demo_app().await;
        r.sim_shell("settings put system user_rotation 1").await;
        // The connector caches the rotation for up to 1 s; the turn happened behind its back.
        tokio::time::sleep(Duration::from_millis(1200)).await;

        let shot = r.ok("android_screenshot", json!({})).await;
        assert_eq!((shot["screen_width"].as_u64(), shot["screen_height"].as_u64()), (Some(2400), Some(1080)), "{shot}");
        assert_eq!((shot["width"].as_u64(), shot["height"].as_u64()), (Some(1280), Some(576)), "{shot}");
        let got = get(r.srv.addr, shot["files"][0]["download_url"].as_str().unwrap()).await;
        assert_eq!(got.status, 200);
        let img = image::load_from_memory_with_format(&got.body, image::ImageFormat::Jpeg).unwrap();
        assert_eq!((img.width(), img.height()), (1280, 576), "the decoded JPEG is landscape");

        let obs = r.ok("android_observe", json!({"picture": true})).await;
        assert_eq!((obs["screen_width"].as_u64(), obs["screen_height"].as_u64()), (Some(2400), Some(1080)), "{obs}");
        assert_eq!((obs["width"].as_u64(), obs["height"].as_u64()), (Some(768), Some(346)), "{obs}");
        let elements = obs["elements"].as_array().unwrap();
        assert!(elements.len() >= 5, "{obs}");
        let mut beyond_portrait = false;
        for e in elements {
            let b: Vec<i64> = e["bounds"].as_array().unwrap().iter().map(|v| v.as_i64().unwrap()).collect();
            assert!(b[0] >= 0 && b[1] >= 0 && b[2] <= 2400 && b[3] <= 1080 && b[0] <= b[2] && b[1] <= b[3], "{e}");
            beyond_portrait |= b[2] > 1080;
        }
        assert!(beyond_portrait, "the layout uses the landscape width, not a portrait strip: {obs}");

        // The right-hand OK button lies in the part of the screen a portrait phone does not have.
        let ok_right = elements
            .iter()
            .find(|e| e["resource_id"].as_str().is_some_and(|id| id.ends_with("ok_right")))
            .unwrap_or_else(|| panic!("ok_right: {obs}"))
            .clone();
        let (x, y) = centre(&ok_right);
        assert!(x > 1080 && y < 1080, "centre ({x},{y}) is in the landscape-only area");
        r.sim.clear_events();
        let oid = obs["observation_id"].clone();
        let tap = r.ok("android_tap", json!({"element": {"index": ok_right["index"], "observation_id": oid}})).await;
        assert_eq!(tap["re_resolved"], false, "{tap}");
        assert_eq!(r.sim.events(), vec![InputEvent::Tap { x, y }]);
        assert_eq!(r.sim.clicks().last().map(String::as_str), Some("OK (right)"), "the phone saw that button tapped");
    })
    .await
    .expect("test timed out");
}

/// Issue 19 item 3: an ambiguous selector lists its candidates (resource id, text, centre) in `error.details`
/// with an `observation_id` those indices belong to, so the agent retries with `{index, observation_id}` at once —
/// and the retry taps exactly the candidate it named, nothing before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ambiguity_lists_candidates_with_an_observation_id_to_retry_with() {
    bounded(async {
        let mut r = rig().await;
        r.demo_app().await;
        r.sim.clear_events();
        let ack = r.invoke("android_tap", json!({"element": {"text": "OK"}})).await;
        assert_eq!(error_code(&ack), "ambiguous_element", "{ack}");
        let details = &ack["error"]["details"];
        let obs = details["observation_id"].as_str().unwrap_or_else(|| panic!("no observation_id: {ack}"));
        assert!(ack["error"]["message"].as_str().unwrap().contains(obs), "the message names it too: {ack}");
        let cands = details["candidates"].as_array().unwrap();
        assert_eq!((cands.len(), details["total"].as_u64()), (2, Some(2)), "{details}");
        let ids: Vec<&str> = cands.iter().map(|c| c["resource_id"].as_str().unwrap()).collect();
        assert_eq!(ids, ["com.xagent.demo:id/ok_left", "com.xagent.demo:id/ok_right"]);
        assert!(cands.iter().all(|c| c["text"] == "OK" && c["center"].as_array().is_some_and(|p| p.len() == 2)));
        assert_eq!(r.sim.events(), vec![], "nothing tapped on the ambiguous call");

        let right = &cands[1];
        let tap = r.ok("android_tap", json!({"element": {"index": right["index"], "observation_id": obs}})).await;
        assert_eq!(tap["element"]["resource_id"], "com.xagent.demo:id/ok_right", "{tap}");
        assert_eq!(json!([tap["x"], tap["y"]]), right["center"]);
        assert_eq!(r.sim.clicks(), vec!["OK (right)".to_owned()]);
    })
    .await
    .expect("test timed out");
}

/// `android_ui_dump` hands out an observation_id: its indices act like an `android_observe`'s.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ui_dump_observation_id_works_with_tap() {
    bounded(async {
        let mut r = rig().await;
        let dump = r.ok("android_ui_dump", json!({})).await;
        let obs = dump["observation_id"].as_str().unwrap_or_else(|| panic!("no observation_id: {dump}")).to_owned();
        let button = find(&dump, "Increment").clone();
        r.sim.clear_events();
        let tap = r.ok("android_tap", json!({"element": {"index": button["index"], "observation_id": obs}})).await;
        assert_eq!(tap["element"]["text"], "Increment", "{tap}");
        let (x, y) = centre(&button);
        assert_eq!(r.sim.events(), vec![InputEvent::Tap { x, y }]);
        r.ok("android_ui_wait", json!({"text": "Count: 1", "exact": true})).await;
    })
    .await
    .expect("test timed out");
}

/// `android_ui_wait` with `exact` matches the whole text only; its timeout says what is on screen instead.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ui_wait_exact_and_a_timeout_that_lists_the_screen() {
    bounded(async {
        let mut r = rig().await;
        let sub = r.ok("android_ui_wait", json!({"text": "Count", "timeout_ms": 0})).await;
        assert_eq!((sub["found"].clone(), sub["element"]["text"].clone()), (json!(true), json!("Count: 0")));
        let whole = r.ok("android_ui_wait", json!({"text": "Count: 0", "exact": true, "timeout_ms": 0})).await;
        assert_eq!(whole["element"]["resource_id"], "com.xagent.sim:id/counter", "{whole}");

        let ack = r.invoke("android_ui_wait", json!({"text": "Count", "exact": true, "timeout_ms": 300})).await;
        assert_eq!(error_code(&ack), "ui_wait_timeout", "{ack}");
        let msg = ack["error"]["message"].as_str().unwrap();
        assert!(msg.contains("(exact text)") && msg.contains("\"Count: 0\"") && msg.contains("\"Increment\""), "{msg}");
        let seen = ack["error"]["details"]["on_screen"].as_array().unwrap();
        assert!(seen.contains(&json!("Count: 0")) && seen.len() <= 20, "{ack}");
    })
    .await
    .expect("test timed out");
}

/// One uiautomator node of a hand-written screen (the sim's own screens have no such views).
fn node(class: &str, text: &str, desc: &str, b: [i32; 4], inner: &str) -> String {
    format!(
        "<node index=\"0\" text=\"{text}\" resource-id=\"\" class=\"{class}\" package=\"com.example.app\" \
         content-desc=\"{desc}\" checkable=\"false\" checked=\"false\" clickable=\"{}\" enabled=\"true\" \
         focusable=\"false\" focused=\"false\" scrollable=\"false\" long-clickable=\"false\" password=\"false\" \
         selected=\"false\" bounds=\"[{},{}][{},{}]\">{inner}</node>",
        class.ends_with("Button"),
        b[0],
        b[1],
        b[2],
        b[3]
    )
}

/// `uiautomator dump /dev/tty` as a phone prints it, for a root FrameLayout holding `inner`.
fn dump_of(inner: &str) -> String {
    let root = node("android.widget.FrameLayout", "", "", [0, 0, 1080, 2400], inner);
    format!(
        "<?xml version='1.0' encoding='UTF-8' standalone='yes' ?><hierarchy rotation=\"0\">{root}</hierarchy>\n\
         UI hierchary dumped to: /dev/tty\n"
    )
}

/// Issue 49: a default observation leaves the picture out when the elements describe the screen, and says so and
/// how to get it; every screen the elements cannot describe gets the picture, with why; `picture: true` always
/// gets it, `picture: false` never.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_picture_comes_by_default_only_when_the_elements_cannot_describe_the_screen() {
    bounded(async {
        let mut r = rig().await;
        // The home screen: text and buttons only.
        let obs = r.ok("android_observe", json!({})).await;
        assert!(obs.get("files").is_none() && obs.get("width").is_none(), "no picture: {obs}");
        let said = obs["picture"].as_str().unwrap_or_default();
        assert!(said.starts_with("left out") && said.contains("picture: true"), "{obs}");
        assert!(said.contains("android_screenshot"), "{obs}");
        assert!(find(&obs, "Increment").get("marked").is_none(), "no picture, no marks: {obs}");
        let asked = r.ok("android_observe", json!({"picture": true})).await;
        assert_eq!(asked["files"].as_array().map(Vec::len), Some(1), "picture: true: {asked}");
        assert_eq!((asked["width"].as_u64(), asked["height"].as_u64()), (Some(346), Some(768)));
        assert_eq!(find(&asked, "Increment")["marked"], true);
        assert!(asked.get("picture").is_none(), "{asked}");

        // The lock screen.
        r.sim.set_lock(xagent_adb_connector::sim::ui::LockMode::Swipe);
        let obs = r.ok("android_observe", json!({})).await;
        assert_eq!(obs["locked"], true, "{obs}");
        assert_eq!(obs["files"].as_array().map(Vec::len), Some(1), "{obs}");
        assert!(obs["picture"].as_str().unwrap_or_default().contains("lock screen"), "{obs}");
        let refused = r.ok("android_observe", json!({"picture": false})).await;
        assert!(refused.get("files").is_none(), "picture: false: {refused}");
        r.ok("android_unlock", json!({})).await;

        // An app window with no views yet: the tree is empty.
        r.sim.set_app_loading(true);
        r.demo_app().await;
        let obs = r.ok("android_observe", json!({})).await;
        assert_eq!(obs["files"].as_array().map(Vec::len), Some(1), "{obs}");
        assert!(obs["picture"].as_str().unwrap_or_default().starts_with("attached:"), "{obs}");
        r.sim.set_app_loading(false);
    })
    .await
    .expect("test timed out");
}

/// Screens a phone draws without words (uiautomator's dump of each, as a phone prints it): a game's surface, a
/// photo, a screen of one label. Each gets the picture and says why; a screen of rows and buttons does not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn surfaces_photos_and_near_empty_trees_get_the_picture() {
    bounded(async {
        let mut r = Rig::with(Default::default(), &["--phone-helper", "off"], None).await;
        let text = |t: &str, b: [i32; 4]| node("android.widget.TextView", t, "", b, "");
        let button = |d: &str, b: [i32; 4]| node("android.widget.ImageButton", "", d, b, "");
        let rows: String = (0..8).map(|i| text(&format!("Row {i}"), [0, 200 + i * 200, 1080, 400 + i * 200])).collect();
        let screens = [
            ("a list of rows", rows, None),
            (
                "a game",
                node("android.view.SurfaceView", "", "", [0, 0, 1080, 2400], "")
                    + &text("Score: 12", [40, 80, 400, 160])
                    + &text("Level 3", [680, 80, 1040, 160])
                    + &button("Pause", [480, 2200, 600, 2320]),
                Some("SurfaceView"),
            ),
            (
                "a photo",
                text("IMG_0042.jpg", [40, 80, 800, 180])
                    + &node("android.widget.ImageView", "", "", [0, 300, 1080, 1900], "")
                    + &button("Share", [100, 2100, 220, 2220])
                    + &button("Delete", [860, 2100, 980, 2220]),
                Some("ImageView"),
            ),
            ("one label", text("Loading", [300, 1100, 780, 1200]), Some("only 1 elements")),
        ];
        for (what, inner, why) in screens {
            r.sim.answer("uiautomator dump", &dump_of(&inner), "", 0);
            let obs = r.ok("android_observe", json!({})).await;
            let said = obs["picture"].as_str().unwrap_or_default();
            match why {
                None => assert!(obs.get("files").is_none() && said.starts_with("left out"), "{what}: {obs}"),
                Some(why) => {
                    assert_eq!(obs["files"].as_array().map(Vec::len), Some(1), "{what}: {obs}");
                    assert!(said.starts_with("attached:") && said.contains(why), "{what}: {said}");
                }
            }
            r.sim.unanswer("uiautomator dump");
        }
    })
    .await
    .expect("test timed out");
}

/// A look right after the phone locked says so: observe reads the phone's state with its picture and tree, not the
/// input gate's 1 s cache (which answered `locked: false` beside a tree showing the lock screen — seen in CI).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_observe_right_after_the_phone_locked_says_locked() {
    bounded(async {
        let mut r = rig().await;
        let before = r.ok("android_observe", json!({})).await;
        assert_eq!(before["locked"], false, "{before}");
        r.sim.set_lock(xagent_adb_connector::sim::ui::LockMode::Swipe);
        let after = r.ok("android_observe", json!({})).await;
        assert_eq!(after["locked"], true, "the lock screen is in the tree, so is the lock: {after}");
    })
    .await
    .expect("test timed out");
}

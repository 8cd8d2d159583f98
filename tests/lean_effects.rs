//! Issue 49 items 3, 4 and 7 through the real path (the connector binary → the real adb server → the simulated
//! phone): effects that read like a diff (a foreground change lists what appeared and counts what went; a scroll
//! is rows in and out, never recycled rows "changed"), off-screen hints (`scrollables`, `element_not_found`
//! naming `android_scroll {until}`), and trees and pages that say what they are (an empty focused window is not
//! `ok`, `href` on links, the same web elements in `ui_dump` and `observe`, `screen_off` instead of "opaque",
//! `android_open_url` reporting what loaded, `effect.web`).
//!
//! `EFFECT_BYTES` lines (run with `--nocapture`) are the effect sizes the issue asks to measure.

mod common;

use std::time::Duration;

use common::rig::Rig;
use serde_json::{json, Value};
use xagent_adb_connector::sim::ui::{
    LockMode, Ui, BROWSER_LINKS, BROWSER_TITLE, DEMO_PACKAGE, HOME_PACKAGE, SETTINGS_PACKAGE, SETTINGS_ROWS,
};
use xagent_adb_connector::sim::SimConfig;

const AUTO: &[&str] = &["--phone-helper", "auto"];
const OFF: &[&str] = &["--phone-helper", "off"];

async fn bounded<F: std::future::Future<Output = ()>>(f: F) {
    tokio::time::timeout(Duration::from_secs(240), f).await.expect("timed out");
}

/// A smaller panel than the default keeps the debug-build simulator's captures short on a busy machine; the
/// layouts scale with it.
fn phone() -> SimConfig {
    SimConfig { screen_width: 720, screen_height: 1600, ..SimConfig::default() }
}

fn texts(list: &Value) -> Vec<String> {
    list.as_array()
        .map(|a| a.iter().filter_map(|e| e["text"].as_str().map(str::to_owned)).collect())
        .unwrap_or_default()
}

/// `(effect, its size in bytes)` of a settled action that reads the tree around it (`effect_tree` on the shell
/// path; by default with the helper).
async fn act(r: &mut Rig, tool: &str, mut args: Value, helper: bool) -> (Value, usize) {
    args["settle"] = json!(true);
    if !helper {
        args["effect_tree"] = json!(true);
    }
    let res = r.ok(tool, args).await;
    let e = res["effect"].clone();
    let n = e.to_string().len();
    (e, n)
}

/// The effect of an app switch: the new screen's elements, and of the old one a count.
fn assert_switch(e: &Value, was: &str, now: &str) {
    let t = &e["tree"];
    assert_eq!(t["foreground"], json!({"was": was, "now": now}), "{e}");
    assert!(t.get("disappeared").is_none(), "what went is counted, not listed: {e}");
    assert!(t["counts"]["disappeared"].as_u64().unwrap() > 0, "{e}");
    assert!(t["changed"].as_array().unwrap().iter().all(|c| c["package"] == now), "no element of another app: {e}");
}

/// Item 3: an app launch, HOME and BACK to another app list what appeared and count what went (with the helper
/// and on the shell path); an action in place is still one changed element.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn app_switches_list_what_appeared_and_count_what_went() {
    bounded(async {
        for (flags, helper) in [(AUTO, true), (OFF, false)] {
            let mut r = Rig::with(phone(), flags, None).await;
            let (launch, launch_b) =
                act(&mut r, "android_app_launch", json!({"package": SETTINGS_PACKAGE}), helper).await;
            let (home, home_b) = act(&mut r, "android_key", json!({"key": "HOME"}), helper).await;
            r.ok("android_app_launch", json!({"package": DEMO_PACKAGE})).await;
            r.ok("android_app_launch", json!({"package": SETTINGS_PACKAGE})).await;
            let (back, back_b) = act(&mut r, "android_key", json!({"key": "BACK"}), helper).await;
            println!("EFFECT_BYTES helper={helper} app_launch={launch_b} home={home_b} back={back_b}");

            assert_switch(&launch, HOME_PACKAGE, SETTINGS_PACKAGE);
            assert!(texts(&launch["tree"]["appeared"]).iter().any(|t| t == SETTINGS_ROWS[0]), "{launch}");
            assert_switch(&home, SETTINGS_PACKAGE, HOME_PACKAGE);
            assert_switch(&back, SETTINGS_PACKAGE, DEMO_PACKAGE);
            assert!(texts(&back["tree"]["appeared"]).iter().any(|t| t == "Item 1"), "{back}");

            let (again, _) = act(&mut r, "android_key", json!({"key": "HOME"}), helper).await;
            assert_switch(&again, DEMO_PACKAGE, HOME_PACKAGE);
            let b = Ui::new(720, 1600).layout().button;
            let (inc, _) = act(&mut r, "android_tap", json!({"x": b.center().0, "y": b.center().1}), helper).await;
            assert_eq!(inc["tree"]["changed"][0]["was"], json!({"text": "Count: 0"}), "{inc}");
            assert!(inc["tree"].get("foreground").is_none(), "{inc}");
        }
    })
    .await;
}

/// Item 3: a scroll is rows in and out, no recycled row "changed" (the issue's "Accessibility" `was` "Network &
/// internet").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scroll_reads_as_rows_in_and_out() {
    bounded(async {
        for (flags, helper) in [(AUTO, true), (OFF, false)] {
            let mut r = Rig::with(phone(), flags, None).await;
            r.ok("android_app_launch", json!({"package": SETTINGS_PACKAGE})).await;
            let (scroll, scroll_b) = act(&mut r, "android_scroll", json!({"direction": "down"}), helper).await;
            println!("EFFECT_BYTES helper={helper} scroll={scroll_b}");
            let t = &scroll["tree"];
            assert!(
                !t["changed"].as_array().unwrap().iter().any(|c| c["was"].get("text").is_some()),
                "a recycled row is no changed row: {scroll}"
            );
            assert!(t.get("foreground").is_none(), "{scroll}");
            let by = t["scrolled"]["by"].as_array().unwrap_or_else(|| panic!("no scrolled: {scroll}"));
            assert!(by[1].as_i64().unwrap() < 0, "the rows moved up: {scroll}");
            let out = t["scrolled"]["out"].as_array().unwrap();
            assert_eq!(out.first(), Some(&json!(SETTINGS_ROWS[0])), "{scroll}");
            assert!(!texts(&t["appeared"]).is_empty(), "rows scrolled in: {scroll}");
            assert!(t.get("disappeared").is_none(), "{scroll}");
        }
    })
    .await;
}

/// Item 4: a list cut at its bottom edge says more is below and what; a selector that finds nothing on a screen
/// with such a list names the scroll that finds it, and that scroll does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_say_what_is_off_screen_and_a_missing_target_names_the_scroll() {
    bounded(async {
        for flags in [AUTO, OFF] {
            let mut r = Rig::with(phone(), flags, None).await;
            r.ok("android_app_launch", json!({"package": SETTINGS_PACKAGE})).await;
            let ui = Ui::new(720, 1600);
            // The row the list's bottom edge cuts.
            let (n, _) = *ui.visible_settings_rows().last().unwrap();
            let cut = SETTINGS_ROWS[n as usize - 1];
            for tool in ["android_observe", "android_ui_dump"] {
                let res = r.ok(tool, json!({})).await;
                let s = &res["scrollables"][0];
                assert_eq!((&s["more_above"], &s["more_below"]), (&json!(false), &json!(true)), "{tool}: {res}");
                assert_eq!(s["below"], json!([cut]), "{tool}: {res}");
                let list = res["elements"].as_array().unwrap().iter().find(|e| e["index"] == s["index"]).cloned();
                assert_eq!(list.unwrap()["scrollable"], true, "{res}");
            }
            let (code, msg) = r.err("android_tap", json!({"element": {"text": "About phone"}})).await;
            assert_eq!(code, "element_not_found", "{msg}");
            let call = r#"android_scroll {"direction":"down","until":{"text":"About phone"}}"#;
            assert!(msg.contains(call), "{msg}");
            let found = r.ok("android_scroll", json!({"direction": "down", "until": {"text": "About phone"}})).await;
            assert_eq!(found["element"]["text"], "About phone", "{found}");
            let after = r.ok("android_ui_dump", json!({})).await;
            let s = &after["scrollables"][0];
            assert_eq!(s["more_above"], true, "at the end, rows are above: {after}");
        }
    })
    .await;
}

/// Item 7: with the helper, a focused window that came back empty is not `ok` because the keyboard's window has
/// keys.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_focused_window_is_not_ok_whatever_the_keyboard_holds() {
    bounded(async {
        let mut r = Rig::with(SimConfig::default(), AUTO, None).await;
        let f = Ui::new(1080, 2400).layout().text_field;
        r.ok("android_tap", json!({"x": f.center().0, "y": f.center().1, "settle": false})).await;
        r.sim.set_app_loading(true);
        let dump = r.ok("android_ui_dump", json!({})).await;
        let tree = &dump["tree"];
        let kinds: Vec<&str> = tree["windows"].as_array().unwrap().iter().filter_map(|w| w["type"].as_str()).collect();
        assert_eq!(kinds, ["input_method", "application"], "{dump}");
        assert!(dump["count"].as_u64().unwrap() > 0, "the keyboard's keys are listed: {dump}");
        assert_eq!(tree["state"], "empty", "{dump}");
        assert!(tree["reason"].as_str().unwrap().contains("focused application window"), "{tree}");
        r.sim.set_app_loading(false);
        let dump = r.ok("android_ui_dump", json!({})).await;
        assert_eq!(dump["tree"]["state"], "ok", "{dump}");
    })
    .await;
}

fn web(v: &Value) -> Vec<(u64, String)> {
    v["elements"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["source"] == "web")
        .map(|e| (e["index"].as_u64().unwrap(), e["text"].as_str().unwrap_or("").to_owned()))
        .collect()
}

/// Item 7: `android_open_url` says what loaded: the page that showed, a warning when it is another address, and
/// `opened: false` with the reason when no page could show.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_url_reports_the_page_that_showed() {
    bounded(async {
        for flags in [OFF, AUTO] {
            let mut r = Rig::with(phone(), flags, None).await;
            let opened = r.ok("android_open_url", json!({"url": "https://sim.example/start"})).await;
            assert_eq!(opened["page"]["url"], "https://sim.example/start", "{opened}");
            assert_eq!(opened["page"]["title"], BROWSER_TITLE, "{opened}");
            assert_eq!(opened["opened"], true, "{opened}");
            assert!(opened.get("warning").is_none(), "{opened}");
            // Another address than the one asked shows (the demo site drops a query, as a redirect would): said.
            let other = r.ok("android_open_url", json!({"url": "https://sim.example/start?ref=mail"})).await;
            assert!(other["warning"].as_str().unwrap_or("").contains("https://sim.example/start"), "{other}");
            // A host that does not resolve: Chrome's error page is what showed, under the address asked.
            let gone = r.ok("android_open_url", json!({"url": "https://other.example/x"})).await;
            assert_eq!(
                (&gone["page"]["url"], &gone["page"]["title"]),
                (&json!("https://other.example/x"), &json!("other.example")),
                "{gone}"
            );
            // A page that cannot show (the sim's launch turns the screen on; the lock screen stays): not opened.
            r.sim.set_lock(LockMode::Secure);
            let shut = r.ok("android_open_url", json!({"url": "https://sim.example/start"})).await;
            assert_eq!(shut["opened"], false, "{shut}");
            assert!(shut["warning"].as_str().unwrap().contains("lock screen"), "{shut}");
            assert!(shut.get("page").is_none(), "{shut}");
        }
    })
    .await;
}

/// Item 7: ui_dump lists a page's elements with observe's indices (not the WebView's own nodes), and links carry
/// their `href`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ui_dump_and_observe_list_the_same_web_elements_with_hrefs() {
    bounded(async {
        let mut r = Rig::with(phone(), OFF, None).await;
        r.ok("android_open_url", json!({"url": "https://sim.example/start"})).await;
        let obs = r.ok("android_observe", json!({})).await;
        let dump = r.ok("android_ui_dump", json!({})).await;
        assert!(!web(&obs).is_empty(), "{obs}");
        let links: Vec<&Value> = obs["elements"].as_array().unwrap().iter().filter(|e| e["class"] == "a").collect();
        assert_eq!(links[1]["href"], "https://sim.example/weather", "observe's links carry href: {obs}");
        assert_eq!(web(&dump), web(&obs), "the same web elements at the same indices: {dump}");
        assert_eq!(dump["web"]["state"], "ok", "{dump}");
        for res in [&obs, &dump] {
            let links: Vec<&Value> = res["elements"].as_array().unwrap().iter().filter(|e| e["class"] == "a").collect();
            assert_eq!(links.len(), BROWSER_LINKS.len(), "{res}");
            assert_eq!(links[1]["href"], "https://sim.example/weather", "{res}");
        }
    })
    .await;
}

/// Item 7: an action's effect names the page the browser shows (`effect.web`, from the tree read around it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_actions_effect_names_the_page() {
    bounded(async {
        for (flags, helper) in [(AUTO, true), (OFF, false)] {
            let mut r = Rig::with(phone(), flags, None).await;
            r.ok("android_open_url", json!({"url": "https://sim.example/start"})).await;
            let (tap, _) = act(&mut r, "android_tap", json!({"x": 5, "y": 1500}), helper).await;
            assert_eq!(tap["web"]["url"], "https://sim.example/start", "{tap}");
            assert_eq!(tap["web"]["title"], BROWSER_TITLE, "{tap}");
        }
    })
    .await;
}

/// Item 7: with the screen off, a browser's page is `screen_off`, not "opaque … not debuggable".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_behind_a_dark_screen_is_screen_off_not_opaque() {
    bounded(async {
        let mut r = Rig::with(phone(), OFF, None).await;
        r.ok("android_open_url", json!({"url": "https://sim.example/start"})).await;
        r.sim.set_screen_on(false);
        for tool in ["android_observe", "android_ui_dump"] {
            let res = r.ok(tool, json!({})).await;
            let web = &res["web"];
            assert_eq!(web["state"], "screen_off", "{tool}: {res}");
            assert!(!web["reason"].as_str().unwrap().contains("debuggable"), "{res}");
            assert!(!res["hint"].as_str().unwrap_or("").contains("opaque"), "{res}");
        }
    })
    .await;
}

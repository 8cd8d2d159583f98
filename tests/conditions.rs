//! A clean phone for every lease (issue 34 item 4): the policy's `lease_conditions` are on the phone when the bind
//! answers, and back to the phone's own values after `auth.logout`, after the lease expires, and after a `kill -9`
//! and restart; a phone whose restore failed goes to no agent until it is restored. Dark mode (`cmd uimode night`)
//! goes back with the settings, the keyboard the agent switched is put back, listed apps are stopped and cleared,
//! and an agent's `auth.start` chooses conditions only where the policy lets it. Real connector binary → real
//! adb server → simulated phone; what the phone holds is read from the phone itself.

mod common;

use std::time::{Duration, Instant};

use common::rig::Rig;
use common::{error_code, get, ws, Server};
use serde_json::{json, Value};
use xagent_adb_connector::sim::{SimConfig, SimPhone};

fn policy() -> Value {
    json!({"lease_conditions": {
        "animations": "off",
        "stay_awake_while_plugged": true,
        "screen_timeout_ms": 600000,
        "http_proxy": "127.0.0.1:3128",
        "dark_mode": true,
        "agent_may_set": ["font_scale", "dark_mode"],
        "release": {"stop_apps": ["com.xagent.demo"], "clear_apps": ["com.xagent.demo"], "home": true,
                    "restore_keyboard": true}
    }})
}

/// (namespace, name, value during a lease, the simulated phone's own value: `None` = unset).
const SETTINGS: &[(&str, &str, &str, Option<&str>)] = &[
    ("global", "window_animation_scale", "0", None),
    ("global", "transition_animation_scale", "0", None),
    ("global", "animator_duration_scale", "0", None),
    ("global", "stay_on_while_plugged_in", "7", Some("0")),
    ("system", "screen_off_timeout", "600000", Some("60000")),
    ("global", "http_proxy", "127.0.0.1:3128", None),
    // Dark mode: where Android keeps `cmd uimode night` (2 yes, 1 no).
    ("secure", "ui_night_mode", "2", Some("1")),
];

/// The phone's own keyboard, and the one an agent's typing switched to during its lease.
const OWN_KEYBOARD: &str = "com.google.android.inputmethod.latin/com.android.inputmethod.latin.LatinIME";
const OTHER_KEYBOARD: &str = "com.xagent.sim.ime/.SimKeyboard";

/// During the lease the keyboard changes (an agent's typing tool, an app): the release must put it back.
async fn switch_keyboard(r: &Rig) {
    r.sim_shell(&format!("ime set {OTHER_KEYBOARD}")).await;
    assert_eq!(r.sim.setting("secure", "default_input_method").as_deref(), Some(OTHER_KEYBOARD));
}

fn assert_leased(sim: &SimPhone) {
    for (ns, name, during, _) in SETTINGS {
        assert_eq!(sim.setting(ns, name).as_deref(), Some(*during), "{ns} {name} during the lease");
    }
}

fn restored(sim: &SimPhone) -> bool {
    SETTINGS.iter().all(|(ns, name, _, own)| sim.setting(ns, name).as_deref() == *own)
        && sim.setting("secure", "default_input_method").as_deref() == Some(OWN_KEYBOARD)
}

/// Waits (bounded) until every setting is the phone's own again.
async fn wait_restored(sim: &SimPhone, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(15);
    while !restored(sim) {
        let mut now: Vec<_> = SETTINGS.iter().map(|(ns, n, _, _)| (*n, sim.setting(ns, n))).collect();
        now.push(("default_input_method", sim.setting("secure", "default_input_method")));
        assert!(Instant::now() < deadline, "not restored {what}: {now:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn bind(c: &mut common::Client, ch: &str, input: Value) -> Value {
    c.request("auth.start", Some(ch), json!({"flow_id": "adb_device", "input": input})).await
}

#[tokio::test]
async fn conditions_are_set_before_the_bind_answers_and_restored_at_logout() {
    let mut r = Rig::with(SimConfig::default(), &[], Some(policy())).await;
    // The bind has answered: the agent's first call must see the clean phone.
    assert_leased(&r.sim);
    switch_keyboard(&r).await;
    // A second auth.start on the bound channel keeps the lease (the old values stay the phone's own).
    let again = bind(&mut r.c, &r.ch.clone(), json!({})).await;
    assert_eq!(again["payload"]["status"], "authenticated", "{again}");
    let before = r.sim.commands().len();
    let out = r.c.request("auth.logout", Some(&r.ch.clone()), json!({})).await;
    assert_eq!(out["payload"]["status"], "ok", "{out}");
    wait_restored(&r.sim, "after auth.logout").await;
    let cmds = r.sim.commands()[before..].join("\n");
    assert!(cmds.contains("am force-stop 'com.xagent.demo'"), "release stops the listed app: {cmds}");
    assert!(cmds.contains("input keyevent 3"), "release goes home: {cmds}");
    assert!(cmds.contains("pm clear 'com.xagent.demo'"), "release clears the listed app: {cmds}");
    assert!(cmds.contains(&format!("ime set '{OWN_KEYBOARD}'")), "the keyboard is put back with ime set: {cmds}");
    // The audit has both, with names and values.
    let tail = std::process::Command::new(env!("CARGO_BIN_EXE_xagent-adb-connector"))
        .args(["audit", "tail", "--data-dir"])
        .arg(r.dir.path())
        .output()
        .unwrap();
    let tail = String::from_utf8_lossy(&tail.stdout);
    assert!(tail.contains("lease.conditions.set") && tail.contains("lease.conditions.restored"), "{tail}");
    assert!(tail.contains("127.0.0.1:3128"), "values are audited: {tail}");
    // Bound again: set again from the phone's own values.
    let b = bind(&mut r.c, &r.ch.clone(), json!({})).await;
    assert_eq!(b["payload"]["status"], "authenticated", "{b}");
    assert_leased(&r.sim);
}

#[tokio::test]
async fn conditions_are_restored_when_the_lease_expires() {
    let r = Rig::with(SimConfig::default(), &["--lease-grace", "1s"], Some(policy())).await;
    assert_leased(&r.sim);
    switch_keyboard(&r).await;
    let Rig { c, sim, srv, .. } = r;
    drop(c); // the agent is gone: its lease runs out and its channel is cleaned up
    wait_restored(&sim, "after the lease expired").await;
    drop(srv);
}

#[tokio::test]
async fn conditions_are_restored_after_kill_9_and_restart() {
    let mut r = Rig::with(SimConfig::default(), &["--lease-grace", "1s"], Some(policy())).await;
    assert_leased(&r.sim);
    switch_keyboard(&r).await;
    r.srv.kill9();
    // Only what was recorded before the phone changed survives: the connector that set it is gone.
    let args = ["--adb-server", &format!("127.0.0.1:{}", r.adb.port), "--lease-grace", "1s", "--policy"];
    let pol = r.dir.path().join("policy.json");
    let mut args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    args.push(pol.to_str().unwrap().to_owned());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let _srv = Server::start(r.dir.path(), &args, &[]);
    // The restored binding's lease (no agent came back) runs out: the recorded values go back.
    wait_restored(&r.sim, "after kill -9, restart and the lease's end").await;
}

#[tokio::test]
async fn a_phone_whose_restore_failed_is_not_bound_until_it_is_restored() {
    let mut r = Rig::with(SimConfig::default(), &[], Some(policy())).await;
    assert_leased(&r.sim);
    // The phone refuses every `settings` command from now on.
    r.sim.answer("settings", "", "Error: settings provider unavailable", 1);
    let out = r.c.request("auth.logout", Some(&r.ch.clone()), json!({})).await;
    assert_eq!(out["payload"]["status"], "ok", "{out}");
    // Marked in /health, per phone.
    let deadline = Instant::now() + Duration::from_secs(10);
    let health = loop {
        let h = get(r.srv.addr, "/health").await.json();
        if h["problems"].as_array().is_some_and(|p| p.iter().any(|m| m.as_str().unwrap().contains(&r.serial))) {
            break h;
        }
        assert!(Instant::now() < deadline, "/health never named the phone: {h}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(health["status"], "degraded", "{health}");
    // Another agent gets nothing: neither from the pool nor by serial.
    let mut other = ws(r.srv.addr, None).await;
    other.hello(None).await;
    let (ch2, _) = other.open(None).await;
    let pool = bind(&mut other, &ch2, json!({})).await;
    assert_eq!(error_code(&pool), "device_busy", "{pool}");
    assert!(pool["payload"]["message"].as_str().unwrap().contains("restored"), "{pool}");
    let named = bind(&mut other, &ch2, json!({"serial": r.serial})).await;
    assert_eq!(error_code(&named), "device_busy", "{named}");
    assert!(named["payload"]["message"].as_str().unwrap().contains("provider unavailable"), "{named}");
    // The phone's own values are still recorded: once it accepts `settings` again it is restored (retried) …
    r.sim.unanswer("settings");
    wait_restored(&r.sim, "once the phone accepted settings again").await;
    // … and handed out again, clean.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let b = bind(&mut other, &ch2, json!({})).await;
        if b["payload"]["status"] == "authenticated" {
            break;
        }
        assert!(Instant::now() < deadline, "never bound again: {b}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_leased(&r.sim);
    let h = get(r.srv.addr, "/health").await.json();
    assert_eq!(h["status"], "ok", "{h}");
}

#[tokio::test]
async fn a_phone_left_unrestored_by_a_kill_9_is_restored_at_start() {
    let mut r = Rig::with(SimConfig::default(), &[], Some(policy())).await;
    assert_leased(&r.sim);
    r.sim.answer("settings", "", "Error: settings provider unavailable", 1);
    let out = r.c.request("auth.logout", Some(&r.ch.clone()), json!({})).await;
    assert_eq!(out["payload"]["status"], "ok", "{out}");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !get(r.srv.addr, "/health").await.text().contains(&r.serial) {
        assert!(Instant::now() < deadline, "the failed restore never showed in /health");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Killed while the phone is unrestored and no lease holds it; the phone accepts `settings` again meanwhile.
    r.srv.kill9();
    r.sim.unanswer("settings");
    assert!(!restored(&r.sim));
    let pol = r.dir.path().join("policy.json");
    let port = format!("127.0.0.1:{}", r.adb.port);
    let srv = Server::start(r.dir.path(), &["--adb-server", &port, "--policy", pol.to_str().unwrap()], &[]);
    wait_restored(&r.sim, "by the restarted connector").await;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let h = get(srv.addr, "/health").await.json();
        if h["status"] == "ok" {
            break;
        }
        assert!(Instant::now() < deadline, "still marked after the restore: {h}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn an_agent_chooses_conditions_for_its_lease_only_within_the_policy() {
    let mut r = Rig::with(SimConfig::default(), &[], Some(policy())).await;
    let ch = r.ch.clone();
    let out = r.c.request("auth.logout", Some(&ch), json!({})).await;
    assert_eq!(out["payload"]["status"], "ok", "{out}");
    wait_restored(&r.sim, "after auth.logout").await;
    let own_font = r.sim.setting("system", "font_scale");
    // The card offers the field, since the policy lets agents choose something.
    let card = get(r.srv.addr, "/connector-card.json").await.json();
    assert!(card.to_string().contains("agent_may_set"), "the conditions field is offered: {card}");
    // Outside the policy: refused with the reason, nothing bound, nothing changed on the phone.
    let before = r.sim.commands().len();
    for (asked, says) in [
        (
            json!({"http_proxy": "127.0.0.1:8080"}),
            "\"http_proxy\" is not one the operator's policy lets an agent choose",
        ),
        (json!({"release": {"home": false}}), "\"release\" is not one"),
        (json!({"font_scale": 9}), "font_scale"),
        (json!("not json"), "not a JSON object"),
    ] {
        let b = bind(&mut r.c, &ch, json!({"conditions": asked})).await;
        assert_eq!(error_code(&b), "auth_input_invalid", "{asked}: {b}");
        assert!(b["payload"]["message"].as_str().unwrap().contains(says), "{asked}: {b}");
        let d = r.c.invoke(&ch, "android_device_status", json!({})).await;
        assert_eq!(error_code(&d), "connection_not_authenticated", "nothing bound: {d}");
    }
    assert!(r.sim.commands()[before..].iter().all(|c| !c.contains("settings")), "the phone was not touched");
    // Within it: the agent's choice over the policy's (dark mode off), on top of the policy's own conditions.
    let b = bind(&mut r.c, &ch, json!({"conditions": {"font_scale": 1.3, "dark_mode": false}})).await;
    assert_eq!(b["payload"]["status"], "authenticated", "{b}");
    assert_eq!(r.sim.setting("system", "font_scale").as_deref(), Some("1.3"));
    assert_eq!(r.sim.setting("secure", "ui_night_mode").as_deref(), Some("1"), "dark mode as the agent chose");
    assert_eq!(r.sim.setting("global", "http_proxy").as_deref(), Some("127.0.0.1:3128"), "the policy's own");
    let out = r.c.request("auth.logout", Some(&ch), json!({})).await;
    assert_eq!(out["payload"]["status"], "ok", "{out}");
    wait_restored(&r.sim, "after the agent's lease").await;
    let deadline = Instant::now() + Duration::from_secs(10);
    while r.sim.setting("system", "font_scale") != own_font {
        assert!(Instant::now() < deadline, "font scale not restored: {:?}", r.sim.setting("system", "font_scale"));
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // The next lease without asking: the policy's conditions again (dark mode on).
    let b = bind(&mut r.c, &ch, json!({})).await;
    assert_eq!(b["payload"]["status"], "authenticated", "{b}");
    assert_leased(&r.sim);
}

/// Issue 34 item 4, "at release … restore the keyboard and clipboard": `release.clear_clipboard` empties the
/// phone's clipboard through the phone helper when the lease ends, so a one-time code one agent copied is not the
/// next agent's; the audit says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_clears_the_clipboard_through_the_phone_helper() {
    let p = json!({"lease_conditions": {"release": {"clear_clipboard": true}}});
    let mut r = Rig::with(SimConfig::default(), &["--phone-helper", "auto"], Some(p)).await;
    r.sim.set_clipboard(Some("one-time code 482913"));
    let out = r.c.request("auth.logout", Some(&r.ch.clone()), json!({})).await;
    assert_eq!(out["payload"]["status"], "ok", "{out}");
    let deadline = Instant::now() + Duration::from_secs(15);
    while r.sim.clipboard().is_some() {
        assert!(Instant::now() < deadline, "the clipboard still holds {:?} after the release", r.sim.clipboard());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let tail = std::process::Command::new(env!("CARGO_BIN_EXE_xagent-adb-connector"))
        .args(["audit", "tail", "--json", "--data-dir"])
        .arg(r.dir.path())
        .output()
        .unwrap();
    let tail = String::from_utf8_lossy(&tail.stdout);
    assert!(tail.contains("lease.release") && tail.contains("cleared"), "{tail}");
    assert!(!tail.contains("482913"), "the clip's text is in no audit record: {tail}");
}

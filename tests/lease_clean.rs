//! Issue 47: a lease is a clean room. Over real WebSockets and HTTP against the real binary, a real adb server and
//! a simulated phone: every way a binding ends (the wall's Release, `auth.logout`) cuts the holder's calls before
//! the phone is bindable again — the queued one never reaches the phone, the running one is hung up (through the
//! phone helper: the helper playing the gesture is killed), each answers `input_may_have_been_sent` and is audited
//! as `cut` before the `lease.end` record — and every `lease.*` record names its channel, the bind among them.
//! An MCP session's end (`DELETE /mcp`) and a lease expiry after the holder's socket closed cut the same way.

mod common;
mod wall_support;

use std::time::{Duration, Instant};

use common::*;
use serde_json::{json, Value};
use wall_support::*;
use xagent_adb_connector::sim::{InputEvent, SimConfig};

fn bounded<F: std::future::Future>(f: F) -> tokio::time::Timeout<F> {
    tokio::time::timeout(Duration::from_secs(180), f)
}

async fn post(addr: std::net::SocketAddr, path: &str, headers: &[(&str, &str)], body: Value) -> HttpResponse {
    let mut h = headers.to_vec();
    h.push(("Content-Type", "application/json"));
    http(addr, "POST", path, &h, body.to_string().as_bytes()).await
}

/// The newest audit records, oldest first.
fn audit(r: &Rig) -> Vec<Value> {
    audit_at(&r._dir.path().join("data"))
}

/// The last 500 audit records of the connector whose data dir is `data`, as `audit tail --json` prints them.
fn audit_at(data: &std::path::Path) -> Vec<Value> {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_xagent-adb-connector"))
        .args(["audit", "tail", "-n", "500", "--json", "--data-dir"])
        .arg(data)
        .output()
        .expect("audit tail runs");
    String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).expect("a JSON record")).collect()
}

/// Every `lease.*` record (bind, end, release, conditions set or restored — replayed after a restart too) names
/// its channel.
fn every_lease_record_names_its_channel(records: &[Value]) {
    for v in records.iter().filter(|v| v["tool_id"].as_str().is_some_and(|t| t.starts_with("lease."))) {
        assert!(v["channel_id"].as_str().is_some_and(|c| !c.is_empty()), "a lease record without channel: {v}");
    }
}

#[derive(Clone, Copy, Debug)]
enum End {
    /// The wall's Release (`POST /api/v1/devices/{id}/release`).
    Release,
    /// The holder's own `auth.logout`.
    Logout,
}

/// Tenant A has a long swipe running and a text queued behind it when its binding ends; tenant B binds the same
/// phone right after. Nothing of A's reaches the phone after B's bind (A's text is never typed, the phone saw A's
/// swipe and then B's tap), both of A's calls answer as cut with `input_may_have_been_sent` (true for the running
/// swipe, false for the queued text), the running one is audited `cut` before `lease.end`, and on the helper path
/// the helper process that was playing A's swipe is gone before B is bound.
async fn a_binding_end_cuts_the_holders_calls(end: End, helper: bool) {
    let flags: &[&str] = if helper { &["--phone-helper", "auto"] } else { &["--phone-helper", "off"] };
    let r = rig_with(&[(720, 1600)], true, flags).await;
    let sim = &r.sims[0];
    let serial = sim.serial();
    r.wait_all_online().await;
    let id = r.id_of(&serial).await;
    let addr = r.srv.addr;
    let mut a = ws(addr, Some(KEY)).await;
    a.hello(None).await;
    let ch_a = a.bind(Some(&serial)).await;
    sim.clear_events();

    let swipe = json!({"x1": 300, "y1": 1400, "x2": 300, "y2": 400, "duration_ms": 10000, "settle": false,
                       "connector_channel_id": ch_a});
    let text = json!({"text": "from-tenant-A", "settle": false, "connector_channel_id": ch_a});
    let (_, running) =
        a.send("tool.invoke", Some(&ch_a), json!({"tool_id": "android_swipe", "arguments": swipe})).await;
    let first = InputEvent::Swipe { x1: 300, y1: 1400, x2: 300, y2: 400, duration_ms: 10000 };
    let deadline = Instant::now() + Duration::from_secs(30);
    while !sim.events().contains(&first) {
        assert!(Instant::now() < deadline, "A's swipe never reached the phone: {:?}", sim.events());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (_, queued) =
        a.send("tool.invoke", Some(&ch_a), json!({"tool_id": "android_input_text", "arguments": text})).await;
    // The helper playing A's swipe (helper path): it must be stopped, not left to play into B's lease.
    let playing: Vec<u32> =
        sim.processes().into_iter().filter(|(_, args)| args.contains("xagent.Helper")).map(|(p, _)| p).collect();
    if helper {
        assert_eq!(playing.len(), 1, "the phone helper plays A's swipe: {:?}", sim.processes());
    }
    // Give A's text time to queue for the phone's order slot behind the swipe.
    tokio::time::sleep(Duration::from_millis(500)).await;

    let mut acks = std::collections::HashMap::new();
    match end {
        End::Release => {
            let (k, v) = bearer();
            let rel = post(addr, &format!("/api/v1/devices/{id}/release"), &[(k, &v)], json!({})).await;
            assert_eq!(rel.status, 200, "{}", rel.text());
        }
        End::Logout => {
            let (_, lid) = a.send("auth.logout", Some(&ch_a), json!({})).await;
            loop {
                let v = a.recv().await;
                let rid = v["request_id"].as_str().unwrap_or("").to_owned();
                if rid == lid {
                    assert_eq!(v["payload"]["status"], "ok", "{v}");
                    break;
                }
                if rid == running || rid == queued {
                    acks.insert(rid, v);
                }
            }
            // Cut first, then the phone given back: both calls had answered when the logout was acked.
            assert_eq!(acks.len(), 2, "the logout answered before the calls it cut: {acks:?}");
        }
    }

    // Tenant B binds the phone at once and taps.
    let mut b = ws(addr, Some(KEY)).await;
    b.hello(None).await;
    let ch_b = b.bind(Some(&serial)).await;
    let seen_at_bind = sim.events().len();
    if helper {
        let still: Vec<(u32, String)> = sim.processes().into_iter().filter(|(p, _)| playing.contains(p)).collect();
        assert!(still.is_empty(), "the helper playing A's swipe still runs after B bound: {still:?}");
    }
    let tap = b.tap(&ch_b, 100, 100).await;
    assert!(tap.get("error").is_none() || tap["error"].is_null(), "B's tap: {tap}");
    tokio::time::sleep(Duration::from_secs(2)).await;

    while acks.len() < 2 {
        let v = a.recv().await;
        if let Some(rid) = v["request_id"].as_str().filter(|r| *r == running || *r == queued) {
            acks.insert(rid.to_owned(), v);
        }
    }
    let ev = sim.events();
    assert!(!ev.iter().any(|e| matches!(e, InputEvent::Text(t) if t.contains("tenant-A"))), "A's text: {ev:?}");
    assert!(!sim.fields().0.contains("tenant-A"), "A's text was typed: {:?}", sim.fields());
    assert_eq!(ev[seen_at_bind..], [InputEvent::Tap { x: 100, y: 100 }], "after B's bind only B's tap: {ev:?}");
    assert_eq!(ev.first(), Some(&first), "{ev:?}");

    let (sw, tx) = (&acks[&running], &acks[&queued]);
    for ack in [sw, tx] {
        assert!(ack["error"]["message"].as_str().unwrap_or("").contains("cut"), "{ack}");
    }
    assert_eq!(sw["error"]["details"]["input_may_have_been_sent"], true, "{sw}");
    assert_eq!(tx["error"]["details"]["input_may_have_been_sent"], false, "{tx}");

    // The audit: A's swipe `cut` before A's `lease.end` (with its reason); every lease record names its channel;
    // both binds audited.
    let records = audit(&r);
    let pos = |f: &dyn Fn(&Value) -> bool| records.iter().position(f);
    let cut = pos(&|v| v["tool_id"] == "android_swipe" && v["channel_id"] == json!(ch_a));
    let ended = pos(&|v| v["tool_id"] == "lease.end" && v["channel_id"] == json!(ch_a));
    let (Some(cut), Some(ended)) = (cut, ended) else { panic!("no cut swipe or lease.end of A: {records:#?}") };
    assert_eq!(records[cut]["result"], "cut", "{:#}", records[cut]);
    assert!(cut < ended, "the cut call is audited before the release: {records:#?}");
    let reason = match end {
        End::Release => "operator_release",
        End::Logout => "logout",
    };
    assert_eq!(records[ended]["arguments"]["reason"], reason, "{:#}", records[ended]);
    assert!(
        !records.iter().any(|v| v["tool_id"] == "android_input_text" && v["result"] == "ok"),
        "A's queued text is no successful action: {records:#?}"
    );
    // The queued text sent the phone nothing: counted, not recorded on its own, but as `cut` and before the release.
    let text = pos(&|v| v["tool_id"] == "android_input_text" && v["channel_id"] == json!(ch_a))
        .unwrap_or_else(|| panic!("A's queued text is not in the audit: {records:#?}"));
    assert_eq!(records[text]["result"], "cut", "{:#}", records[text]);
    assert!(text < ended, "the queued text is audited before the release: {records:#?}");
    for ch in [&ch_a, &ch_b] {
        assert!(
            records.iter().any(|v| v["tool_id"] == "lease.bind" && v["channel_id"] == json!(ch)),
            "the bind of {ch} is audited: {records:#?}"
        );
    }
    every_lease_record_names_its_channel(&records);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn release_cuts_the_holders_calls_through_the_phone_helper() {
    bounded(a_binding_end_cuts_the_holders_calls(End::Release, true)).await.expect("test timed out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn release_cuts_the_holders_calls_on_the_shell_path() {
    bounded(a_binding_end_cuts_the_holders_calls(End::Release, false)).await.expect("test timed out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logout_cuts_the_holders_calls_through_the_phone_helper() {
    bounded(a_binding_end_cuts_the_holders_calls(End::Logout, true)).await.expect("test timed out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logout_cuts_the_holders_calls_on_the_shell_path() {
    bounded(a_binding_end_cuts_the_holders_calls(End::Logout, false)).await.expect("test timed out");
}

// ---- clean by default (issue 47 items 2 and 3) ---------------------------------------------------------------

const CAMERA: &str = "android.permission.CAMERA";
const SECRET: &str = "/sdcard/Download/secret.txt";

/// `POST /files/uploads` of `data` for channel `ch` (multipart, as xAgent uploads): its `file_ref`.
async fn upload(addr: std::net::SocketAddr, ch: &str, filename: &str, mime: &str, data: &[u8]) -> String {
    let boundary = "----xagent-lease-boundary-41c2";
    let mut body = Vec::new();
    body.extend_from_slice(
        format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{filename}\"\r\n\
             Content-Type: {mime}\r\n\r\n"
        )
        .as_bytes(),
    );
    body.extend_from_slice(data);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    let ct = format!("multipart/form-data; boundary={boundary}");
    let headers = [("Content-Type", ct.as_str()), ("X-XAgent-Connector-Channel-ID", ch)];
    let r = http(addr, "POST", "/files/uploads", &headers, &body).await;
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()["file_ref"].as_str().expect("a file_ref").to_owned()
}

/// Whether the simulated phone has `perm` granted to `pkg` (its `dumpsys package`, read through the adb server).
async fn granted(r: &common::rig::Rig, pkg: &str, perm: &str) -> bool {
    let (adb, serial, cmd) = (r.adb.clone(), r.serial.clone(), format!("dumpsys package {pkg}"));
    let out = common::adb::blocking(move || adb.adb(&["-s", &serial, "shell", &cmd])).await;
    String::from_utf8_lossy(&out.stdout).contains(&format!("{perm}: granted=true"))
}

/// Everything tenant A changes on the phone that the next tenant could find: the clipboard, a runtime grant, a
/// pushed file, an installed package, an app it opened. Returns the package the install added.
async fn tenant_a_leaves_traces(r: &mut common::rig::Rig) -> String {
    let ch = r.ch.clone();
    let addr = r.srv.addr;
    let before = r.sim.packages();
    let ok = |v: &Value| v.get("error").is_none_or(Value::is_null);
    let a = r.c.invoke(&ch, "android_clipboard", json!({"action": "set", "text": "s5-secret-clip 42"})).await;
    assert!(ok(&a), "{a}");
    assert_eq!(r.sim.clipboard().as_deref(), Some("s5-secret-clip 42"));
    let a =
        r.c.invoke(
            &ch,
            "android_permission",
            json!({"action": "grant", "package": "com.xagent.demo", "permission": CAMERA}),
        )
        .await;
    assert!(ok(&a), "{a}");
    assert!(granted(r, "com.xagent.demo", CAMERA).await, "A's grant was made");
    let f = upload(addr, &ch, "secret.txt", "text/plain", b"tenant A's secret").await;
    let a = r.c.invoke(&ch, "android_file_push", json!({"path": SECRET, "file_ref": f})).await;
    assert!(ok(&a), "{a}");
    assert!(r.sim.read_file(SECRET).is_some(), "A's file was pushed");
    let mut apk = b"PK\x03\x04".to_vec();
    apk.extend_from_slice(&[7u8; 4096]);
    let f = upload(addr, &ch, "tenant.apk", "application/vnd.android.package-archive", &apk).await;
    let a = r.c.invoke(&ch, "android_app_install", json!({"file_ref": f})).await;
    assert!(ok(&a), "{a}");
    let added: Vec<String> = r.sim.packages().into_iter().filter(|p| !before.contains(p)).collect();
    assert_eq!(added.len(), 1, "A's install added one package: {added:?}");
    let a = r.c.invoke(&ch, "android_app_launch", json!({"package": "com.xagent.demo"})).await;
    assert!(ok(&a), "{a}");
    added[0].clone()
}

/// With no policy at all, the second tenant finds nothing of the first: no clipboard text, no grant, no pushed
/// file, no installed package; its bind answer lists what was reset (`lease: {reset, not_reset}`), and the
/// release record (`lease.conditions.restored`, of A's channel) lists what the lease did.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_no_policy_the_next_tenant_finds_nothing_of_the_last() {
    bounded(async {
        let mut r = common::rig::Rig::with(SimConfig::default(), &["--phone-helper", "auto"], None).await;
        let pkg = tenant_a_leaves_traces(&mut r).await;
        let ch_a = r.ch.clone();
        let out = r.c.request("auth.logout", Some(&ch_a), json!({})).await;
        assert_eq!(out["payload"]["status"], "ok", "{out}");

        let mut b = ws(r.srv.addr, None).await;
        b.hello(None).await;
        let (ch_b, _) = b.open(None).await;
        let bound = b.request("auth.start", Some(&ch_b), json!({"flow_id": "adb_device", "input": {}})).await;
        assert_eq!(bound["payload"]["status"], "authenticated", "{bound}");
        assert_eq!(r.sim.clipboard(), None, "A's clipboard text survived the release");
        assert!(!granted(&r, "com.xagent.demo", CAMERA).await, "A's grant survived the release");
        assert!(r.sim.read_file(SECRET).is_none(), "A's pushed file survived the release");
        assert!(!r.sim.packages().contains(&pkg), "A's installed package survived the release");
        let list = b.invoke(&ch_b, "android_permission", json!({"action": "list", "package": "com.xagent.demo"})).await;
        let camera = list["payload"]["result"]["permissions"]
            .as_array()
            .and_then(|l| l.iter().find(|p| p["name"] == CAMERA).cloned());
        assert_eq!(camera.map(|c| c["granted"].clone()), Some(json!(false)), "{list}");
        let lease = &bound["payload"]["lease"];
        let reset: Vec<&str> =
            lease["reset"].as_array().expect("lease.reset").iter().filter_map(Value::as_str).collect();
        assert_eq!(lease["not_reset"], json!([]), "{lease}");
        for item in [
            "clipboard".to_owned(),
            "home".to_owned(),
            format!("granted com.xagent.demo {CAMERA}"),
            format!("pushed {SECRET}"),
            format!("installed {pkg}"),
            "opened com.xagent.demo".to_owned(),
        ] {
            assert!(reset.contains(&item.as_str()), "{item} is not in the bind's lease.reset: {lease}");
        }

        let records = audit_at(r.dir.path());
        let restored = records
            .iter()
            .find(|v| v["tool_id"] == "lease.conditions.restored")
            .unwrap_or_else(|| panic!("no release record: {records:#?}"));
        assert_eq!(restored["channel_id"], json!(ch_a), "{restored}");
        let undone = restored["arguments"]["undone"].to_string();
        assert!(undone.contains(&pkg) && undone.contains(SECRET) && undone.contains(CAMERA), "{restored}");
        every_lease_record_names_its_channel(&records);
        assert!(
            !Value::from(records.clone()).to_string().contains("s5-secret-clip"),
            "the clip's text is in no audit record"
        );
    })
    .await
    .expect("test timed out");
}

/// Issue 47's "typed text": tenant A types a secret into the search field of a page in the browser it opened, a
/// password into the demo app's sign-in screen it opened, goes Home and types another into the home screen's field
/// (the launcher's search box), then logs out. With no policy the release presses
/// HOME (which resets the launcher's search box, as Launcher3 does, even with the launcher in front) and
/// force-stops the browser and the demo app (whose next launches start with empty fields): tenant B, bound next,
/// observes none of it — not on the home screen, not in the browser or the sign-in screen it opens — and the bind
/// answer and the release record list what was reset.
async fn typed_text_does_not_outlive_the_lease(helper: bool) {
    const HOME_SECRET: &str = "home-secret-4747";
    const WEB_SECRET: &str = "web-secret-4747";
    const PW_SECRET: &str = "pw-secret-4747";
    let flags: &[&str] = if helper { &["--phone-helper", "auto"] } else { &["--phone-helper", "off"] };
    let cfg = SimConfig { screen_width: 720, screen_height: 1600, ..SimConfig::default() };
    let mut r = common::rig::Rig::with(cfg, flags, None).await;
    let ui = xagent_adb_connector::sim::ui::Ui::new(720, 1600);
    let ch_a = r.ch.clone();
    let ok = |v: &Value| v.get("error").is_none_or(Value::is_null);
    let a = r.c.invoke(&ch_a, "android_app_launch", json!({"package": "com.android.chrome"})).await;
    assert!(ok(&a), "{a}");
    let (x, y) = ui.browser_layout().search.center();
    let a = r.c.invoke(&ch_a, "android_tap", json!({"x": x, "y": y})).await;
    assert!(ok(&a), "{a}");
    let a = r.c.invoke(&ch_a, "android_input_text", json!({"text": WEB_SECRET})).await;
    assert!(ok(&a), "{a}");
    assert_eq!(r.sim.web_query(), WEB_SECRET, "A typed into the page's search field");
    // A password into the demo app's sign-in screen (an app's field: a launcher has none).
    let signin = json!({"package": "com.xagent.demo", "activity": ".SignInActivity"});
    let a = r.c.invoke(&ch_a, "android_app_launch", signin.clone()).await;
    assert!(ok(&a), "{a}");
    let (x, y) = ui.layout().password_field.center();
    let a = r.c.invoke(&ch_a, "android_tap", json!({"x": x, "y": y})).await;
    assert!(ok(&a), "{a}");
    let a = r.c.invoke(&ch_a, "android_input_text", json!({"text": PW_SECRET})).await;
    assert!(ok(&a), "{a}");
    assert_eq!(r.sim.fields().1, PW_SECRET, "A typed into the sign-in screen's password field");

    // Back Home (the browser stays in the background with A's text), and a secret into the home field: the
    // release's HOME then arrives with the launcher in front.
    let a = r.c.invoke(&ch_a, "android_key", json!({"key": "HOME"})).await;
    assert!(ok(&a), "{a}");
    let (x, y) = ui.layout().text_field.center();
    let a = r.c.invoke(&ch_a, "android_tap", json!({"x": x, "y": y})).await;
    assert!(ok(&a), "{a}");
    let a = r.c.invoke(&ch_a, "android_input_text", json!({"text": HOME_SECRET})).await;
    assert!(ok(&a), "{a}");
    assert_eq!(r.sim.fields().0, HOME_SECRET, "A typed into the home screen's field");
    let seen = r.c.invoke(&ch_a, "android_observe", json!({})).await;
    assert!(seen.to_string().contains(HOME_SECRET), "an observation shows the home field's text: {seen}");
    assert!(r.sim.foreground().starts_with("com.android.launcher3/"), "A leaves on Home: {}", r.sim.foreground());

    let out = r.c.request("auth.logout", Some(&ch_a), json!({})).await;
    assert_eq!(out["payload"]["status"], "ok", "{out}");
    let mut b = ws(r.srv.addr, None).await;
    b.hello(None).await;
    let (ch_b, _) = b.open(None).await;
    let bound = b.request("auth.start", Some(&ch_b), json!({"flow_id": "adb_device", "input": {}})).await;
    assert_eq!(bound["payload"]["status"], "authenticated", "{bound}");

    // B looks: the home screen first (where the release left the phone), then the browser it opens itself.
    let home = b.invoke(&ch_b, "android_observe", json!({})).await;
    assert!(ok(&home), "{home}");
    assert!(home.to_string().contains("Sim Home"), "B is on the home screen: {home}");
    assert!(!home.to_string().contains(HOME_SECRET), "A's text is in the home field B sees: {home}");
    let dump = b.invoke(&ch_b, "android_ui_dump", json!({})).await;
    assert!(ok(&dump) && !dump.to_string().contains(HOME_SECRET), "A's text in B's ui_dump: {dump}");
    let a = b.invoke(&ch_b, "android_app_launch", json!({"package": "com.android.chrome"})).await;
    assert!(ok(&a), "{a}");
    let page = b.invoke(&ch_b, "android_observe", json!({})).await;
    assert!(ok(&page), "{page}");
    assert!(page.to_string().contains("Sim Start Page"), "B sees the browser's page: {page}");
    assert!(!page.to_string().contains(WEB_SECRET), "A's text is in the page B opened: {page}");
    assert_eq!(r.sim.fields().0, "", "the home field kept A's text");
    assert_eq!(r.sim.web_query(), "", "the page's search field kept A's text");
    let a = b.invoke(&ch_b, "android_app_launch", signin).await;
    assert!(ok(&a), "{a}");
    let form = b.invoke(&ch_b, "android_ui_dump", json!({})).await;
    assert!(ok(&form) && form.to_string().contains("com.xagent.demo:id/password"), "B sees the sign-in form: {form}");
    // (The tools never show a password field's text, not even its dots: the phone's own state says.)
    assert_eq!(r.sim.fields().1, "", "the sign-in screen's password field kept A's text");

    // What was reset: the bind answer and the release record say so.
    let lease = &bound["payload"]["lease"];
    let reset: Vec<&str> = lease["reset"].as_array().expect("lease.reset").iter().filter_map(Value::as_str).collect();
    for item in ["home", "opened com.android.chrome", "opened com.xagent.demo"] {
        assert!(reset.contains(&item), "{item} is not in the bind's lease.reset: {lease}");
    }
    // Without the helper the clipboard cannot be reached, and the bind answer says so; nothing else is missing.
    let not_reset = lease["not_reset"].as_array().expect("lease.not_reset");
    if helper {
        assert!(not_reset.is_empty(), "{lease}");
    } else {
        assert!(not_reset.iter().all(|n| n.as_str().is_some_and(|n| n.starts_with("clipboard:"))), "{lease}");
    }
    let records = audit_at(r.dir.path());
    let released = records
        .iter()
        .find(|v| v["tool_id"] == "lease.release" && v["channel_id"] == json!(ch_a))
        .unwrap_or_else(|| panic!("no release record of A's channel: {records:#?}"));
    assert_eq!(released["arguments"]["home"], true, "{released}");
    let restored = records
        .iter()
        .find(|v| v["tool_id"] == "lease.conditions.restored" && v["channel_id"] == json!(ch_a))
        .unwrap_or_else(|| panic!("no restore record of A's channel: {records:#?}"));
    assert!(restored["arguments"]["undone"].to_string().contains("com.android.chrome"), "{restored}");
    for secret in [HOME_SECRET, WEB_SECRET, PW_SECRET] {
        assert!(!Value::from(records.clone()).to_string().contains(secret), "{secret} is in an audit record");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typed_text_does_not_outlive_the_lease_through_the_phone_helper() {
    bounded(typed_text_does_not_outlive_the_lease(true)).await.expect("test timed out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typed_text_does_not_outlive_the_lease_on_the_shell_path() {
    bounded(typed_text_does_not_outlive_the_lease(false)).await.expect("test timed out");
}

/// A grant recorded when it was made survives a `kill -9` of the connector: after the restart, the lease the
/// restored binding continues ends (its grace runs out, no agent came back) and the grant is revoked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grant_is_revoked_after_a_kill_9_and_restart() {
    bounded(async {
        let mut r = common::rig::Rig::with(SimConfig::default(), &["--lease-grace", "1s"], None).await;
        let ch = r.ch.clone();
        let a =
            r.c.invoke(
                &ch,
                "android_permission",
                json!({"action": "grant", "package": "com.xagent.demo", "permission": CAMERA}),
            )
            .await;
        assert!(a.get("error").is_none_or(Value::is_null), "{a}");
        assert!(granted(&r, "com.xagent.demo", CAMERA).await);
        r.srv.kill9();
        let port = format!("127.0.0.1:{}", r.adb.port);
        let _srv = Server::start(r.dir.path(), &["--adb-server", &port, "--lease-grace", "1s"], &[]);
        let deadline = Instant::now() + Duration::from_secs(60);
        while granted(&r, "com.xagent.demo", CAMERA).await {
            assert!(Instant::now() < deadline, "the grant was never revoked after the restart");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        // The release replayed after the restart is audited, under the channel of the lease it ends.
        let deadline = Instant::now() + Duration::from_secs(30);
        let records = loop {
            let records = audit_at(r.dir.path());
            if records.iter().any(|v| v["tool_id"] == "lease.conditions.restored" && v["channel_id"] == json!(ch)) {
                break records;
            }
            assert!(
                Instant::now() < deadline,
                "no restore record of the lease's channel after the restart: {records:#?}"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        };
        every_lease_record_names_its_channel(&records);
    })
    .await
    .expect("test timed out");
}

// ---- a takeover stops a helper gesture in flight (issue 47 item 1) ---------------------------------------------

/// An operator takes the phone over while the agent's 6 s swipe is being played by the phone helper: by the time the
/// takeover answers, the helper playing it is gone (the gesture stopped, not left to play under the operator's
/// hands), the swipe answers `operator_control` with `input_may_have_been_sent: true`, and the operator's tap lands.
/// With `--phone-helper off` the same takeover answers and the operator's tap lands after the agent's swipe.
async fn a_takeover_stops_the_gesture_in_flight(helper: bool) {
    let flags: &[&str] = if helper { &["--phone-helper", "auto"] } else { &["--phone-helper", "off"] };
    let r = rig_with(&[(720, 1600)], true, flags).await;
    let sim = &r.sims[0];
    let serial = sim.serial();
    r.wait_all_online().await;
    let id = r.id_of(&serial).await;
    let addr = r.srv.addr;
    let mut a = ws(addr, Some(KEY)).await;
    a.hello(None).await;
    let ch = a.bind(Some(&serial)).await;
    let (cookie, csrf) = r.login().await;
    let session = [("Cookie", cookie.as_str()), ("X-CSRF-Token", csrf.as_str())];
    sim.clear_events();

    let swipe = json!({"x1": 300, "y1": 1400, "x2": 300, "y2": 400, "duration_ms": 6000, "settle": false,
                       "connector_channel_id": ch});
    let (_, running) = a.send("tool.invoke", Some(&ch), json!({"tool_id": "android_swipe", "arguments": swipe})).await;
    let first = InputEvent::Swipe { x1: 300, y1: 1400, x2: 300, y2: 400, duration_ms: 6000 };
    let deadline = Instant::now() + Duration::from_secs(30);
    while !sim.events().contains(&first) {
        assert!(Instant::now() < deadline, "the agent's swipe never reached the phone: {:?}", sim.events());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let playing: Vec<u32> =
        sim.processes().into_iter().filter(|(_, args)| args.contains("xagent.Helper")).map(|(p, _)| p).collect();
    if helper {
        assert_eq!(playing.len(), 1, "the phone helper plays the agent's swipe: {:?}", sim.processes());
    }

    let t = post(addr, &format!("/api/v1/devices/{id}/takeover"), &session, json!({})).await;
    assert_eq!(t.status, 200, "{}", t.text());
    let still: Vec<(u32, String)> = sim.processes().into_iter().filter(|(p, _)| playing.contains(p)).collect();
    assert!(still.is_empty(), "the helper playing the agent's swipe still runs after the takeover answered: {still:?}");
    let tap =
        post(addr, &format!("/api/v1/devices/{id}/input"), &session, json!({"action": "tap", "x": 100, "y": 100}))
            .await;
    assert_eq!(tap.status, 200, "{}", tap.text());

    let ack = loop {
        let v = a.recv().await;
        if v["request_id"] == json!(running) {
            break v;
        }
    };
    assert_eq!(error_code(&ack), "operator_control", "{ack}");
    assert_eq!(ack["error"]["details"]["input_may_have_been_sent"], true, "{ack}");
    let ev = sim.events();
    assert_eq!(
        ev,
        vec![first, InputEvent::Tap { x: 100, y: 100 }],
        "the phone saw the swipe, then the operator: {ev:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_takeover_stops_a_helper_gesture_in_flight() {
    bounded(a_takeover_stops_the_gesture_in_flight(true)).await.expect("test timed out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_takeover_stops_a_shell_gesture_in_flight() {
    bounded(a_takeover_stops_the_gesture_in_flight(false)).await.expect("test timed out");
}

// ---- an MCP session's end (DELETE) cuts its calls (issue 47 item 1) -----------------------------------------

/// A JSON-RPC POST to `/mcp` with the system key (and the session, once there is one).
async fn mcp_rpc(addr: std::net::SocketAddr, session: Option<&str>, msg: Value) -> HttpResponse {
    mcp_post(addr, KEY, session, &[], &msg).await
}

fn mcp_call(id: u64, name: &str, args: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": args}})
}

/// An MCP session holds the phone with a long swipe running and a text queued behind it when its client ends it
/// (`DELETE /mcp`); a data-plane tenant binds the phone right after. Nothing of the session's reaches the phone
/// after that bind, both calls answer as cut (`input_may_have_been_sent` true for the swipe, false for the text),
/// the swipe is audited `cut` — not `tool_invoke_failed` — before the session channel's `lease.end`, and the queued
/// text is no successful action. On the helper path the helper playing the swipe is gone before the next bind.
async fn an_mcp_delete_cuts_the_sessions_calls(helper: bool) {
    let flags: &[&str] = if helper { &["--phone-helper", "auto"] } else { &["--phone-helper", "off"] };
    let r = rig_with(&[(720, 1600)], true, flags).await;
    let sim = &r.sims[0];
    let serial = sim.serial();
    r.wait_all_online().await;
    let addr = r.srv.addr;
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                      "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}});
    let i = mcp_rpc(addr, None, init).await;
    assert_eq!(i.status, 200, "{}", i.text());
    let sid = i.header("mcp-session-id").expect("a session id").to_owned();
    let sel = mcp_rpc(addr, Some(&sid), mcp_call(2, "select_device", json!({"serial": serial}))).await.json();
    assert_eq!(sel["result"]["isError"], Value::Null, "{sel}");
    sim.clear_events();

    let swipe = json!({"x1": 300, "y1": 1400, "x2": 300, "y2": 400, "duration_ms": 10000, "settle": false});
    let (s2, a2) = (sid.clone(), addr);
    let running = tokio::spawn(async move { mcp_rpc(a2, Some(&s2), mcp_call(3, "android_swipe", swipe)).await });
    let first = InputEvent::Swipe { x1: 300, y1: 1400, x2: 300, y2: 400, duration_ms: 10000 };
    let deadline = Instant::now() + Duration::from_secs(30);
    while !sim.events().contains(&first) {
        assert!(Instant::now() < deadline, "the session's swipe never reached the phone: {:?}", sim.events());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let text = json!({"text": "from-tenant-A", "settle": false});
    let (s3, a3) = (sid.clone(), addr);
    let queued = tokio::spawn(async move { mcp_rpc(a3, Some(&s3), mcp_call(4, "android_input_text", text)).await });
    let playing: Vec<u32> =
        sim.processes().into_iter().filter(|(_, args)| args.contains("xagent.Helper")).map(|(p, _)| p).collect();
    if helper {
        assert_eq!(playing.len(), 1, "the phone helper plays the session's swipe: {:?}", sim.processes());
    }
    tokio::time::sleep(Duration::from_millis(500)).await;

    let auth = format!("Bearer {KEY}");
    let del = http(addr, "DELETE", "/mcp", &[("Authorization", &auth), ("Mcp-Session-Id", &sid)], b"").await;
    assert_eq!(del.status, 204, "{}", del.text());

    let mut b = ws(addr, Some(KEY)).await;
    b.hello(None).await;
    let ch_b = b.bind(Some(&serial)).await;
    let seen_at_bind = sim.events().len();
    if helper {
        let still: Vec<(u32, String)> = sim.processes().into_iter().filter(|(p, _)| playing.contains(p)).collect();
        assert!(still.is_empty(), "the helper playing the session's swipe still runs after B bound: {still:?}");
    }
    let tap = b.tap(&ch_b, 100, 100).await;
    assert!(tap.get("error").is_none() || tap["error"].is_null(), "B's tap: {tap}");
    tokio::time::sleep(Duration::from_secs(2)).await;

    let ev = sim.events();
    assert!(!ev.iter().any(|e| matches!(e, InputEvent::Text(t) if t.contains("tenant-A"))), "A's text: {ev:?}");
    assert_eq!(ev[seen_at_bind..], [InputEvent::Tap { x: 100, y: 100 }], "after B's bind only B's tap: {ev:?}");
    assert_eq!(ev.first(), Some(&first), "{ev:?}");

    let sw = bounded(running).await.expect("the swipe's POST answers").expect("joined");
    let tx = bounded(queued).await.expect("the text's POST answers").expect("joined");
    let (sw, tx) = (sw.text(), tx.text());
    eprintln!("swipe: {sw}\ntext: {tx}");
    for a in [&sw, &tx] {
        assert!(a.contains("cut"), "a cut call answers as cut: {a}");
    }
    assert!(sw.contains("input_may_have_been_sent: true"), "{sw}");
    assert!(tx.contains("input_may_have_been_sent: false"), "{tx}");

    let records = audit(&r);
    let pos = |f: &dyn Fn(&Value) -> bool| records.iter().position(f);
    let cut = pos(&|v| v["tool_id"] == "android_swipe");
    let Some(cut) = cut else { panic!("no swipe record: {records:#?}") };
    assert_eq!(records[cut]["result"], "cut", "{:#}", records[cut]);
    let ch_a = records[cut]["channel_id"].clone();
    let ended = pos(&|v| v["tool_id"] == "lease.end" && v["channel_id"] == ch_a);
    let Some(ended) = ended else { panic!("no lease.end of the MCP session's channel: {records:#?}") };
    assert!(cut < ended, "the cut call is audited before the release: {records:#?}");
    // What ended the lease is the MCP session's end, not a logout of the agent's.
    assert_eq!(records[ended]["arguments"]["reason"], "mcp_session_end", "{:#}", records[ended]);
    assert!(
        !records.iter().any(|v| v["tool_id"] == "android_input_text" && v["result"] == "ok"),
        "the queued text is no successful action: {records:#?}"
    );
    let text = pos(&|v| v["tool_id"] == "android_input_text" && v["channel_id"] == ch_a)
        .unwrap_or_else(|| panic!("the queued text is not in the audit: {records:#?}"));
    assert_eq!(records[text]["result"], "cut", "{:#}", records[text]);
    assert!(text < ended, "the queued text is audited before the release: {records:#?}");
    every_lease_record_names_its_channel(&records);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_delete_cuts_the_sessions_calls_through_the_phone_helper() {
    bounded(an_mcp_delete_cuts_the_sessions_calls(true)).await.expect("test timed out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_delete_cuts_the_sessions_calls_on_the_shell_path() {
    bounded(an_mcp_delete_cuts_the_sessions_calls(false)).await.expect("test timed out");
}

// ---- an install is recorded before it runs (issue 47 item 2) -------------------------------------------------

/// The connector is killed (`kill -9`) while the phone finishes an install: the package is on the phone, the call
/// never answered. After the restart, the lease the restored binding continues ends (no agent came back) and the
/// package is uninstalled: the install was recorded before the APK was copied, not after it succeeded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_install_cut_by_a_kill_9_is_uninstalled_after_restart() {
    bounded(async {
        let mut r = common::rig::Rig::with(SimConfig::default(), &["--lease-grace", "1s"], None).await;
        let ch = r.ch.clone();
        let addr = r.srv.addr;
        let before = r.sim.packages();
        let mut apk = b"PK\x03\x04".to_vec();
        apk.extend_from_slice(&[9u8; 4096]);
        let f = upload(addr, &ch, "tenant.apk", "application/vnd.android.package-archive", &apk).await;
        // The clean-up after `pm install` is held: the package is installed, the call has not finished.
        let hold = "rm -f '/data/local/tmp/xagent-install-";
        r.sim.stall(hold);
        let _ =
            r.c.send(
                "tool.invoke",
                Some(&ch),
                json!({"tool_id": "android_app_install",
                        "arguments": {"file_ref": f, "connector_channel_id": ch}}),
            )
            .await;
        let deadline = Instant::now() + Duration::from_secs(60);
        let added = loop {
            let added: Vec<String> = r.sim.packages().into_iter().filter(|p| !before.contains(p)).collect();
            if !added.is_empty() && !r.sim.stalled().is_empty() {
                break added;
            }
            assert!(Instant::now() < deadline, "the install never reached the phone: {:?}", r.sim.commands());
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        r.srv.kill9();
        r.sim.release(hold);
        assert!(r.sim.packages().contains(&added[0]), "the package stays installed while the connector is down");
        let port = format!("127.0.0.1:{}", r.adb.port);
        let _srv = Server::start(r.dir.path(), &["--adb-server", &port, "--lease-grace", "1s"], &[]);
        let deadline = Instant::now() + Duration::from_secs(60);
        while r.sim.packages().contains(&added[0]) {
            assert!(
                Instant::now() < deadline,
                "the package installed when the connector was killed was never uninstalled: {:?}",
                r.sim.commands()
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    })
    .await
    .expect("test timed out");
}

// ---- a phone not restored stays out of the pool, the wall says why (issue 47 item 2) ---------------------------

/// With the default (clean) release, a phone whose release cannot be completed — its `settings` provider refuses
/// every command, so the keyboard recorded at bind cannot be checked — is handed to no agent (`device_busy`, with
/// the reason), and the wall's device view says why (`health.warnings`: `not_restored`, with the phone's words).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_phone_not_restored_stays_out_of_the_pool_and_the_wall_says_why() {
    bounded(async {
        let r = rig_with(&[(720, 1600)], true, &[]).await;
        let sim = &r.sims[0];
        let serial = sim.serial();
        r.wait_all_online().await;
        let id = r.id_of(&serial).await;
        let addr = r.srv.addr;
        let mut a = ws(addr, Some(KEY)).await;
        a.hello(None).await;
        let ch_a = a.bind(Some(&serial)).await;
        sim.answer("settings", "", "Error: settings provider unavailable", 1);
        let out = a.request("auth.logout", Some(&ch_a), json!({})).await;
        assert_eq!(out["payload"]["status"], "ok", "{out}");

        let (k, v) = bearer();
        let deadline = Instant::now() + Duration::from_secs(30);
        let warning = loop {
            let list = http(addr, "GET", "/api/v1/devices", &[(k, &v)], b"").await.json();
            let dev = list["devices"].as_array().and_then(|l| l.iter().find(|d| d["id"] == json!(id)).cloned());
            let w = dev.as_ref().and_then(|d| {
                d["health"]["warnings"].as_array().and_then(|l| l.iter().find(|w| w["code"] == "not_restored").cloned())
            });
            if let Some(w) = w {
                break w;
            }
            assert!(Instant::now() < deadline, "the wall never said the phone is not restored: {list}");
            tokio::time::sleep(Duration::from_millis(200)).await;
        };
        let msg = warning["message"].as_str().unwrap_or("");
        assert!(msg.contains("Not handed out") && msg.contains("provider unavailable"), "{warning}");

        let mut b = ws(addr, Some(KEY)).await;
        b.hello(None).await;
        let (ch_b, _) = b.open(None).await;
        let pool = b.request("auth.start", Some(&ch_b), json!({"flow_id": "adb_device", "input": {}})).await;
        assert_eq!(error_code(&pool), "device_busy", "{pool}");
        let named =
            b.request("auth.start", Some(&ch_b), json!({"flow_id": "adb_device", "input": {"serial": serial}})).await;
        assert_eq!(error_code(&named), "device_busy", "{named}");
        assert!(named["payload"]["message"].as_str().unwrap_or("").contains("provider unavailable"), "{named}");
    })
    .await
    .expect("test timed out");
}

// ---- lease expiry after the holder's socket closed mid-gesture (issue 47 item 1) ------------------------------

/// Tenant A's socket closes while its 10 s swipe is being played (through the phone helper, or `input swipe` on the
/// shell path) and a text waits behind it for the phone; its lease runs out (`--lease-grace 1s`) and tenant B binds
/// the phone. A's text never reaches the phone; by B's bind the helper playing A's swipe is gone; B's tap is all the
/// phone sees after B's bind. Both of A's calls are audited `cut` — as every end of a binding cuts them, not
/// `tool_invoke_failed` — before A's `lease.end` (reason `lease_expired`, A's channel), which counts them and says
/// input may have been sent.
async fn lease_expiry_cuts_the_calls_of_a_holder_whose_socket_closed(helper: bool) {
    let flags: &[&str] = if helper {
        &["--phone-helper", "auto", "--lease-grace", "1s"]
    } else {
        &["--phone-helper", "off", "--lease-grace", "1s"]
    };
    let r = rig_with(&[(720, 1600)], true, flags).await;
    let sim = &r.sims[0];
    let serial = sim.serial();
    r.wait_all_online().await;
    let addr = r.srv.addr;
    let mut a = ws(addr, Some(KEY)).await;
    a.hello(None).await;
    let ch_a = a.bind(Some(&serial)).await;
    sim.clear_events();
    let swipe = json!({"x1": 300, "y1": 1400, "x2": 300, "y2": 400, "duration_ms": 10000, "settle": false,
                       "connector_channel_id": ch_a});
    let _ = a.send("tool.invoke", Some(&ch_a), json!({"tool_id": "android_swipe", "arguments": swipe})).await;
    let first = InputEvent::Swipe { x1: 300, y1: 1400, x2: 300, y2: 400, duration_ms: 10000 };
    let deadline = Instant::now() + Duration::from_secs(30);
    while !sim.events().contains(&first) {
        assert!(Instant::now() < deadline, "A's swipe never reached the phone: {:?}", sim.events());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let text = json!({"text": "from-tenant-A", "settle": false, "connector_channel_id": ch_a});
    let _ = a.send("tool.invoke", Some(&ch_a), json!({"tool_id": "android_input_text", "arguments": text})).await;
    let playing: Vec<u32> =
        sim.processes().into_iter().filter(|(_, args)| args.contains("xagent.Helper")).map(|(p, _)| p).collect();
    if helper {
        assert_eq!(playing.len(), 1, "the phone helper plays A's swipe: {:?}", sim.processes());
    }
    // Give A's text time to queue for the phone's order slot behind the swipe, then A's socket goes.
    tokio::time::sleep(Duration::from_millis(500)).await;
    drop(a);

    let mut b = ws(addr, Some(KEY)).await;
    b.hello(None).await;
    let (ch_b, _) = b.open(None).await;
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let v =
            b.request("auth.start", Some(&ch_b), json!({"flow_id": "adb_device", "input": {"serial": serial}})).await;
        if v["payload"]["status"] == "authenticated" {
            break;
        }
        assert!(Instant::now() < deadline, "A's lease never ran out: {v}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let seen_at_bind = sim.events().len();
    if helper {
        let still: Vec<(u32, String)> = sim.processes().into_iter().filter(|(p, _)| playing.contains(p)).collect();
        assert!(still.is_empty(), "the helper playing A's swipe still runs after B bound: {still:?}");
    }
    let tap = b.tap(&ch_b, 100, 100).await;
    assert!(tap.get("error").is_none() || tap["error"].is_null(), "B's tap: {tap}");
    tokio::time::sleep(Duration::from_secs(2)).await;
    let ev = sim.events();
    assert!(!ev.iter().any(|e| matches!(e, InputEvent::Text(t) if t.contains("tenant-A"))), "A's text: {ev:?}");
    assert!(!sim.fields().0.contains("tenant-A"), "A's text was typed: {:?}", sim.fields());
    assert_eq!(ev[seen_at_bind..], [InputEvent::Tap { x: 100, y: 100 }], "after B's bind only B's tap: {ev:?}");
    assert_eq!(ev.first(), Some(&first), "{ev:?}");

    let records = audit(&r);
    let pos = |f: &dyn Fn(&Value) -> bool| records.iter().position(f);
    let ended = pos(&|v| v["tool_id"] == "lease.end" && v["channel_id"] == json!(ch_a))
        .unwrap_or_else(|| panic!("no lease.end of A: {records:#?}"));
    // The queued text (it sent the phone nothing) is counted, the running swipe has a record of its own: both
    // `cut`, both chained before the release record.
    for tool in ["android_input_text", "android_swipe"] {
        let at = pos(&|v| v["tool_id"] == tool && v["channel_id"] == json!(ch_a))
            .unwrap_or_else(|| panic!("no record of A's {tool}: {records:#?}"));
        assert_eq!(records[at]["result"], "cut", "A's {tool}: {:#}", records[at]);
        assert!(at < ended, "A's {tool} is audited before the release: {records:#?}");
    }
    assert_eq!(records[ended]["arguments"]["reason"], "lease_expired", "{:#}", records[ended]);
    assert_eq!(records[ended]["arguments"]["input_may_have_been_sent"], true, "{:#}", records[ended]);
    assert_eq!(records[ended]["arguments"]["cut_calls"], 2, "{:#}", records[ended]);
    every_lease_record_names_its_channel(&records);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lease_expiry_cuts_the_calls_of_a_holder_whose_socket_closed_through_the_phone_helper() {
    bounded(lease_expiry_cuts_the_calls_of_a_holder_whose_socket_closed(true)).await.expect("test timed out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lease_expiry_cuts_the_calls_of_a_holder_whose_socket_closed_on_the_shell_path() {
    bounded(lease_expiry_cuts_the_calls_of_a_holder_whose_socket_closed(false)).await.expect("test timed out");
}

// ---- a holder whose socket closed reads its cut calls' answers when it comes back (issue 47 item 1) ----------

/// Tenant A's socket closes while its 10 s swipe runs and a text waits behind it; A comes back on a new socket (its
/// lease still runs) and repeats both calls' `tool_call_id`s: each answers the recorded cut — `input_may_have_been_sent`
/// true for the swipe, false for the text — and nothing runs again (the text never reaches the phone). A's logout
/// then ends the lease with both calls counted as cut in `lease.end`.
async fn a_holder_that_comes_back_reads_its_cut_calls(helper: bool) {
    let flags: &[&str] = if helper { &["--phone-helper", "auto"] } else { &["--phone-helper", "off"] };
    let r = rig_with(&[(720, 1600)], true, flags).await;
    let sim = &r.sims[0];
    let serial = sim.serial();
    r.wait_all_online().await;
    let addr = r.srv.addr;
    let mut a = ws(addr, Some(KEY)).await;
    let cid = a.hello(None).await;
    let ch_a = a.bind(Some(&serial)).await;
    sim.clear_events();
    let swipe = json!({"tool_id": "android_swipe", "context": {"tool_call_id": "swipe-4747"},
                       "arguments": {"x1": 300, "y1": 1400, "x2": 300, "y2": 400, "duration_ms": 10000,
                                     "settle": false, "connector_channel_id": ch_a}});
    let text = json!({"tool_id": "android_input_text", "context": {"tool_call_id": "text-4747"},
                      "arguments": {"text": "from-tenant-A", "settle": false, "connector_channel_id": ch_a}});
    let _ = a.send("tool.invoke", Some(&ch_a), swipe.clone()).await;
    let first = InputEvent::Swipe { x1: 300, y1: 1400, x2: 300, y2: 400, duration_ms: 10000 };
    let deadline = Instant::now() + Duration::from_secs(30);
    while !sim.events().contains(&first) {
        assert!(Instant::now() < deadline, "A's swipe never reached the phone: {:?}", sim.events());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let _ = a.send("tool.invoke", Some(&ch_a), text.clone()).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    drop(a);

    let mut a = ws(addr, Some(KEY)).await;
    a.hello(Some(&cid)).await;
    a.open(Some(&ch_a)).await;
    for (call, sent) in [(&text, false), (&swipe, true)] {
        let ack = a.request("tool.invoke", Some(&ch_a), call.clone()).await;
        let e = &ack["error"];
        assert_eq!(e["code"], "tool_invoke_failed", "{ack}");
        assert!(e["message"].as_str().unwrap_or("").contains("cut"), "{ack}");
        assert_eq!(e["details"]["input_may_have_been_sent"], sent, "{ack}");
        assert_eq!(e["details"]["replayed"], true, "the repeat ran nothing: {ack}");
    }
    let out = a.request("auth.logout", Some(&ch_a), json!({})).await;
    assert_eq!(out["payload"]["status"], "ok", "{out}");
    let ev = sim.events();
    assert!(!ev.iter().any(|e| matches!(e, InputEvent::Text(t) if t.contains("tenant-A"))), "A's text: {ev:?}");
    assert_eq!(ev.iter().filter(|e| **e == first).count(), 1, "the swipe ran once: {ev:?}");

    let records = audit(&r);
    let ended = records
        .iter()
        .find(|v| v["tool_id"] == "lease.end" && v["channel_id"] == json!(ch_a))
        .unwrap_or_else(|| panic!("no lease.end of A: {records:#?}"));
    assert_eq!(ended["arguments"]["reason"], "logout", "{ended:#}");
    assert_eq!(ended["arguments"]["cut_calls"], 2, "{ended:#}");
    assert_eq!(ended["arguments"]["input_may_have_been_sent"], true, "{ended:#}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_that_comes_back_reads_its_cut_calls_through_the_phone_helper() {
    bounded(a_holder_that_comes_back_reads_its_cut_calls(true)).await.expect("test timed out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_that_comes_back_reads_its_cut_calls_on_the_shell_path() {
    bounded(a_holder_that_comes_back_reads_its_cut_calls(false)).await.expect("test timed out");
}

//! One phone seen twice by the adb server (USB + Wi-Fi debugging; here: the simulated phone listening on two
//! ports with one `ro.serialno`, both `adb connect`ed). The lease follows the physical phone: it is one device,
//! a second channel cannot bind it by its other serial, and commands keep working while either path goes away.

mod common;

use std::time::{Duration, Instant};

use common::adb::*;
use common::*;
use serde_json::json;
use xagent_adb_connector::sim::InputEvent;

/// Polls `/health` until the connector sees exactly one device, online (bounded).
async fn one_online_device(srv: &Server, why: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let h = get(srv.addr, "/health").await.json();
        if h["devices"] == 1 && h["devices_online"] == 1 {
            return;
        }
        assert!(Instant::now() < deadline, "{why}: /health = {h}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Waits until the connector has verified `n` paths as the same phone (its log says so once per extra path).
async fn paths_joined(srv: &Server, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while srv.logs().iter().filter(|l| l.contains("another path to the same phone")).count() < n {
        assert!(Instant::now() < deadline, "the second path was never recognised: {:#?}", srv.logs());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn tap_lands(c: &mut Client, ch: &str, sim: &xagent_adb_connector::sim::SimPhone, x: i64) {
    sim.clear_events();
    let ack = c.tap(ch, x, 7).await;
    assert!(ack["error"].is_null(), "{ack}");
    assert!(sim.events().contains(&InputEvent::Tap { x: x as i32, y: 7 }), "{:?}", sim.events());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_phone_on_two_serials_is_one_device_with_one_lease() {
    let (adb, sim, first) = setup().await.expect("adb");
    let second_addr = sim.listen_also("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let second = format!("127.0.0.1:{}", second_addr.port());
    let (a, s) = (adb.clone(), second.clone());
    blocking(move || {
        a.connect(&s);
        a.wait_state(&s, "device");
    })
    .await;

    let dir = tempfile::tempdir().unwrap();
    let srv = Server::start(&dir.path().join("data"), &["--adb-server", &format!("127.0.0.1:{}", adb.port)], &[]);
    paths_joined(&srv, 1).await;
    one_online_device(&srv, "two serials of one phone count as one device").await;
    // The wall shows the one phone with both of its paths.
    let d = get(srv.addr, "/api/v1/devices").await.json();
    let mut want = vec![first.clone(), second.clone()];
    want.sort();
    assert_eq!(d["devices"].as_array().unwrap().len(), 1, "{d}");
    assert_eq!(d["devices"][0]["paths"], json!(want), "{d}");

    // The first channel takes the phone; a second one can take it by neither serial, nor as "any free phone".
    let mut owner = ws(srv.addr, None).await;
    let connector_id = owner.hello(None).await;
    let ch = owner.bind(None).await;
    let mut other = ws(srv.addr, None).await;
    other.hello(None).await;
    for serial in [Some(first.as_str()), Some(second.as_str()), None] {
        let (ch2, _) = other.open(None).await;
        let input = serial.map_or(json!({}), |s| json!({"serial": s}));
        let a = other.request("auth.start", Some(&ch2), json!({"flow_id": "adb_device", "input": input})).await;
        let code = error_code(&a).to_owned();
        // By either serial, or as "any free phone": the one phone is held (device matching says so, issue 14).
        assert_eq!(code, "device_busy", "binding {serial:?} again: {a}");
    }

    // `devices` shows the holder on both rows.
    let (a, d) = (format!("127.0.0.1:{}", adb.port), dir.path().join("data"));
    let out = blocking(move || {
        std::process::Command::new(env!("CARGO_BIN_EXE_xagent-adb-connector"))
            .args(["devices", "--adb-server", &a, "--data-dir"])
            .arg(&d)
            .env("XAGENT_ADB_CONFIG_DIR", "/nonexistent")
            .output()
            .unwrap()
    })
    .await;
    let table = String::from_utf8_lossy(&out.stdout).to_string();
    for serial in [&first, &second] {
        let row = table.lines().find(|l| l.contains(serial.as_str())).unwrap_or_else(|| panic!("{table}"));
        assert!(row.contains(&ch), "{serial} is held by {ch}:\n{table}");
    }
    assert!(table.contains("same phone as"), "{table}");

    // Commands reach the phone, and keep reaching it while either path goes away.
    tap_lands(&mut owner, &ch, &sim, 11).await;
    for (gone, stays) in [(&first, &second), (&second, &first)] {
        let (a, g, s) = (adb.clone(), gone.clone(), stays.clone());
        blocking(move || {
            a.adb(&["disconnect", &g]);
            let deadline = Instant::now() + Duration::from_secs(30);
            while a.state_of(&g).is_some() {
                assert!(Instant::now() < deadline, "adb still lists {g}");
                std::thread::sleep(Duration::from_millis(100));
            }
            a.wait_state(&s, "device");
        })
        .await;
        one_online_device(&srv, "one path left").await;
        tap_lands(&mut owner, &ch, &sim, 21).await;
        // The path comes back and is recognised as the same phone again.
        let joined = srv.logs().iter().filter(|l| l.contains("another path to the same phone")).count();
        let (a, g) = (adb.clone(), gone.clone());
        blocking(move || {
            a.connect(&g);
            a.wait_state(&g, "device");
        })
        .await;
        paths_joined(&srv, joined + 1).await;
        one_online_device(&srv, "both paths again").await;
        tap_lands(&mut owner, &ch, &sim, 31).await;
    }

    // A restart with both paths listed: whichever path is verified first, the restored binding keeps its phone.
    drop(owner);
    drop(srv);
    let srv = Server::start(&dir.path().join("data"), &["--adb-server", &format!("127.0.0.1:{}", adb.port)], &[]);
    paths_joined(&srv, 1).await;
    one_online_device(&srv, "after the restart").await;
    let mut owner = ws(srv.addr, None).await;
    assert_eq!(owner.hello(Some(&connector_id)).await, connector_id);
    let (_, descriptor) = owner.open(Some(&ch)).await;
    assert_eq!(descriptor["connection"]["status"], "connected", "{descriptor}");
    tap_lands(&mut owner, &ch, &sim, 41).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_allowlist_admits_a_phone_by_any_of_its_serials() {
    let (adb, sim, _first) = setup().await.expect("adb");
    // The operator allowlisted the phone by the serial of its second path (say, USB), but the connector first
    // sees it over the other one, which then names the phone.
    let second_addr = sim.listen_also("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let second = format!("127.0.0.1:{}", second_addr.port());
    let dir = tempfile::tempdir().unwrap();
    let srv = Server::start(
        &dir.path().join("data"),
        &["--adb-server", &format!("127.0.0.1:{}", adb.port), "--allow-serial", &second],
        &[],
    );
    one_online_device(&srv, "the first path").await;
    let (a, s) = (adb.clone(), second.clone());
    blocking(move || {
        a.connect(&s);
        a.wait_state(&s, "device");
    })
    .await;
    paths_joined(&srv, 1).await;
    one_online_device(&srv, "one phone").await;
    let mut c = ws(srv.addr, None).await;
    c.hello(None).await;
    let ch = c.bind(None).await;
    tap_lands(&mut c, &ch, &sim, 51).await;
}

/// Polls `/health` until the connector sees `n` devices, all online (bounded).
async fn online_devices(srv: &Server, n: u64, why: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let h = get(srv.addr, "/health").await.json();
        if h["devices"] == n && h["devices_online"] == n {
            return;
        }
        assert!(Instant::now() < deadline, "{why}: /health = {h}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Issue 22 item 2: a phone reporting another phone's `ro.serialno` (same adb server) is its own device. It gets
/// none of the other phone's commands, and an allowlist naming the other phone does not admit it. On the old code
/// the two were merged by the claimed serial: one device on /health, the impostor bindable under the allowlist,
/// and commands routed to whichever path sorted first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_impostor_claiming_a_phones_serial_gets_neither_its_commands_nor_its_allowlist() {
    let (adb, genuine, genuine_serial) = setup().await.expect("adb");
    let impostor = start_sim().await;
    impostor.set_prop("ro.serialno", &genuine_serial);
    impostor.set_prop("ro.boot.serialno", &genuine_serial);
    let impostor_serial = impostor.serial();
    let (a, s) = (adb.clone(), impostor_serial.clone());
    blocking(move || {
        a.connect(&s);
        a.wait_state(&s, "device");
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let srv = Server::start(
        &dir.path().join("data"),
        &["--adb-server", &format!("127.0.0.1:{}", adb.port), "--allow-serial", &genuine_serial],
        &[],
    );
    online_devices(&srv, 2, "the impostor is a device of its own").await;
    assert!(!srv.logs().iter().any(|l| l.contains("another path to the same phone")), "merged by a claim");
    let d = get(srv.addr, "/api/v1/devices").await.json();
    for serial in [&genuine_serial, &impostor_serial] {
        let row = d["devices"].as_array().unwrap().iter().find(|x| x["serial"] == json!(serial)).cloned();
        let row = row.unwrap_or_else(|| panic!("{serial} is not on the wall: {d}"));
        assert_eq!(row["paths"], json!([serial]), "{d}");
        assert_eq!(row["allowed"], json!(*serial == genuine_serial), "{d}");
    }

    // The agent's phone: every command lands on it, none on the impostor.
    let mut owner = ws(srv.addr, None).await;
    owner.hello(None).await;
    let ch = owner.bind(Some(&genuine_serial)).await;
    impostor.clear_events();
    for x in [11, 12, 13] {
        tap_lands(&mut owner, &ch, &genuine, x).await;
    }
    let typed = owner.invoke(&ch, "android_input_text", json!({"text": "secret"})).await;
    assert!(typed["error"].is_null(), "{typed}");
    assert_eq!(impostor.events(), vec![], "the impostor received commands meant for {genuine_serial}");

    // The allowlist names the genuine phone's adb serial: the impostor's claim does not admit it.
    let mut other = ws(srv.addr, None).await;
    other.hello(None).await;
    let (ch2, _) = other.open(None).await;
    let a = other
        .request("auth.start", Some(&ch2), json!({"flow_id": "adb_device", "input": {"serial": impostor_serial}}))
        .await;
    assert_eq!(error_code(&a), "permission_denied", "{a}");
    let a = other.request("auth.start", Some(&ch2), json!({"flow_id": "adb_device", "input": {}})).await;
    assert_ne!(a["payload"]["status"], "authenticated", "any free allowed phone must not be the impostor: {a}");
    assert_eq!(impostor.events(), vec![]);
}

/// Two phones that really share a serial (cheap phones ship `0123456789ABCDEF`), on two adb servers: two devices,
/// each bindable and each getting its own commands. On the old code they merged into one and one vanished.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_serial_on_two_adb_servers_is_two_phones() {
    let (adb1, sim1, serial1) = setup().await.expect("adb");
    let (adb2, sim2, serial2) = setup().await.expect("adb");
    for sim in [&sim1, &sim2] {
        sim.set_prop("ro.serialno", "0123456789ABCDEF");
    }
    let dir = tempfile::tempdir().unwrap();
    let (s1, s2) = (format!("127.0.0.1:{}", adb1.port), format!("127.0.0.1:{}", adb2.port));
    let srv = Server::start(&dir.path().join("data"), &["--adb-server", &s1, "--adb-server", &s2], &[]);
    online_devices(&srv, 2, "one phone per adb server").await;
    let mut c = ws(srv.addr, None).await;
    c.hello(None).await;
    let ch1 = c.bind(Some(&serial1)).await;
    let ch2 = c.bind(None).await;
    tap_lands(&mut c, &ch1, &sim1, 61).await;
    sim1.clear_events();
    tap_lands(&mut c, &ch2, &sim2, 62).await;
    assert_eq!(sim1.events(), vec![], "the second phone's tap reached the first ({serial2} vs {serial1})");
}

/// Issue 36 item 10: the serial and boot id are readable by any app, so a relay answering with another phone's
/// pair is no second path of it. The impostor (another simulated phone reporting the real one's `ro.serialno`
/// and boot id) cannot read the token the real phone's path writes (`identity::challenge`): it stays a device of
/// its own, and the real phone's commands never go over it — also not once the real path is gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relay_with_another_phones_serial_and_boot_id_is_never_a_path_of_it() {
    let adb = std::sync::Arc::new(blocking(AdbServer::start).await.expect("adb"));
    let real = start_sim().await;
    let relay = start_sim().await;
    real.set_prop("ro.serialno", "R58NREAL01");
    relay.set_prop("ro.serialno", "R58NREAL01");
    relay.set_boot_id(&real.boot_id());
    for s in [real.serial(), relay.serial()] {
        let a = adb.clone();
        blocking(move || {
            a.connect(&s);
            a.wait_state(&s, "device");
        })
        .await;
    }
    let dir = tempfile::tempdir().unwrap();
    let srv = Server::start(&dir.path().join("data"), &["--adb-server", &format!("127.0.0.1:{}", adb.port)], &[]);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let h = get(srv.addr, "/health").await.json();
        if h["devices"] == 2 && h["devices_online"] == 2 {
            break;
        }
        assert!(Instant::now() < deadline, "the relay was merged into the real phone: /health = {h}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let logs = srv.logs();
    assert!(!logs.iter().any(|l| l.contains("another path to the same phone")), "merged: {logs:#?}");
    assert!(logs.iter().any(|l| l.contains("kept as a separate device")), "{logs:#?}");
    let d = get(srv.addr, "/api/v1/devices").await.json();
    for row in d["devices"].as_array().unwrap() {
        assert_eq!(row["paths"].as_array().map(Vec::len), Some(1), "{d}");
    }
    // The real phone bound by its serial; its path gone, its commands do not go to the relay.
    let mut c = ws(srv.addr, None).await;
    c.hello(None).await;
    let ch = c.bind(Some(&real.serial())).await;
    tap_lands(&mut c, &ch, &real, 21).await;
    let (a, g) = (adb.clone(), real.serial());
    blocking(move || {
        a.adb(&["disconnect", &g]);
    })
    .await;
    let deadline = Instant::now() + Duration::from_secs(30);
    relay.clear_events();
    loop {
        let ack = c.tap(&ch, 22, 7).await;
        if ack["error"]["code"] == "device_offline" {
            break;
        }
        assert!(Instant::now() < deadline, "the real phone never went offline: {ack}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(relay.events().is_empty(), "the real phone's tap went to the relay: {:?}", relay.events());
}

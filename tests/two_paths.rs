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

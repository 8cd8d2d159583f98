//! Integration tests: the simulated phone driven by the REAL `adb` binary through a private adb
//! server (never the default port 5037), over loopback only.
//!
//! Each test starts its own adb server on an ephemeral port with its own `HOME` (so its own
//! adbkey), which keeps tests independent and parallel-safe. If `adb` is missing the tests fail
//! with a clear message, unless `XAGENT_SKIP_ADB_TESTS=1`.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::adb::*;
use xagent_adb_connector::sim::{Fault, InputEvent};

macro_rules! bounded {
    ($body:expr) => {
        tokio::time::timeout(TEST_TIMEOUT, $body).await.expect("test timed out")
    };
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shell_getprop_tap_and_exit_codes() {
    bounded!(async {
        let Some((adb, sim, serial)) = setup().await else {
            return;
        };
        let (x, y) = {
            // Centre of the "Increment" button for the default 1080x2400 layout.
            let ui = xagent_adb_connector::sim::ui::Ui::new(1080, 2400);
            ui.layout().button.center()
        };
        let (a, s) = (adb.clone(), serial.clone());
        let outs = blocking(move || {
            let sh = |cmd: &[&str]| {
                let mut args = vec!["-s", s.as_str(), "shell"];
                args.extend_from_slice(cmd);
                a.adb(&args)
            };
            let model = sh(&["getprop", "ro.product.model"]);
            let tap = sh(&["input", "tap", &x.to_string(), &y.to_string()]);
            let marker = sh(&["false; echo X$?"]);
            let exit3 = sh(&["exit 3"]);
            let unknown = sh(&["frobnicate"]);
            let quoted = sh(&["input text 'a%sb'; echo done"]);
            (model, tap, marker, exit3, unknown, quoted)
        })
        .await;
        let (model, tap, marker, exit3, unknown, quoted) = outs;
        assert_eq!(model.text(), "Pixel 7 (sim)\n", "stderr: {}", model.stderr);
        assert_eq!(model.status, Some(0));
        assert_eq!(tap.status, Some(0), "{}", tap.stderr);
        assert_eq!(sim.counter(), 1);
        assert_eq!(sim.events()[0], InputEvent::Tap { x, y });
        assert_eq!(marker.text(), "X1\n");
        assert_eq!(exit3.status, Some(3), "shell v2 must carry the exit status");
        assert_eq!(unknown.status, Some(127));
        assert!(unknown.stderr.contains("frobnicate: inaccessible or not found"), "{}", unknown.stderr);
        assert_eq!(quoted.text(), "done\n");
        assert_eq!(sim.events()[1], InputEvent::Text("a b".into()));
        assert!(sim.commands().iter().any(|c| c.starts_with("getprop ro.product.model")), "{:?}", sim.commands());
        sim.shutdown().await;
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_out_screencap_png() {
    bounded!(async {
        let Some((adb, sim, serial)) = setup().await else {
            return;
        };
        let (a, s) = (adb.clone(), serial.clone());
        let (png, raw) = blocking(move || {
            (a.adb(&["-s", &s, "exec-out", "screencap", "-p"]), a.adb(&["-s", &s, "exec-out", "screencap"]))
        })
        .await;
        assert_eq!(png.status, Some(0), "{}", png.stderr);
        let img = image::load_from_memory_with_format(&png.stdout, image::ImageFormat::Png).expect("valid PNG");
        assert_eq!((img.width(), img.height()), (1080, 2400));
        // Raw: 16-byte header (w, h, format=RGBA_8888, dataspace) + pixels.
        assert_eq!(raw.stdout.len(), 16 + 1080 * 2400 * 4);
        assert_eq!(&raw.stdout[0..12], &[0x38, 4, 0, 0, 0x60, 9, 0, 0, 1, 0, 0, 0]);
        assert_eq!(&raw.stdout[16..], img.to_rgba8().as_raw().as_slice());
        sim.shutdown().await;
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn push_pull_roundtrip_and_uiautomator_dump() {
    bounded!(async {
        let Some((adb, sim, serial)) = setup().await else {
            return;
        };
        let (x, y) = xagent_adb_connector::sim::ui::Ui::new(1080, 2400).layout().button.center();
        let (a, s) = (adb.clone(), serial.clone());
        blocking(move || {
            let data: Vec<u8> = (0..300 * 1024u32).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8).collect();
            let local = a.path("big.bin");
            std::fs::write(&local, &data).unwrap();
            let push = a.adb(&["-s", &s, "push", local.to_str().unwrap(), "/data/local/tmp/sub/big.bin"]);
            assert_eq!(push.status, Some(0), "push: {} {}", push.text(), push.stderr);
            let back = a.path("back.bin");
            let pull = a.adb(&["-s", &s, "pull", "/data/local/tmp/sub/big.bin", back.to_str().unwrap()]);
            assert_eq!(pull.status, Some(0), "pull: {} {}", pull.text(), pull.stderr);
            assert!(std::fs::read(&back).unwrap() == data, "pulled file differs");
            let ls = a.adb(&["-s", &s, "shell", "ls", "/data/local/tmp/sub"]);
            assert_eq!(ls.text(), "big.bin\n");
            // Pulling a missing file fails cleanly.
            let missing = a.adb(&["-s", &s, "pull", "/sdcard/nope.txt", a.path("nope").to_str().unwrap()]);
            assert_ne!(missing.status, Some(0));

            // `adb install` streams the APK (abb_exec/cmd package install -S N).
            let apk = a.path("com.example.sim.apk");
            std::fs::write(&apk, b"PK\x03\x04fake apk body").unwrap();
            let install = a.adb(&["-s", &s, "install", "-r", apk.to_str().unwrap()]);
            assert!(install.text().contains("Success"), "install: {} {}", install.text(), install.stderr);
            let bad = a.path("bad.apk");
            std::fs::write(&bad, b"not a zip").unwrap();
            let install = a.adb(&["-s", &s, "install", bad.to_str().unwrap()]);
            assert_ne!(install.status, Some(0));
            assert!(format!("{}{}", install.text(), install.stderr).contains("INSTALL_FAILED_INVALID_APK"));

            let tap = a.adb(&["-s", &s, "shell", "input", "tap", &x.to_string(), &y.to_string()]);
            assert_eq!(tap.status, Some(0));
            let dump = a.adb(&["-s", &s, "shell", "uiautomator", "dump"]);
            assert_eq!(dump.text(), "UI hierchary dumped to: /sdcard/window_dump.xml\n");
            let xml_path = a.path("dump.xml");
            let pull = a.adb(&["-s", &s, "pull", "/sdcard/window_dump.xml", xml_path.to_str().unwrap()]);
            assert_eq!(pull.status, Some(0), "{}", pull.stderr);
            let xml = std::fs::read_to_string(Path::new(&xml_path)).unwrap();
            assert!(xml.contains("text=\"Count: 1\""), "{xml}");
            assert!(xml.contains("<hierarchy rotation=\"0\">"));
        })
        .await;
        assert_eq!(sim.counter(), 1);
        let cmds = sim.commands();
        assert!(
            cmds.iter().any(|c| c.starts_with("cmd package") && c.contains("install") && c.contains("-S")),
            "{cmds:?}"
        );
        sim.shutdown().await;
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unauthorized_fault_shows_unauthorized() {
    bounded!(async {
        let Some(adb) = blocking(AdbServer::start).await else {
            return;
        };
        let adb = std::sync::Arc::new(adb);
        let sim = start_sim().await;
        sim.set_fault(Fault::Unauthorized);
        let (a, s) = (adb.clone(), sim.serial());
        blocking(move || {
            let _ = a.adb(&["connect", &s]);
            a.wait_state(&s, "unauthorized");
            let sh = a.adb(&["-s", &s, "shell", "true"]);
            assert_ne!(sh.status, Some(0), "shell must fail on an unauthorized device");
        })
        .await;
        // "Accepting the prompt": clear the fault; the pending handshake completes.
        sim.set_fault(Fault::None);
        sim.drop_connections();
        let (a, s) = (adb.clone(), sim.serial());
        blocking(move || {
            let _ = a.adb(&["disconnect", &s]);
            a.connect(&s);
            a.wait_state(&s, "device");
        })
        .await;
        sim.shutdown().await;
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn latency_hang_and_offline_faults() {
    bounded!(async {
        let Some((adb, sim, serial)) = setup().await else {
            return;
        };
        sim.set_fault(Fault::Latency(Duration::from_millis(400)));
        let (a, s) = (adb.clone(), serial.clone());
        let t0 = Instant::now();
        let out = blocking(move || a.adb(&["-s", &s, "shell", "echo", "slow"])).await;
        assert_eq!(out.text(), "slow\n");
        assert!(t0.elapsed() >= Duration::from_millis(400));

        sim.set_fault(Fault::Hang);
        let (a, s) = (adb.clone(), serial.clone());
        let pending = tokio::task::spawn_blocking(move || a.adb(&["-s", &s, "shell", "echo", "late"]));
        tokio::time::sleep(Duration::from_millis(700)).await;
        assert!(!pending.is_finished(), "a hung command must not complete");
        assert!(sim.commands().contains(&"echo late".to_string()));
        sim.set_fault(Fault::None);
        let out = pending.await.unwrap();
        assert_eq!(out.text(), "late\n");

        sim.set_fault(Fault::Offline);
        let (a, s) = (adb.clone(), serial.clone());
        blocking(move || {
            let deadline = Instant::now() + Duration::from_secs(20);
            while a.state_of(&s).as_deref() == Some("device") {
                assert!(Instant::now() < deadline, "device stayed online");
                std::thread::sleep(Duration::from_millis(100));
            }
            let out = a.adb(&["-s", &s, "shell", "true"]);
            assert_ne!(out.status, Some(0));
        })
        .await;
        sim.shutdown().await;
    });
}

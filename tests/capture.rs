//! Compressed screen captures (issue 24): `screencap | gzip -1` where the phone's toybox has gzip (Android 8+),
//! probed once per device, the framebuffer otherwise or when the compressed stream is refused. Real binary, real
//! adb server, simulated phones whose `gzip` writes real gzip (and lies, for the hostile cases).

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::adb::*;
use common::*;
use serde_json::{json, Value};
use xagent_adb_connector::sim::{FrameLie, SimConfig, SimPhone};
use xagent_adb_connector::tools::screen::{decode_raw, GZIP_CAPTURE};

const PROBE: &str = "echo xagent-gzip-probe | gzip -1";

fn bounded<F: std::future::Future>(f: F) -> tokio::time::Timeout<F> {
    tokio::time::timeout(Duration::from_secs(180), f)
}

struct Rig {
    adb: Arc<AdbServer>,
    sim: SimPhone,
    serial: String,
    srv: Server,
    c: Client,
    ch: String,
    _dir: tempfile::TempDir,
}

async fn rig(cfg: SimConfig, env: &[(&str, &str)]) -> Rig {
    let (adb, sim, serial) = setup_with(cfg).await.expect("adb is required (apt-get install adb)");
    let dir = tempfile::tempdir().unwrap();
    let server = format!("127.0.0.1:{}", adb.port);
    let srv = Server::start(dir.path(), &["--adb-server", &server], env);
    let mut c = ws(srv.addr, None).await;
    c.hello(None).await;
    let ch = c.bind(Some(&serial)).await;
    Rig { adb, sim, serial, srv, c, ch, _dir: dir }
}

impl Rig {
    async fn screenshot(&mut self, args: Value) -> Value {
        let ch = self.ch.clone();
        let a = self.c.invoke(&ch, "android_screenshot", args).await;
        assert!(a["error"].is_null(), "screenshot failed: {a}");
        a["payload"]["result"].clone()
    }

    /// A full-size lossless screenshot, downloaded and decoded.
    async fn full_png(&mut self) -> image::RgbImage {
        let r = self.screenshot(json!({"format": "png", "max_side": 0})).await;
        let url = r["files"][0]["download_url"].as_str().unwrap().to_owned();
        let got = http(self.srv.addr, "GET", &url, &[], b"").await;
        assert_eq!(got.status, 200);
        image::load_from_memory_with_format(&got.body, image::ImageFormat::Png).unwrap().into_rgb8()
    }

    /// The frame as `adb exec-out screencap` (raw, uncompressed) gives it through the adb CLI.
    async fn raw_frame(&self) -> image::RgbImage {
        let (adb, serial) = (self.adb.clone(), self.serial.clone());
        let out = blocking(move || adb.adb(&["-s", &serial, "exec-out", "screencap"])).await;
        decode_raw(&out.stdout).expect("raw screencap decodes")
    }

    fn count(&self, cmd: &str) -> usize {
        self.sim.commands().iter().filter(|c| c.as_str() == cmd).count()
    }
}

/// The compressed path gives the agent exactly the pixels of the raw frame, the phone is probed once for any
/// number of captures, and no uncompressed frame crosses the link. On the old code no capture was compressed
/// (`framebuffer:` every time, no probe): the counts fail.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compressed_captures_are_pixel_exact_and_the_phone_is_probed_once() {
    bounded(async {
        let mut r = rig(SimConfig::default(), &[]).await;
        // Something on the screen besides flat colours: the counter's digits.
        r.sim.clear_events();
        let shot = r.full_png().await;
        let raw = r.raw_frame().await;
        assert_eq!(shot.dimensions(), (1080, 2400));
        assert!(shot == raw, "the compressed capture changed pixels");
        for _ in 0..2 {
            r.screenshot(json!({})).await;
        }
        assert_eq!(r.count(PROBE), 1, "one probe for three captures: {:?}", r.sim.commands());
        assert_eq!(r.count(GZIP_CAPTURE), 3, "{:?}", r.sim.commands());
        assert_eq!(r.count("framebuffer:"), 0, "no uncompressed frame: {:?}", r.sim.commands());
        // Another phone state (the keyguard: other colours, other digits): still exact.
        r.sim.set_lock(xagent_adb_connector::sim::ui::LockMode::Swipe);
        let (shot, raw) = (r.full_png().await, r.raw_frame().await);
        assert!(shot == raw, "the compressed capture changed pixels on the keyguard");
        assert_eq!(r.count(PROBE), 1);
    })
    .await
    .expect("test timed out");
}

/// Android 7.1 (SDK 25) has no gzip in its toybox: the probe says so once, every capture uses the framebuffer,
/// and the pixels are the same as the raw frame.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_phone_without_gzip_falls_back_to_the_framebuffer_after_one_probe() {
    bounded(async {
        let cfg = SimConfig { android_version: "7.1.2".into(), sdk: 25, ..SimConfig::default() };
        let mut r = rig(cfg, &[]).await;
        let shot = r.full_png().await;
        assert!(shot == r.raw_frame().await, "framebuffer capture differs from the raw frame");
        r.screenshot(json!({})).await;
        assert_eq!(r.count(PROBE), 1, "{:?}", r.sim.commands());
        assert_eq!(r.count(GZIP_CAPTURE), 0, "{:?}", r.sim.commands());
        assert_eq!(r.count("framebuffer:"), 2, "{:?}", r.sim.commands());
    })
    .await
    .expect("test timed out");
}

/// A phone whose gzip passed the probe and then sends a stream that inflates to 64 MiB, or a corrupt one: the
/// capture falls back to the framebuffer (the agent gets its picture), the phone's gzip is not used again until it
/// reconnects, and the connector's peak memory does not grow by anything like what the bomb asked for.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lying_gzip_stream_is_refused_and_the_capture_falls_back() {
    bounded(async {
        for lie in [FrameLie::GzipBomb, FrameLie::GzipCorrupt] {
            // A small screen (1.1 MB frames), so the bomb would dwarf any legitimate growth.
            let cfg = SimConfig { screen_width: 360, screen_height: 800, ..SimConfig::default() };
            let mut r = rig(cfg, &[]).await;
            r.screenshot(json!({})).await; // honest: probed, compressed
            r.full_png().await;
            let before = peak_rss_kb(&r);
            assert_eq!((r.count(PROBE), r.count(GZIP_CAPTURE)), (1, 2), "{lie:?}");
            r.sim.lie_about_frames(lie);
            let shot = r.full_png().await;
            assert_eq!(shot.dimensions(), (360, 800), "{lie:?}");
            let grown = peak_rss_kb(&r).saturating_sub(before);
            assert!(grown < 24 * 1024, "{lie:?}: peak RSS grew by {grown} kB");
            r.sim.lie_about_frames(FrameLie::None);
            assert!(shot == r.raw_frame().await, "{lie:?}: the fallback frame is the screen");
            assert_eq!(r.count(GZIP_CAPTURE), 3, "{lie:?}: tried once more, then refused");
            assert_eq!(r.count("framebuffer:"), 1, "{lie:?}: the fallback");
            let logs = r.srv.logs();
            assert!(
                logs.iter()
                    .any(|l| l.contains("compressed capture refused") && l.contains("unreadable screen capture")),
                "{lie:?}: no warning naming the refused stream"
            );
            r.screenshot(json!({})).await;
            assert_eq!(r.count(GZIP_CAPTURE), 3, "{lie:?}: not used again on this device");
            assert_eq!(r.count(PROBE), 1, "{lie:?}");
            assert_eq!(r.count("framebuffer:"), 2, "{lie:?}");
            assert!(!logs.iter().any(|l| l.contains("panicked")), "{lie:?}: a panic was logged");
        }
    })
    .await
    .expect("test timed out");
}

/// The connector's peak resident memory (VmHWM).
fn peak_rss_kb(r: &Rig) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{}/status", r.srv.child.id())).unwrap();
    status.lines().find_map(|l| l.strip_prefix("VmHWM:")).unwrap().trim().trim_end_matches(" kB").parse().unwrap()
}

/// `--capture-compression off` (here through its variable): no probe, no gzip, the framebuffer as before (the operator's escape hatch
/// and the benchmark's "before").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compression_can_be_turned_off() {
    bounded(async {
        let mut r = rig(SimConfig::default(), &[("XAGENT_ADB_CAPTURE_COMPRESSION", "off")]).await;
        r.screenshot(json!({})).await;
        assert_eq!((r.count(PROBE), r.count(GZIP_CAPTURE), r.count("framebuffer:")), (0, 0, 1));
    })
    .await
    .expect("test timed out");
}

/// The simulator's `gzip` exists exactly from the release whose toybox has it, per AOSP's list of each release's
/// toybox applets (tests/fixtures/real/, provenance in INDEX.md): absent in 7.0, new in 8.0 (SDK 26).
#[test]
fn the_simulated_gzip_exists_from_the_release_aosp_lists_it_in() {
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/real/toybox-applets-7.0-8.0-9.0-aosp-shell-and-utilities.txt"),
    )
    .unwrap();
    let section = |title: &str| -> Vec<String> {
        let start = text.find(title).unwrap_or_else(|| panic!("no section {title}"));
        let rest = &text[start + title.len()..];
        let end = rest.find("\n## ").unwrap_or(rest.len());
        rest[..end].split_whitespace().map(|w| w.trim_matches('*').to_owned()).collect()
    };
    assert!(!section("## Android 7.0").contains(&"gzip".to_owned()));
    assert!(section("## Android 8.0").contains(&"gzip".to_owned()));
    assert!(section("## Android 9.0").contains(&"gzip".to_owned()));
    assert_eq!(xagent_adb_connector::sim::commands::GZIP_SINCE_SDK, 26, "Android 8.0 is SDK 26");
}

//! Compressed screen captures (issue 24): `screencap | gzip -1` where the phone's toybox has gzip (Android 8+),
//! probed once per device, the framebuffer otherwise or when the compressed stream is refused. Real binary, real
//! adb server, simulated phones whose `gzip` writes real gzip (and lies, for the hostile cases).

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::adb::*;
use common::*;
use serde_json::{json, Value};
use xagent_adb_connector::pixels::capture::{decode_raw, GZIP_CAPTURE};
use xagent_adb_connector::pixels::parallel::PROBE;
use xagent_adb_connector::sim::{FrameLie, SimConfig, SimPhone};

/// The first command of a parallel capture (the frame to a temp file) and of each of its streams.
const TO_FILE: &str = "umask 077; screencap /data/local/tmp/xagent-";
const STREAM: &str = "dd if=/data/local/tmp/xagent-";

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

    fn count_prefix(&self, prefix: &str) -> usize {
        self.sim.commands().iter().filter(|c| c.starts_with(prefix)).count()
    }

    /// Waits (10 s at most) until no capture file is left in the phone's /data/local/tmp (the connector removes
    /// it right after each capture, without making the agent wait); the files still there after that.
    async fn leftovers(&self) -> Vec<String> {
        leftovers(&self.sim).await
    }
}

/// The phone helper's dex (`/data/local/tmp/xagent-helper-<hash>.dex`): with the helper on (the default) the
/// connector pushes it once and leaves it for the next start; it is no capture file.
fn is_helper_dex(path: &str) -> bool {
    path.starts_with("/data/local/tmp/xagent-helper-") && path.ends_with(".dex")
}

/// Capture files left in `sim`'s /data/local/tmp once the clean-up had 10 s.
async fn leftovers(sim: &SimPhone) -> Vec<String> {
    let files = || {
        sim.files_under("/data/local/tmp")
            .into_iter()
            .filter(|f| f.contains("xagent-") && !is_helper_dex(f))
            .collect::<Vec<_>>()
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !files().is_empty() && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    files()
}

/// The compressed path (on an 8-CPU Android 14 phone: the parallel one, four streams of one temp file) gives the
/// agent exactly the pixels of the raw frame, the phone is probed once for any number of captures, no uncompressed
/// frame crosses the link and no temp file stays behind. On the single-stream code the counts of temp-file
/// captures and streams fail.
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
        assert_eq!(r.count_prefix(TO_FILE), 3, "{:?}", r.sim.commands());
        assert_eq!(r.count_prefix(STREAM), 12, "four streams per capture: {:?}", r.sim.commands());
        assert_eq!(r.count(GZIP_CAPTURE), 0, "{:?}", r.sim.commands());
        assert_eq!(r.count("framebuffer:"), 0, "no uncompressed frame: {:?}", r.sim.commands());
        assert_eq!(r.leftovers().await, Vec::<String>::new(), "temp files left");
        // Another phone state (the keyguard: other colours, other digits): still exact.
        r.sim.set_lock(xagent_adb_connector::sim::ui::LockMode::Swipe);
        let (shot, raw) = (r.full_png().await, r.raw_frame().await);
        assert!(shot == raw, "the compressed capture changed pixels on the keyguard");
        assert_eq!(r.count(PROBE), 1);
    })
    .await
    .expect("test timed out");
}

/// A capture file an earlier capture left behind (a `screencap` still writing when its capture was cancelled, a
/// killed connector) goes with the next capture's sweep, without waiting for a reconnect and its probe; a fresh
/// one (another capture in progress) and other files stay. On the code that swept only in the probe the old file
/// stayed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_capture_sweeps_capture_files_older_than_a_minute() {
    bounded(async {
        let mut r = rig(SimConfig::default(), &[]).await;
        r.screenshot(json!({})).await; // probed (and swept) once
        assert!(r.sim.write_file_aged("/data/local/tmp/xagent-0badc0de.raw", &[1; 64], 3600));
        assert!(r.sim.write_file("/data/local/tmp/xagent-fresh.raw", &[1; 64]));
        assert!(r.sim.write_file_aged("/data/local/tmp/app.apk", &[1; 64], 3600));
        r.screenshot(json!({})).await;
        assert_eq!(r.count(PROBE), 1, "no second probe: {:?}", r.sim.commands());
        let mut left: Vec<String> =
            r.sim.files_under("/data/local/tmp").into_iter().filter(|f| !is_helper_dex(f)).collect();
        left.sort();
        assert_eq!(left, ["/data/local/tmp/app.apk", "/data/local/tmp/xagent-fresh.raw"]);
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

/// A phone whose gzip passed the probe and then sends a stream that inflates to 64 MiB, a corrupt one, or one that
/// inflates to less than it was asked for — through one stream (1 CPU) and through the parallel streams (8 CPUs,
/// where each stream must fill exactly its range): the capture falls back to the framebuffer (the agent gets its
/// picture), the phone's gzip is not used again until it reconnects, no temp file stays behind, and the
/// connector's peak memory does not grow by anything like what the bomb asked for.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lying_gzip_stream_is_refused_and_the_capture_falls_back() {
    bounded(async {
        for cpus in [1, 8] {
            for lie in [FrameLie::GzipBomb, FrameLie::GzipCorrupt, FrameLie::GzipShort] {
                // A small screen (1.1 MB frames), so the bomb would dwarf any legitimate growth.
                let cfg = SimConfig { screen_width: 360, screen_height: 800, cpus, ..SimConfig::default() };
                let mut r = rig(cfg, &[]).await;
                let compressed = |r: &Rig| r.count(GZIP_CAPTURE) + r.count_prefix(TO_FILE);
                r.screenshot(json!({})).await; // honest: probed, compressed
                r.full_png().await;
                let before = peak_rss_kb(&r);
                assert_eq!((r.count(PROBE), compressed(&r)), (1, 2), "{lie:?}, {cpus} CPUs");
                assert_eq!(r.count_prefix(TO_FILE) > 0, cpus > 1, "{lie:?}, {cpus} CPUs: {:?}", r.sim.commands());
                r.sim.lie_about_frames(lie);
                let shot = r.full_png().await;
                assert_eq!(shot.dimensions(), (360, 800), "{lie:?}");
                let grown = peak_rss_kb(&r).saturating_sub(before);
                assert!(grown < 24 * 1024, "{lie:?}, {cpus} CPUs: peak RSS grew by {grown} kB");
                r.sim.lie_about_frames(FrameLie::None);
                assert!(shot == r.raw_frame().await, "{lie:?}: the fallback frame is the screen");
                assert_eq!(compressed(&r), 3, "{lie:?}, {cpus} CPUs: tried once more, then refused");
                assert_eq!(r.count("framebuffer:"), 1, "{lie:?}: the fallback");
                assert_eq!(r.leftovers().await, Vec::<String>::new(), "{lie:?}: temp files left after the error");
                let logs = r.srv.logs();
                assert!(
                    logs.iter()
                        .any(|l| l.contains("compressed capture refused") && l.contains("unreadable screen capture")),
                    "{lie:?}, {cpus} CPUs: no warning naming the refused stream"
                );
                r.screenshot(json!({})).await;
                assert_eq!(compressed(&r), 3, "{lie:?}: not used again on this device");
                assert_eq!(r.count(PROBE), 1, "{lie:?}");
                assert_eq!(r.count("framebuffer:"), 2, "{lie:?}");
                assert!(!logs.iter().any(|l| l.contains("panicked")), "{lie:?}: a panic was logged");
            }
        }
    })
    .await
    .expect("test timed out");
}

/// Phones that cannot take the parallel path still get exact, compressed captures through one stream: Android 9
/// (its toybox has no `nproc`), a phone with one CPU, a build without `dd`, and a phone whose /data/local/tmp is
/// read-only — the last two try the temp file once, then remember. No temp file stays behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn phones_without_the_parallel_path_use_one_stream() {
    bounded(async {
        let cases: Vec<(&str, SimConfig, bool, usize)> = vec![
            ("Android 9", SimConfig { android_version: "9".into(), sdk: 28, ..SimConfig::default() }, false, 0),
            ("one CPU", SimConfig { cpus: 1, ..SimConfig::default() }, false, 0),
            ("no dd", SimConfig { missing_commands: vec!["dd".into()], ..SimConfig::default() }, false, 1),
            ("read-only tmp", SimConfig::default(), true, 1),
        ];
        for (what, cfg, read_only, tries) in cases {
            let mut r = rig(cfg, &[]).await;
            if read_only {
                r.sim.mount_read_only("/data/local/tmp");
            }
            let shot = r.full_png().await;
            assert!(shot == r.raw_frame().await, "{what}: the capture differs from the raw frame");
            r.screenshot(json!({})).await;
            assert_eq!(r.count(PROBE), 1, "{what}: {:?}", r.sim.commands());
            assert_eq!(r.count_prefix(TO_FILE), tries, "{what}: {:?}", r.sim.commands());
            assert_eq!(r.count_prefix(STREAM), 0, "{what}: {:?}", r.sim.commands());
            assert_eq!(r.count(GZIP_CAPTURE), 2, "{what}: {:?}", r.sim.commands());
            assert_eq!(r.count("framebuffer:"), 0, "{what}: {:?}", r.sim.commands());
            assert_eq!(r.leftovers().await, Vec::<String>::new(), "{what}: temp files left");
        }
    })
    .await
    .expect("test timed out");
}

/// A parallel capture dropped while its streams run (the agent's call cancelled) closes them and still removes
/// the temp file from the phone; the next capture works. Through the library against the real adb server, so the
/// future can be dropped at a known point (the `dd` streams held by the phone).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_parallel_capture_removes_its_temp_file() {
    use xagent_adb_connector::device::adb::AdbBackend;
    use xagent_adb_connector::device::DeviceKey;
    use xagent_adb_connector::pixels::capture::{capture, CapturePath};
    bounded(async {
        let (adb, sim, serial) = setup_with(SimConfig::default()).await.expect("adb");
        let backend = AdbBackend::new(vec![format!("127.0.0.1:{}", adb.port).parse().unwrap()]);
        let key = DeviceKey { server: format!("127.0.0.1:{}", adb.port), serial };
        let t = Duration::from_secs(20);
        // Probed and captured once: the parallel path works here.
        capture(&backend, &key, CapturePath::Auto, 0, t).await.expect("first capture");
        assert_eq!(sim.commands().iter().filter(|c| c.starts_with(STREAM)).count(), 4);
        sim.stall("dd if=/data/local/tmp/xagent-");
        let held = async {
            while sim.stalled().len() < 4 {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        };
        tokio::select! {
            r = capture(&backend, &key, CapturePath::Auto, 0, t) => panic!("the capture ended while its streams were held: {:?}", r.err()),
            _ = held => {}
        }
        // Dropped: the file must go, by the spawned clean-up.
        assert_eq!(leftovers(&sim).await, Vec::<String>::new(), "the temp file stayed after the cancel");
        let hung_up = {
            let deadline = std::time::Instant::now() + Duration::from_secs(10);
            loop {
                let n = sim.hung_up().iter().filter(|c| c.starts_with(STREAM)).count();
                if n == 4 || std::time::Instant::now() > deadline {
                    break n;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        };
        assert_eq!(hung_up, 4, "every stream hung up: {:?}", sim.hung_up());
        sim.release("dd if=/data/local/tmp/xagent-");
        capture(&backend, &key, CapturePath::Auto, 0, t).await.expect("the next capture");
        assert_eq!(leftovers(&sim).await, Vec::<String>::new());
    })
    .await
    .expect("test timed out");
}

/// A lying stream of the parallel path, called directly: `bad_frame` naming the range, never a panic.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_range_that_inflates_to_more_or_less_is_a_bad_frame() {
    use xagent_adb_connector::device::adb::AdbBackend;
    use xagent_adb_connector::device::DeviceKey;
    use xagent_adb_connector::pixels::capture::{capture, gzip_works, CapturePath};
    use xagent_adb_connector::protocol::errors::ErrorCode;
    bounded(async {
        let cfg = SimConfig { screen_width: 360, screen_height: 800, ..SimConfig::default() };
        let (adb, sim, serial) = setup_with(cfg).await.expect("adb");
        let backend = AdbBackend::new(vec![format!("127.0.0.1:{}", adb.port).parse().unwrap()]);
        let key = DeviceKey { server: format!("127.0.0.1:{}", adb.port), serial };
        let t = Duration::from_secs(20);
        assert!(gzip_works(&backend, &key, t).await.unwrap());
        assert_eq!(backend.capture_streams(&key), Some(4));
        for (lie, says) in [(FrameLie::GzipShort, "its range is"), (FrameLie::GzipBomb, "inflates past the")] {
            sim.lie_about_frames(lie);
            let e = capture(&backend, &key, CapturePath::GzipParallel, 0, t).await.err().expect("a lie is refused");
            assert_eq!(e.code, ErrorCode::BadFrame, "{lie:?}: {e:?}");
            assert!(e.message.contains(says), "{lie:?}: {}", e.message);
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
        // `--capture-streams 1`: compressed, one stream, no temp file on the phone.
        let mut r = rig(SimConfig::default(), &[("XAGENT_ADB_CAPTURE_STREAMS", "1")]).await;
        r.screenshot(json!({})).await;
        assert_eq!((r.count(PROBE), r.count(GZIP_CAPTURE), r.count_prefix(TO_FILE)), (1, 1, 0));
    })
    .await
    .expect("test timed out");
}

/// The applets AOSP lists under `title` (a `## ` heading) in one of the kept toybox lists of tests/fixtures/real/.
fn applets(fixture: &str, title: &str) -> Vec<String> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/real").join(fixture);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let start = text.find(title).unwrap_or_else(|| panic!("no section {title}"));
    let rest = &text[start + title.len()..];
    let end = rest.find("\n## ").unwrap_or(rest.len());
    rest[..end].split_whitespace().map(|w| w.trim_matches('*').to_owned()).collect()
}

/// The simulator's `gzip` exists exactly from the release whose toybox has it, per AOSP's list of each release's
/// toybox applets (tests/fixtures/real/, provenance in INDEX.md): absent in 7.0, new in 8.0 (SDK 26).
#[test]
fn the_simulated_gzip_exists_from_the_release_aosp_lists_it_in() {
    let section = |title: &str| applets("toybox-applets-7.0-8.0-9.0-aosp-shell-and-utilities.txt", title);
    assert!(!section("## Android 7.0").contains(&"gzip".to_owned()));
    assert!(section("## Android 8.0").contains(&"gzip".to_owned()));
    assert!(section("## Android 9.0").contains(&"gzip".to_owned()));
    assert_eq!(xagent_adb_connector::sim::commands::GZIP_SINCE_SDK, 26, "Android 8.0 is SDK 26");
}

/// The simulator's `nproc` exists exactly from the release whose toybox has it (Android 10, SDK 29), and `dd` in
/// every release since 8.0 (BSD's, then toybox's), per AOSP's lists (tests/fixtures/real/, provenance in INDEX.md).
#[test]
fn the_simulated_nproc_and_dd_exist_from_the_releases_aosp_lists_them_in() {
    let section = |title: &str| applets("toybox-applets-10-bsd-dd-8.0-9.0-aosp-shell-and-utilities.txt", title);
    let has = |title: &str, tool: &str| section(title).iter().any(|w| w == tool);
    assert!(has("## Android 8.0", "dd") && has("## Android P", "dd"), "BSD dd in 8 and 9");
    assert!(has("## Android 10", "dd") && has("## Android 10", "nproc"), "toybox dd and nproc in 10");
    assert_eq!(xagent_adb_connector::sim::commands::NPROC_SINCE_SDK, 29, "Android 10 is SDK 29");
}

//! `android_screen_record` (issue 34 item 5) through the real adb server and the simulated phone's `screenrecord`:
//! the recording downloads once through its URL as an MP4 whose boxes parse (ftyp first, moov/mvhd with the
//! duration asked for, a video trak, a non-empty mdat); one recording per phone at a time while other calls run;
//! the phone's file is gone after success and after a cancelled call; bad durations and a phone without
//! `screenrecord` are refused with their own errors.

mod common;

use std::time::{Duration, Instant};

use common::get;
use common::rig::Rig;
use serde_json::{json, Value};
use xagent_adb_connector::sim::{SimConfig, SimPhone};

fn bounded<F: std::future::Future>(f: F) -> tokio::time::Timeout<F> {
    tokio::time::timeout(Duration::from_secs(90), f)
}

async fn eventually(within: Duration, what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + within;
    while !cond() {
        assert!(Instant::now() < deadline, "never happened within {within:?}: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The phone's recording files (the connector's own, by name).
fn recordings(sim: &SimPhone) -> Vec<String> {
    sim.files_under("/data/local/tmp").into_iter().filter(|f| f.contains("xagent-rec-")).collect()
}

/// The boxes of one level of an ISO BMFF file: (type, body). Panics on a size that does not fit.
fn boxes(mut b: &[u8]) -> Vec<(String, &[u8])> {
    let mut out = Vec::new();
    while !b.is_empty() {
        assert!(b.len() >= 8, "a box header is cut: {} bytes left", b.len());
        let size = u32::from_be_bytes(b[0..4].try_into().unwrap()) as usize;
        let kind = String::from_utf8_lossy(&b[4..8]).into_owned();
        let (head, size) = if size == 1 {
            (16, u64::from_be_bytes(b[8..16].try_into().unwrap()) as usize)
        } else if size == 0 {
            (8, b.len())
        } else {
            (8, size)
        };
        assert!(size >= head && size <= b.len(), "box {kind} claims {size} bytes of {}", b.len());
        out.push((kind, &b[head..size]));
        b = &b[size..];
    }
    out
}

fn child<'a>(level: &[(String, &'a [u8])], kind: &str) -> &'a [u8] {
    level.iter().find(|(k, _)| k == kind).unwrap_or_else(|| panic!("no {kind} box")).1
}

/// Seconds of the movie (`mvhd` version 0 or 1), and that it is a video movie with samples.
fn check_mp4(mp4: &[u8]) -> f64 {
    let top = boxes(mp4);
    assert_eq!(top[0].0, "ftyp", "ftyp first: {:?}", top.iter().map(|b| &b.0).collect::<Vec<_>>());
    let moov = boxes(child(&top, "moov"));
    let mvhd = child(&moov, "mvhd");
    let (timescale, duration) = if mvhd[0] == 1 {
        (u32::from_be_bytes(mvhd[20..24].try_into().unwrap()), u64::from_be_bytes(mvhd[24..32].try_into().unwrap()))
    } else {
        (
            u32::from_be_bytes(mvhd[12..16].try_into().unwrap()),
            u64::from(u32::from_be_bytes(mvhd[16..20].try_into().unwrap())),
        )
    };
    assert!(timescale > 0, "mvhd timescale 0");
    let trak = boxes(child(&moov, "trak"));
    let mdia = boxes(child(&trak, "mdia"));
    let hdlr = child(&mdia, "hdlr");
    assert_eq!(&hdlr[8..12], b"vide", "a video track");
    let stbl = boxes(child(&boxes(child(&mdia, "minf")), "stbl"));
    let stsz = child(&stbl, "stsz");
    assert!(u32::from_be_bytes(stsz[8..12].try_into().unwrap()) > 0, "the track has samples");
    let stsd = boxes(&child(&stbl, "stsd")[8..]);
    assert_eq!(stsd[0].0, "avc1", "H.264");
    assert!(!child(&top, "mdat").is_empty(), "mdat holds the video");
    duration as f64 / f64::from(timescale)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recording_downloads_once_as_an_mp4_of_the_asked_length_and_leaves_nothing_on_the_phone() {
    bounded(async {
        let mut r = Rig::start().await;
        let t0 = Instant::now();
        let res = r.ok("android_screen_record", json!({"duration_s": 2})).await;
        assert!(t0.elapsed() >= Duration::from_secs(2), "answered after the recording: {:?}", t0.elapsed());
        assert_eq!(res["duration_s"], 2, "{res}");
        let file = &res["files"][0];
        assert_eq!(file["mime_type"], "video/mp4", "{res}");
        let url = file["download_url"].as_str().unwrap().to_owned();
        let got = get(r.srv.addr, &url).await;
        assert_eq!(got.status, 200, "{}", String::from_utf8_lossy(&got.body));
        assert_eq!(got.body.len() as u64, file["byte_size"].as_u64().unwrap());
        let secs = check_mp4(&got.body);
        assert!((secs - 2.0).abs() < 0.01, "the movie lasts the time asked: {secs} s");
        assert_ne!(get(r.srv.addr, &url).await.status, 200, "one-time");
        let sim = r.sim.clone();
        eventually(Duration::from_secs(5), "the phone's recording removed", || recordings(&sim).is_empty()).await;
    })
    .await
    .expect("timed out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_recording_per_phone_others_calls_run_and_a_cancelled_one_is_removed() {
    bounded(async {
        let mut r = Rig::start().await;
        // A stale recording of a connector killed long ago: swept by the next recording.
        assert!(r.sim.write_file_aged("/data/local/tmp/xagent-rec-0badc0ffee00.mp4", b"old", 3600));
        let ch = r.ch.clone();
        let args = json!({"connector_channel_id": ch, "duration_s": 30});
        let (_, rid) =
            r.c.send("tool.invoke", Some(&ch), json!({"tool_id": "android_screen_record", "arguments": args})).await;
        let sim = r.sim.clone();
        eventually(Duration::from_secs(10), "the recording runs on the phone", || {
            let f = recordings(&sim);
            f.len() == 1 && !f[0].contains("0badc0ffee00")
        })
        .await;
        // While it records: a second recording is refused, saying why; other calls run.
        let (code, msg) = r.err("android_screen_record", json!({"duration_s": 1})).await;
        assert_eq!(code, "device_busy", "{msg}");
        assert!(msg.contains("already running"), "{msg}");
        let status = r.ok("android_device_status", json!({})).await;
        assert!(status.is_object(), "{status}");
        // Cancelled by closing the channel: answered at once, and its file goes.
        let t0 = Instant::now();
        r.c.send("channel.close", Some(&ch), json!({})).await;
        loop {
            let v: Value = r.c.recv().await;
            if v["request_id"] == json!(rid) {
                assert_eq!(v["type"], "tool.invoke.ack", "{v}");
                assert!(v["error"]["message"].as_str().unwrap_or("").contains("cancelled"), "{v}");
                break;
            }
        }
        assert!(t0.elapsed() < Duration::from_secs(5), "cancelled at once");
        eventually(Duration::from_secs(5), "the cancelled recording removed", || recordings(&sim).is_empty()).await;
    })
    .await
    .expect("timed out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_durations_and_a_phone_without_screenrecord_are_refused_with_their_reasons() {
    bounded(async {
        let mut r = Rig::start().await;
        for (arg, says) in [
            (json!(0), "must be ≥ 1"),
            (json!(181), "must be ≤ 180"),
            (json!(2.5), "integer"),
            (json!("long"), "integer"),
        ] {
            let (code, msg) = r.err("android_screen_record", json!({"duration_s": arg})).await;
            assert_eq!(code, "invalid_arguments", "{arg}: {msg}");
            assert!(msg.contains("duration_s") && msg.contains(says), "{arg}: {msg}");
        }
        let (code, msg) = r.err("android_screen_record", json!({})).await;
        assert_eq!(code, "invalid_arguments", "{msg}");
        assert!(msg.contains("duration_s"), "{msg}");
        assert!(r.sim.commands().iter().all(|c| !c.contains("screenrecord")), "nothing reached the phone");

        let cfg = SimConfig { missing_commands: vec!["screenrecord".into()], ..SimConfig::default() };
        let mut old = Rig::with(cfg, &[], None).await;
        let (code, msg) = old.err("android_screen_record", json!({"duration_s": 1})).await;
        assert_eq!(code, "tool_invoke_failed", "{msg}");
        assert!(msg.contains("no screenrecord"), "{msg}");
        let sim = old.sim.clone();
        eventually(Duration::from_secs(5), "nothing left behind", || recordings(&sim).is_empty()).await;
        // The phone's own refusal reaches the agent in its words.
        // (The recording's command line begins with the sweep of stale recordings.)
        old.sim.answer(
            "find /data/local/tmp -maxdepth 1 -name 'xagent-rec-",
            "",
            "Time limit 100s outside acceptable range [1,60]",
            2,
        );
        let (code, msg) = old.err("android_screen_record", json!({"duration_s": 100})).await;
        assert_eq!(code, "tool_invoke_failed", "{msg}");
        assert!(msg.contains("outside acceptable range [1,60]") && msg.contains("exit 2"), "{msg}");
    })
    .await
    .expect("timed out");
}

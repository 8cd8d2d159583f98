//! The operator's hands on the wall, over real HTTP against the real binary, a real adb server and simulated
//! phones: the live view (`live.mjpeg`: a stream of changed frames while the screen changes, a still screen encoded
//! once, downscaling, keep-alive, viewer caps, a viewer that stops reading dropped, the capture loop ending with its
//! last viewer), takeover (the agent
//! refused with `operator_control` and nothing run), operator input landing at the right device point (also on a
//! rotated phone), return, logout and the idle timeout, authentication and CSRF, and typed text never in the audit
//! or the logs. Frame rates are the benchmark's (`bench/run.sh live`), not these tests'.

mod common;
mod wall_support;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use common::*;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use wall_support::*;
use xagent_adb_connector::sim::{Fault, InputEvent};

fn bounded<F: std::future::Future>(f: F) -> tokio::time::Timeout<F> {
    tokio::time::timeout(Duration::from_secs(150), f)
}

/// One part of a `multipart/x-mixed-replace` stream.
struct Part {
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    at: Instant,
}

impl Part {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

/// A live-view client: the response head, then parts as they arrive (raw HTTP/1.1, chunked transfer decoded).
struct LiveStream {
    sock: TcpStream,
    status: u16,
    head: String,
    raw: Vec<u8>,
    /// Decoded body bytes not yet consumed.
    body: Vec<u8>,
    chunked: bool,
}

impl LiveStream {
    async fn open(addr: SocketAddr, path: &str, headers: &[(&str, &str)]) -> LiveStream {
        let mut sock = TcpStream::connect(addr).await.unwrap();
        let mut req = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\n");
        for (k, v) in headers {
            req.push_str(&format!("{k}: {v}\r\n"));
        }
        req.push_str("\r\n");
        sock.write_all(req.as_bytes()).await.unwrap();
        let mut raw = Vec::new();
        let split = loop {
            if let Some(p) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
                break p;
            }
            let mut buf = [0u8; 4096];
            let n = tokio::time::timeout(T, sock.read(&mut buf)).await.expect("response head").unwrap();
            assert!(n > 0, "connection closed before the response head");
            raw.extend_from_slice(&buf[..n]);
        };
        let head = String::from_utf8_lossy(&raw[..split]).to_string();
        let status = head.split(' ').nth(1).unwrap().parse().unwrap();
        let chunked = head.to_ascii_lowercase().contains("transfer-encoding: chunked");
        let rest = raw[split + 4..].to_vec();
        LiveStream { sock, status, head, raw: rest, body: Vec::new(), chunked }
    }

    fn header(&self, name: &str) -> Option<String> {
        self.head.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim().eq_ignore_ascii_case(name).then(|| v.trim().to_owned())
        })
    }

    /// Moves complete chunks from `raw` to `body`.
    fn dechunk(&mut self) {
        if !self.chunked {
            self.body.append(&mut self.raw);
            return;
        }
        loop {
            let Some(nl) = self.raw.windows(2).position(|w| w == b"\r\n") else { return };
            let n = usize::from_str_radix(std::str::from_utf8(&self.raw[..nl]).unwrap().trim(), 16).unwrap();
            if self.raw.len() < nl + 2 + n + 2 {
                return;
            }
            self.body.extend_from_slice(&self.raw[nl + 2..nl + 2 + n]);
            self.raw.drain(..nl + 2 + n + 2);
        }
    }

    /// The next part, or `None` when the stream ended or `within` passed.
    async fn next(&mut self, within: Duration) -> Option<Part> {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            self.dechunk();
            if let Some(p) = self.parse() {
                return Some(p);
            }
            let mut buf = [0u8; 65536];
            let n = match tokio::time::timeout_at(deadline, self.sock.read(&mut buf)).await {
                Ok(Ok(n)) if n > 0 => n,
                _ => return None,
            };
            self.raw.extend_from_slice(&buf[..n]);
        }
    }

    fn parse(&mut self) -> Option<Part> {
        let b = &self.body;
        let start = b.windows(2).position(|w| w == b"--")?;
        let hend = start + b[start..].windows(4).position(|w| w == b"\r\n\r\n")?;
        let head = String::from_utf8_lossy(&b[start..hend]).to_string();
        let mut lines = head.split("\r\n");
        assert_eq!(lines.next(), Some("--xagent-live-frame"), "boundary line");
        let headers: Vec<(String, String)> =
            lines.filter_map(|l| l.split_once(':').map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))).collect();
        let len: usize = headers.iter().find(|(k, _)| k.eq_ignore_ascii_case("content-length"))?.1.parse().unwrap();
        let body_start = hend + 4;
        if b.len() < body_start + len + 2 {
            return None;
        }
        let body = b[body_start..body_start + len].to_vec();
        assert_eq!(&b[body_start + len..body_start + len + 2], b"\r\n");
        self.body.drain(..body_start + len + 2);
        Some(Part { headers, body, at: Instant::now() })
    }
}

/// `xagent_live_frames_total` from `/metrics`: (encoded, unchanged).
async fn live_frames(addr: SocketAddr) -> (u64, u64) {
    let (k, v) = bearer();
    let m = http(addr, "GET", "/metrics", &[(k, &v)], b"").await;
    assert_eq!(m.status, 200);
    let text = m.text();
    let count = |result: &str| -> u64 {
        let name = format!("xagent_live_frames_total{{result=\"{result}\"}} ");
        let line = text.lines().find_map(|l| l.strip_prefix(name.as_str()));
        line.unwrap_or_else(|| panic!("{name}missing from /metrics")).trim().parse().expect("a count")
    };
    (count("encoded"), count("unchanged"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_view_streams_changed_frames_downscaled_and_ends_with_its_viewer() {
    bounded(async {
        // The default configuration (phone helper on). It once ran with the helper off: the agents-first check below
        // then saw `running_calls` 0 now and then, because the detail view read the phone's screen size itself —
        // the helper's `screen` (5 s deadline on a phone answering in 4 s), then `wm size` — and answered after 9 s
        // with a document made before the call began. The view now waits at most 1.5 s for that read.
        let r = rig(&[(720, 1600)], true).await;
        let sim = &r.sims[0];
        r.wait_all_online().await;
        let id = r.id_of(&sim.serial()).await;
        let addr = r.srv.addr;
        let path = format!("/api/v1/devices/{id}/live.mjpeg");
        let (k, v) = bearer();

        // No credentials: 401, no stream.
        let denied = http(addr, "GET", &path, &[], b"").await;
        assert_eq!(denied.status, 401, "{}", denied.text());

        // A still screen: the first frame, then only keep-alives (the same picture again after a few seconds).
        let n0 = captures(sim);
        let mut still = LiveStream::open(addr, &path, &[(k, &v)]).await;
        assert_eq!(still.status, 200, "{}", still.head);
        assert_eq!(
            still.header("content-type").as_deref(),
            Some("multipart/x-mixed-replace; boundary=xagent-live-frame")
        );
        assert_eq!(still.header("cache-control").as_deref(), Some("no-store"));
        let first = still.next(Duration::from_secs(20)).await.expect("a first frame");
        assert_eq!(first.header("content-type"), Some("image/jpeg"));
        let img = image::load_from_memory(&first.body).expect("a JPEG");
        assert!(img.width().max(img.height()) <= 720, "downscaled: {}x{}", img.width(), img.height());
        assert_eq!(first.header("x-frame-size"), Some(format!("{}x{}", img.width(), img.height()).as_str()));
        assert!(img.height() > img.width(), "a portrait phone gives a portrait picture");
        let second = still.next(Duration::from_secs(12)).await.expect("a keep-alive within the interval");
        let gap = second.at.duration_since(first.at);
        assert!(gap >= Duration::from_secs(3), "a still screen sends no new frames, only keep-alives: {gap:?}");
        assert_eq!(second.body, first.body, "the keep-alive repeats the last picture");
        // The still screen was captured at the live rate all along, but encoded once: every later capture had the
        // first one's pixels (signature), so no JPEG was made for it (a watched idle phone must not cost the box
        // an encode per frame).
        let (encoded, unchanged) = live_frames(addr).await;
        let n = captures(sim) - n0;
        assert!(
            n >= 3 && unchanged >= 2,
            "the still screen was captured again and again: {n} captures, {unchanged} unchanged"
        );
        assert!(
            encoded <= 1,
            "a still screen is encoded once, not per capture: {encoded} encoded, {unchanged} unchanged"
        );
        drop(still);

        // A changing screen: a stream of new pictures, each different from the last. The target is ≥ 4 frames/s on
        // this 720x1600 phone, asserted when this test runs in a release build (`cargo test --release --test
        // wall_control`: the connector *and* the simulated phone optimised); an unoptimised debug build on a loaded
        // test machine manages about one a second, so there it must only stream steadily — a stream of keep-alives
        // (one repeated picture per 5 s) fails either way.
        sim.set_ticking_screen(Some(Duration::from_millis(100)));
        let mut live = LiveStream::open(addr, &path, &[(k, &v)]).await;
        assert_eq!(live.status, 200);
        live.next(Duration::from_secs(20)).await.expect("a first frame");
        let window = Duration::from_secs(8);
        let started = Instant::now();
        let mut frames: Vec<Vec<u8>> = Vec::new();
        while started.elapsed() < window {
            match live.next(window.saturating_sub(started.elapsed())).await {
                Some(p) => frames.push(p.body),
                None => break,
            }
        }
        let fps = frames.len() as f64 / started.elapsed().as_secs_f64();
        eprintln!("live view: {} frames in {:?} = {fps:.1} frames/s", frames.len(), started.elapsed());
        // Every part a new picture (no keep-alive repeats while the screen changes), and a steady stream of them.
        // The frame rate itself (≥ 4/s on this 720x1600 phone) is the benchmark's to measure (`bench/run.sh live`,
        // BENCHMARKS.md "Issue 20: live view"), not a timed test's on a loaded machine.
        assert!(frames.len() >= 3, "a steady stream of changed frames while the screen changes: {fps:.1}/s");
        assert!(frames.windows(2).all(|w| w[0] != w[1]), "only changed pictures are sent");
        let distinct: std::collections::HashSet<&Vec<u8>> = frames.iter().collect();
        assert_eq!(distinct.len(), frames.len(), "each frame a picture not seen before (the counter advances)");
        let (encoded_now, _) = live_frames(addr).await;
        assert!(encoded_now >= encoded + frames.len() as u64, "each changed frame was encoded");

        // The capture loop is shared with the thumbnails: a thumbnail is one of its frames, not a new capture.
        // Counted against the loop's own work, not the clock (the loop keeps capturing meanwhile, and on a loaded
        // machine more than once during one request): each loop capture is published, and counted in
        // `xagent_live_frames_total`, in the loop's next turn, so over any window its captures exceed its published
        // frames by at most 2 (one being captured, one being published). Five thumbnails captured for themselves
        // would be five more.
        let (e0, u0) = live_frames(addr).await;
        let before = captures(sim);
        for _ in 0..5 {
            let thumb = http(addr, "GET", &format!("/api/v1/devices/{id}/screen.jpg"), &[(k, &v)], b"").await;
            assert_eq!(thumb.status, 200);
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let taken = captures(sim) - before;
        let (e1, u1) = live_frames(addr).await;
        let published = (e1 + u1) - (e0 + u0);
        assert!(
            taken as u64 <= published + 2,
            "the thumbnails reuse the live loop's frames: {taken} captures for {published} published frames"
        );

        // Agents first: while an agent's screenshot runs, the live view captures nothing (viewers keep the last
        // picture). The sim's latency holds the agent's call in its `wm size`.
        let mut agent = ws(addr, Some(KEY)).await;
        agent.hello(None).await;
        let ch = agent.bind(Some(&sim.serial())).await;
        sim.set_fault(Fault::Latency(Duration::from_secs(4)));
        let (_, rid) = agent
            .send(
                "tool.invoke",
                Some(&ch),
                json!({"tool_id": "android_screenshot", "arguments": {"connector_channel_id": ch}}),
            )
            .await;
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let d = http(addr, "GET", &format!("/api/v1/devices/{id}"), &[(k, &v)], b"").await.json();
            if d["running_calls"] == 1 {
                break;
            }
            assert!(Instant::now() < deadline, "the agent's call never showed as running: {d:#}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        tokio::time::sleep(Duration::from_millis(300)).await; // a live capture already in flight ends
        let n = captures(sim);
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert_eq!(captures(sim), n, "the live view captured while the agent's screenshot ran");
        sim.set_fault(Fault::None);
        loop {
            let p = agent.recv().await;
            if p["request_id"] == json!(rid) {
                break; // the agent's call ended (its own result is not this test's concern)
            }
        }

        // The viewer goes away: the capture loop stops (no task left capturing the phone).
        drop(live);
        tokio::time::sleep(Duration::from_secs(3)).await;
        let after_close = captures(sim);
        tokio::time::sleep(Duration::from_secs(3)).await;
        assert_eq!(captures(sim), after_close, "no capture after the last viewer left");
        sim.set_ticking_screen(None);
    })
    .await
    .expect("test timed out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_viewers_are_capped_per_phone() {
    bounded(async {
        let r = rig(&[(720, 1280)], true).await;
        r.wait_all_online().await;
        let id = r.id_of(&r.sims[0].serial()).await;
        let path = format!("/api/v1/devices/{id}/live.mjpeg");
        let (cookie, _) = r.login().await;
        let mut open = Vec::new();
        for i in 0..4 {
            let mut s = LiveStream::open(r.srv.addr, &path, &[("Cookie", &cookie)]).await;
            assert_eq!(s.status, 200, "viewer {i}: {}", s.head);
            // Every viewer gets a picture at once, also one joining the running loop of a still screen (before the
            // loop's keep-alive, 5 s). The first viewer waits for the loop's first capture: on a loaded box (load
            // 10+) that alone took over 4 s once, so it is given the first-frame bound of the other live tests.
            let within = if i == 0 { Duration::from_secs(20) } else { Duration::from_secs(4) };
            let first = s.next(within).await;
            assert!(first.is_some_and(|p| !p.body.is_empty()), "viewer {i} got no first frame");
            open.push(s);
        }
        let fifth = http(r.srv.addr, "GET", &path, &[("Cookie", &cookie)], b"").await;
        assert_eq!(fifth.status, 503, "{}", fifth.text());
        assert_eq!(error_code(&fifth.json()), "too_many_viewers");
        assert!(fifth.header("retry-after").is_some());
        // One leaves: its place frees once the server sees the closed socket.
        drop(open.pop());
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            let s = LiveStream::open(r.srv.addr, &path, &[("Cookie", &cookie)]).await;
            if s.status == 200 {
                break;
            }
            assert!(Instant::now() < deadline, "the closed viewer's place never freed");
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
        // Shutdown ends the open streams: the connector exits well within its drain deadline, and each client
        // sees its stream end.
        let mut r = r;
        let started = Instant::now();
        let status = r.srv.term(Duration::from_secs(20));
        assert!(status.is_some_and(|s| s.success()), "clean exit with live streams open: {status:?}");
        eprintln!("shutdown with {} live streams open took {:?}", open.len(), started.elapsed());
        for s in &mut open {
            while s.next(Duration::from_secs(10)).await.is_some() {}
        }
    })
    .await
    .expect("test timed out");
}

/// A live-view client that reads the first 300 bytes and then stops reading, with a small receive buffer so the
/// kernel buffers between it and the connector fill within a few frames (issue 36: such clients held every viewer
/// place for the 9 minutes tested). Returns the socket (still open) and the status line's code.
async fn stalled_viewer(addr: SocketAddr, path: &str, cookie: &str) -> (TcpStream, u16) {
    let s = tokio::net::TcpSocket::new_v4().unwrap();
    s.set_recv_buffer_size(4096).unwrap();
    let mut sock = s.connect(addr).await.unwrap();
    let req = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nCookie: {cookie}\r\n\r\n");
    sock.write_all(req.as_bytes()).await.unwrap();
    let mut got = Vec::new();
    while got.len() < 300 && !got.windows(4).any(|w| w == b"\r\n\r\n") {
        let mut buf = vec![0u8; 300 - got.len()];
        let n = tokio::time::timeout(T, sock.read(&mut buf)).await.expect("response head").unwrap();
        assert!(n > 0, "closed before the response head");
        got.extend_from_slice(&buf[..n]);
    }
    let head = String::from_utf8_lossy(&got);
    let status = head.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    (sock, status)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_viewer_that_stops_reading_is_dropped_and_its_place_freed() {
    bounded(async {
        // A still screen (keep-alives every 5 s only: the slowest way to fill a buffer) and a 2 s deadline.
        let r = rig_with(&[(720, 1280)], true, &["--wall-live-write-timeout", "2s"]).await;
        r.wait_all_online().await;
        let id = r.id_of(&r.sims[0].serial()).await;
        let path = format!("/api/v1/devices/{id}/live.mjpeg");
        let (cookie, _) = r.login().await;
        let mut stalled = Vec::new();
        for i in 0..4 {
            let (sock, status) = stalled_viewer(r.srv.addr, &path, &cookie).await;
            assert_eq!(status, 200, "stalled viewer {i}");
            stalled.push(sock);
        }
        let started = Instant::now();
        let fifth = http(r.srv.addr, "GET", &path, &[("Cookie", &cookie)], b"").await;
        assert_eq!(fifth.status, 503, "the four stalled viewers hold every place of the phone: {}", fifth.text());
        assert_eq!(error_code(&fifth.json()), "too_many_viewers");
        // Each stalled viewer is dropped once its connection accepted nothing for 2 s (after its buffers filled,
        // at most a window plus 16 KiB): all four places come back, taken here by clients that do read, each of
        // which gets a picture. Before the deadline existed they stayed held for minutes.
        let mut readers = Vec::new();
        while readers.len() < 4 {
            let mut s = LiveStream::open(r.srv.addr, &path, &[("Cookie", &cookie)]).await;
            if s.status == 200 {
                assert!(s.next(Duration::from_secs(10)).await.is_some_and(|p| !p.body.is_empty()), "a first frame");
                readers.push(s);
                continue;
            }
            assert_eq!(s.status, 503, "{}", s.head);
            assert!(
                started.elapsed() < Duration::from_secs(45),
                "{} of 4 places freed {:?} after four viewers stopped reading",
                readers.len(),
                started.elapsed()
            );
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        eprintln!("four stalled viewers' places freed within {:?}", started.elapsed());
        // The connector closed the stalled connections too (not only the places): each client, reading again,
        // finds what was buffered and then the end.
        for (i, sock) in stalled.iter_mut().enumerate() {
            let mut buf = vec![0u8; 65536];
            let mut total = 0usize;
            loop {
                match tokio::time::timeout(Duration::from_secs(10), sock.read(&mut buf)).await {
                    Ok(Ok(0)) | Ok(Err(_)) => break,
                    Ok(Ok(n)) => total += n,
                    Err(_) => panic!("stalled viewer {i}: the connection is still open after {total} bytes"),
                }
            }
            assert!(total < 1 << 20, "stalled viewer {i}: {total} bytes were buffered for it");
        }
        // The readers keep streaming: the deadline counts a stall, not the stream's age.
        for s in &mut readers {
            assert!(s.next(Duration::from_secs(12)).await.is_some(), "a reading viewer got its keep-alive");
        }
    })
    .await
    .expect("test timed out");
}

async fn post(addr: SocketAddr, path: &str, headers: &[(&str, &str)], body: Value) -> HttpResponse {
    let mut h = headers.to_vec();
    h.push(("Content-Type", "application/json"));
    http(addr, "POST", path, &h, body.to_string().as_bytes()).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn takeover_refuses_the_agent_and_the_operators_input_lands() {
    bounded(async {
        let r = rig(&[(720, 1600)], true).await;
        let sim = &r.sims[0];
        let serial = sim.serial();
        r.wait_all_online().await;
        let id = r.id_of(&serial).await;
        let addr = r.srv.addr;
        let url = |a: &str| format!("/api/v1/devices/{id}/{a}");

        let mut agent = ws(addr, Some(KEY)).await;
        agent.hello(None).await;
        let ch = agent.bind(Some(&serial)).await;
        let (cookie, csrf) = r.login().await;

        // Without credentials 401; a session without (or with a wrong) CSRF token 403; nothing is taken over.
        for a in ["takeover", "return", "input"] {
            let resp = post(addr, &url(a), &[], json!({"action": "tap", "x": 1, "y": 1})).await;
            assert_eq!(resp.status, 401, "{a}: {}", resp.text());
            let resp = post(addr, &url(a), &[("Cookie", &cookie)], json!({"action": "tap", "x": 1, "y": 1})).await;
            assert_eq!(resp.status, 403, "{a}: {}", resp.text());
            let resp = post(addr, &url(a), &[("Cookie", &cookie), ("X-CSRF-Token", "wrong")], json!({})).await;
            assert_eq!(resp.status, 403, "{a}: {}", resp.text());
        }
        // Input before a takeover: refused, nothing ran.
        sim.clear_events();
        let session = [("Cookie", cookie.as_str()), ("X-CSRF-Token", csrf.as_str())];
        let resp = post(addr, &url("input"), &session, json!({"action": "tap", "x": 10, "y": 10})).await;
        assert_eq!(resp.status, 403, "{}", resp.text());
        assert!(sim.events().is_empty());

        // Take over: the agent's calls fail with operator_control and nothing reaches the phone.
        let t = post(addr, &url("takeover"), &session, json!({})).await;
        assert_eq!(t.status, 200, "{}", t.text());
        assert_eq!(t.json()["takeover"]["by"], "api-key", "a login with the system key is the operator api-key");
        assert_eq!(t.json()["takeover"]["mine"], true);
        let commands_before = sim.commands().len();
        let a = agent.tap(&ch, 100, 100).await;
        assert_eq!(error_code(&a), "operator_control", "{a}");
        assert!(a["error"]["message"].as_str().unwrap().contains("an operator is using this phone"), "{a}");
        let a = agent.invoke(&ch, "android_key", json!({"key": "HOME"})).await;
        assert_eq!(error_code(&a), "operator_control", "{a}");
        assert!(sim.events().is_empty(), "the agent touched the phone: {:?}", sim.events());
        assert_eq!(sim.commands().len(), commands_before, "no command ran for the agent: {:?}", sim.commands());
        // Issue 35 item 5: the refusal says until when (the hold's idle deadline, 5 min by default, as a time) ...
        let msg = a["error"]["message"].as_str().unwrap();
        let until = a["error"]["details"]["held_until_ms"].as_u64().expect("held_until_ms");
        let expires = t.json()["takeover"]["expires_ms"].as_u64().expect("the takeover's expires_ms");
        assert!(until >= expires && until < expires + 10_000, "held until {until}, takeover expires {expires}");
        let when = a["error"]["details"]["held_until"].as_str().unwrap();
        assert!(when.ends_with('Z') && msg.contains(&format!("The hold ends at {when}")), "{a}");
        // ... and the agent may look while the person acts (inputs stay refused, above).
        let d = agent.invoke(&ch, "android_ui_dump", json!({})).await;
        assert!(d.get("error").is_none() && d["payload"]["result"]["count"].as_u64() > Some(0), "{d}");
        assert!(sim.events().is_empty(), "a read sent input: {:?}", sim.events());

        // Another operator (the API key) can neither take over nor type.
        let (k, v) = bearer();
        let other = post(addr, &url("takeover"), &[(k, &v)], json!({})).await;
        assert_eq!(other.status, 409, "{}", other.text());
        assert_eq!(error_code(&other.json()), "operator_control");
        let other = post(addr, &url("input"), &[(k, &v)], json!({"action": "key", "key": "HOME"})).await;
        assert_eq!(other.status, 409);

        // The holder's input lands where it says, validated.
        let tap = post(addr, &url("input"), &session, json!({"action": "tap", "x": 360, "y": 1200})).await;
        assert_eq!(tap.status, 200, "{}", tap.text());
        let swipe = post(
            addr,
            &url("input"),
            &session,
            json!({"action": "swipe", "x1": 300, "y1": 1400, "x2": 300, "y2": 400, "duration_ms": 200}),
        )
        .await;
        assert_eq!(swipe.status, 200, "{}", swipe.text());
        let key = post(addr, &url("input"), &session, json!({"action": "key", "key": "BACK"})).await;
        assert_eq!(key.status, 200, "{}", key.text());
        let secret = "hunter2 opens";
        let text = post(addr, &url("input"), &session, json!({"action": "text", "text": secret})).await;
        assert_eq!(text.status, 200, "{}", text.text());
        assert!(!text.text().contains("hunter2"));
        for bad in [
            json!({"action": "tap", "x": 720, "y": 10}),
            json!({"action": "tap", "x": -1, "y": 10}),
            json!({"action": "key", "key": "HOME; reboot"}),
            json!({"action": "shell", "cmd": "reboot"}),
            json!({"action": "text", "text": "x".repeat(1001)}),
        ] {
            let resp = post(addr, &url("input"), &session, bad.clone()).await;
            assert_eq!(resp.status, 400, "{bad}: {}", resp.text());
        }
        let ev = sim.events();
        assert_eq!(ev.first(), Some(&InputEvent::Tap { x: 360, y: 1200 }), "{ev:?}");
        assert!(ev.contains(&InputEvent::Swipe { x1: 300, y1: 1400, x2: 300, y2: 400, duration_ms: 200 }), "{ev:?}");
        assert!(ev.contains(&InputEvent::Key("KEYCODE_BACK".into())), "{ev:?}");
        assert_eq!(ev.len(), 4, "the invalid inputs ran nothing: {ev:?}");

        // A rotated phone: (1500, 100) is on screen in landscape, (100, 1500) is not.
        let (a2, s2) = (r.adb.clone(), serial.clone());
        let out =
            common::adb::blocking(move || a2.adb(&["-s", &s2, "shell", "settings put system user_rotation 1"])).await;
        assert_eq!(out.status, Some(0), "{}", out.stderr);
        sim.clear_events();
        let tap = post(addr, &url("input"), &session, json!({"action": "tap", "x": 1500, "y": 100})).await;
        assert_eq!(tap.status, 200, "{}", tap.text());
        let off = post(addr, &url("input"), &session, json!({"action": "tap", "x": 100, "y": 1500})).await;
        assert_eq!(off.status, 400, "{}", off.text());
        assert_eq!(sim.events(), vec![InputEvent::Tap { x: 1500, y: 100 }]);

        // Every operator action is in the detail view's recent actions; the typed text nowhere.
        let detail = http(addr, "GET", &format!("/api/v1/devices/{id}"), &[("Cookie", &cookie)], b"").await.json();
        assert_eq!(detail["takeover"]["mine"], true, "{detail:#}");
        assert_eq!(detail["display"], json!({"width": 720, "height": 1600}));
        let tools: Vec<&str> =
            detail["recent_actions"].as_array().unwrap().iter().filter_map(|a| a["tool_id"].as_str()).collect();
        assert!(tools.contains(&"operator.takeover") && tools.contains(&"operator.input"), "{tools:?}");
        let typed = detail["recent_actions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["arguments"]["action"] == "text")
            .expect("the text input is listed");
        assert_eq!(typed["arguments"]["chars"], secret.chars().count());
        assert!(!detail.to_string().contains("hunter2"));

        // Return: the agent acts again.
        let ret = post(addr, &url("return"), &session, json!({})).await;
        assert_eq!(ret.status, 200, "{}", ret.text());
        assert_eq!(ret.json()["returned"], true);
        let a = agent.tap(&ch, 100, 100).await;
        assert!(a.get("error").is_none() && a["payload"]["status"] != "failed", "{a}");

        // Logout ends a takeover too.
        assert_eq!(post(addr, &url("takeover"), &session, json!({})).await.status, 200);
        let out = http(addr, "DELETE", "/api/v1/session", &session, b"").await;
        assert_eq!(out.status, 200, "{}", out.text());
        let a = agent.tap(&ch, 100, 100).await;
        assert!(a.get("error").is_none(), "the logout returned the phone: {a}");
        let detail = http(addr, "GET", &format!("/api/v1/devices/{id}"), &[(k, &v)], b"").await.json();
        let returns: Vec<&Value> =
            detail["recent_actions"].as_array().unwrap().iter().filter(|a| a["tool_id"] == "operator.return").collect();
        assert_eq!(returns.len(), 2, "{detail:#}");
        assert!(returns.iter().any(|a| a["arguments"]["reason"] == "logout"));

        // The audit log (on disk) and the logs never hold the typed text.
        let logs = r.srv.logs().join("\n");
        assert!(!logs.contains("hunter2"), "typed text in the logs");
        for f in ["connector.db", "connector.db-wal"] {
            let db = std::fs::read(r.srv.data_dir.join(f)).unwrap_or_default();
            assert!(!db.windows(7).any(|w| w == b"hunter2"), "typed text in {f}");
        }
    })
    .await
    .expect("test timed out");
}

/// Issue 36 item 2: a takeover stops what the agent sent before it. Two 9 s swipes (the second queued behind the
/// first for the phone's order slot) and a wait for a text are on their way when the operator takes over and types:
/// the operator's text lands at once (not after the agent's 18 s of swipes), the queued swipe never reaches the
/// phone, the running one is hung up, and every one of the three answers `operator_control` saying whether its
/// input may have been sent — the wait never answers with the text the operator typed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_takeover_stops_the_calls_the_agent_already_sent() {
    bounded(async {
        let r = rig(&[(720, 1600)], true).await;
        let sim = &r.sims[0];
        let serial = sim.serial();
        r.wait_all_online().await;
        let id = r.id_of(&serial).await;
        let addr = r.srv.addr;
        let url = |a: &str| format!("/api/v1/devices/{id}/{a}");
        let mut agent = ws(addr, Some(KEY)).await;
        agent.hello(None).await;
        let ch = agent.bind(Some(&serial)).await;
        let (cookie, csrf) = r.login().await;
        let session = [("Cookie", cookie.as_str()), ("X-CSRF-Token", csrf.as_str())];
        sim.clear_events();

        let invoke = |tool: &'static str, mut args: Value| {
            args["connector_channel_id"] = json!(ch);
            (tool, args)
        };
        let calls = [
            invoke(
                "android_swipe",
                json!({"x1": 300, "y1": 1400, "x2": 300, "y2": 400, "duration_ms": 9000, "settle": false}),
            ),
            invoke(
                "android_swipe",
                json!({"x1": 100, "y1": 1400, "x2": 100, "y2": 400, "duration_ms": 9000, "settle": false}),
            ),
            invoke("android_ui_wait", json!({"text": "hunter2", "timeout_ms": 30000})),
        ];
        let mut rids = Vec::new();
        for (tool, args) in calls {
            let (_, rid) = agent.send("tool.invoke", Some(&ch), json!({"tool_id": tool, "arguments": args})).await;
            rids.push(rid);
        }
        // Whichever swipe reaches the phone first is the running one, the other the queued one: two calls sent back
        // to back can take the phone's order slot in either order today (see the notes: "pipelined side effects
        // may be reordered before the order slot"), which is not what this test is about.
        let swipes = [
            InputEvent::Swipe { x1: 300, y1: 1400, x2: 300, y2: 400, duration_ms: 9000 },
            InputEvent::Swipe { x1: 100, y1: 1400, x2: 100, y2: 400, duration_ms: 9000 },
        ];
        let deadline = Instant::now() + Duration::from_secs(10);
        let order = loop {
            if let Some(i) = sim.events().iter().find_map(|e| swipes.iter().position(|s| s == e)) {
                break i;
            }
            assert!(Instant::now() < deadline, "no swipe reached the phone: {:?}", sim.events());
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        let first = swipes[order].clone();

        // The operator takes over mid-swipe and types at once.
        let started = Instant::now();
        let t = post(addr, &url("takeover"), &session, json!({})).await;
        assert_eq!(t.status, 200, "{}", t.text());
        let text = post(addr, &url("input"), &session, json!({"action": "text", "text": "hunter2 opens"})).await;
        assert_eq!(text.status, 200, "{}", text.text());
        let took = started.elapsed();
        eprintln!("the operator's first input after the takeover took {took:?}");
        assert!(took < Duration::from_secs(5), "the operator's input waited for the agent's swipes: {took:?}");

        let mut acks = std::collections::HashMap::new();
        while acks.len() < rids.len() {
            let v = agent.recv().await;
            if let Some(rid) = v["request_id"].as_str().filter(|r| rids.iter().any(|x| x == r)) {
                acks.insert(rid.to_owned(), v);
            }
        }
        let (running, queued, wait) = (&acks[&rids[order]], &acks[&rids[1 - order]], &acks[&rids[2]]);
        for a in [running, queued, wait] {
            assert_eq!(error_code(a), "operator_control", "{a}");
            assert!(!a.to_string().contains("hunter2"), "the operator's text reached an agent's answer: {a}");
        }
        assert_eq!(running["error"]["details"]["input_may_have_been_sent"], true, "{running}");
        assert!(running["error"]["message"].as_str().unwrap().contains("may have taken effect"), "{running}");
        assert_eq!(queued["error"]["details"]["input_may_have_been_sent"], false, "{queued}");
        assert!(queued["error"]["message"].as_str().unwrap().contains("nothing was sent"), "{queued}");
        assert_eq!(wait["error"]["details"]["input_may_have_been_sent"], false, "{wait}");
        // The queued swipe never reached the phone: the phone saw the running swipe, then the operator.
        let ev = sim.events();
        assert_eq!(ev, vec![first, InputEvent::Text("hunter2 opens".into())], "{ev:?}");
        assert_eq!(sim.fields().0, "hunter2 opens", "the operator's text was typed");
    })
    .await
    .expect("test timed out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_takeover_ends_by_itself() {
    bounded(async {
        let r = rig_with(&[(720, 1280)], true, &["--wall-takeover-idle", "10s"]).await;
        let serial = r.sims[0].serial();
        r.wait_all_online().await;
        let id = r.id_of(&serial).await;
        let mut agent = ws(r.srv.addr, Some(KEY)).await;
        agent.hello(None).await;
        let ch = agent.bind(Some(&serial)).await;
        let (k, v) = bearer();
        let t = post(r.srv.addr, &format!("/api/v1/devices/{id}/takeover"), &[(k, &v)], json!({})).await;
        assert_eq!(t.status, 200, "{}", t.text());
        assert_eq!(t.json()["takeover"]["by"], "api-key");
        assert_eq!(error_code(&agent.tap(&ch, 10, 10).await), "operator_control");
        // No operator input for the idle timeout: the phone goes back to its agent by itself.
        tokio::time::sleep(Duration::from_secs(11)).await;
        let a = agent.tap(&ch, 10, 10).await;
        assert!(a.get("error").is_none(), "the idle takeover ended: {a}");
        let d = http(r.srv.addr, "GET", &format!("/api/v1/devices/{id}"), &[(k, &v)], b"").await.json();
        assert!(d["takeover"].is_null(), "{d:#}");
        let ret = d["recent_actions"].as_array().unwrap().iter().find(|a| a["tool_id"] == "operator.return").cloned();
        assert_eq!(ret.expect("the return is audited")["arguments"]["reason"], "idle");
    })
    .await
    .expect("test timed out");
}

/// A phone an operator holds is not an agent's to take: a pool binding passes it over (and says so when nothing else
/// is left), a binding that names it is refused with `operator_control`, nothing is bound either way; once the
/// operator returns it, it is in the pool again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pool_binding_never_lands_on_a_phone_an_operator_holds() {
    bounded(async {
        let r = rig(&[(720, 1600), (720, 1280)], true).await;
        r.wait_all_online().await;
        let (k, v) = bearer();
        let ids = [r.id_of(&r.sims[0].serial()).await, r.id_of(&r.sims[1].serial()).await];
        let start = json!({"flow_id": "adb_device", "input": {}});
        let mut agent = ws(r.srv.addr, Some(KEY)).await;
        agent.hello(None).await;
        let (ch, _) = agent.open(None).await;

        // Both phones free of agents, both taken over: the pool has nothing to give, and says why and what to do.
        for id in &ids {
            let t = post(r.srv.addr, &format!("/api/v1/devices/{id}/takeover"), &[(k, &v)], json!({})).await;
            assert_eq!(t.status, 200, "{}", t.text());
        }
        let a = agent.request("auth.start", Some(&ch), start.clone()).await;
        assert_eq!(a["payload"]["status"], "failed", "bound a phone an operator holds: {a}");
        assert_eq!(error_code(&a), "device_busy", "{a}");
        let msg = a["payload"]["message"].as_str().unwrap();
        assert!(
            msg.starts_with("all 2 devices are in use by operators (device wall takeover); try again in a minute"),
            "{msg}"
        );
        // Named: refused, with the code the agent already knows from tool calls.
        let named = json!({"flow_id": "adb_device", "input": {"serial": r.sims[0].serial()}});
        let a = agent.request("auth.start", Some(&ch), named).await;
        assert_eq!(a["payload"]["status"], "failed", "{a}");
        assert_eq!(error_code(&a), "operator_control", "{a}");
        assert!(a["payload"]["message"].as_str().unwrap().contains("nothing was bound"), "{a}");
        let d = agent.request("connection.descriptor.get", Some(&ch), json!({})).await;
        assert_eq!(d["payload"]["connection_descriptor"]["connection"]["status"], "created", "nothing bound: {d}");

        // The second phone returned: the pool binding takes it (not the one still held), and the agent's calls run.
        let ret = post(r.srv.addr, &format!("/api/v1/devices/{}/return", ids[1]), &[(k, &v)], json!({})).await;
        assert_eq!(ret.status, 200, "{}", ret.text());
        let a = agent.request("auth.start", Some(&ch), start).await;
        assert_eq!(a["payload"]["status"], "authenticated", "{a}");
        for s in &r.sims {
            s.clear_events();
        }
        let tap = agent.tap(&ch, 10, 10).await;
        assert!(tap.get("error").is_none(), "the agent's phone is its own: {tap}");
        assert_eq!(r.sims[1].events(), [InputEvent::Tap { x: 10, y: 10 }]);
        assert!(r.sims[0].events().is_empty(), "the operator's phone was not touched");
    })
    .await
    .expect("test timed out");
}

/// A loopback webhook receiver: records every request (head and body as text) and answers `500` to the first,
/// `200` to the others (so the connector's retry is seen).
async fn webhook() -> (SocketAddr, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let got = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = got.clone();
    tokio::spawn(async move {
        for n in 0..10 {
            let Ok(Ok((mut s, _))) = tokio::time::timeout(Duration::from_secs(120), listener.accept()).await else {
                return;
            };
            let mut buf = Vec::new();
            let mut chunk = [0u8; 4096];
            // Head, then as many body bytes as Content-Length says (bounded).
            while buf.len() < 1 << 20 {
                let text = String::from_utf8_lossy(&buf).to_string();
                if let Some(end) = text.find("\r\n\r\n") {
                    let len = text[..end]
                        .lines()
                        .find_map(|l| {
                            l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().to_owned())
                        })
                        .and_then(|v| v.parse::<usize>().ok())
                        .unwrap_or(0);
                    if buf.len() >= end + 4 + len {
                        break;
                    }
                }
                match tokio::time::timeout(Duration::from_secs(5), s.read(&mut chunk)).await {
                    Ok(Ok(k)) if k > 0 => buf.extend_from_slice(&chunk[..k]),
                    _ => break,
                }
            }
            seen.lock().unwrap().push(String::from_utf8_lossy(&buf).to_string());
            let status = if n == 0 { "500 Internal Server Error" } else { "200 OK" };
            let _ = s.write_all(format!("HTTP/1.1 {status}\r\nContent-Length: 0\r\n\r\n").as_bytes()).await;
        }
    });
    (addr, got)
}

async fn open_requests(addr: SocketAddr) -> u64 {
    let (k, v) = bearer();
    let m = http(addr, "GET", "/metrics", &[(k, &v)], b"").await.text();
    m.lines()
        .find_map(|l| l.strip_prefix("xagent_human_requests_open "))
        .unwrap_or_else(|| panic!("no xagent_human_requests_open in /metrics:\n{m}"))
        .parse()
        .unwrap()
}

/// Issue 34 item 1 without a browser: nobody answers → `human_unavailable` after the request's timeout; meanwhile
/// the wall's API shows the request, `/metrics` counts it and the `--notify-url` webhook got it (retried after a
/// 500, with the URL's user info as Basic credentials, never the API key; the URL's secrets in no log line); the
/// call is audited. The call's deadline caps the wait (`--tool-deadline-max`), a channel closed while waiting closes
/// the request, and a return with a note answers it with that note.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_for_a_person_nobody_answers_is_human_unavailable_and_the_webhook_has_it() {
    bounded(async {
        let (hook, got) = webhook().await;
        let url = format!("http://bot:hook-pass-93@{hook}/hooks/HOOK-TOKEN-61?via=test");
        let r =
            rig_with(&[(720, 1600), (720, 1600)], true, &["--notify-url", &url, "--tool-deadline-max", "20s"]).await;
        r.wait_all_online().await;
        let (serial, other) = (r.sims[0].serial(), r.sims[1].serial());
        let id = r.id_of(&serial).await;
        let addr = r.srv.addr;
        assert_eq!(open_requests(addr).await, 0);
        // Each step binds the phone on a socket of its own; the one before keeps its binding (lease grace).
        let release = |id: String| async move {
            let (k, v) = bearer();
            let resp = post(addr, &format!("/api/v1/devices/{id}/release"), &[(k, &v)], json!({})).await;
            assert_eq!(resp.status, 200, "{}", resp.text());
        };

        let started = Instant::now();
        let args = json!({"reason": "captcha on the sign-up page", "timeout_s": 10});
        let (ch, call) = request_human(addr, &serial, args, Duration::from_secs(60)).await;
        let deadline = Instant::now() + Duration::from_secs(5);
        while open_requests(addr).await != 1 {
            assert!(Instant::now() < deadline, "the request never counted in /metrics");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let (k, v) = bearer();
        let d = http(addr, "GET", &format!("/api/v1/devices/{id}"), &[(k, &v)], b"").await.json();
        assert_eq!(d["human_request"]["reason"], "captcha on the sign-up page", "{d:#}");
        assert!(d["human_request"]["expires_ms"].as_u64().unwrap() > d["human_request"]["since_ms"].as_u64().unwrap());

        let ack = call.await.unwrap();
        assert_eq!(error_code(&ack), "human_unavailable", "{ack}");
        let waited = started.elapsed();
        assert!(waited >= Duration::from_secs(10) && waited < Duration::from_secs(20), "{waited:?}");
        assert_eq!(open_requests(addr).await, 0, "the answered request is closed");
        let d = http(addr, "GET", &format!("/api/v1/devices/{id}"), &[(k, &v)], b"").await.json();
        assert!(d["human_request"].is_null(), "{d:#}");
        let audited = d["recent_actions"].as_array().unwrap().iter().find(|a| a["tool_id"] == "android_request_human");
        let audited = audited.unwrap_or_else(|| panic!("the request is not in the audit: {d:#}"));
        assert_eq!(audited["outcome"], "human_unavailable", "{audited}");
        assert_eq!(audited["channel_id"], json!(ch), "{audited}");

        // The webhook: the 500 retried, then 200; the event as JSON; Basic credentials; no API key anywhere. Then
        // the closing event of the request that expired (issue 48).
        let mut hooks = got.lock().unwrap().clone();
        assert_eq!(hooks.len(), 3, "one retry after the 500, then the closing event: {hooks:#?}");
        let closing = hooks.pop().unwrap();
        let closed: Value = serde_json::from_str(&closing[closing.find("\r\n\r\n").unwrap() + 4..]).unwrap();
        assert_eq!(
            (closed["event"].as_str(), closed["outcome"].as_str()),
            (Some("human_request_closed"), Some("expired"))
        );
        assert!(!closing.contains(KEY), "the API key went to the webhook: {closing}");
        for h in &hooks {
            assert!(h.starts_with("POST /hooks/HOOK-TOKEN-61?via=test HTTP/1.1\r\n"), "{h}");
            assert!(h.contains("Authorization: Basic Ym90Omhvb2stcGFzcy05Mw==\r\n"), "{h}");
            assert!(!h.contains(KEY), "the API key went to the webhook: {h}");
            let body: Value = serde_json::from_str(&h[h.find("\r\n\r\n").unwrap() + 4..]).unwrap();
            assert_eq!(body["event"], "human_request");
            assert_eq!(body["reason"], "captcha on the sign-up page");
            assert_eq!(body["device"]["serial"], json!(serial));
        }
        let logs = r.srv.logs().join("\n");
        for secret in ["HOOK-TOKEN-61", "hook-pass-93", "via=test"] {
            assert!(!logs.contains(secret), "{secret} in the logs");
        }

        // The call's deadline caps the wait: 600 s asked, 20 s allowed → human_unavailable before the deadline.
        let started = Instant::now();
        let args = json!({"reason": "payment confirmation", "timeout_s": 600});
        let (_, call) = request_human(addr, &other, args, Duration::from_secs(60)).await;
        let ack = call.await.unwrap();
        assert_eq!(error_code(&ack), "human_unavailable", "{ack}");
        assert!(started.elapsed() < Duration::from_secs(20), "{:?}", started.elapsed());

        // The API key's return answers a request with its note (cleaned of control characters); a return without a
        // request answers none.
        release(id.clone()).await;
        let url = |a: &str| format!("/api/v1/devices/{id}/{a}");
        let ret = post(addr, &url("return"), &[(k, &v)], json!({})).await;
        assert_eq!(ret.status, 200, "{}", ret.text());
        assert_eq!(ret.json()["returned"], false);
        let (_, call) =
            request_human(addr, &serial, json!({"reason": "r", "timeout_s": 600}), Duration::from_secs(60)).await;
        // The call was sent, not yet run: a return before the request is open would answer none (a loaded box).
        let open_by = Instant::now() + Duration::from_secs(15);
        while open_requests(addr).await == 0 {
            assert!(Instant::now() < open_by, "the request for a person never opened");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert_eq!(post(addr, &url("takeover"), &[(k, &v)], json!({})).await.status, 200);
        let bad = post(addr, &url("return"), &[(k, &v)], json!({"note": "x".repeat(2001)})).await;
        assert_eq!(bad.status, 400, "{}", bad.text());
        let bad = post(addr, &url("return"), &[(k, &v)], json!({"note": "ok", "extra": 1})).await;
        assert_eq!(bad.status, 400, "{}", bad.text());
        let ret = post(addr, &url("return"), &[(k, &v)], json!({"note": "done\u{1b}[2J\u{202e} here"})).await;
        assert_eq!(ret.status, 200, "{}", ret.text());
        assert_eq!(ret.json()["human_request_answered"], true, "{}", ret.text());
        let ack = call.await.unwrap();
        assert_eq!(ack["payload"]["result"]["note"], "done[2J here", "{ack}");
        assert_eq!(ack["payload"]["result"]["resolved_by"], "api_key", "{ack}");
        // A channel closed while it waits: the request goes with it.
        release(id.clone()).await;
        let (_, call) =
            request_human(addr, &serial, json!({"reason": "r", "timeout_s": 600}), Duration::from_secs(60)).await;
        let deadline = Instant::now() + Duration::from_secs(5);
        while open_requests(addr).await != 1 {
            assert!(Instant::now() < deadline, "the request never counted in /metrics");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        call.abort();
        let deadline = Instant::now() + Duration::from_secs(10);
        while open_requests(addr).await != 0 {
            assert!(Instant::now() < deadline, "a request outlived its closed socket");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await
    .expect("test timed out");
}

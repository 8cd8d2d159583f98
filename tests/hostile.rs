//! Hostile clients (issue #12): every test drives the real binary over loopback the way an attacker on the lab
//! network would, and checks that memory, connections and state stay bounded and that refusals are clear.

mod common;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use common::*;
use futures_util::SinkExt;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};
use tokio_tungstenite::tungstenite::Message;

fn bounded<F: std::future::Future>(f: F) -> tokio::time::Timeout<F> {
    tokio::time::timeout(Duration::from_secs(120), f)
}

/// Resident memory of a process, in KiB (`VmRSS` of /proc/PID/status).
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).expect("VmRSS line");
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// A peer that sends WebSocket pings and never reads: the pong replies must not pile up without bound, and the
/// session must be closed once its writes stall.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ping_flood_without_reading_is_bounded_and_closed() {
    // The stated cap: the connector grows by less than 64 MiB while being flooded (it grew by gigabytes before).
    const CAP_KIB: u64 = 64 * 1024;
    bounded(async {
        let dir = tempfile::tempdir().unwrap();
        let srv = Server::start(dir.path(), &["--ws-write-timeout", "2s"], &[]);
        let pid = srv.child.id();
        let mut c = ws(srv.addr, None).await;
        c.hello(None).await;
        let baseline = rss_kib(pid);
        let mut ws = c.ws;
        let flood = tokio::spawn(async move {
            let payload = vec![0x5au8; 125];
            let started = Instant::now();
            let mut sent = 0u64;
            // Never read; stop when the connector has closed the socket (writes fail) or after 30 s.
            while started.elapsed() < Duration::from_secs(30) {
                let r = async {
                    for _ in 0..64 {
                        ws.feed(Message::Ping(payload.clone().into())).await?;
                    }
                    ws.flush().await
                };
                match tokio::time::timeout(Duration::from_secs(5), r).await {
                    Ok(Ok(())) => sent += 64,
                    // A write error or a write that cannot proceed: the connector is gone.
                    Ok(Err(_)) | Err(_) => return (true, sent),
                }
            }
            (false, sent)
        });
        let mut peak = baseline;
        while !flood.is_finished() {
            peak = peak.max(rss_kib(pid));
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let (closed, sent) = flood.await.unwrap();
        peak = peak.max(rss_kib(pid));
        assert!(
            peak - baseline < CAP_KIB,
            "RSS grew from {baseline} KiB to {peak} KiB under a ping flood ({sent} pings)"
        );
        assert!(closed, "the connector kept a non-reading peer open ({sent} pings sent)");
        assert!(sent > 10_000, "the flood was real: {sent} pings");
        // The connector still serves others.
        let r = get(srv.addr, "/connector-card.json").await;
        assert_eq!(r.status, 200);
        eprintln!("ping flood: {sent} pings, RSS {baseline} KiB -> peak {peak} KiB");
    })
    .await
    .expect("timed out");
}

/// Reads until EOF (or an error); true when the connector closed the connection within `within`.
async fn closed_within(s: &mut TcpStream, within: Duration) -> bool {
    let mut buf = [0u8; 4096];
    let deadline = Instant::now() + within;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, s.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return true,
            Ok(Ok(_)) => continue,
            Err(_) => return false,
        }
    }
}

/// Opens a connection from `source` (any 127/8 address works on Linux loopback).
async fn connect_from(source: &str, addr: SocketAddr) -> TcpStream {
    let sock = TcpSocket::new_v4().unwrap();
    sock.bind(format!("{source}:0").parse().unwrap()).unwrap();
    tokio::time::timeout(T, sock.connect(addr)).await.expect("connect timed out").unwrap()
}

async fn card_from(source: &str, addr: SocketAddr) -> Option<u16> {
    let mut s = connect_from(source, addr).await;
    s.write_all(b"GET /connector-card.json HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").await.ok()?;
    let mut raw = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut raw)).await.ok()?.ok()?;
    let line = String::from_utf8_lossy(&raw).lines().next()?.to_owned();
    line.split(' ').nth(1)?.parse().ok()
}

/// 1,030 idle sockets from one address (more than the 1,024 connection slots) must not lock others out, and idle
/// sockets that never send a request are closed after the header timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slowloris_from_one_address_does_not_starve_others() {
    bounded(async {
        let dir = tempfile::tempdir().unwrap();
        let srv = Server::start(dir.path(), &["--header-timeout", "2s"], &[]);
        let mut idle = Vec::new();
        for _ in 0..1030 {
            idle.push(connect_from("127.0.0.1", srv.addr).await);
        }
        // The connections beyond the cap were told why.
        let mut raw = Vec::new();
        let last = idle.last_mut().unwrap();
        let _ = tokio::time::timeout(Duration::from_secs(5), last.read_to_end(&mut raw)).await;
        assert!(String::from_utf8_lossy(&raw).contains("too_many_connections"), "{}", String::from_utf8_lossy(&raw));
        // Another host gets the card at once, every time.
        for _ in 0..3 {
            assert_eq!(card_from("127.0.0.2", srv.addr).await, Some(200), "a second address was starved");
        }
        // Connections beyond the per-address cap were closed at accept; the rest after the header timeout.
        let started = Instant::now();
        for s in idle.iter_mut() {
            assert!(closed_within(s, Duration::from_secs(15)).await, "an idle socket was kept open");
        }
        assert!(started.elapsed() < Duration::from_secs(15));
        // The address is welcome again once its idle sockets are gone.
        drop(idle);
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if card_from("127.0.0.1", srv.addr).await == Some(200) {
                break;
            }
            assert!(Instant::now() < deadline, "the first address stayed locked out");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await
    .expect("timed out");
}

/// Sessions are capped (a clear 503), and a session that never says hello is closed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_are_capped_and_silent_ones_time_out() {
    bounded(async {
        let dir = tempfile::tempdir().unwrap();
        let srv = Server::start(dir.path(), &["--max-sessions", "3", "--hello-timeout", "1s"], &[]);
        let mut open = Vec::new();
        for _ in 0..3 {
            let mut c = ws(srv.addr, None).await;
            c.hello(None).await;
            open.push(c);
        }
        let refused = ws_connect(srv.addr, None, Some("xagent.connector.packet.v1")).await.err();
        assert_eq!(refused, Some(503), "a fourth session is refused");
        // The refusal names the limit.
        let r = http(
            srv.addr,
            "GET",
            "/ws",
            &[
                ("Upgrade", "websocket"),
                ("Connection", "Upgrade"),
                ("Sec-WebSocket-Version", "13"),
                ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="),
                ("Sec-WebSocket-Protocol", "xagent.connector.packet.v1"),
            ],
            b"",
        )
        .await;
        assert_eq!(r.status, 503);
        assert_eq!(r.json()["error"]["code"], "too_many_sessions", "{}", r.text());
        // Closing one frees its place.
        drop(open.pop());
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut silent = loop {
            match ws_connect(srv.addr, None, Some("xagent.connector.packet.v1")).await {
                Ok(ws) => break ws,
                Err(503) if Instant::now() < deadline => tokio::time::sleep(Duration::from_millis(50)).await,
                Err(s) => panic!("a freed session slot was not reusable: {s}"),
            }
        };
        // This one never sends connector.hello: closed with 1008 after the hello timeout.
        let close = tokio::time::timeout(Duration::from_secs(10), async {
            use futures_util::StreamExt;
            loop {
                match silent.next().await {
                    Some(Ok(Message::Close(f))) => return f.map(|f| u16::from(f.code)),
                    Some(Ok(_)) => continue,
                    _ => return None,
                }
            }
        })
        .await
        .expect("a session without hello was kept open");
        assert_eq!(close, Some(1008));
    })
    .await
    .expect("timed out");
}

/// `channel.open` beyond the channel cap is refused with `rate_limited`; re-opening an existing channel still works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn channels_are_capped() {
    bounded(async {
        let dir = tempfile::tempdir().unwrap();
        let srv = Server::start(dir.path(), &["--max-channels", "5"], &[]);
        let mut c = ws(srv.addr, None).await;
        c.hello(None).await;
        let mut ids = Vec::new();
        for _ in 0..5 {
            ids.push(c.open(None).await.0);
        }
        let e = c.request("channel.open", None, json!({})).await;
        assert_eq!(e["type"], "error", "{e}");
        assert_eq!(error_code(&e), "rate_limited", "{e}");
        assert!(e["error"]["message"].as_str().unwrap().contains("5 channels"), "{e}");
        let (again, _) = c.open(Some(&ids[0])).await;
        assert_eq!(again, ids[0]);
    })
    .await
    .expect("timed out");
}

/// Identifiers that are stored or logged are bounded: a 900 KB `tool_call_id` (or `request_id`) is refused with
/// `invalid_packet` and never echoed back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overlong_identifiers_are_refused() {
    bounded(async {
        let dir = tempfile::tempdir().unwrap();
        let srv = Server::start(dir.path(), &["--max-message-bytes", "2000000"], &[]);
        let mut c = ws(srv.addr, None).await;
        c.hello(None).await;
        let (ch, _) = c.open(None).await;
        let huge = "x".repeat(900_000);
        let e = c
            .request(
                "tool.invoke",
                Some(&ch),
                json!({"tool_id": "android_tap", "arguments": {"connector_channel_id": ch, "x": 1, "y": 1},
                       "context": {"tool_call_id": huge}}),
            )
            .await;
        assert_eq!(error_code(&e), "invalid_packet", "{}", &e.to_string()[..300.min(e.to_string().len())]);
        assert!(e["error"]["message"].as_str().unwrap().contains("tool_call_id"));
        let long_tool = "t".repeat(129);
        let e = c
            .request("tool.invoke", Some(&ch), json!({"tool_id": long_tool, "arguments": {"connector_channel_id": ch}}))
            .await;
        assert_eq!(error_code(&e), "invalid_packet", "{e}");
        // A long request_id is refused, and not echoed back.
        let p = json!({"schema": "xagent.connector.packet/v1", "packet_id": "pkt_long", "request_id": huge,
                       "type": "ping", "time": 1_790_000_000_000u64, "payload": {}});
        c.send_raw(&p.to_string()).await;
        let v = c.recv().await;
        assert_eq!(error_code(&v), "invalid_packet");
        assert!(v.to_string().len() < 2000, "the overlong id was echoed back");
        let db = std::fs::metadata(dir.path().join("connector.db")).unwrap().len();
        assert!(db < 4 << 20, "the database grew to {db} bytes");
    })
    .await
    .expect("timed out");
}

fn ui_wait(ch: &str) -> serde_json::Value {
    json!({"tool_id": "android_ui_wait", "arguments": {"connector_channel_id": ch, "text": "never there", "timeout_ms": 3000}})
}

/// Fills a channel's 16 slots with slow calls; returns their request ids.
async fn fill_slots(c: &mut Client, ch: &str) -> Vec<String> {
    let mut ids = Vec::new();
    for _ in 0..16 {
        ids.push(c.send("tool.invoke", Some(ch), ui_wait(ch)).await.1);
    }
    ids
}

/// A call refused with `rate_limited` leaves no idempotency record: a retry with the same `tool_call_id` runs once
/// the channel has room (it used to wait forever on a record nobody would finish).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_limited_call_leaves_no_record() {
    bounded(async {
        let Some((adb, _sim, _serial)) = common::adb::setup().await else { return };
        let dir = tempfile::tempdir().unwrap();
        let srv = Server::start(dir.path(), &["--adb-server", &format!("127.0.0.1:{}", adb.port)], &[]);
        let mut c = ws(srv.addr, None).await;
        c.hello(None).await;
        let ch = c.bind(None).await;
        fill_slots(&mut c, &ch).await;
        let tap = json!({"tool_id": "android_tap", "arguments": {"connector_channel_id": ch, "x": 1, "y": 1},
                         "context": {"tool_call_id": "call_retry_1"}});
        let (_, rid) = c.send("tool.invoke", Some(&ch), tap.clone()).await;
        let mut waits = 0;
        loop {
            let v = c.recv().await;
            if v["request_id"] == json!(rid) {
                assert_eq!(error_code(&v), "rate_limited", "{v}");
                break;
            }
            if v["type"] == "tool.invoke.ack" {
                waits += 1;
            }
        }
        // Let the 16 slow calls finish, then retry the same id: it runs now.
        while waits < 16 {
            if c.recv().await["type"] == "tool.invoke.ack" {
                waits += 1;
            }
        }
        let ack = tokio::time::timeout(Duration::from_secs(20), c.request("tool.invoke", Some(&ch), tap))
            .await
            .expect("the retry of a rate-limited call never got an ack");
        assert!(ack.get("error").is_none(), "{ack}");
    })
    .await
    .expect("timed out");
}

/// The 16-call limit holds per channel, not per socket: re-opening the channel on another socket adds no slots.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn channel_call_limit_holds_across_sockets() {
    bounded(async {
        let Some((adb, _sim, _serial)) = common::adb::setup().await else { return };
        let dir = tempfile::tempdir().unwrap();
        let srv = Server::start(dir.path(), &["--adb-server", &format!("127.0.0.1:{}", adb.port)], &[]);
        let mut a = ws(srv.addr, None).await;
        let id = a.hello(None).await;
        let ch = a.bind(None).await;
        fill_slots(&mut a, &ch).await;
        // The socket reads in order: once the ping is answered, the 16 calls are running.
        let pong = a.request("ping", None, json!({})).await;
        assert_eq!(pong["type"], "pong");
        let mut b = ws(srv.addr, None).await;
        b.hello(Some(&id)).await;
        let (again, _) = b.open(Some(&ch)).await;
        assert_eq!(again, ch);
        let v = b.request("tool.invoke", Some(&ch), ui_wait(&ch)).await;
        assert_eq!(error_code(&v), "rate_limited", "{v}");
    })
    .await
    .expect("timed out");
}

/// Sends a multipart upload whose body is `head` followed by `filler_len` bytes of `a` (streamed), reads the answer.
async fn raw_upload(addr: SocketAddr, ch: &str, head: Vec<u8>, filler_len: usize) -> HttpResponse {
    let boundary = "bnd123";
    let total = head.len() + filler_len;
    let mut s = TcpStream::connect(addr).await.unwrap();
    let req = format!(
        "POST /files/uploads HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: {total}\r\n\
         Content-Type: multipart/form-data; boundary={boundary}\r\nX-XAgent-Connector-Channel-ID: {ch}\r\n\r\n"
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let (mut rd, mut wr) = s.into_split();
    let writer = tokio::spawn(async move {
        let _ = wr.write_all(&head).await;
        let chunk = vec![b'a'; 64 * 1024];
        let mut left = filler_len;
        while left > 0 {
            let n = left.min(chunk.len());
            if wr.write_all(&chunk[..n]).await.is_err() {
                return; // the connector answered and closed: fine
            }
            left -= n;
        }
    });
    let mut raw = Vec::new();
    tokio::time::timeout(Duration::from_secs(60), rd.read_to_end(&mut raw)).await.expect("no answer").ok();
    writer.abort();
    let text = String::from_utf8_lossy(&raw).to_string();
    let (head, body) = text.split_once("\r\n\r\n").expect("an HTTP answer");
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    HttpResponse { status, headers: vec![], body: body.as_bytes().to_vec() }
}

/// A part header that never ends is refused with 400 once it passes 16 KiB (it used to be buffered whole), and a
/// form with too many parts is refused too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn multipart_part_headers_and_parts_are_bounded() {
    bounded(async {
        let dir = tempfile::tempdir().unwrap();
        let srv = Server::start(dir.path(), &[], &[]);
        let pid = srv.child.id();
        let mut c = ws(srv.addr, None).await;
        c.hello(None).await;
        let (ch, _) = c.open(None).await;
        let baseline = rss_kib(pid);
        let head =
            b"--bnd123\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.bin\"\r\nX-Long: ".to_vec();
        let r = raw_upload(srv.addr, &ch, head, 64 << 20).await;
        let grown = rss_kib(pid).saturating_sub(baseline);
        assert_eq!(r.status, 400, "{}", r.text());
        assert_eq!(r.json()["error"]["code"], "invalid_upload");
        assert!(r.text().contains("part header is longer than 16384 bytes"), "{}", r.text());
        assert!(grown < 16 * 1024, "RSS grew by {grown} KiB while a 64 MiB part header arrived");

        let mut many = Vec::new();
        for i in 0..40 {
            many.extend_from_slice(
                format!("--bnd123\r\nContent-Disposition: form-data; name=\"x{i}\"\r\n\r\nv\r\n").as_bytes(),
            );
        }
        many.extend_from_slice(b"--bnd123--\r\n");
        let r = raw_upload(srv.addr, &ch, many, 0).await;
        assert_eq!(r.status, 400, "{}", r.text());
        assert!(r.text().contains("more than 16 parts"), "{}", r.text());
        eprintln!("64 MiB part header: 400, RSS grew {grown} KiB");
    })
    .await
    .expect("timed out");
}

/// Uploads `data` to `ch` with the key; returns the file_ref.
async fn upload_with_key(addr: SocketAddr, key: &str, ch: &str, data: &[u8]) -> String {
    let boundary = "bnd-once";
    let mut body = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.bin\"\r\n\
         Content-Type: application/octet-stream\r\n\r\n"
    )
    .into_bytes();
    body.extend_from_slice(data);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    let ct = format!("multipart/form-data; boundary={boundary}");
    let auth = format!("Bearer {key}");
    let headers =
        [("Content-Type", ct.as_str()), ("Authorization", auth.as_str()), ("X-XAgent-Connector-Channel-ID", ch)];
    let r = http(addr, "POST", "/files/uploads", &headers, &body).await;
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()["file_ref"].as_str().unwrap().to_owned()
}

/// A one-time download URL is served once: 16 concurrent GETs of one file, 100 rounds, exactly one full `200` each.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_time_download_is_served_exactly_once_under_concurrency() {
    const KEY: &str = "k-hostile-0123456789abcdef";
    bounded(async {
        let dir = tempfile::tempdir().unwrap();
        let srv = Server::start(dir.path(), &[], &[("XAGENT_CONNECTOR_API_KEY", KEY)]);
        let mut c = ws(srv.addr, Some(KEY)).await;
        c.hello(None).await;
        let (ch, _) = c.open(None).await;
        let data: Vec<u8> = (0..256 * 1024u32).map(|i| (i * 7 % 251) as u8).collect();
        let mut statuses = std::collections::BTreeMap::<u16, u32>::new();
        for round in 0..100 {
            let file_ref = upload_with_key(srv.addr, KEY, &ch, &data).await;
            let path = format!("/files/refs/{file_ref}");
            let mut tasks = Vec::new();
            for _ in 0..16 {
                let (path, ch) = (path.clone(), ch.clone());
                let addr = srv.addr;
                tasks.push(tokio::spawn(async move {
                    let auth = format!("Bearer {KEY}");
                    let h = [("Authorization", auth.as_str()), ("X-XAgent-Connector-Channel-ID", ch.as_str())];
                    http(addr, "GET", &path, &h, b"").await
                }));
            }
            let mut full = 0;
            for t in tasks {
                let r = t.await.unwrap();
                *statuses.entry(r.status).or_default() += 1;
                match r.status {
                    200 => {
                        assert_eq!(r.body.len(), data.len(), "a 200 with a short body");
                        full += 1;
                    }
                    404 | 409 => {}
                    s => panic!("unexpected status {s}: {}", r.text()),
                }
            }
            assert_eq!(full, 1, "round {round}: {full} requests received the whole one-time file");
        }
        eprintln!("statuses over 1600 GETs: {statuses:?}");
    })
    .await
    .expect("timed out");
}

/// Starts an upload of `len` declared bytes, sends `sent` of them and keeps the connection open.
async fn partial_upload(addr: SocketAddr, ch: &str, len: usize, sent: usize) -> TcpStream {
    let boundary = "bnd-stage";
    let head = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.bin\"\r\n\
         Content-Type: application/octet-stream\r\n\r\n"
    );
    let total = head.len() + len + format!("\r\n--{boundary}--\r\n").len();
    let mut s = TcpStream::connect(addr).await.unwrap();
    let req = format!(
        "POST /files/uploads HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: {total}\r\n\
         Content-Type: multipart/form-data; boundary={boundary}\r\nX-XAgent-Connector-Channel-ID: {ch}\r\n\r\n{head}"
    );
    s.write_all(req.as_bytes()).await.unwrap();
    s.write_all(&vec![b'z'; sent]).await.unwrap();
    s
}

/// Uploads in progress stage at most the cache's capacity on disk together: one more is refused with 507 instead
/// of filling the disk, and the space is available again once the first upload is gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upload_staging_is_reserved_against_the_cache_capacity() {
    bounded(async {
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().join("files");
        let srv = Server::start(
            dir.path(),
            &["--cache-dir", cache.to_str().unwrap(), "--cache-max-bytes", "1000000", "--upload-max-bytes", "1000000"],
            &[],
        );
        let mut c = ws(srv.addr, None).await;
        c.hello(None).await;
        let (ch, _) = c.open(None).await;
        let first = partial_upload(srv.addr, &ch, 900_000, 700_000).await;
        // Wait until the first upload's bytes are staged on disk.
        let files = dir.path().join("files");
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let staged: u64 = std::fs::read_dir(&files)
                .unwrap()
                .filter_map(Result::ok)
                .filter(|e| e.file_name().to_string_lossy().starts_with(".staging-"))
                .map(|e| e.metadata().map(|m| m.len()).unwrap_or(0))
                .sum();
            if staged >= 400_000 {
                break;
            }
            assert!(Instant::now() < deadline, "the first upload was not staged ({staged} bytes)");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let mut second = partial_upload(srv.addr, &ch, 900_000, 700_000).await;
        let mut raw = Vec::new();
        tokio::time::timeout(Duration::from_secs(20), second.read_to_end(&mut raw))
            .await
            .expect("the second upload was neither refused nor answered")
            .ok();
        let text = String::from_utf8_lossy(&raw);
        assert!(text.starts_with("HTTP/1.1 507"), "{text}");
        assert!(text.contains("cache_full"), "{text}");
        drop(first);
        // The first upload's reservation is released with it: a whole upload fits again.
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let mut s = partial_upload(srv.addr, &ch, 900_000, 900_000).await;
            s.write_all(b"\r\n--bnd-stage--\r\n").await.unwrap();
            let mut raw = Vec::new();
            tokio::time::timeout(Duration::from_secs(20), s.read_to_end(&mut raw)).await.unwrap().ok();
            let text = String::from_utf8_lossy(&raw).to_string();
            if text.starts_with("HTTP/1.1 200") {
                break;
            }
            assert!(Instant::now() < deadline, "staging space was never released: {text}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await
    .expect("timed out");
}

/// `audit verify` detects removal of the newest records and of all records (the chain head is kept beside it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn audit_verify_detects_truncation() {
    bounded(async {
        let Some((adb, _sim, _serial)) = common::adb::setup().await else { return };
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().to_owned();
        let mut srv = Server::start(&data, &["--adb-server", &format!("127.0.0.1:{}", adb.port)], &[]);
        let mut c = ws(srv.addr, None).await;
        c.hello(None).await;
        let ch = c.bind(None).await;
        for i in 0..5 {
            let tap =
                json!({"tool_id": "android_tap", "arguments": {"connector_channel_id": ch, "x": 10 + i, "y": 10}});
            let ack = c.request("tool.invoke", Some(&ch), tap).await;
            assert!(ack.get("error").is_none(), "{ack}");
        }
        srv.term(Duration::from_secs(30)).expect("the connector stops on SIGTERM");
        let bin = env!("CARGO_BIN_EXE_xagent-adb-connector");
        let verify = || {
            let out =
                std::process::Command::new(bin).args(["audit", "verify", "--data-dir"]).arg(&data).output().unwrap();
            (
                out.status.code(),
                String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr),
            )
        };
        let (code, out) = verify();
        assert_eq!(code, Some(0), "{out}");
        let db = rusqlite::Connection::open(data.join("connector.db")).unwrap();
        db.execute("DELETE FROM audit WHERE seq > 3", []).unwrap();
        let (code, out) = verify();
        assert_eq!(code, Some(1), "deleting the newest records went unnoticed: {out}");
        assert!(out.contains("newest records were removed"), "{out}");
        db.execute("DELETE FROM audit", []).unwrap();
        drop(db);
        let (code, out) = verify();
        assert_eq!(code, Some(1), "deleting every record went unnoticed: {out}");
        assert!(out.contains("every record was removed"), "{out}");
        eprintln!("audit verify after truncation: {}", out.trim());
    })
    .await
    .expect("timed out");
}

/// Mode bits of a path.
fn mode(p: &std::path::Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).unwrap_or_else(|e| panic!("{}: {e}", p.display())).permissions().mode() & 0o777
}

/// State on disk is owner-only even under umask 022: the database (+WAL/SHM), the cache folder and cached files.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn state_files_are_private_whatever_the_umask() {
    bounded(async {
        let parent = tempfile::tempdir().unwrap();
        let data = parent.path().join("state");
        // The cache on disk (`--cache-dir`) is state too; the default one, in memory, is checked below as well.
        let cache = data.join("files");
        let srv = Server::start(&data, &["--cache-dir", cache.to_str().unwrap()], &[]);
        let status = std::fs::read_to_string(format!("/proc/{}/status", srv.child.id())).unwrap();
        let umask = status.lines().find_map(|l| l.strip_prefix("Umask:")).map(|u| u32::from_str_radix(u.trim(), 8).unwrap());
        assert!(umask.is_some_and(|u| u & 0o044 == 0), "run this test under a permissive umask such as 022: {umask:?}");
        let mut c = ws(srv.addr, None).await;
        c.hello(None).await;
        let (ch, _) = c.open(None).await;
        let boundary = "bnd-mode";
        let body = format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.txt\"\r\n\r\nsecret\r\n--{boundary}--\r\n"
        );
        let ct = format!("multipart/form-data; boundary={boundary}");
        let r = http(
            srv.addr,
            "POST",
            "/files/uploads",
            &[("Content-Type", ct.as_str()), ("X-XAgent-Connector-Channel-ID", ch.as_str())],
            body.as_bytes(),
        )
        .await;
        assert_eq!(r.status, 200, "{}", r.text());
        let file_ref = r.json()["file_ref"].as_str().unwrap().to_owned();
        assert_eq!(mode(&data), 0o700, "data dir");
        assert_eq!(mode(&data.join("files")), 0o700, "cache folder");
        assert_eq!(mode(&data.join("files").join(&file_ref)), 0o600, "cached file");
        for f in ["connector.db", "connector.db-wal", "connector.db-shm"] {
            assert_eq!(mode(&data.join(f)), 0o600, "{f}");
        }
    })
    .await
    .expect("timed out");
}

/// At `RUST_LOG=trace` no log line carries the API key, typed text, a download token or a client string's raw
/// control characters (the libraries that log frames are capped; client strings are escaped and cut).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trace_logs_carry_no_secret_and_no_raw_client_strings() {
    const KEY: &str = "sk-TRACE-SENTINEL-KEY-1b2c3d";
    const TYPED: &str = "TRACE-SENTINEL-typed-pw";
    bounded(async {
        let Some((adb, _sim, _serial)) = common::adb::setup().await else { return };
        let dir = tempfile::tempdir().unwrap();
        let srv = Server::start(
            dir.path(),
            &["--adb-server", &format!("127.0.0.1:{}", adb.port)],
            &[("XAGENT_CONNECTOR_API_KEY", KEY), ("RUST_LOG", "trace")],
        );
        let mut c = ws(srv.addr, Some(KEY)).await;
        c.hello(None).await;
        let ch = c.bind(None).await;
        let typed = json!({"tool_id": "android_input_text", "arguments": {"connector_channel_id": ch, "text": TYPED}});
        let a = c.request("tool.invoke", Some(&ch), typed).await;
        assert!(a.get("error").is_none(), "{a}");
        let shot = json!({"tool_id": "android_screenshot", "arguments": {"connector_channel_id": ch}});
        let a = c.request("tool.invoke", Some(&ch), shot).await;
        let url = a["payload"]["result"]["files"][0]["download_url"].as_str().expect("a download_url").to_owned();
        let token = url.split("token=").nth(1).unwrap().to_owned();
        assert_eq!(get(srv.addr, &url).await.status, 200);
        // A forged log line: newline + ESC in a tool_id, refused (and logged) many times.
        let forged = "x\n{\"level\":\"ERROR\",\"message\":\"forged\"}\u{1b}[31m";
        for _ in 0..50 {
            c.send("tool.invoke", Some(&ch), json!({"tool_id": forged, "arguments": {"connector_channel_id": ch}}))
                .await;
        }
        c.send("ping", None, json!({})).await;
        while c.recv().await["type"] != "pong" {}
        tokio::time::sleep(Duration::from_millis(300)).await;
        let logs = srv.logs();
        assert!(logs.iter().any(|l| l.contains("\"DEBUG\"")), "verbose logging was on");
        for l in &logs {
            assert!(!l.contains(KEY), "the API key leaked: {l}");
            assert!(!l.contains(TYPED), "typed text leaked: {l}");
            assert!(!l.contains(&token), "a download token leaked: {l}");
            assert!(!l.contains('\u{1b}'), "a raw escape character reached the log: {l}");
            assert!(serde_json::from_str::<serde_json::Value>(l).is_ok(), "a log line is not one JSON record: {l}");
        }
        let refusals = logs.iter().filter(|l| l.contains("tool.invoke refused")).count();
        assert!(refusals <= 2, "50 identical refusals in a burst logged {refusals} lines");
    })
    .await
    .expect("timed out");
}

/// `android_app_clear_data` refuses system packages unless the policy names them, and `android_shell` matches
/// whole commands: `dumpsys battery` does not admit `dumpsys battery set level 1`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn risky_tools_refuse_system_packages_and_extended_commands() {
    bounded(async {
        let Some((adb, sim, _serial)) = common::adb::setup().await else { return };
        let dir = tempfile::tempdir().unwrap();
        let policy = dir.path().join("policy.json");
        std::fs::write(
            &policy,
            json!({"enabled_risky_tools": ["android_app_clear_data", "android_shell"],
                   "shell_allow_prefixes": ["dumpsys battery", "settings get <arg> <arg>"],
                   "clear_data_allow_system": ["com.google.android.deskclock"]})
            .to_string(),
        )
        .unwrap();
        let srv = Server::start(
            &dir.path().join("data"),
            &["--adb-server", &format!("127.0.0.1:{}", adb.port), "--policy", policy.to_str().unwrap()],
            &[],
        );
        let mut c = ws(srv.addr, None).await;
        c.hello(None).await;
        let ch = c.bind(None).await;
        let before = sim.commands().len();
        let clear = |pkg: &str| json!({"tool_id": "android_app_clear_data", "arguments": {"connector_channel_id": ch, "package": pkg}});
        for pkg in ["android", "com.android.settings", "com.google.android.calculator"] {
            let a = c.request("tool.invoke", Some(&ch), clear(pkg)).await;
            assert_eq!(error_code(&a), "permission_denied", "{pkg}: {a}");
            assert!(a["error"]["message"].as_str().unwrap().contains("system package"), "{a}");
        }
        let shell = |cmd: &str| json!({"tool_id": "android_shell", "arguments": {"connector_channel_id": ch, "command": cmd}});
        for cmd in ["dumpsys battery set level 1", "dumpsys battery unplug", "dumpsys battery reset", "settings put global a 1"] {
            let a = c.request("tool.invoke", Some(&ch), shell(cmd)).await;
            assert_eq!(error_code(&a), "permission_denied", "{cmd}: {a}");
        }
        let ran: Vec<String> = sim.commands()[before..].to_vec();
        assert!(ran.iter().all(|c| !c.contains("pm clear") && !c.contains("battery set") && !c.contains("unplug")), "{ran:?}");
        for pkg in ["com.google.android.deskclock", "com.xagent.demo"] {
            let a = c.request("tool.invoke", Some(&ch), clear(pkg)).await;
            assert!(a.get("error").is_none(), "{pkg}: {a}");
            assert_eq!(a["payload"]["result"]["cleared"], true);
        }
        for cmd in ["dumpsys battery", "settings get global airplane_mode_on"] {
            let a = c.request("tool.invoke", Some(&ch), shell(cmd)).await;
            assert!(a.get("error").is_none(), "{cmd}: {a}");
        }
    })
    .await
    .expect("timed out");
}

/// Contract gaps: `android_device_status` reports `battery.charging` (from `dumpsys battery` status), and
/// `android_logcat` refuses `lines` beyond the documented 2000.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn battery_charging_and_logcat_bound() {
    bounded(async {
        let Some((adb, _sim, _serial)) = common::adb::setup().await else { return };
        let dir = tempfile::tempdir().unwrap();
        let srv = Server::start(dir.path(), &["--adb-server", &format!("127.0.0.1:{}", adb.port)], &[]);
        let mut c = ws(srv.addr, None).await;
        c.hello(None).await;
        let ch = c.bind(None).await;
        let s = c
            .request(
                "tool.invoke",
                Some(&ch),
                json!({"tool_id": "android_device_status", "arguments": {"connector_channel_id": ch}}),
            )
            .await;
        let battery = &s["payload"]["result"]["battery"];
        assert_eq!(battery["charging"], true, "{s}");
        assert_eq!(battery["status"], "charging", "{s}");
        let logcat =
            |n: u64| json!({"tool_id": "android_logcat", "arguments": {"connector_channel_id": ch, "lines": n}});
        let a = c.request("tool.invoke", Some(&ch), logcat(5000)).await;
        assert_eq!(error_code(&a), "invalid_arguments", "{a}");
        let a = c.request("tool.invoke", Some(&ch), logcat(2000)).await;
        assert!(a.get("error").is_none(), "{a}");
        let card = get(srv.addr, "/connector-card.json").await.json();
        let tool = card["tools"].as_array().unwrap().iter().find(|t| t["tool_id"] == "android_logcat").unwrap();
        assert_eq!(tool["input_schema"]["properties"]["lines"]["maximum"], 2000, "{tool}");
    })
    .await
    .expect("timed out");
}

/// Issue 36: one agent flooding side-effecting calls its own checks refuse (`android_app_install` of an unknown
/// `file_ref`, thousands a second) wrote an audit record and an info log line each, and pushed a real action out of
/// the retention window. Such a call sent the phone nothing (`Backend::side_effects_started` did not move): it is
/// counted into one aggregate record (`audit::reads::REFUSED_MARKER`) and its log line is rate-limited; the real
/// actions around the flood keep a record each.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_side_effects_are_counted_not_recorded_one_by_one() {
    bounded(async {
        let mut r = common::rig::Rig::start().await;
        r.ok("android_key", json!({"key": "BACK"})).await;
        const FLOOD: u64 = 400;
        let started = Instant::now();
        for i in 0..FLOOD {
            let args = json!({"file_ref": "file_0123456789abcdef01234567"});
            // Some with a tool_call_id: their idempotency records are still written, not their audit rows.
            let ack = if i % 20 == 0 {
                let ch = r.ch.clone();
                let call = format!("refused-{i}");
                let args = json!({"file_ref": "file_0123456789abcdef01234567", "connector_channel_id": ch});
                r.c.request(
                    "tool.invoke",
                    Some(&ch),
                    json!({"tool_id": "android_app_install", "arguments": args, "context": {"tool_call_id": call}}),
                )
                .await
            } else {
                r.invoke("android_app_install", args).await
            };
            assert_eq!(error_code(&ack), "invalid_arguments", "call {i}: {ack}");
        }
        let flood_took = started.elapsed();
        // The next real action takes the pending counts into the chain with it.
        r.ok("android_key", json!({"key": "HOME"})).await;
        let db = rusqlite::Connection::open_with_flags(
            r.dir.path().join("connector.db"),
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .unwrap();
        let mut st = db.prepare("SELECT tool_id, arguments, result FROM audit ORDER BY seq").unwrap();
        let rows: Vec<(String, String, String)> =
            st.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).unwrap().map(Result::unwrap).collect();
        // The bind's own records (`lease.*`, issue 47) come first; the device actions are what this test counts.
        let rows: Vec<(String, String, String)> =
            rows.into_iter().filter(|(t, _, _)| !t.starts_with("lease.")).collect();
        let tools: Vec<&str> = rows.iter().map(|(t, _, _)| t.as_str()).collect();
        eprintln!("{FLOOD} refused calls in {flood_took:?}: {} audit rows: {tools:?}", rows.len());
        assert_eq!(tools, ["android_key", "android_app_install", "android_key"], "one aggregate between the actions");
        let (_, args, result) = &rows[1];
        let a: serde_json::Value = serde_json::from_str(args).unwrap();
        assert_eq!(a["refused_calls"]["calls"], FLOOD, "{args}");
        assert_eq!(a["refused_calls"]["outcomes"], json!({"invalid_arguments": FLOOD}));
        assert_eq!(result, "invalid_arguments");
        assert!(rows[2].1.contains("HOME"), "the real action after the flood is its own record: {:?}", rows[2]);
        // A repeat of a recorded tool_call_id answers from its idempotency record.
        let ch = r.ch.clone();
        let again =
            r.c.request(
                "tool.invoke",
                Some(&ch),
                json!({"tool_id": "android_app_install",
                       "arguments": {"file_ref": "file_0123456789abcdef01234567", "connector_channel_id": ch},
                       "context": {"tool_call_id": "refused-0"}}),
            )
            .await;
        assert_eq!(error_code(&again), "invalid_arguments", "{again}");
        assert!(
            r.srv.wait_log("repeated tool_call_id: answering with the recorded outcome", Duration::from_secs(10)).await,
            "the repeat was answered from the record, not run again"
        );
        // One log line per second of flood at most, not one per call.
        let lines = r.srv.logs().iter().filter(|l| l.contains("\"message\":\"tool failed")).count() as u64;
        assert!(lines <= flood_took.as_secs() + 3, "{lines} 'tool failed' lines for {FLOOD} refused calls");
    })
    .await
    .expect("test timed out");
}

/// Issue 48 item 3: at the 1024 open files a systemd service gets by default, sockets held by a hanging webhook
/// made `accept` fail. `serve` raises its soft limit to the hard one at start (and the unit sets `LimitNOFILE`).
#[test]
fn serve_raises_its_open_files_limit_to_the_hard_one() {
    let hard: u64 = {
        let out = std::process::Command::new("sh").args(["-c", "ulimit -Hn"]).output().unwrap();
        let s = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        if s == "unlimited" {
            u64::MAX
        } else {
            s.parse().unwrap()
        }
    };
    if hard <= 256 {
        eprintln!("skipped: the hard limit here is {hard}");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let bin = env!("CARGO_BIN_EXE_xagent-adb-connector");
    // Started with a soft limit of 256, as a service with a low default would be.
    let mut child = std::process::Command::new("sh")
        .args([
            "-c",
            "ulimit -Sn 256 && exec \"$0\" serve --listen 127.0.0.1:0 --adb-server 127.0.0.1:1 --data-dir \"$1\"",
        ])
        .arg(bin)
        .arg(dir.path())
        .env_remove("XAGENT_CONNECTOR_API_KEY")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Once it listens, start-up (where the limit is raised) is over.
    use std::io::BufRead;
    let stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in stderr.lines().map_while(Result::ok) {
            if line.contains("connector listening") {
                let _ = tx.send(());
            }
        }
    });
    let started = rx.recv_timeout(Duration::from_secs(60));
    let text = std::fs::read_to_string(format!("/proc/{}/limits", child.id())).unwrap_or_default();
    let _ = child.kill();
    let _ = child.wait();
    assert!(started.is_ok(), "the connector did not start");
    let line = text.lines().find(|l| l.starts_with("Max open files")).expect("Max open files line").to_owned();
    let soft = line.split_whitespace().nth(3).unwrap_or("").to_owned();
    let want = if hard == u64::MAX { "unlimited".to_owned() } else { hard.to_string() };
    assert_eq!(soft, want, "the soft limit is raised to the hard one: {line}");
}

//! The transfer plane end to end: the real connector binary, real HTTP and WebSocket on loopback, and (for device
//! tools) the real adb server in front of the simulated phone. Bytes only ever come back through `download_url`.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::adb::*;
use common::*;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use xagent_adb_connector::sim::SimPhone;

const KEY: &str = "test-system-key-0123456789";

fn bounded<F: std::future::Future>(f: F) -> tokio::time::Timeout<F> {
    tokio::time::timeout(Duration::from_secs(120), f)
}

/// Deterministic incompressible bytes (xorshift), so sizes on the wire are real.
fn noise(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

struct Conn {
    srv: Server,
    c: Client,
    ch: String,
    key: Option<&'static str>,
    _dir: Option<tempfile::TempDir>,
}

/// A connector without a device (uploads and downloads need only a channel).
async fn conn(extra: &[&str], key: Option<&'static str>) -> Conn {
    let dir = tempfile::tempdir().unwrap();
    let env: Vec<(&str, &str)> = key.map(|k| vec![("XAGENT_CONNECTOR_API_KEY", k)]).unwrap_or_default();
    // On disk, as an operator's `--cache-dir` puts it: these tests look into the folder (the default, in memory,
    // is tests/footprint.rs's).
    let cache = dir.path().join("files");
    let mut args = vec!["--cache-dir", cache.to_str().unwrap()];
    args.extend_from_slice(extra);
    let srv = Server::start(dir.path(), &args, &env);
    let mut c = ws(srv.addr, key).await;
    c.hello(None).await;
    let (ch, _) = c.open(None).await;
    Conn { srv, c, ch, key, _dir: Some(dir) }
}

struct Rig {
    _adb: Arc<AdbServer>,
    sim: SimPhone,
    conn: Conn,
}

/// adb server + sim + connector, one channel bound to the sim.
async fn rig(extra: &[&str]) -> Rig {
    let (adb, sim, _serial) = setup().await.expect("adb is required (apt-get install adb)");
    let server = format!("127.0.0.1:{}", adb.port);
    let mut args = vec!["--adb-server", server.as_str()];
    args.extend_from_slice(extra);
    let mut conn = conn(&args, None).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let ch = conn.ch.clone();
        let a = conn.c.request("auth.start", Some(&ch), json!({"flow_id": "adb_device"})).await;
        if a["payload"]["status"] == "authenticated" {
            break;
        }
        assert!(Instant::now() < deadline, "never bound: {a}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Rig { _adb: adb, sim, conn }
}

impl Conn {
    /// Invokes a tool on `ch`, returning the ack and every `tool.progress.push` received before it.
    async fn invoke_on(&mut self, ch: &str, tool: &str, args: Value) -> (Value, Vec<Value>) {
        let mut a = args;
        a["connector_channel_id"] = json!(ch);
        let (pid, rid) = self.c.send("tool.invoke", Some(ch), json!({"tool_id": tool, "arguments": a})).await;
        let mut progress = Vec::new();
        loop {
            let v = self.c.recv().await;
            if v["request_id"] == json!(rid) {
                assert_eq!(v["reply_to"], json!(pid));
                assert_eq!(v["type"], "tool.invoke.ack", "{v}");
                let text = v.to_string();
                assert!(text.len() < 8192, "acks stay small (no file bytes on the WebSocket): {} bytes", text.len());
                return (v, progress);
            }
            if v["type"] == "tool.progress.push" {
                assert_eq!(v["connector_channel_id"], json!(ch));
                progress.push(v["payload"].clone());
            }
        }
    }

    async fn invoke(&mut self, tool: &str, args: Value) -> Value {
        let ch = self.ch.clone();
        self.invoke_on(&ch, tool, args).await.0
    }

    async fn ok(&mut self, tool: &str, args: Value) -> Value {
        let ack = self.invoke(tool, args).await;
        assert!(ack.get("error").is_none(), "{tool} failed: {ack}");
        ack["payload"]["result"].clone()
    }

    async fn upload_as(&self, ch: &str, filename: &str, mime: &str, data: &[u8]) -> HttpResponse {
        upload(self.srv.addr, self.key, Some(ch), filename, mime, data).await
    }

    async fn upload(&self, filename: &str, mime: &str, data: &[u8]) -> Value {
        let r = self.upload_as(&self.ch, filename, mime, data).await;
        assert_eq!(r.status, 200, "upload failed: {}", r.text());
        r.json()
    }
}

/// `POST /files/uploads` with a multipart body holding `file` (and the ignored optional fields).
async fn upload(
    addr: std::net::SocketAddr,
    key: Option<&str>,
    ch: Option<&str>,
    filename: &str,
    mime: &str,
    data: &[u8],
) -> HttpResponse {
    let boundary = "----xagent-test-boundary-7f3a9c";
    let mut body = Vec::new();
    body.extend_from_slice(
        format!("--{boundary}\r\nContent-Disposition: form-data; name=\"recipient_ref\"\r\n\r\nuser-1\r\n").as_bytes(),
    );
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
    let auth = key.map(|k| format!("Bearer {k}"));
    let mut headers = vec![("Content-Type", ct.as_str())];
    if let Some(a) = &auth {
        headers.push(("Authorization", a.as_str()));
    }
    if let Some(c) = ch {
        headers.push(("X-XAgent-Connector-Channel-ID", c));
    }
    http(addr, "POST", "/files/uploads", &headers, &body).await
}

/// A tool result's `download_url`: relative, carrying a long random token.
fn url_of(file: &Value) -> String {
    let url = file["download_url"].as_str().expect("download_url").to_owned();
    assert!(url.starts_with("/files/refs/file_") && url.contains("?token="), "{url}");
    let token = url.split("?token=").nth(1).unwrap();
    assert!(token.len() >= 32 && token.bytes().all(|b| b.is_ascii_hexdigit()), "≥128 random bits: {url}");
    url
}

fn green_run(img: &image::RgbImage, y: u32) -> u32 {
    (0..img.width())
        .filter(|&x| {
            let p = img.get_pixel(x, y).0;
            i32::from(p[1]) > i32::from(p[0]) + 50 && i32::from(p[1]) > i32::from(p[2]) + 50
        })
        .count() as u32
}

fn assert_no_secret_in_logs(srv: &Server, secrets: &[&str]) {
    for line in srv.logs() {
        for s in secrets {
            assert!(!line.contains(s), "a secret leaked into the log: {line}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn screenshot_is_a_one_time_download_that_shows_the_screen() {
    bounded(async {
        let mut r = rig(&[]).await;
        let shot = r.conn.ok("android_screenshot", json!({})).await;
        assert_eq!((shot["width"].as_u64(), shot["height"].as_u64()), (Some(576), Some(1280)));
        assert_eq!((shot["screen_width"].as_u64(), shot["screen_height"].as_u64()), (Some(1080), Some(2400)));
        assert!((shot["scale"].as_f64().unwrap() - 1280.0 / 2400.0).abs() < 1e-3, "{shot}");
        let file = &shot["files"][0];
        assert_eq!(file["file_type"], "image");
        assert_eq!(file["mime_type"], "image/jpeg");
        assert!(file["filename"].as_str().unwrap().ends_with(".jpg"));
        assert!(file["expires_at"].as_u64().unwrap() > 1_700_000_000_000);
        let size = file["byte_size"].as_u64().unwrap();
        assert!(size < 300_000, "a default screenshot is well under 1 MB: {size} bytes");
        let url = url_of(file);

        let got = http(r.conn.srv.addr, "GET", &url, &[], b"").await;
        assert_eq!(got.status, 200);
        assert_eq!(got.header("content-type"), Some("image/jpeg"));
        assert_eq!(got.header("content-length").and_then(|v| v.parse().ok()), Some(size));
        let cd = got.header("content-disposition").unwrap();
        assert!(cd.starts_with("attachment; filename=\"screenshot-") && cd.ends_with(".jpg\""), "{cd}");
        assert_eq!(got.body.len() as u64, size);
        let before = image::load_from_memory_with_format(&got.body, image::ImageFormat::Jpeg).unwrap().into_rgb8();
        assert_eq!(before.dimensions(), (576, 1280));
        let again = http(r.conn.srv.addr, "GET", &url, &[], b"").await;
        assert_eq!(again.status, 404, "download URLs are one-time");
        assert_eq!(again.json()["error"]["code"], "file_not_found");

        // The image is the screen: three taps on Increment grow the sim's green counter bar by 3 × 18 device px.
        let ui = r.conn.ok("android_ui_dump", json!({})).await;
        let button = ui["elements"].as_array().unwrap().iter().find(|e| e["text"] == "Increment").unwrap().clone();
        for _ in 0..3 {
            r.conn.ok("android_tap", json!({"x": button["center"][0], "y": button["center"][1]})).await;
        }
        assert_eq!(r.sim.counter(), 3);
        let shot2 = r.conn.ok("android_screenshot", json!({"quality": 90})).await;
        let got2 = http(r.conn.srv.addr, "GET", &url_of(&shot2["files"][0]), &[], b"").await;
        assert_eq!(got2.status, 200);
        let after = image::load_from_memory(&got2.body).unwrap().into_rgb8();
        let row = (1536.0 * 1280.0 / 2400.0) as u32; // middle of the sim's bar area
        assert!(green_run(&before, row) <= 2, "no bar at count 0: {}", green_run(&before, row));
        let bar = green_run(&after, row);
        assert!((24..=34).contains(&bar), "bar of ~29 image px at count 3, got {bar}");

        // Full-size PNG.
        let png = r.conn.ok("android_screenshot", json!({"format": "png", "max_side": 0})).await;
        assert_eq!((png["width"].as_u64(), png["scale"].as_f64()), (Some(1080), Some(1.0)));
        let got = http(r.conn.srv.addr, "GET", &url_of(&png["files"][0]), &[], b"").await;
        assert_eq!(got.header("content-type"), Some("image/png"));
        let img = image::load_from_memory_with_format(&got.body, image::ImageFormat::Png).unwrap();
        assert_eq!((img.width(), img.height()), (1080, 2400));

        let a = r.conn.invoke("android_screenshot", json!({"format": "gif"})).await;
        assert_eq!(error_code(&a), "invalid_arguments");
        let token = url.split("token=").nth(1).unwrap().to_owned();
        assert_no_secret_in_logs(&r.conn.srv, &[&token]);
    })
    .await
    .expect("test timed out");
}

/// Reads the status line, headers and `n` body bytes of a download, then drops the connection.
async fn partial_download(addr: std::net::SocketAddr, url: &str, n: usize) -> u16 {
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    s.write_all(format!("GET {url} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes()).await.unwrap();
    let mut buf = vec![0u8; 4096];
    let mut got = Vec::new();
    loop {
        let k = s.read(&mut buf).await.unwrap();
        assert!(k > 0, "server closed early");
        got.extend_from_slice(&buf[..k]);
        if let Some(end) = got.windows(4).position(|w| w == b"\r\n\r\n") {
            if got.len() >= end + 4 + n {
                break;
            }
        }
    }
    let status = std::str::from_utf8(&got[9..12]).unwrap().parse().unwrap();
    drop(s);
    status
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupted_download_does_not_spend_the_url() {
    bounded(async {
        let mut r = rig(&[]).await;
        let data = noise(8 << 20, 7);
        assert!(r.sim.write_file("/sdcard/Download/big.bin", &data));
        let pulled = r.conn.ok("android_file_pull", json!({"path": "/sdcard/Download/big.bin"})).await;
        assert_eq!(pulled["byte_size"], json!(data.len()));
        let url = url_of(&pulled["files"][0]);
        assert_eq!(partial_download(r.conn.srv.addr, &url, 1000).await, 200);
        // The server notices the broken connection, drops the body and releases the entry; retry until it has.
        let deadline = Instant::now() + Duration::from_secs(10);
        let full = loop {
            let got = http(r.conn.srv.addr, "GET", &url, &[], b"").await;
            if got.status != 409 || Instant::now() > deadline {
                break got;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        assert_eq!(full.status, 200, "an interrupted download left the URL valid: {}", full.text());
        assert!(full.body == data, "the complete file arrives intact");
        assert_eq!(http(r.conn.srv.addr, "GET", &url, &[], b"").await.status, 404);
    })
    .await
    .expect("test timed out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uploads_need_the_key_a_channel_and_fit_the_limit() {
    bounded(async {
        let mut k = conn(&["--upload-max-bytes", "100000"], Some(KEY)).await;
        let addr = k.srv.addr;
        let ch = k.ch.clone();
        let small = noise(50_000, 1);

        let r = upload(addr, None, Some(&ch), "a.png", "image/png", &small).await;
        assert_eq!(r.status, 401, "no key");
        let r = upload(addr, Some("wrong"), Some(&ch), "a.png", "image/png", &small).await;
        assert_eq!(r.status, 401, "wrong key");
        let r = upload(addr, Some(KEY), None, "a.png", "image/png", &small).await;
        assert_eq!((r.status, r.json()["error"]["code"].as_str()), (400, Some("connector_channel_id_required")));
        let r = upload(addr, Some(KEY), Some("cch_adb_000000000000000000000000"), "a.png", "image/png", &small).await;
        assert_eq!(r.status, 404, "unknown channel");
        let r = http(
            addr,
            "POST",
            "/files/uploads",
            &[
                ("Authorization", &format!("Bearer {KEY}")),
                ("X-XAgent-Connector-Channel-ID", &ch),
                ("Content-Type", "application/json"),
            ],
            b"{}",
        )
        .await;
        assert_eq!(r.status, 415);
        // Over the limit: refused from the declared length, and mid-stream when the length is within the slack.
        let r = upload(addr, Some(KEY), Some(&ch), "big.bin", "application/octet-stream", &noise(300_000, 2)).await;
        assert_eq!((r.status, r.json()["error"]["code"].as_str()), (413, Some("file_too_large")));
        let r = upload(addr, Some(KEY), Some(&ch), "big.bin", "application/octet-stream", &noise(120_000, 3)).await;
        assert_eq!(r.status, 413);
        let files_dir = k.srv.data_dir.join("files");
        assert_eq!(std::fs::read_dir(&files_dir).unwrap().count(), 0, "nothing left behind by refused uploads");

        let up = k.upload("../../etc/photo:1.png", "image/png", &small).await;
        assert_eq!(up["file_type"], "image");
        assert_eq!(up["filename"], "photo_1.png");
        assert_eq!(up["byte_size"], 50_000);
        assert!(up["expires_at"].as_u64().unwrap() > 1_700_000_000_000);
        let file_ref = up["file_ref"].as_str().unwrap().to_owned();
        assert_eq!(std::fs::read(files_dir.join(&file_ref)).unwrap(), small, "stored byte for byte");

        // The backend may fetch with key + owning channel; another channel is refused; without either it is 404.
        let (other, _) = k.c.open(None).await;
        let bearer = format!("Bearer {KEY}");
        let path = format!("/files/refs/{file_ref}");
        let r = http(addr, "GET", &path, &[("Authorization", &bearer), ("X-XAgent-Connector-Channel-ID", &other)], b"")
            .await;
        assert_eq!((r.status, r.json()["error"]["code"].as_str()), (403, Some("permission_denied")));
        assert_eq!(http(addr, "GET", &path, &[], b"").await.status, 404, "no token, no key");
        assert_eq!(http(addr, "GET", &format!("{path}?token=00"), &[], b"").await.status, 404, "wrong token");
        let own = [("Authorization", bearer.as_str()), ("X-XAgent-Connector-Channel-ID", ch.as_str())];
        let head = http(addr, "HEAD", &path, &own, b"").await;
        assert_eq!((head.status, head.header("content-length")), (200, Some("50000")));
        let got = http(addr, "GET", &path, &own, b"").await;
        assert_eq!(got.status, 200);
        assert_eq!(got.header("content-type"), Some("image/png"));
        assert_eq!(got.header("content-disposition"), Some("attachment; filename=\"photo_1.png\""));
        assert!(got.body == small);
        assert_eq!(http(addr, "GET", &path, &own, b"").await.status, 404, "spent");

        assert_eq!(http(addr, "GET", "/files/refs/file_0123456789abcdef01234567", &[], b"").await.status, 404);
        assert_eq!(http(addr, "GET", "/files/refs/..%2F..%2Fconnector.db", &[], b"").await.status, 404);
        assert_eq!(http(addr, "DELETE", &path, &own, b"").await.status, 405);
        assert_no_secret_in_logs(&k.srv, &[KEY]);
    })
    .await
    .expect("test timed out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_expire_survive_restarts_and_are_evicted_oldest_first() {
    bounded(async {
        let dir = tempfile::tempdir().unwrap();
        let start = |extra: &'static [&'static str]| {
            let d = dir.path().to_owned();
            async move {
                let cache = d.join("files");
                let mut args = vec!["--cache-dir", cache.to_str().unwrap()];
                args.extend_from_slice(extra);
                let srv = Server::start(&d, &args, &[]);
                let mut c = ws(srv.addr, None).await;
                c.hello(None).await;
                let (ch, _) = c.open(None).await;
                Conn { srv, c, ch, key: None, _dir: None }
            }
        };
        // Restart: a file uploaded before is still there after (same data dir), stray files are cleaned up.
        let mut k = start(&[]).await;
        let data = noise(10_000, 9);
        let up = k.upload("keep.txt", "text/plain", &data).await;
        assert_eq!(up["file_type"], "text");
        let file_ref = up["file_ref"].as_str().unwrap().to_owned();
        std::fs::write(dir.path().join("files/.staging-0badc0de"), b"half-written").unwrap();
        assert!(k.srv.term(Duration::from_secs(10)).is_some(), "graceful stop");
        drop(k);
        let k = start(&[]).await;
        let mut names: Vec<String> = std::fs::read_dir(dir.path().join("files"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, vec![file_ref.clone()], "the staging leftover was removed, the file kept");
        drop(k);

        // Expiry: with a 1 s TTL a fresh download URL is dead after 1.5 s (a tool makes one).
        let (adb, _sim, _) = setup().await.expect("adb");
        let server = format!("127.0.0.1:{}", adb.port);
        let d2 = tempfile::tempdir().unwrap();
        let srv =
            Server::start(d2.path(), &["--adb-server", &server, "--file-ttl", "1s", "--cache-max-files", "2"], &[]);
        let mut c = ws(srv.addr, None).await;
        c.hello(None).await;
        let (ch, _) = c.open(None).await;
        let mut k = Conn { srv, c, ch, key: None, _dir: None };
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let ch = k.ch.clone();
            let a = k.c.request("auth.start", Some(&ch), json!({"flow_id": "adb_device"})).await;
            if a["payload"]["status"] == "authenticated" {
                break;
            }
            assert!(Instant::now() < deadline, "never bound: {a}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let shot = k.ok("android_screenshot", json!({"max_side": 200})).await;
        let url = url_of(&shot["files"][0]);
        tokio::time::sleep(Duration::from_millis(1500)).await;
        assert_eq!(http(k.srv.addr, "GET", &url, &[], b"").await.status, 404, "expired");

        drop(k);

        // Eviction: capacity 2 files; a third evicts the oldest (checked with HEAD, which does not spend).
        let k = conn(&["--cache-max-files", "2"], Some(KEY)).await;
        let mut refs = Vec::new();
        for i in 0..3u64 {
            refs.push(
                k.upload(&format!("f{i}.bin"), "application/octet-stream", &noise(1000, i)).await["file_ref"].clone(),
            );
        }
        let bearer = format!("Bearer {KEY}");
        let mut status = Vec::new();
        for r in &refs {
            let path = format!("/files/refs/{}", r.as_str().unwrap());
            let own = [("Authorization", bearer.as_str()), ("X-XAgent-Connector-Channel-ID", k.ch.as_str())];
            status.push(http(k.srv.addr, "HEAD", &path, &own, b"").await.status);
        }
        assert_eq!(std::fs::read_dir(k.srv.data_dir.join("files")).unwrap().count(), 2);
        assert_eq!(status, vec![404, 200, 200], "oldest evicted first");
    })
    .await
    .expect("test timed out");
}

/// Issue 36: eviction was oldest-first across channels, so 2,001 one-byte uploads of one channel made another
/// agent's one-time screenshot URL answer 404 before it was downloaded. Each channel now has an equal share of
/// the cache; the flooding channel evicts its own oldest files, never the files of a channel within its share.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_channel_cannot_evict_another_channels_files() {
    bounded(async {
        const MAX_FILES: u64 = 20;
        let mut r = rig(&["--cache-max-files", "20"]).await;
        let shot = r.conn.ok("android_screenshot", json!({"max_side": 200})).await;
        let url = url_of(&shot["files"][0]);
        // Another channel (an upload needs only a channel) floods the cache with ten times its capacity.
        let (flooder, _) = r.conn.c.open(None).await;
        let mut refs = Vec::new();
        for i in 0..MAX_FILES * 10 {
            let up = r.conn.upload_as(&flooder, &format!("f{i}.bin"), "application/octet-stream", b"x").await;
            assert_eq!(up.status, 200, "upload {i}: {}", up.text());
            refs.push(up.json()["file_ref"].as_str().unwrap().to_owned());
        }
        let names: std::collections::HashSet<String> = std::fs::read_dir(r.conn.srv.data_dir.join("files"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        eprintln!("after {} uploads of one channel the cache holds {} files", refs.len(), names.len());
        assert_eq!(names.len() as u64, MAX_FILES, "the cache stays at its capacity");
        assert!(names.contains(shot["files"][0]["file_ref"].as_str().unwrap()), "the screenshot is still cached");
        // The flooder's own files went, oldest first: it keeps its newest uploads, in every place but one.
        let kept: Vec<usize> = (0..refs.len()).filter(|&i| names.contains(&refs[i])).collect();
        let newest: Vec<usize> = (refs.len() - MAX_FILES as usize + 1..refs.len()).collect();
        assert_eq!(kept, newest, "the flooder's newest {} uploads are kept", MAX_FILES - 1);
        let addr = r.conn.srv.addr;
        // The other channel's screenshot, never downloaded, is still there: its one-time URL works.
        let got = http(addr, "GET", &url, &[], b"").await;
        assert_eq!(got.status, 200, "the screenshot was evicted by another channel's uploads");
        image::load_from_memory_with_format(&got.body, image::ImageFormat::Jpeg).expect("the screenshot");
    })
    .await
    .expect("test timed out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uploaded_apks_install_with_progress_and_report_failures() {
    bounded(async {
        let mut r = rig(&[]).await;
        let before: Vec<Value> = r.conn.ok("android_app_list", json!({})).await["packages"].as_array().unwrap().clone();
        let mut apk = b"PK\x03\x04".to_vec();
        apk.extend(noise(3 << 20, 4));
        let up = r.conn.upload("hello.apk", "application/vnd.android.package-archive", &apk).await;
        assert_eq!(up["file_type"], "apk");
        let ch = r.conn.ch.clone();
        let (ack, progress) = r.conn.invoke_on(&ch, "android_app_install", json!({"file_ref": up["file_ref"]})).await;
        assert!(ack.get("error").is_none(), "{ack}");
        assert_eq!(ack["payload"]["result"]["installed"], true);
        assert!(progress.len() >= 3, "progress while copying and installing: {progress:?}");
        let fractions: Vec<f64> = progress.iter().filter_map(|p| p["progress"].as_f64()).collect();
        assert!(fractions.windows(2).all(|w| w[0] <= w[1]), "monotonic: {fractions:?}");
        assert!(progress.iter().all(|p| p["tool_id"] == "android_app_install" && p["status"] == "running"));
        assert!(r.sim.commands().iter().any(|c| c.starts_with("rm -f '/data/local/tmp/xagent-install-")));

        // The installer's own reason comes back.
        let mut old = b"PK\x03\x04".to_vec();
        old.extend_from_slice(b" minSdkVersion=99 ");
        let up2 = r.conn.upload("new.apk", "application/octet-stream", &old).await;
        let a = r.conn.invoke("android_app_install", json!({"file_ref": up2["file_ref"]})).await;
        assert_eq!(error_code(&a), "tool_invoke_failed");
        assert!(a["error"]["message"].as_str().unwrap().contains("INSTALL_FAILED_OLDER_SDK"), "{a}");
        // Not an APK.
        let txt = r.conn.upload("notes.apk", "text/plain", b"just text").await;
        let a = r.conn.invoke("android_app_install", json!({"file_ref": txt["file_ref"]})).await;
        assert_eq!(error_code(&a), "invalid_arguments");
        // Another channel's upload.
        let (other, _) = r.conn.c.open(None).await;
        let theirs = r.conn.upload_as(&other, "theirs.apk", "application/octet-stream", &apk).await.json();
        let a = r.conn.invoke("android_app_install", json!({"file_ref": theirs["file_ref"]})).await;
        assert_eq!(error_code(&a), "permission_denied");
        let a = r.conn.invoke("android_app_install", json!({"file_ref": "file_0123456789abcdef01234567"})).await;
        assert_eq!(error_code(&a), "invalid_arguments");
        // The installer's words are the phone's: printable only (issue 36 item 4), a line's worth, never an escape.
        r.sim.answer("pm install", "Failure [INSTALL_FAILED_\u{1b}[2K\u{1b}[1AEVIL\u{9b}31m\u{7}\u{202e}X]\n", "", 1);
        let up3 = r.conn.upload("evil.apk", "application/octet-stream", &old).await;
        let a = r.conn.invoke("android_app_install", json!({"file_ref": up3["file_ref"]})).await;
        let msg = a["error"]["message"].as_str().unwrap();
        assert_eq!(msg, "install failed: INSTALL_FAILED_[2K[1AEVIL31mX", "{a}");

        let after: Vec<Value> = r.conn.ok("android_app_list", json!({})).await["packages"].as_array().unwrap().clone();
        let new: Vec<&Value> = after.iter().filter(|p| !before.contains(p)).collect();
        assert_eq!(new, vec![&json!("com.sim.installed.app1")], "exactly the one good APK got installed");
    })
    .await
    .expect("test timed out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_round_trip_through_the_phone_and_paths_are_confined() {
    bounded(async {
        let mut r = rig(&[]).await;
        let data = noise(300_000, 5);
        let up = r.conn.upload("data.bin", "application/octet-stream", &data).await;
        let res = r
            .conn
            .ok("android_file_push", json!({"file_ref": up["file_ref"], "path": "/sdcard/Download/data.bin"}))
            .await;
        assert_eq!(res, json!({"path": "/sdcard/Download/data.bin", "byte_size": 300_000}));
        assert!(r.sim.read_file("/sdcard/Download/data.bin").unwrap() == data, "pushed byte for byte");

        let pic = noise(70_000, 6);
        assert!(r.sim.write_file("/sdcard/DCIM/pic.png", &pic));
        let pulled = r.conn.ok("android_file_pull", json!({"path": "/sdcard/DCIM/pic.png"})).await;
        let f = &pulled["files"][0];
        assert_eq!((f["file_type"].as_str(), f["filename"].as_str()), (Some("image"), Some("pic.png")));
        let got = http(r.conn.srv.addr, "GET", &url_of(f), &[], b"").await;
        assert_eq!(got.status, 200);
        assert!(got.body == pic, "pulled byte for byte");

        for bad in [
            "/sdcard/../data/system/users.xml",
            "/data/local/tmp/../../system/x",
            "sdcard/x",
            "/sdcard//x",
            "/sdcard/a\\b",
            "/sdcard/a\u{0}b",
            "/data/data/com.android.settings/x",
            "/sdcard/./x",
            "/proc/self/environ",
        ] {
            let a = r.conn.invoke("android_file_pull", json!({"path": bad})).await;
            assert_eq!(error_code(&a), "invalid_arguments", "pull {bad:?}: {a}");
            let a = r.conn.invoke("android_file_push", json!({"file_ref": up["file_ref"], "path": bad})).await;
            assert_eq!(error_code(&a), "invalid_arguments", "push {bad:?}: {a}");
        }
        let a = r.conn.invoke("android_file_pull", json!({"path": "/sdcard/nope.txt"})).await;
        assert_eq!(error_code(&a), "invalid_arguments");
        assert!(a["error"]["message"].as_str().unwrap().contains("does not exist"), "{a}");
        let a = r.conn.invoke("android_file_pull", json!({"path": "/sdcard/Download"})).await;
        assert_eq!(error_code(&a), "invalid_arguments");
        assert!(r.sim.read_file("/data/system/users.xml").is_none());
    })
    .await
    .expect("test timed out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_log_comes_back_as_a_text_file() {
    bounded(async {
        let mut r = rig(&[]).await;
        let small = r.conn.ok("android_logcat", json!({"lines": 20})).await;
        assert!(small["lines"].is_array() && small.get("files").is_none(), "{small}");
        for i in 0..800 {
            r.sim.log('I', "BulkTest", &format!("line {i:04} {}", "x".repeat(120)));
        }
        let big = r.conn.ok("android_logcat", json!({"lines": 2000, "tag": "BulkTest"})).await;
        assert!(big.get("lines").is_none(), "no inline lines when over 64 KiB");
        assert_eq!(big["count"], 800);
        let f = &big["files"][0];
        assert_eq!(f["file_type"], "text");
        let got = http(r.conn.srv.addr, "GET", &url_of(f), &[], b"").await;
        assert_eq!(got.status, 200);
        let text = got.text();
        assert!(text.len() > 64 * 1024);
        assert!(text.contains("line 0000") && text.contains("line 0799"));
    })
    .await
    .expect("test timed out");
}

/// Measures the three capture paths on the sim (run with `cargo test --release --test files -- --ignored`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore]
async fn screenshot_capture_paths_benchmark() {
    use xagent_adb_connector::device::adb::AdbBackend;
    use xagent_adb_connector::device::DeviceKey;
    use xagent_adb_connector::pixels::capture::{capture, CapturePath};
    let (adb, _sim, serial) = setup().await.expect("adb");
    let backend = AdbBackend::new(vec![format!("127.0.0.1:{}", adb.port).parse().unwrap()]);
    let key = DeviceKey { server: format!("127.0.0.1:{}", adb.port), serial };
    let mut reference = None;
    for path in [CapturePath::Raw, CapturePath::Png, CapturePath::Framebuffer] {
        let mut ms = Vec::new();
        let mut bytes = 0;
        for _ in 0..11 {
            let t = Instant::now();
            let c = capture(&backend, &key, path, 0, Duration::from_secs(30)).await.unwrap();
            ms.push(t.elapsed().as_secs_f64() * 1000.0);
            bytes = c.wire_bytes;
            match &reference {
                None => reference = Some(c.picture.fit(0)),
                Some(r) => assert!(*r == c.picture.fit(0), "{path:?} decodes to the same pixels"),
            }
        }
        ms.sort_by(|a, b| a.partial_cmp(b).unwrap());
        println!("{path:?}: median {:.1} ms (min {:.1}, max {:.1}), {bytes} bytes over adb", ms[5], ms[0], ms[10]);
    }
}

/// The three capture paths agree pixel for pixel (cheap correctness check of the benchmark's subject).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn capture_paths_agree() {
    bounded(async {
        use xagent_adb_connector::device::adb::AdbBackend;
        use xagent_adb_connector::device::DeviceKey;
        use xagent_adb_connector::pixels::capture::{capture, CapturePath, Picture};
        use xagent_adb_connector::pixels::downscale::area_downscale;
        let (adb, _sim, serial) = setup().await.expect("adb");
        let backend = AdbBackend::new(vec![format!("127.0.0.1:{}", adb.port).parse().unwrap()]);
        let key = DeviceKey { server: format!("127.0.0.1:{}", adb.port), serial };
        let raw = capture(&backend, &key, CapturePath::Raw, 0, Duration::from_secs(30)).await.unwrap();
        assert_eq!(raw.picture.dimensions(), (1080, 2400));
        assert_eq!(raw.wire_bytes, 16 + 1080 * 2400 * 4);
        let raw = raw.picture.fit(0);
        for path in [CapturePath::Png, CapturePath::Framebuffer, CapturePath::Gzip, CapturePath::Auto] {
            let other = capture(&backend, &key, path, 0, Duration::from_secs(30)).await.unwrap();
            if path == CapturePath::Gzip {
                assert!(other.wire_bytes * 20 < raw.len(), "gzip moved {} bytes", other.wire_bytes);
            }
            assert!(other.picture.fit(0) == raw, "{path:?} differs from the raw capture");
        }
        // Asked for a smaller picture, the parallel capture and the framebuffer downscale their rows as they
        // arrive (the frame is never held whole): the same pixels as the whole raw frame downscaled, whatever the
        // layout of the parallel capture's ranges.
        for path in [CapturePath::GzipParallel, CapturePath::Framebuffer] {
            for (side, want) in [(1280, (576, 1280)), (1000, (450, 1000)), (777, (350, 777))] {
                let fitted = capture(&backend, &key, path, side, Duration::from_secs(30)).await.unwrap();
                assert!(matches!(fitted.picture, Picture::Fitted(_)), "{path:?} {side}: downscaled as it arrived");
                assert_eq!(fitted.picture.dimensions(), (1080, 2400), "{path:?} {side}: the frame's own size");
                let img = fitted.picture.fit(side);
                assert_eq!(img.dimensions(), want);
                assert!(img == area_downscale(&raw, want.0, want.1), "{path:?} {side}: the fitted picture differs");
            }
        }
    })
    .await
    .expect("test timed out");
}

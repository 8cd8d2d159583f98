//! One login per operator (issue 50): the `users` command and its file, and viewer / operator / admin through the
//! wall in a real browser (headless Chromium) against the real binary, a real adb server and a simulated phone,
//! with the audit naming each operator; a trusted proxy's header only from the trusted addresses.

mod common;
mod wall_support;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::adb::blocking;
use common::*;
use serde_json::{json, Value};
use wall_support::browser::*;
use wall_support::*;

const BIN: &str = env!("CARGO_BIN_EXE_xagent-adb-connector");

/// Runs `users ARGS --data-dir DIR` with `stdin` as its input: (exit code, stdout, stderr).
fn users(dir: &Path, args: &[&str], stdin: &str) -> (i32, String, String) {
    let mut child = Command::new(BIN)
        .arg("users")
        .args(args)
        .arg("--data-dir")
        .arg(dir)
        .env_remove("XAGENT_ADB_DATA_DIR")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // A command that refuses before it reads the password (a taken name, a bad role) may have exited already: the
    // pipe is closed then, which is not this helper's failure — the exit code and stderr say what happened.
    if let Err(e) = child.stdin.take().unwrap().write_all(stdin.as_bytes()) {
        assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe, "writing the password to `users`: {e}");
    }
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_users_command_adds_lists_and_removes_operators_in_a_private_file() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let (code, out, err) = users(&dir, &["add", "ana", "--role", "operator"], "ana-secret-pw\n");
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("added operator ana (operator)"), "{out}");
    let file = dir.join("users.json");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
    }
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(!text.contains("ana-secret-pw"), "the password itself is never stored: {text}");
    assert!(text.contains("pbkdf2-sha256") && text.contains("\"salt\""), "{text}");

    // Refused, with a clear word and nothing changed: a taken name, a short password, a bad name, a bad role,
    // and no password at all.
    let (code, _, err) = users(&dir, &["add", "ana", "--role", "viewer"], "another-pw-1\n");
    assert_eq!(code, 1);
    assert!(err.contains("exists already") && err.contains("--replace"), "{err}");
    let (code, _, err) = users(&dir, &["add", "bob", "--role", "viewer"], "short\n");
    assert_eq!(code, 1);
    assert!(err.contains("too short") && !err.contains("short\n"), "{err}");
    let (code, _, err) = users(&dir, &["add", "bob smith", "--role", "viewer"], "long-enough-pw\n");
    assert_ne!(code, 0);
    assert!(err.contains("not allowed"), "{err}");
    let (code, _, err) = users(&dir, &["add", "bob", "--role", "root"], "long-enough-pw\n");
    assert_ne!(code, 0);
    assert!(err.contains("viewer") && err.contains("admin"), "{err}");
    let (code, _, err) = users(&dir, &["add", "bob", "--role", "viewer"], "");
    assert_eq!(code, 1);
    assert!(err.contains("no password"), "{err}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), text, "no refused command touched the file");

    let (code, _, err) = users(&dir, &["add", "bob", "--role", "viewer"], "bob-secret-pw\n");
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = users(&dir, &["add", "ana", "--role", "admin", "--replace"], "ana-new-pw-22\n");
    assert_eq!(code, 0, "{err}");
    let (code, out, _) = users(&dir, &["list"], "");
    assert_eq!(code, 0);
    let rows: Vec<Vec<&str>> = out.lines().skip(1).map(|l| l.split_whitespace().take(2).collect()).collect();
    assert_eq!(rows, vec![vec!["ana", "admin"], vec!["bob", "viewer"]], "{out}");
    assert!(!out.contains("pbkdf2") && !out.contains("salt"), "{out}");

    let (code, out, _) = users(&dir, &["remove", "bob"], "");
    assert_eq!(code, 0, "{out}");
    let (code, _, err) = users(&dir, &["remove", "bob"], "");
    assert_eq!(code, 1);
    assert!(err.contains("no operator \"bob\""), "{err}");
    let (_, out, _) = users(&dir, &["list"], "");
    assert!(out.contains("ana") && !out.contains("bob"), "{out}");
}

/// A login request without the harness's 10 s budget: a password check is 600,000 PBKDF2 rounds on purpose, which
/// takes seconds in a debug build on a loaded box. What is asserted is the answer, never how fast it came.
async fn login_request(addr: std::net::SocketAddr, body: &[u8]) -> HttpResponse {
    let json = [("Content-Type", "application/json")];
    http_within(addr, "POST", "/api/v1/session", &json, body, Duration::from_secs(180)).await
}

/// Logs in through the API as `user`: (status, body, cookie, csrf).
async fn login(addr: std::net::SocketAddr, user: &str, password: &str) -> (u16, Value, String, String) {
    let body = json!({"user": user, "password": password}).to_string();
    let r = login_request(addr, body.as_bytes()).await;
    let cookie = r.header("set-cookie").map(|c| c.split(';').next().unwrap().to_owned()).unwrap_or_default();
    let v = r.json();
    let csrf = v["csrf_token"].as_str().unwrap_or_default().to_owned();
    (r.status, v, cookie, csrf)
}

async fn post(addr: std::net::SocketAddr, path: &str, cookie: &str, csrf: &str) -> HttpResponse {
    let h = [("Cookie", cookie), ("X-CSRF-Token", csrf), ("Content-Type", "application/json")];
    http(addr, "POST", path, &h, b"{}").await
}

/// Logs the page in through the form as `user` and waits for the phone's card.
async fn browser_login(cdp: &mut Cdp, addr: std::net::SocketAddr, user: &str, password: &str) {
    cdp.call("Page.navigate", json!({"url": format!("http://{addr}/")})).await;
    cdp.wait_for("!!document.querySelector('#login') && !document.querySelector('#login').hidden", T, "login form")
        .await;
    cdp.eval(&format!(
        "document.querySelector('#user').value = '{user}'; document.querySelector('#password').value = '{password}'; \
         document.querySelector('#login button[type=submit]').click(); 1"
    ))
    .await;
    // A password check takes seconds on a loaded box (see `login_request`): a generous bound, not a budget.
    cdp.wait_for("document.querySelectorAll('.card').length === 1", Duration::from_secs(180), "the phone's card").await;
    let who = cdp.eval("document.querySelector('#whoami').textContent").await;
    assert!(who.as_str().unwrap_or_default().starts_with(user), "the page names who is logged in: {who}");
    cdp.eval("document.querySelector('.card').click(); 1").await;
    cdp.wait_for(
        "document.querySelector('#detail').open && document.querySelector('#d-facts').textContent.includes('serial')",
        Duration::from_secs(30),
        "the detail view",
    )
    .await;
}

async fn logout(cdp: &mut Cdp) {
    cdp.eval("document.querySelector('#logout').click(); 1").await;
    cdp.wait_for("!document.querySelector('#login').hidden", T, "the login form after logout").await;
}

/// `audit tail --json` of the running connector's data dir: the operator records (tool, by).
fn operator_records(data_dir: &Path) -> Vec<(String, String)> {
    let out = Command::new(BIN)
        .args(["audit", "tail", "--json", "-n", "200", "--data-dir"])
        .arg(data_dir)
        .env_remove("XAGENT_ADB_DATA_DIR")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|r| r["tool_id"].as_str().is_some_and(|t| t.starts_with("operator.")))
        .map(|r| (r["tool_id"].as_str().unwrap().to_owned(), r["arguments"]["by"].as_str().unwrap_or("").to_owned()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn viewer_operator_and_admin_in_a_real_browser_each_audited_by_name() {
    tokio::time::timeout(Duration::from_secs(1200), async {
        let r = rig(&[(720, 1600)], true).await;
        let data = r.srv.data_dir.clone();
        for (name, role, pw) in
            [("vera", "viewer", "vera-pw-123"), ("otto", "operator", "otto-pw-123"), ("ada", "admin", "ada-pw-1234")]
        {
            let (code, _, err) = blocking({
                let data = data.clone();
                move || users(&data, &["add", name, "--role", role], &format!("{pw}\n"))
            })
            .await;
            assert_eq!(code, 0, "{err}");
        }
        r.wait_all_online().await;
        let sim = &r.sims[0];
        let serial = sim.serial();
        let id = r.id_of(&serial).await;
        let mut agent = ws(r.srv.addr, Some(KEY)).await;
        agent.hello(None).await;
        let ch = agent.bind(Some(&serial)).await;

        // A wrong password: 401 in clear words, and the password in no answer and no log line.
        let (status, body, _, _) = login(r.srv.addr, "otto", "not-otto-pw-9").await;
        assert_eq!(status, 401, "{body}");
        assert_eq!(body["error"]["message"], "wrong user name or password");
        let (status, _, _, _) = login(r.srv.addr, "nobody", "whatever-pw-1").await;
        assert_eq!(status, 401);

        let browser = Browser::launch();
        let mut cdp = Cdp::connect(&browser.ws_url).await;
        cdp.page().await;

        // The viewer sees the wall and the phone, and no button to act: no Take over, no Release.
        browser_login(&mut cdp, r.srv.addr, "vera", "vera-pw-123").await;
        let buttons = cdp
            .eval(
                "[document.querySelector('#d-take').hidden, document.querySelector('#d-release').hidden, \
                 document.querySelector('#d-return').hidden]",
            )
            .await;
        assert_eq!(buttons, json!([true, true, true]), "a viewer has no takeover, release or return button");
        let shown = cdp.eval("document.querySelector('#d-facts').textContent").await;
        assert!(shown.as_str().unwrap().contains(&serial), "the viewer sees the phone: {shown}");
        logout(&mut cdp).await;
        // And the API refuses the viewer's takeover and release with 403 saying why.
        let (status, who, vera_cookie, csrf) = login(r.srv.addr, "vera", "vera-pw-123").await;
        let cookie = vera_cookie.clone();
        assert_eq!((status, who["user"].as_str(), who["role"].as_str()), (200, Some("vera"), Some("viewer")));
        let t = post(r.srv.addr, &format!("/api/v1/devices/{id}/takeover"), &cookie, &csrf).await;
        assert_eq!(t.status, 403, "{}", t.text());
        assert_eq!(t.json()["error"]["code"], "permission_denied");
        assert!(t.text().contains("vera is a viewer"), "{}", t.text());
        let rel = post(r.srv.addr, &format!("/api/v1/devices/{id}/release"), &cookie, &csrf).await;
        assert_eq!(rel.status, 403, "{}", rel.text());
        assert!(agent.tap(&ch, 10, 10).await.get("error").is_none(), "the viewer changed nothing for the agent");

        // The operator takes over (the agent is refused) and returns; no Release button, and the API refuses it.
        browser_login(&mut cdp, r.srv.addr, "otto", "otto-pw-123").await;
        assert_eq!(cdp.eval("document.querySelector('#d-release').hidden").await, json!(true));
        cdp.wait_for("!document.querySelector('#d-take').hidden", T, "the Take over button").await;
        cdp.eval("document.querySelector('#d-take').click(); 1").await;
        cdp.wait_for("!document.querySelector('#d-return').hidden", T, "the Return button").await;
        assert_eq!(error_code(&agent.tap(&ch, 10, 10).await), "operator_control");
        cdp.eval("document.querySelector('#d-return').click(); 1").await;
        cdp.wait_for("document.querySelector('#d-return').hidden", T, "the phone returned").await;
        assert!(agent.tap(&ch, 10, 10).await.get("error").is_none(), "the agent acts again after the return");
        logout(&mut cdp).await;
        let (_, _, cookie, csrf) = login(r.srv.addr, "otto", "otto-pw-123").await;
        let rel = post(r.srv.addr, &format!("/api/v1/devices/{id}/release"), &cookie, &csrf).await;
        assert_eq!(rel.status, 403, "{}", rel.text());
        assert!(rel.text().contains("only an admin"), "{}", rel.text());

        // The admin releases the agent's binding from the page.
        browser_login(&mut cdp, r.srv.addr, "ada", "ada-pw-1234").await;
        cdp.wait_for("!document.querySelector('#d-release').hidden", T, "the Release button").await;
        cdp.eval("window.confirm = () => true; document.querySelector('#d-release').click(); 1").await;
        cdp.wait_for("document.querySelector('#d-msg').textContent === 'Released.'", T, "release confirmation").await;
        assert_eq!(error_code(&agent.tap(&ch, 10, 10).await), "connection_not_authenticated", "the binding is gone");

        // A removed operator's session ends at once (the file is read again when it changed).
        let (k, v) = ("Cookie", vera_cookie.as_str());
        assert_eq!(http(r.srv.addr, "GET", "/api/v1/devices", &[(k, v)], b"").await.status, 200);
        let (code, _, err) = blocking({
            let data = data.clone();
            move || users(&data, &["remove", "vera"], "")
        })
        .await;
        assert_eq!(code, 0, "{err}");
        let gone = http(r.srv.addr, "GET", "/api/v1/devices", &[(k, v)], b"").await;
        assert_eq!(gone.status, 401, "a removed operator's session ends: {}", gone.text());

        // The audit names each operator; no password anywhere in the log.
        let recs = operator_records(&data);
        for want in [("operator.takeover", "otto"), ("operator.return", "otto"), ("operator.release", "ada")] {
            assert!(recs.iter().any(|(t, by)| (t.as_str(), by.as_str()) == want), "{want:?} in the audit: {recs:?}");
        }
        assert!(recs.iter().all(|(_, by)| by != "session" && !by.is_empty()), "{recs:?}");
        let logs = r.srv.logs().join("\n");
        for pw in ["vera-pw-123", "otto-pw-123", "ada-pw-1234", "not-otto-pw-9"] {
            assert!(!logs.contains(pw), "a password in the log");
        }
        assert!(logs.contains("otto") && logs.contains("operator took the phone over"), "the log names the operator");
    })
    .await
    .expect("the test finished in time");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trusted_proxy_header_names_the_operator_only_from_the_trusted_addresses() {
    let header = ["--trusted-user-header", "X-Forwarded-User"];
    // Trusted: loopback is the proxy. The name's role comes from the users file; a name without one is a viewer.
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let (code, _, err) = users(&data, &["add", "ana", "--role", "operator"], "ana-secret-pw\n");
    assert_eq!(code, 0, "{err}");
    let key = tmp.path().join("key");
    std::fs::write(&key, format!("{KEY}\n")).unwrap();
    let kf = key.to_str().unwrap();
    let mut args = vec!["--api-key-file", kf];
    args.extend(header);
    args.extend(["--trusted-proxy", "127.0.0.1/32"]);
    let srv = Server::start(&data, &args, &[]);
    let s = http(srv.addr, "GET", "/api/v1/session", &[("X-Forwarded-User", "ana")], b"").await;
    assert_eq!(s.status, 200, "{}", s.text());
    let v = s.json();
    assert_eq!(
        (v["authenticated"].as_bool(), v["user"].as_str(), v["role"].as_str()),
        (Some(true), Some("ana"), Some("operator")),
        "{v}"
    );
    assert!(v["csrf_token"].as_str().is_some() && s.header("set-cookie").is_some(), "a session for the page: {v}");
    let v = http(srv.addr, "GET", "/api/v1/session", &[("X-Forwarded-User", "zoe")], b"").await.json();
    assert_eq!((v["user"].as_str(), v["role"].as_str()), (Some("zoe"), Some("viewer")), "{v}");
    let d = http(srv.addr, "GET", "/api/v1/devices", &[("X-Forwarded-User", "zoe")], b"").await;
    assert_eq!(d.status, 200, "a proxied viewer reads the wall: {}", d.text());
    let v = http(srv.addr, "GET", "/api/v1/session", &[], b"").await.json();
    assert_eq!(v["authenticated"], false, "no header, no login: {v}");
    drop(srv);

    // Not trusted: the same header from an address outside --trusted-proxy is ignored.
    let data2 = tmp.path().join("data2");
    let mut args = vec!["--api-key-file", kf];
    args.extend(header);
    args.extend(["--trusted-proxy", "10.0.0.0/8"]);
    let srv = Server::start(&data2, &args, &[]);
    let v = http(srv.addr, "GET", "/api/v1/session", &[("X-Forwarded-User", "ana")], b"").await.json();
    assert_eq!(v["authenticated"], false, "a header from an untrusted address is ignored: {v}");
    let d = http(srv.addr, "GET", "/api/v1/devices", &[("X-Forwarded-User", "ana")], b"").await;
    assert_eq!(d.status, 401, "{}", d.text());

    // The header alone, without --trusted-proxy, is a configuration error.
    let out = Command::new(BIN).args(["serve", "--trusted-user-header", "X-Forwarded-User"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
}

//! The devices API behind the operator's wall, over real HTTP against the real binary, a real adb server and
//! simulated phones: authentication on every route, CSRF on the state-changing ones, Release through the hub's
//! logout path, the thumbnail cache and its rate limit, agents first.

mod common;
mod wall_support;

use std::time::{Duration, Instant};

use common::*;
use serde_json::{json, Value};
use wall_support::*;
use xagent_adb_connector::sim::Fault;

fn bounded<F: std::future::Future>(f: F) -> tokio::time::Timeout<F> {
    tokio::time::timeout(Duration::from_secs(120), f)
}

async fn descriptor_push(c: &mut Client) -> Value {
    loop {
        let v = c.recv().await;
        if v["type"] == "connection.descriptor.push" {
            return v["payload"]["connection_descriptor"].clone();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_route_needs_auth_and_release_needs_csrf() {
    bounded(async {
        let r = rig(&[(1080, 2400)], true).await;
        let serial = r.sims[0].serial();
        r.wait_all_online().await;
        let id = r.id_of(&serial).await;
        let addr = r.srv.addr;

        // Without credentials, and with a wrong key, every data route answers 401 with a JSON error.
        let routes = [
            ("GET", "/api/v1/devices".to_owned()),
            ("GET", format!("/api/v1/devices/{id}")),
            ("GET", format!("/api/v1/devices/{id}/screen.jpg")),
            ("POST", format!("/api/v1/devices/{id}/release")),
            ("GET", "/api/v1/events".to_owned()),
            ("DELETE", "/api/v1/session".to_owned()),
        ];
        for (m, p) in &routes {
            for headers in [vec![], vec![("Authorization", "Bearer wrong-key")], vec![("Cookie", "xagent_wall=forged")]]
            {
                let resp = http(addr, m, p, &headers, b"").await;
                assert_eq!(resp.status, 401, "{m} {p} {headers:?}: {}", resp.text());
                assert_eq!(error_code(&resp.json()), "unauthorized", "{m} {p}");
            }
        }
        // The page itself carries no data and is public; the session probe says a login is needed.
        let page = get(addr, "/").await;
        assert_eq!(page.status, 200);
        assert!(page.header("content-type").unwrap().starts_with("text/html"));
        assert!(page.body.len() <= 60 * 1024, "the page must stay within 60 KB: {} bytes", page.body.len());
        assert!(!page.text().contains(&serial));
        let s = get(addr, "/api/v1/session").await.json();
        assert_eq!(s, json!({"authenticated": false, "key_required": true, "csrf_token": null}));

        // Login: a wrong key is refused; the right one gives an HttpOnly, SameSite=Strict, expiring cookie.
        let bad =
            http(addr, "POST", "/api/v1/session", &[("Content-Type", "application/json")], br#"{"api_key":"nope"}"#)
                .await;
        assert_eq!(bad.status, 401);
        assert!(bad.header("set-cookie").is_none());
        let form = http(addr, "POST", "/api/v1/session", &[], format!("api_key={KEY}").as_bytes()).await;
        assert_eq!(form.status, 415, "only JSON logins: {}", form.text());
        let login = http(
            addr,
            "POST",
            "/api/v1/session",
            &[("Content-Type", "application/json")],
            json!({"api_key": KEY}).to_string().as_bytes(),
        )
        .await;
        assert_eq!(login.status, 200);
        let set = login.header("set-cookie").unwrap();
        for attr in ["HttpOnly", "SameSite=Strict", "Max-Age=43200", "Path=/"] {
            assert!(set.contains(attr), "cookie lacks {attr}: {set}");
        }
        assert!(!set.contains(KEY) && !login.text().contains(KEY), "the key never goes back to the browser");
        let cookie = set.split(';').next().unwrap().to_owned();
        let csrf = login.json()["csrf_token"].as_str().unwrap().to_owned();
        assert_eq!(csrf.len(), 64);
        let s = http(addr, "GET", "/api/v1/session", &[("Cookie", &cookie)], b"").await.json();
        assert_eq!(s["csrf_token"], json!(csrf));

        // An agent holds the phone.
        let mut c = ws(addr, Some(KEY)).await;
        c.hello(None).await;
        let ch = c.bind(Some(&serial)).await;

        // The cookie reads; the device shows who holds it and its facts (read from the phone in the background:
        // poll, a loaded machine may take longer than the list's own short wait).
        let deadline = Instant::now() + Duration::from_secs(15);
        let (d, dev) = loop {
            let d = http(addr, "GET", "/api/v1/devices", &[("Cookie", &cookie)], b"").await;
            assert_eq!(d.status, 200, "{}", d.text());
            let d = d.json();
            let dev = d["devices"].as_array().unwrap().iter().find(|x| x["serial"] == json!(serial)).unwrap().clone();
            // The battery comes from the health reader, the version from the wall's facts: two sources, wait for both.
            let known = !dev["battery_percent"].is_null() && !dev["android_version"].is_null();
            if known || Instant::now() > deadline {
                break (d, dev);
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        };
        assert_eq!(dev["state"], "online");
        assert_eq!(dev["model"], "Sim Alpha (1080x2400)");
        assert_eq!(dev["android_version"], "14");
        assert_eq!(dev["battery_percent"], 87);
        assert_eq!(dev["held_by"]["channel_id"], json!(ch));
        assert_eq!(dev["held_by"]["channel_connected"], true);
        assert!(dev["held_by"]["since_ms"].as_u64().unwrap() > 1_700_000_000_000);
        assert_eq!(d["connector"]["api_key_required"], true);
        assert_eq!(d["connector"]["counts"]["online"], 1);
        assert_eq!(d["connector"]["adb_servers"][0]["reachable"], true);

        // Release without, and with a wrong, CSRF token: 403, and the binding stays.
        let release = format!("/api/v1/devices/{id}/release");
        for token in [None, Some("0".repeat(64))] {
            let mut h = vec![("Cookie", cookie.as_str())];
            if let Some(t) = &token {
                h.push(("X-CSRF-Token", t.as_str()));
            }
            let resp = http(addr, "POST", &release, &h, b"").await;
            assert_eq!(resp.status, 403, "{}", resp.text());
            assert_eq!(error_code(&resp.json()), "permission_denied");
        }
        let resp = http(addr, "DELETE", "/api/v1/session", &[("Cookie", &cookie), ("X-CSRF-Token", "bad")], b"").await;
        assert_eq!(resp.status, 403);
        let d = http(addr, "GET", &format!("/api/v1/devices/{id}"), &[("Cookie", &cookie)], b"").await.json();
        assert_eq!(d["held_by"]["channel_id"], json!(ch), "a refused release changes nothing");

        // A tool call shows up as the last call, from the audit log, with its duration.
        let a = c
            .request(
                "tool.invoke",
                Some(&ch),
                json!({"tool_id": "android_tap", "arguments": {"connector_channel_id": ch, "x": 10, "y": 20}}),
            )
            .await;
        assert!(a.get("error").is_none(), "{a}");
        let d = http(addr, "GET", &format!("/api/v1/devices/{id}"), &[("Cookie", &cookie)], b"").await.json();
        let last = &d["held_by"]["last_call"];
        assert_eq!(last["tool_id"], "android_tap", "{d:#}");
        assert_eq!(last["outcome"], "ok");
        assert!(last["duration_ms"].is_u64(), "{last}");
        assert_eq!(d["recent_actions"][0]["arguments"], json!({"x": 10, "y": 20}));
        // A read-only call writes no audit row of its own (issue 21: it is chained later as a count) but shows at
        // once; once its aggregate reaches the log (the next tap takes it along) it is not shown twice.
        let shot = json!({"tool_id": "android_screenshot", "arguments": {"connector_channel_id": ch, "max_side": 200}});
        let a = c.request("tool.invoke", Some(&ch), shot).await;
        assert!(a.get("error").is_none(), "{a}");
        let d = http(addr, "GET", &format!("/api/v1/devices/{id}"), &[("Cookie", &cookie)], b"").await.json();
        assert_eq!(d["recent_actions"][0]["tool_id"], "android_screenshot", "{d:#}");
        assert_eq!(d["recent_actions"][0]["outcome"], "ok");
        let tap = json!({"tool_id": "android_tap", "arguments": {"connector_channel_id": ch, "x": 11, "y": 20, "settle": false}});
        let a = c.request("tool.invoke", Some(&ch), tap).await;
        assert!(a.get("error").is_none(), "{a}");
        let d = http(addr, "GET", &format!("/api/v1/devices/{id}"), &[("Cookie", &cookie)], b"").await.json();
        let tools: Vec<&str> =
            d["recent_actions"].as_array().unwrap().iter().filter_map(|a| a["tool_id"].as_str()).collect();
        assert_eq!(tools[..3], ["android_tap", "android_screenshot", "android_tap"], "{d:#}");
        assert_eq!(tools.iter().filter(|t| **t == "android_screenshot").count(), 1, "shown once: {tools:?}");

        // With the right token: released; the agent's channel gets its descriptor pushed; an audit record.
        let resp =
            http(addr, "POST", &release, &[("Cookie", cookie.as_str()), ("X-CSRF-Token", csrf.as_str())], b"").await;
        assert_eq!(resp.status, 200, "{}", resp.text());
        assert_eq!(resp.json()["channel_id"], json!(ch));
        let pushed = descriptor_push(&mut c).await;
        assert_eq!(pushed["connection"]["status"], "created");
        assert_eq!(pushed["connection"]["connector_channel_id"], json!(ch));
        let d = http(addr, "GET", &format!("/api/v1/devices/{id}"), &[("Cookie", &cookie)], b"").await.json();
        assert!(d["held_by"].is_null(), "{d:#}");
        // The release's own record, among the newest: the device layer's lease.* records of the same release (what
        // it undid, issue 47) are written beside it, in either order.
        let recent = d["recent_actions"].as_array().unwrap();
        let mut newer = recent.iter().take_while(|a| !a["tool_id"].as_str().unwrap_or("").starts_with("android_"));
        let release_rec = newer.find(|a| a["tool_id"] == "operator.release");
        let release_rec = release_rec.unwrap_or_else(|| panic!("operator.release newer than the agent's calls: {d:#}"));
        assert_eq!(release_rec["channel_id"], json!(ch));
        // Nothing left to release; unknown devices are 404.
        let (k, v) = bearer();
        let again = http(addr, "POST", &release, &[(k, &v)], b"").await;
        assert_eq!(again.status, 409);
        assert_eq!(error_code(&again.json()), "connection_not_found");
        let missing = http(addr, "GET", "/api/v1/devices/0123456789abcdef", &[(k, &v)], b"").await;
        assert_eq!(missing.status, 404);
        assert_eq!(error_code(&missing.json()), "device_not_found");

        // Logout with the token ends the session.
        let out =
            http(addr, "DELETE", "/api/v1/session", &[("Cookie", &cookie), ("X-CSRF-Token", csrf.as_str())], b"").await;
        assert_eq!(out.status, 200);
        assert!(out.header("set-cookie").unwrap().contains("Max-Age=0"));
        let after = http(addr, "GET", "/api/v1/devices", &[("Cookie", &cookie)], b"").await;
        assert_eq!(after.status, 401);

        // Wrong keys are rate limited per source across every surface (slows guessing): 10 per minute, then 429
        // whatever key comes along. The wrong Bearer keys and the wrong login above count too.
        let mut statuses = Vec::new();
        for _ in 0..11 {
            let body = br#"{"api_key":"guess"}"#;
            statuses.push(
                http(addr, "POST", "/api/v1/session", &[("Content-Type", "application/json")], body).await.status,
            );
        }
        let refused_from = statuses.iter().position(|s| *s == 429).expect("throttled");
        assert!(statuses[..refused_from].iter().all(|s| *s == 401), "{statuses:?}");
        assert!(statuses[refused_from..].iter().all(|s| *s == 429), "{statuses:?}");
        let body = json!({"api_key": KEY}).to_string();
        let right =
            http(addr, "POST", "/api/v1/session", &[("Content-Type", "application/json")], body.as_bytes()).await;
        assert_eq!(right.status, 429, "the right key from a throttled source is refused too (no oracle)");

        let logs = r.srv.logs().join("\n");
        assert!(!logs.contains(KEY), "the key must never be logged");
    })
    .await
    .expect("test timed out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thumbnails_are_cached_rate_limited_and_step_aside_for_agents() {
    bounded(async {
        let r = rig(&[(1080, 2400)], true).await;
        let sim = &r.sims[0];
        let serial = sim.serial();
        r.wait_all_online().await;
        let id = r.id_of(&serial).await;
        let (k, v) = bearer();
        let url = format!("/api/v1/devices/{id}/screen.jpg");
        let fetch = || async { http(r.srv.addr, "GET", &url, &[(k, &v)], b"").await };

        // Eight viewers at once: one capture, one picture.
        let before = captures(sim);
        let started = Instant::now();
        let all = futures_util::future::join_all((0..8).map(|_| fetch())).await;
        let within_window = started.elapsed() < Duration::from_secs(2);
        let first = &all[0];
        assert_eq!(first.status, 200, "{}", first.text());
        assert_eq!(first.header("content-type"), Some("image/jpeg"));
        let etag = first.header("etag").unwrap().to_owned();
        // On a loaded box the eight may be answered over more than the 2 s interval: a late one then rightly gets
        // a new capture, so one picture and one capture are asserted only for answers within the interval.
        if within_window {
            for resp in &all {
                assert_eq!(resp.header("etag"), Some(etag.as_str()));
            }
            assert_eq!(captures(sim) - before, 1, "one capture for eight concurrent requests");
        }
        let img = image::load_from_memory(&first.body).expect("a decodable JPEG");
        assert_eq!((img.width(), img.height()), (324, 720), "720 px long side, the phone's 9:20 aspect");

        // Within the interval: served from the cache, no new capture.
        let n = captures(sim);
        let again = fetch().await;
        if Instant::now().duration_since(started) < Duration::from_secs(2) {
            assert_eq!(again.header("etag"), Some(etag.as_str()));
            assert_eq!(captures(sim), n);
        }
        // On a loaded box `again` may come after the interval and rightly capture: count from after it.
        let n = captures(sim);
        // After it: a new capture.
        tokio::time::sleep(Duration::from_millis(2100)).await;
        let fresh = fetch().await;
        assert_ne!(fresh.header("etag"), Some(etag.as_str()));
        assert_eq!(captures(sim), n + 1);
        let etag = fresh.header("etag").unwrap().to_owned();

        // Agents first: while an agent's screenshot runs, the wall serves its last picture without capturing.
        let mut c = ws(r.srv.addr, Some(KEY)).await;
        c.hello(None).await;
        let ch = c.bind(Some(&serial)).await;
        tokio::time::sleep(Duration::from_millis(2100)).await; // the cached thumbnail is now due for a refresh
        sim.set_fault(Fault::Latency(Duration::from_secs(4))); // holds the agent's screenshot in `wm size`
                                                               // Counted over the agent's whole call: the agent's own capture may land at any moment of it (its command
                                                               // leaves once the held `wm size` answers), so "the wall took none" is "one capture in all".
        let before_agent = captures(sim);
        let (_, rid) = c
            .send(
                "tool.invoke",
                Some(&ch),
                json!({"tool_id": "android_screenshot", "arguments": {"connector_channel_id": ch}}),
            )
            .await;
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let d = http(r.srv.addr, "GET", &format!("/api/v1/devices/{id}"), &[(k, &v)], b"").await.json();
            if d["running_calls"] == 1 {
                break;
            }
            assert!(Instant::now() < deadline, "the agent's call never showed as running: {d:#}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let during = fetch().await;
        assert_eq!(during.status, 200);
        assert_eq!(during.header("x-thumbnail-stale"), Some("agent-capturing"));
        assert_eq!(during.header("etag"), Some(etag.as_str()), "the last picture, not a new capture");
        sim.set_fault(Fault::None);
        let ack = loop {
            let p = c.recv().await;
            if p["request_id"] == json!(rid) {
                break p;
            }
        };
        assert!(ack.get("error").is_none(), "the agent's screenshot succeeded: {ack}");
        assert_eq!(captures(sim), before_agent + 1, "the agent's capture only: the wall did not touch the phone");
    })
    .await
    .expect("test timed out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_key_the_wall_is_open_with_a_warning_but_release_needs_a_session() {
    bounded(async {
        let r = rig(&[(720, 1280)], false).await;
        let addr = r.srv.addr;
        let serial = r.sims[0].serial();
        let d = r.wait_all_online().await;
        let warnings: Vec<&str> =
            d["connector"]["warnings"].as_array().unwrap().iter().map(|w| w["code"].as_str().unwrap()).collect();
        assert!(warnings.contains(&"no_api_key"), "{warnings:?}");
        let id = r.id_of(&serial).await;
        let mut c = ws(addr, None).await;
        c.hello(None).await;
        c.bind(Some(&serial)).await;
        let release = format!("/api/v1/devices/{id}/release");
        // A foreign page could make the browser send this: refused without a session's token.
        let resp = http(addr, "POST", &release, &[], b"").await;
        assert_eq!(resp.status, 403);
        assert_eq!(error_code(&resp.json()), "permission_denied");
        // The session probe hands out a session and its token at once.
        let s = get(addr, "/api/v1/session").await;
        let cookie = s.header("set-cookie").unwrap().split(';').next().unwrap().to_owned();
        let csrf = s.json()["csrf_token"].as_str().unwrap().to_owned();
        let resp = http(addr, "POST", &release, &[("Cookie", &cookie), ("X-CSRF-Token", &csrf)], b"").await;
        assert_eq!(resp.status, 200, "{}", resp.text());
        // Routes and methods that do not exist say so as JSON.
        let resp = http(addr, "PUT", &format!("/api/v1/devices/{id}"), &[], b"").await;
        assert_eq!(resp.status, 405);
        assert_eq!(get(addr, "/api/v1/nothing").await.status, 404);
    })
    .await
    .expect("test timed out");
}

/// Low list (issue #22): one hung phone does not stall every thumbnail. Its capture runs into the deadline while
/// the other phone's thumbnails keep coming (there used to be one global capture slot, held for the whole 10 s),
/// and right after the timeout the hung phone is left alone for a while instead of taking a slot again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_hung_phone_does_not_stall_the_other_thumbnails() {
    bounded(async {
        let r = rig(&[(1080, 2400), (720, 1280)], true).await;
        r.wait_all_online().await;
        let (hung, fine) = (&r.sims[0], &r.sims[1]);
        let hung_id = r.id_of(&hung.serial()).await;
        let fine_id = r.id_of(&fine.serial()).await;
        hung.stall("framebuffer:");
        hung.stall("screencap");
        hung.stall("umask 077; screencap");
        let (k, v) = bearer();
        let addr = r.srv.addr;
        let hung_url = format!("/api/v1/devices/{hung_id}/screen.jpg");
        let hung_fetch = {
            let (url, v) = (hung_url.clone(), v.clone());
            tokio::spawn(async move {
                use tokio::io::{AsyncReadExt, AsyncWriteExt};
                // Longer than the harness's 10 s request timeout: this one waits for the capture deadline.
                let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
                let req =
                    format!("GET {url} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nAuthorization: {v}\r\n\r\n");
                s.write_all(req.as_bytes()).await.unwrap();
                let mut raw = Vec::new();
                tokio::time::timeout(Duration::from_secs(40), s.read_to_end(&mut raw)).await.unwrap().unwrap();
                String::from_utf8_lossy(&raw).split(' ').nth(1).unwrap().parse::<u16>().unwrap()
            })
        };
        tokio::time::sleep(Duration::from_millis(300)).await;
        let started = Instant::now();
        let fine_url = format!("/api/v1/devices/{fine_id}/screen.jpg");
        let resp = http(addr, "GET", &fine_url, &[(k, &v)], b"").await;
        let took = started.elapsed();
        assert_eq!(resp.status, 200, "{}", resp.text());
        assert!(took < Duration::from_secs(6), "the other phone's thumbnail waited {took:?} behind the hung phone");
        assert_eq!(hung_fetch.await.unwrap(), 504, "the hung phone's capture ends at its deadline");
        // Right after: the hung phone is not captured again (answered at once).
        let started = Instant::now();
        let again = http(addr, "GET", &hung_url, &[(k, &v)], b"").await;
        assert_eq!(again.status, 504, "{}", again.text());
        assert!(started.elapsed() < Duration::from_secs(2));
        hung.release("framebuffer:");
        hung.release("screencap");
        hung.release("umask 077; screencap");
    })
    .await
    .expect("test timed out");
}

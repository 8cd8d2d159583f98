//! The operator's webhook (`--notify-url`): a JSON POST that carries an event (an agent asking for a person,
//! `android_request_human`) to a chat relay or a pager.
//!
//! Hand-written HTTP/1.1 over one TCP connection per attempt, not a client crate: one small POST, and the crates
//! the binary has carry no client (a static ARM binary, no TLS stack). So the URL is `http://` only — a relay on the
//! box or the LAN forwards to the outside world; `https://` is refused at start-up with that advice, never silently
//! sent in the clear.
//!
//! What leaves: the event's JSON and, when the URL carries `user:password@`, those as HTTP Basic authentication.
//! Never the system API key (this module never sees it). What is logged of the URL is its scheme, host and port:
//! credentials sit in the user info, the path or the query of webhook URLs (`/hooks/<token>`), so none of those
//! reach a log line, `Debug` included.
//!
//! Bounded: [`ATTEMPTS`] attempts, each within [`ATTEMPT_TIMEOUT`] (connect, write, status line), [`BACKOFF`] apart;
//! the answer's status line is read (at most [`MAX_STATUS_LINE`] bytes) and nothing else. A 2xx ends it; anything
//! else is retried, and the last failure is a warning (at most one a minute, with how many it stands for).
//!
//! [`Notifier`] (issue 48: 40 ask/cancel cycles paged the operator 40 times, and a relay that never answers held
//! ~1000 sockets): at most one opening notification per phone per [`COALESCE`] (the requests in between are
//! counted into the next one, `coalesced`), at most [`MAX_IN_FLIGHT`] deliveries at once (each holds one socket at
//! a time; past it a delivery is dropped, with the rate-limited warning), and a closing event
//! (`human_request_closed`: answered, expired or cancelled) for every request whose opening was sent.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

pub const ATTEMPTS: u32 = 3;
pub const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(5);
pub const BACKOFF: Duration = Duration::from_secs(1);
const MAX_STATUS_LINE: usize = 1024;
const MAX_URL: usize = 2048;
/// At most one opening notification per phone this often.
pub const COALESCE: Duration = Duration::from_secs(60);
/// Deliveries (each one socket at a time) running at once.
pub const MAX_IN_FLIGHT: usize = 4;
/// Phones remembered for coalescing; past it the oldest is forgotten.
const MAX_PHONES: usize = 4096;

/// A parsed `--notify-url`.
#[derive(Clone, PartialEq, Eq)]
pub struct NotifyUrl {
    host: String,
    port: u16,
    /// Path and query, as given (`/` when none).
    target: String,
    /// `Basic <base64(user:password)>` when the URL has user info.
    authorization: Option<String>,
}

impl fmt::Debug for NotifyUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never the path, query or user info: they are where webhook secrets live.
        write!(f, "NotifyUrl({})", self.shown())
    }
}

impl NotifyUrl {
    /// `http://[user[:password]@]host[:port][/path][?query]`; anything else is an error naming the rule.
    pub fn parse(s: &str) -> Result<NotifyUrl, String> {
        let s = s.trim();
        if s.len() > MAX_URL || s.chars().any(|c| c.is_control() || c.is_whitespace()) {
            return Err(format!("--notify-url must be one URL of at most {MAX_URL} printable characters"));
        }
        let lower = s.to_ascii_lowercase();
        if lower.starts_with("https://") {
            return Err("--notify-url: https is not supported (the binary has no TLS stack); point it at a relay \
                        on this box or the LAN over http:// that forwards to the chat or pager"
                .into());
        }
        let Some(rest) = lower.starts_with("http://").then(|| &s["http://".len()..]) else {
            return Err("--notify-url must start with http://".into());
        };
        let end = rest.find(['/', '?']).unwrap_or(rest.len());
        let (authority, target) = rest.split_at(end);
        let target = if target.is_empty() {
            "/".to_owned()
        } else if target.starts_with('?') {
            format!("/{target}")
        } else {
            target.to_owned()
        };
        let (userinfo, hostport) = match authority.rsplit_once('@') {
            Some((u, h)) => (Some(u), h),
            None => (None, authority),
        };
        let (host, port) = if let Some(v6) = hostport.strip_prefix('[') {
            let (h, after) = v6.split_once(']').ok_or("--notify-url: an IPv6 host needs its closing `]`")?;
            (h.to_owned(), after.strip_prefix(':'))
        } else {
            match hostport.rsplit_once(':') {
                Some((h, p)) => (h.to_owned(), Some(p)),
                None => (hostport.to_owned(), None),
            }
        };
        let host_ok = !host.is_empty() && host.chars().all(|c| c.is_ascii_alphanumeric() || ".-_:".contains(c));
        if !host_ok {
            return Err("--notify-url: the host must be a name or an address".into());
        }
        let port = match port {
            None => 80,
            Some(p) => p.parse::<u16>().ok().filter(|&p| p > 0).ok_or("--notify-url: the port must be 1..65535")?,
        };
        let authorization = userinfo.map(|u| format!("Basic {}", crate::base64::encode(u.as_bytes())));
        Ok(NotifyUrl { host, port, target, authorization })
    }

    /// What logs may say of the URL: scheme, host and port.
    pub fn shown(&self) -> String {
        if self.host.contains(':') {
            format!("http://[{}]:{}", self.host, self.port)
        } else {
            format!("http://{}:{}", self.host, self.port)
        }
    }

    fn host_header(&self) -> String {
        let host = if self.host.contains(':') { format!("[{}]", self.host) } else { self.host.clone() };
        if self.port == 80 {
            host
        } else {
            format!("{host}:{}", self.port)
        }
    }

    fn request(&self, body: &[u8]) -> Vec<u8> {
        let mut head = format!(
            "POST {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: xagent-adb-connector/{}\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\nConnection: close\r\n",
            self.target,
            self.host_header(),
            crate::build_info::BUILD.version,
            body.len()
        );
        if let Some(a) = &self.authorization {
            head.push_str(&format!("Authorization: {a}\r\n"));
        }
        head.push_str("\r\n");
        let mut out = head.into_bytes();
        out.extend_from_slice(body);
        out
    }

    /// One attempt: `Ok(status)` when an HTTP status line came back.
    async fn attempt(&self, req: &[u8]) -> Result<u16, String> {
        let mut s = tokio::net::TcpStream::connect((self.host.as_str(), self.port))
            .await
            .map_err(|e| format!("connect: {}", e.kind()))?;
        s.write_all(req).await.map_err(|e| format!("write: {}", e.kind()))?;
        let mut buf = Vec::with_capacity(128);
        let mut chunk = [0u8; 256];
        while !buf.contains(&b'\n') && buf.len() < MAX_STATUS_LINE {
            let n = s.read(&mut chunk).await.map_err(|e| format!("read: {}", e.kind()))?;
            if n == 0 {
                break;
            }
            buf.extend_from_slice(&chunk[..n]);
        }
        let line = String::from_utf8_lossy(&buf[..buf.len().min(MAX_STATUS_LINE)]);
        let mut parts = line.split_whitespace();
        match (parts.next(), parts.next().and_then(|c| c.parse::<u16>().ok())) {
            (Some(v), Some(code)) if v.starts_with("HTTP/1.") => Ok(code),
            _ => Err("no HTTP status line in the answer".into()),
        }
    }

    /// Sends `event` with the retries above; `true` once a 2xx came back.
    pub async fn post(&self, event: &Value) -> bool {
        let req = self.request(event.to_string().as_bytes());
        let mut last = String::new();
        for n in 0..ATTEMPTS {
            if n > 0 {
                tokio::time::sleep(BACKOFF * n).await;
            }
            match tokio::time::timeout(ATTEMPT_TIMEOUT, self.attempt(&req)).await {
                Ok(Ok(code)) if (200..300).contains(&code) => return true,
                Ok(Ok(code)) => last = format!("HTTP {code}"),
                Ok(Err(e)) => last = e,
                Err(_) => last = format!("no answer within {} s", ATTEMPT_TIMEOUT.as_secs()),
            }
        }
        warn_failed(&self.shown(), &last);
        false
    }
}

/// One warning a minute at most, saying how many failures it stands for.
fn warn_failed(url: &str, why: &str) {
    static LAST: Mutex<Option<Instant>> = Mutex::new(None);
    static SUPPRESSED: AtomicU64 = AtomicU64::new(0);
    let mut last = LAST.lock().unwrap_or_else(|e| e.into_inner());
    if last.is_some_and(|t| t.elapsed() < Duration::from_secs(60)) {
        SUPPRESSED.fetch_add(1, Ordering::Relaxed);
        return;
    }
    *last = Some(Instant::now());
    let suppressed = SUPPRESSED.swap(0, Ordering::Relaxed);
    tracing::warn!(url = %url, attempts = ATTEMPTS, last = %why, suppressed, "the --notify-url webhook failed");
}

#[derive(Default)]
struct Phone {
    last_sent: Option<Instant>,
    /// Opening events not sent since the last one (coalesced into the next).
    coalesced: u64,
    /// The request whose opening event was sent and not yet closed.
    notified: Option<u64>,
}

/// The webhook with its coalescing and its bound on deliveries in flight (module doc).
pub struct Notifier {
    url: NotifyUrl,
    interval: Duration,
    phones: Mutex<HashMap<String, Phone>>,
    in_flight: Arc<tokio::sync::Semaphore>,
}

impl Notifier {
    pub fn new(url: NotifyUrl) -> Self {
        Self::with_interval(url, COALESCE)
    }

    pub fn with_interval(url: NotifyUrl, interval: Duration) -> Self {
        Notifier {
            url,
            interval,
            phones: Mutex::default(),
            in_flight: Arc::new(tokio::sync::Semaphore::new(MAX_IN_FLIGHT)),
        }
    }

    /// A request `request_id` opened on `phone`: `event` is posted unless one was, for this phone, within the
    /// interval (then it is counted into the next as `coalesced`). `true` when it is being sent.
    pub fn opened(&self, phone: &str, request_id: u64, mut event: Value) -> bool {
        {
            let mut g = self.phones.lock().unwrap_or_else(|e| e.into_inner());
            if g.len() >= MAX_PHONES && !g.contains_key(phone) {
                if let Some(oldest) = g.iter().min_by_key(|(_, p)| p.last_sent).map(|(k, _)| k.clone()) {
                    g.remove(&oldest);
                }
            }
            let p = g.entry(phone.to_owned()).or_default();
            if p.last_sent.is_some_and(|t| t.elapsed() < self.interval) {
                p.coalesced += 1;
                return false;
            }
            p.last_sent = Some(Instant::now());
            p.notified = Some(request_id);
            event["coalesced"] = serde_json::json!(std::mem::take(&mut p.coalesced));
        }
        self.deliver(event)
    }

    /// The request `request_id` on `phone` ended (`answered`, `expired`, `cancelled`): a closing event, when its
    /// opening event was sent.
    pub fn closed(&self, phone: &str, request_id: u64, mut event: Value) {
        {
            let mut g = self.phones.lock().unwrap_or_else(|e| e.into_inner());
            match g.get_mut(phone) {
                Some(p) if p.notified == Some(request_id) => p.notified = None,
                _ => return,
            }
        }
        event["request_id"] = serde_json::json!(request_id);
        self.deliver(event);
    }

    /// Posts `event` in the background within the bound on deliveries in flight.
    fn deliver(&self, event: Value) -> bool {
        let Ok(permit) = self.in_flight.clone().try_acquire_owned() else {
            warn_failed(&self.url.shown(), &format!("{MAX_IN_FLIGHT} deliveries already in flight; one dropped"));
            return false;
        };
        let Ok(rt) = tokio::runtime::Handle::try_current() else { return false };
        let url = self.url.clone();
        rt.spawn(async move {
            url.post(&event).await;
            drop(permit);
        });
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A loopback relay: counts connections and requests; answers 200, or (`hang`) accepts and never answers.
    async fn relay(hang: bool) -> (u16, Arc<AtomicU64>, Arc<Mutex<Vec<String>>>) {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = l.local_addr().unwrap().port();
        let conns = Arc::new(AtomicU64::new(0));
        let got: Arc<Mutex<Vec<String>>> = Arc::default();
        let (c, g) = (conns.clone(), got.clone());
        tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((mut s, _)) = l.accept().await {
                c.fetch_add(1, Ordering::SeqCst);
                if hang {
                    held.push(s);
                    continue;
                }
                let g = g.clone();
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 8192];
                    let mut text = String::new();
                    while !text.contains("\r\n\r\n") || !text.trim_end().ends_with('}') {
                        let Ok(n) = s.read(&mut buf).await else { return };
                        if n == 0 {
                            break;
                        }
                        text.push_str(&String::from_utf8_lossy(&buf[..n]));
                    }
                    g.lock().unwrap().push(text);
                    let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n").await;
                });
            }
        });
        (port, conns, got)
    }

    /// 40 ask/cancel cycles on one phone: one opening notification and its closing event, not 40 pages.
    #[tokio::test]
    async fn ask_cancel_cycles_are_coalesced_and_closed() {
        let (port, _, got) = relay(false).await;
        let n = Notifier::new(NotifyUrl::parse(&format!("http://127.0.0.1:{port}/hook")).unwrap());
        let mut sent = 0;
        for id in 1..=40u64 {
            sent +=
                usize::from(n.opened("SER@srv", id, serde_json::json!({"event": "human_request", "request_id": id})));
            n.closed("SER@srv", id, serde_json::json!({"event": "human_request_closed", "outcome": "cancelled"}));
        }
        assert_eq!(sent, 1);
        // Another phone is not coalesced with the first.
        assert!(n.opened("OTHER@srv", 41, serde_json::json!({"event": "human_request", "request_id": 41})));
        let deadline = Instant::now() + Duration::from_secs(20);
        while got.lock().unwrap().len() < 3 {
            assert!(Instant::now() < deadline, "deliveries: {:?}", got.lock().unwrap());
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        let got = got.lock().unwrap().clone();
        assert_eq!(got.len(), 3, "{got:?}");
        assert_eq!(got.iter().filter(|r| r.contains("human_request_closed")).count(), 1, "{got:?}");
        // The next opening on the first phone (after the interval) says how many were coalesced.
        let n =
            Notifier::with_interval(NotifyUrl::parse(&format!("http://127.0.0.1:{port}/")).unwrap(), Duration::ZERO);
        assert!(n.opened("SER@srv", 1, serde_json::json!({})));
    }

    /// A relay that accepts and never answers holds at most MAX_IN_FLIGHT sockets, however many requests come.
    #[tokio::test]
    async fn a_hanging_webhook_holds_a_bounded_number_of_sockets() {
        let (port, conns, _) = relay(true).await;
        let n = Notifier::new(NotifyUrl::parse(&format!("http://127.0.0.1:{port}/")).unwrap());
        for id in 0..200u64 {
            n.opened(&format!("phone{id}"), id, serde_json::json!({"event": "human_request"}));
        }
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let c = conns.load(Ordering::SeqCst);
        assert!((1..=MAX_IN_FLIGHT as u64).contains(&c), "{c} sockets to a hanging webhook");
    }

    #[test]
    fn urls() {
        let u = NotifyUrl::parse("http://bot:s3cret@relay.lan:8080/hooks/T0K3N?x=1").unwrap();
        assert_eq!((u.host.as_str(), u.port, u.target.as_str()), ("relay.lan", 8080, "/hooks/T0K3N?x=1"));
        assert_eq!(u.authorization.as_deref(), Some("Basic Ym90OnMzY3JldA=="));
        assert_eq!(u.shown(), "http://relay.lan:8080");
        let dbg = format!("{u:?}");
        assert!(!dbg.contains("s3cret") && !dbg.contains("T0K3N"), "{dbg}");
        let u = NotifyUrl::parse("http://[::1]:9/").unwrap();
        assert_eq!((u.host.as_str(), u.port, u.shown().as_str()), ("::1", 9, "http://[::1]:9"));
        assert_eq!(NotifyUrl::parse("HTTP://127.0.0.1").unwrap().target, "/");
        for bad in
            ["https://x/", "ftp://x/", "http://", "http://x:0/", "http://x:99999/", "http://a b/", "http://x/a\nb"]
        {
            assert!(NotifyUrl::parse(bad).is_err(), "{bad}");
        }
        assert!(NotifyUrl::parse("https://hooks.example/").unwrap_err().contains("relay"));
    }
}

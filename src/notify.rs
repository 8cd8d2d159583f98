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
//! else is retried, and the last failure is one warning.

use std::fmt;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

pub const ATTEMPTS: u32 = 3;
pub const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(5);
pub const BACKOFF: Duration = Duration::from_secs(1);
const MAX_STATUS_LINE: usize = 1024;
const MAX_URL: usize = 2048;

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
        tracing::warn!(url = %self.shown(), attempts = ATTEMPTS, last = %last, "the --notify-url webhook failed");
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

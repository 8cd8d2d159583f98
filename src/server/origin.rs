//! Which web pages may use a connector that has no API key: DNS rebinding and cross-origin WebSockets.
//!
//! Without a key, nothing but reachability protects `/ws`, uploads, `/health`, `/metrics` and the wall, and a browser is a proxy any web page can
//! steer: a page on another origin may open `ws://127.0.0.1:8790/ws` (browsers apply no same-origin rule to
//! WebSockets, but always send `Origin`), and a page whose host name the attacker re-points at 127.0.0.1 (DNS
//! rebinding) is same-origin with the connector under that name. So, without a key:
//!
//! - `/`, `/api/v1/…`, `/health` and `/metrics` (serials, the adb server's address) answer only requests whose
//!   `Host` is an IP literal (a page can only be same-origin with an IP by being served from it, i.e. by us),
//!   `localhost` or `*.localhost`, or a name the operator allowed (`--allowed-host`). A rebinding attacker's own
//!   name is none of these.
//! - `/ws` and `POST /files/uploads` refuse a request that carries an `Origin` unless it names the very host the
//!   request went to (`Origin` authority = `Host`) and that host passes the rule above. No `Origin` means no
//!   browser (agents, scripts, xAgent's backend) and is allowed. Which surface has which rule, and why the card,
//!   the skill and one-time downloads have neither: `server::http::foreign_page`.
//!
//! With a key configured the key is the protection (a browser cannot attach `Authorization` to a WebSocket, and the
//! wall's session cookie is never sent to a foreign name), so these checks are off.

use std::net::IpAddr;

/// The host part of a `Host` header value or URL authority (port and IPv6 brackets removed), lower-cased, without
/// a trailing dot. `None` when it is malformed.
fn host_part(authority: &str) -> Option<String> {
    let a = authority.trim();
    if a.is_empty() || a.contains(['/', '@', ' ', '\\']) {
        return None;
    }
    let host = if let Some(rest) = a.strip_prefix('[') {
        let (h, tail) = rest.split_once(']')?;
        if !(tail.is_empty() || tail.strip_prefix(':').is_some_and(|p| p.parse::<u16>().is_ok())) {
            return None;
        }
        h
    } else {
        match a.rsplit_once(':') {
            Some((h, p)) if p.parse::<u16>().is_ok() && !h.contains(':') => h,
            Some(_) => return None,
            None => a,
        }
    };
    let host = host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase();
    (!host.is_empty()).then_some(host)
}

/// Whether a request addressed to `host` (a `Host` header value) may be answered by the wall without a key.
pub fn host_allowed(host: &str, allowed: &[String]) -> bool {
    let Some(h) = host_part(host) else { return false };
    if h.parse::<IpAddr>().is_ok() || h == "localhost" || h.ends_with(".localhost") {
        return true;
    }
    allowed.iter().any(|a| a.trim_end_matches('.').eq_ignore_ascii_case(&h))
}

/// Whether a WebSocket upgrade with `Origin: origin` sent to `host` comes from the connector's own page.
pub fn origin_allowed(origin: &str, host: &str, allowed: &[String]) -> bool {
    let Some(authority) = origin.strip_prefix("http://").or_else(|| origin.strip_prefix("https://")) else {
        return false; // `null` (sandboxed frames, file: pages) and anything odd
    };
    authority.eq_ignore_ascii_case(host.trim()) && host_allowed(host, allowed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts() {
        let allowed = vec!["pi-lab-3.local".to_owned()];
        for ok in [
            "127.0.0.1:8790",
            "127.0.0.1",
            "[::1]:8790",
            "10.0.0.5:8790",
            "localhost:8790",
            "LOCALHOST",
            "app.localhost:1",
            "pi-lab-3.local:8790",
            "pi-lab-3.local.",
        ] {
            assert!(host_allowed(ok, &allowed), "{ok}");
        }
        for bad in [
            "evil.example:8790",
            "evil.example",
            "127.0.0.1.evil.example",
            "localhost.evil.example",
            "",
            "a:b:c",
            "[::1]x",
            "x@127.0.0.1",
            "127.0.0.1:99999",
        ] {
            assert!(!host_allowed(bad, &allowed), "{bad}");
        }
    }

    #[test]
    fn origins() {
        let none: Vec<String> = Vec::new();
        assert!(origin_allowed("http://127.0.0.1:8790", "127.0.0.1:8790", &none));
        assert!(origin_allowed("https://localhost:8790", "localhost:8790", &none));
        assert!(!origin_allowed("http://evil.example", "127.0.0.1:8790", &none));
        assert!(!origin_allowed("http://localhost:3000", "localhost:8790", &none), "another local port is foreign");
        assert!(!origin_allowed("null", "127.0.0.1:8790", &none));
        // Rebound: same origin under the attacker's name is still refused.
        assert!(!origin_allowed("http://evil.example:8790", "evil.example:8790", &none));
    }
}

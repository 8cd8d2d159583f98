//! Every check of the system API key, on every surface (wall login, `Authorization: Bearer` on `/api/v1`,
//! `/health`, `/metrics`, uploads, downloads, the WebSocket upgrade, `/mcp`), under one per-source failure limit; a
//! request's `Authorization: Bearer` is read by `state::App::check_api_key`, which asks [`AuthGate::verify`].
//!
//! Why per source and not global: a global budget let ten wrong guesses from anywhere lock the operator out with
//! the right key (429 from every address). Why every surface: a limit on the login form alone left `Bearer`
//! guessing free (16,000 guesses in 3 s). The limit is checked *before* the comparison and refuses whatever key
//! comes along: answering the right key while refusing wrong ones would tell a guesser which guess was right.
//!
//! The table of sources is bounded ([`MAX_SOURCES`]): an attacker cycling through addresses cannot grow memory;
//! when it is full, expired entries go first, then the entry whose window started first. IPv6 sources are counted
//! by /64 (one host commonly owns a whole /64), IPv4-mapped IPv6 as the IPv4 address.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use hyper::header::{HeaderValue, AUTHORIZATION, CACHE_CONTROL, RETRY_AFTER};
use hyper::{Request, Response, StatusCode};

use super::log_gate::LogGate;
use crate::http::{constant_time_eq, error, Body};

/// Wrong keys one source may present per [`WINDOW`]; beyond, every key check from it answers 429 until the window
/// ends.
pub const MAX_FAILURES_PER_WINDOW: u32 = 10;
pub const WINDOW: Duration = Duration::from_secs(60);
/// Sources remembered at once (each entry is a few dozen bytes).
pub const MAX_SOURCES: usize = 4096;

/// The peer address of a request, put into its extensions by the connection task.
#[derive(Clone, Copy, Debug)]
pub struct Peer(pub SocketAddr);

/// The source of a request, if the connection task recorded it (in-process callers may not).
pub fn peer_ip<B>(req: &Request<B>) -> Option<IpAddr> {
    req.extensions().get::<Peer>().map(|p| p.0.ip())
}

/// Where a key was checked: the label of `xagent_auth_failures_total`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Surface {
    Login,
    Api,
    Health,
    Metrics,
    Upload,
    Download,
    Ws,
    Mcp,
}

impl Surface {
    pub const ALL: [Surface; 8] = [
        Surface::Login,
        Surface::Api,
        Surface::Health,
        Surface::Metrics,
        Surface::Upload,
        Surface::Download,
        Surface::Ws,
        Surface::Mcp,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Surface::Login => "login",
            Surface::Api => "api",
            Surface::Health => "health",
            Surface::Metrics => "metrics",
            Surface::Upload => "upload",
            Surface::Download => "download",
            Surface::Ws => "ws",
            Surface::Mcp => "mcp",
        }
    }
}

struct Entry {
    window_start: Instant,
    failures: u32,
}

/// Per-source failure counts and the failure counters of `/metrics`.
#[derive(Default)]
pub struct AuthGate {
    table: Mutex<HashMap<IpAddr, Entry>>,
    failures: [AtomicU64; Surface::ALL.len()],
    throttled: [AtomicU64; Surface::ALL.len()],
}

/// The key a source is counted under: an IPv4 address, or an IPv6 /64 (one LAN host owns a whole /64: counted per
/// address it could take 2^64 places); the per-address connection limit (`tracker.rs`) counts the same way.
pub fn source(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let s = v6.segments();
                IpAddr::V6(Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
            }
        },
    }
}

impl AuthGate {
    /// `Err(retry after)` while `ip` has spent its failures for the current window.
    pub fn blocked(&self, ip: IpAddr, now: Instant) -> Option<Duration> {
        let t = self.table.lock().unwrap_or_else(|e| e.into_inner());
        let e = t.get(&source(ip))?;
        let age = now.saturating_duration_since(e.window_start);
        (age < WINDOW && e.failures >= MAX_FAILURES_PER_WINDOW).then(|| WINDOW - age)
    }

    /// Compares a presented key with the configured one (`key`), under the per-source limit. `Err` is the 429 or 401
    /// to send. Never logs the presented value.
    pub fn verify(
        &self,
        ip: Option<IpAddr>,
        key: &str,
        presented: &str,
        surface: Surface,
    ) -> Result<(), Box<Response<Body>>> {
        let now = Instant::now();
        if let Some(retry) = ip.and_then(|ip| self.blocked(ip, now)) {
            self.throttled(surface);
            return Err(too_many(retry));
        }
        if constant_time_eq(presented.as_bytes(), key.as_bytes()) {
            return Ok(());
        }
        self.failed(ip, surface, now);
        static GATE: LogGate = LogGate::new();
        if let Some(suppressed) = GATE.allow() {
            let ip = ip.map(|i| i.to_string()).unwrap_or_default();
            tracing::warn!(surface = surface.as_str(), %ip, suppressed, "wrong system API key presented");
        }
        Err(Box::new(error(StatusCode::UNAUTHORIZED, "unauthorized", "the system API key is wrong")))
    }

    /// The 429 for a source that spent its failures (`retry` from [`AuthGate::blocked`]), counted as throttled:
    /// for checks of other secrets than the key (the wall's operator passwords) under the same limit.
    pub fn refuse_blocked(&self, retry: Duration, surface: Surface) -> Response<Body> {
        self.throttled(surface);
        *too_many(retry)
    }

    /// Counts a wrong key (or operator password) from `ip`.
    pub fn failed(&self, ip: Option<IpAddr>, surface: Surface, now: Instant) {
        self.failures[surface as usize].fetch_add(1, Ordering::Relaxed);
        let Some(ip) = ip else { return };
        let key = source(ip);
        let mut t = self.table.lock().unwrap_or_else(|e| e.into_inner());
        if !t.contains_key(&key) && t.len() >= MAX_SOURCES {
            t.retain(|_, e| now.saturating_duration_since(e.window_start) < WINDOW);
            if t.len() >= MAX_SOURCES {
                if let Some(oldest) = t.iter().min_by_key(|(_, e)| e.window_start).map(|(k, _)| *k) {
                    t.remove(&oldest);
                }
            }
        }
        let e = t.entry(key).or_insert(Entry { window_start: now, failures: 0 });
        if now.saturating_duration_since(e.window_start) >= WINDOW {
            *e = Entry { window_start: now, failures: 0 };
        }
        e.failures = e.failures.saturating_add(1);
    }

    fn throttled(&self, surface: Surface) {
        self.throttled[surface as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// Sources in the table now (for tests of the bound).
    pub fn sources(&self) -> usize {
        self.table.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// `(surface, failures, throttled)` for `/metrics`.
    pub fn counts(&self) -> Vec<(&'static str, u64, u64)> {
        Surface::ALL
            .iter()
            .map(|s| {
                (
                    s.as_str(),
                    self.failures[*s as usize].load(Ordering::Relaxed),
                    self.throttled[*s as usize].load(Ordering::Relaxed),
                )
            })
            .collect()
    }
}

/// 429 with `Retry-After`, for a source that spent its failures.
fn too_many(retry: Duration) -> Box<Response<Body>> {
    let mut r = error(
        StatusCode::TOO_MANY_REQUESTS,
        "rate_limited",
        &format!(
            "too many failed logins from this address (wrong API keys or passwords, {} per minute); retry in {} s",
            MAX_FAILURES_PER_WINDOW,
            retry.as_secs().max(1)
        ),
    );
    r.headers_mut().insert(RETRY_AFTER, HeaderValue::from(retry.as_secs().max(1)));
    r.headers_mut().insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Box::new(r)
}

/// The value of `Authorization: Bearer <key>`, if present.
pub fn bearer<B>(req: &Request<B>) -> Option<&str> {
    req.headers()
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("bearer ")))
        .map(str::trim)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_per_source_and_forgets_after_the_window() {
        let g = AuthGate::default();
        let t0 = Instant::now();
        let a: IpAddr = "127.0.0.2".parse().unwrap();
        let b: IpAddr = "127.0.0.3".parse().unwrap();
        for _ in 0..MAX_FAILURES_PER_WINDOW {
            assert!(g.blocked(a, t0).is_none());
            g.failed(Some(a), Surface::Api, t0);
        }
        assert!(g.blocked(a, t0).is_some());
        assert!(g.blocked(b, t0).is_none(), "another source is not affected");
        assert!(g.blocked(a, t0 + WINDOW).is_none(), "the window ends");
        // IPv6 by /64; mapped IPv4 as IPv4.
        let v6a: IpAddr = "2001:db8::1".parse().unwrap();
        let v6b: IpAddr = "2001:db8::ffff:2".parse().unwrap();
        for _ in 0..MAX_FAILURES_PER_WINDOW {
            g.failed(Some(v6a), Surface::Login, t0);
        }
        assert!(g.blocked(v6b, t0).is_some());
        assert!(g.blocked("::ffff:127.0.0.2".parse().unwrap(), t0).is_some());
    }

    #[test]
    fn the_table_is_bounded_when_sources_cycle() {
        let g = AuthGate::default();
        let t0 = Instant::now();
        for i in 0..(MAX_SOURCES as u32 * 3) {
            let ip = IpAddr::V4(std::net::Ipv4Addr::from(0x0a00_0000 + i));
            g.failed(Some(ip), Surface::Ws, t0 + Duration::from_micros(i as u64));
        }
        assert_eq!(g.sources(), MAX_SOURCES);
        assert_eq!(g.counts().iter().find(|c| c.0 == "ws").unwrap().1, MAX_SOURCES as u64 * 3);
    }
}

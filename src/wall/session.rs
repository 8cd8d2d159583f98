//! Who may use the wall: the system API key as `Authorization: Bearer` (integrations), a login session (an
//! operator's name and password from the users file, `users.rs`, or the system key), or a name in the
//! `--trusted-user-header` of a request from a `--trusted-proxy` address. Every principal has a name (audited with
//! each action) and a [`Role`]; [`require`] refuses what the role may not do with a 403 that says so.
//!
//! The login form posts the password or key once (`POST /api/v1/session`, JSON body, never a URL); the answer is a random
//! session id in an `HttpOnly; SameSite=Strict` cookie that expires, and a per-session CSRF token that the page
//! keeps in memory and sends as `X-CSRF-Token` on the state-changing requests (Release, takeover, return, input,
//! logout). The key itself
//! never reaches the browser's storage. Without a configured key the wall is open (like the other planes), but
//! Release still needs a session's CSRF token, so a foreign web page cannot release a device through the
//! operator's browser.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use hyper::header::COOKIE;
use hyper::{Request, StatusCode};

use super::users::{Cidr, Role, API_KEY_NAME};
use crate::http::{constant_time_eq, error, Body};
use crate::protocol::ids::random_hex;
use crate::server::{auth, App};

/// The cookie name's prefix; the full name ends with the connector's port ([`Sessions::set_port`]): cookies are
/// per host, not per port, so two connectors on one host would otherwise overwrite each other's session.
pub const COOKIE_PREFIX: &str = "xagent_wall_";
pub const CSRF_HEADER: &str = "x-csrf-token";
/// Sessions kept at once; beyond this the least recently used one is dropped (each login makes one).
const MAX_SESSIONS: usize = 256;
/// Sessions one source address holds at once; beyond this *its own* least recently used one is dropped, so
/// requests from one address (an open wall hands a session to anyone who asks) cannot evict everybody else's.
pub const MAX_SESSIONS_PER_SOURCE: usize = 16;

/// Who a session or request speaks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Who {
    pub name: String,
    pub role: Role,
}

impl Who {
    /// The system API key: an admin named [`API_KEY_NAME`].
    pub fn api_key() -> Who {
        Who { name: API_KEY_NAME.to_owned(), role: Role::Admin }
    }
}

/// `--trusted-user-header` from `--trusted-proxy` addresses: the proxy names the operator.
#[derive(Clone, Debug, Default)]
pub struct Trust {
    /// The header (lower case); `None`: no header is trusted.
    pub header: Option<String>,
    pub proxies: Vec<Cidr>,
}

struct Session {
    csrf: String,
    who: Who,
    /// Logged in with an account's password: the account is looked up again at each use (removed → the session
    /// ends; a new role applies at once).
    account: bool,
    expires: Instant,
    /// Last time a request presented it (eviction drops the least recently used).
    used: Instant,
    source: Option<std::net::IpAddr>,
}

/// The accounts as last read and the users file's stamp then (modified time, length mixed with the inode).
type Cached = (Option<std::time::SystemTime>, u64, Vec<super::users::Account>);

pub struct Sessions {
    ttl: Duration,
    /// `xagent_wall_<port>`, set once the port is bound.
    name: std::sync::OnceLock<String>,
    /// Adds `Secure` to the cookie (`--wall-secure-cookie`, behind a TLS proxy).
    secure: bool,
    map: Mutex<HashMap<String, Session>>,
    trust: Trust,
    /// The users file (`None`: no data dir, no accounts).
    users_file: Option<std::path::PathBuf>,
    /// The accounts as last read, with the file's (modified time, length + inode) then: read again only when it
    /// changed (`users` replaces the file by a rename: a new inode every time).
    cache: Mutex<Option<Cached>>,
}

/// How a request was authorised.
pub enum Principal {
    /// The system API key as a Bearer token: an integration, no CSRF needed (browsers never send it by themselves).
    Bearer,
    /// A session cookie (`csrf` is that session's token).
    Session { id: String, csrf: String, who: Who },
    /// A trusted proxy's header named the operator, and no session of theirs came along: may read; a
    /// state-changing request needs the session `GET /api/v1/session` hands out.
    Proxy(Who),
    /// No key is configured and no session cookie came along.
    Open,
}

pub type Denied = Box<hyper::Response<Body>>;

impl Sessions {
    pub fn new(ttl: Duration, secure: bool, trust: Trust, users_file: Option<std::path::PathBuf>) -> Sessions {
        Sessions {
            ttl,
            name: std::sync::OnceLock::new(),
            secure,
            map: Mutex::new(HashMap::new()),
            trust,
            users_file,
            cache: Mutex::new(None),
        }
    }

    /// The operator accounts now (the file is read again whenever it changed: `users add|remove` needs no
    /// restart). An unreadable file is no accounts (and a warning line).
    pub fn accounts(&self) -> Vec<super::users::Account> {
        let Some(path) = &self.users_file else { return Vec::new() };
        let stamp = std::fs::metadata(path)
            .map(|m| {
                #[cfg(unix)]
                let ino = std::os::unix::fs::MetadataExt::ino(&m);
                #[cfg(not(unix))]
                let ino = 0u64;
                (m.modified().ok(), m.len() ^ ino.rotate_left(32))
            })
            .unwrap_or((None, 0));
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((modified, len, accounts)) = cache.as_ref() {
            if (*modified, *len) == stamp && stamp.0.is_some() {
                return accounts.clone();
            }
        }
        let accounts = super::users::load(path).unwrap_or_else(|e| {
            tracing::warn!("device wall: {e}");
            Vec::new()
        });
        *cache = Some((stamp.0, stamp.1, accounts.clone()));
        accounts
    }

    /// The operator a trusted proxy names in this request, if it comes from a trusted address: the role of the
    /// account of that name, or viewer for a name without an account.
    pub(super) fn proxied<B>(&self, req: &Request<B>) -> Option<Who> {
        let header = self.trust.header.as_deref()?;
        let ip = auth::peer_ip(req)?;
        if !self.trust.proxies.iter().any(|c| c.contains(ip)) {
            return None;
        }
        let name = req.headers().get(header)?.to_str().ok()?.trim();
        if super::users::check_name(name).is_err() {
            return None;
        }
        let role = self.accounts().iter().find(|a| a.name == name).map_or(Role::Viewer, |a| a.role);
        Some(Who { name: name.to_owned(), role })
    }

    /// Names the cookie after the listening port (called once, after the bind).
    pub fn set_port(&self, port: u16) {
        let _ = self.name.set(format!("{COOKIE_PREFIX}{port}"));
    }

    fn name(&self) -> &str {
        self.name.get().map_or("xagent_wall", String::as_str)
    }

    fn attributes(&self) -> &'static str {
        if self.secure {
            "Path=/; HttpOnly; SameSite=Strict; Secure"
        } else {
            "Path=/; HttpOnly; SameSite=Strict"
        }
    }

    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// Creates a session for a request from `source`; returns (id, csrf).
    /// `account`: `who` logged in with an account's password (see [`Session::account`]).
    pub fn create(&self, source: Option<std::net::IpAddr>, who: Who, account: bool) -> (String, String) {
        let (id, csrf) = (random_hex(32), random_hex(32));
        let now = Instant::now();
        let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        map.retain(|_, s| s.expires > now);
        let lru = |map: &HashMap<String, Session>, same_source: bool| {
            map.iter()
                .filter(|(_, s)| !same_source || s.source == source)
                .min_by_key(|(_, s)| s.used)
                .map(|(k, _)| k.clone())
        };
        let own = map.values().filter(|s| s.source == source).count();
        let victim = if own >= MAX_SESSIONS_PER_SOURCE {
            lru(&map, true)
        } else if map.len() >= MAX_SESSIONS {
            lru(&map, false)
        } else {
            None
        };
        if let Some(v) = victim {
            map.remove(&v);
        }
        map.insert(
            id.clone(),
            Session { csrf: csrf.clone(), who, account, expires: now + self.ttl, used: now, source },
        );
        (id, csrf)
    }

    /// The CSRF token and operator of a live session, and whether it is an account's.
    fn lookup(&self, id: &str) -> Option<(String, Who, bool)> {
        let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        // Compare every id in constant time: the cookie value is a bearer secret too.
        map.iter_mut().find(|(k, s)| constant_time_eq(k.as_bytes(), id.as_bytes()) && s.expires > now).map(|(_, s)| {
            s.used = now;
            (s.csrf.clone(), s.who.clone(), s.account)
        })
    }

    /// Whether the session `id` is still live (not logged out, not expired, not evicted).
    pub fn alive(&self, id: &str) -> bool {
        self.map.lock().unwrap_or_else(|e| e.into_inner()).get(id).is_some_and(|s| s.expires > Instant::now())
    }

    pub fn remove(&self, id: &str) {
        self.map.lock().unwrap_or_else(|e| e.into_inner()).remove(id);
    }

    /// The `Set-Cookie` value of a new session.
    pub fn cookie(&self, id: &str) -> String {
        format!("{}={id}; {}; Max-Age={}", self.name(), self.attributes(), self.ttl.as_secs())
    }

    /// The `Set-Cookie` value that deletes the cookie.
    pub fn cleared_cookie(&self) -> String {
        format!("{}=; {}; Max-Age=0", self.name(), self.attributes())
    }

    /// The session named by the request's cookie, if it is live: (id, csrf, operator).
    pub fn of_request<B>(&self, req: &Request<B>) -> Option<(String, String, Who)> {
        let id = cookie_value(req, self.name())?;
        let (csrf, mut who, account) = self.lookup(&id)?;
        if account {
            match self.accounts().iter().find(|a| a.name == who.name) {
                // A changed role applies at once.
                Some(a) => who.role = a.role,
                // A removed operator's sessions end (their live views and event streams with them).
                None => {
                    self.remove(&id);
                    return None;
                }
            }
        }
        Some((id, csrf, who))
    }
}

fn cookie_value<B>(req: &Request<B>, name: &str) -> Option<String> {
    req.headers().get_all(COOKIE).iter().filter_map(|v| v.to_str().ok()).flat_map(|v| v.split(';')).find_map(|kv| {
        let (k, v) = kv.trim().split_once('=')?;
        (k == name && !v.is_empty()).then(|| v.to_owned())
    })
}

/// Checks that the request may read the wall's data. `Err` is the 401 to send.
pub fn authorize<B>(app: &App, sessions: &Sessions, req: &Request<B>) -> Result<Principal, Denied> {
    if let Some(key) = app.cfg.api_key.as_deref() {
        if let Some(p) = auth::bearer(req) {
            return app.auth.verify(auth::peer_ip(req), key, p, auth::Surface::Api).map(|()| Principal::Bearer);
        }
    }
    let proxied = sessions.proxied(req);
    if let Some((id, csrf, who)) = sessions.of_request(req) {
        // Behind the proxy, its header wins over a session of somebody else (a shared browser).
        if proxied.as_ref().is_none_or(|p| p == &who) {
            return Ok(Principal::Session { id, csrf, who });
        }
    }
    if let Some(who) = proxied {
        return Ok(Principal::Proxy(who));
    }
    if app.cfg.api_key.is_none() {
        return Ok(Principal::Open);
    }
    Err(Box::new(error(
        StatusCode::UNAUTHORIZED,
        "unauthorized",
        "log in on the wall (POST /api/v1/session) or send Authorization: Bearer <system API key>",
    )))
}

/// For state-changing requests: a Bearer key passes; a session must present its own CSRF token; an open wall
/// without a session has no token to present. `Err` is the 403 to send.
pub fn check_csrf<B>(principal: &Principal, req: &Request<B>) -> Result<(), Denied> {
    let presented = req.headers().get(CSRF_HEADER).and_then(|v| v.to_str().ok()).unwrap_or("");
    match principal {
        Principal::Bearer => Ok(()),
        Principal::Session { csrf, .. } if constant_time_eq(presented.as_bytes(), csrf.as_bytes()) => Ok(()),
        Principal::Session { .. } => Err(Box::new(error(
            StatusCode::FORBIDDEN,
            "permission_denied",
            "missing or wrong X-CSRF-Token (GET /api/v1/session gives this session's token)",
        ))),
        Principal::Proxy(_) => Err(Box::new(error(
            StatusCode::FORBIDDEN,
            "permission_denied",
            "this action needs a wall session and its X-CSRF-Token: GET /api/v1/session first (keep the cookie)",
        ))),
        Principal::Open => Err(Box::new(error(
            StatusCode::FORBIDDEN,
            "permission_denied",
            "this action needs a wall session and its X-CSRF-Token: GET /api/v1/session first (keep the cookie)",
        ))),
    }
}

impl Principal {
    /// The operator's name and role: the key is the admin `api-key`; an open wall (no key configured) lets
    /// everybody do everything, as before accounts existed.
    pub fn who(&self) -> Who {
        match self {
            Principal::Bearer => Who::api_key(),
            Principal::Session { who, .. } | Principal::Proxy(who) => who.clone(),
            Principal::Open => Who { name: "anonymous".into(), role: Role::Admin },
        }
    }
}

/// Refuses (403, `permission_denied`, naming the role and the one needed) what `principal`'s role may not do;
/// `what` is the action in words ("take over phones").
pub fn require(principal: &Principal, need: Role, what: &str) -> Result<(), Denied> {
    let who = principal.who();
    if who.role >= need {
        return Ok(());
    }
    Err(Box::new(error(
        StatusCode::FORBIDDEN,
        "permission_denied",
        &format!(
            "{} is a {}: only {} may {what}",
            who.name,
            who.role.as_str(),
            if need == Role::Admin { "an admin" } else { "an operator or an admin" }
        ),
    )))
}

//! The host side of the resident phone helper (issue 32): the dex of `phone-helper/`, embedded in the binary,
//! pushed content-addressed, started once per phone connection on one `shell,v2` stream and spoken to over its
//! stdin and stdout (protocol: `device-profile/phone-helper.md`). A tap through it is one line each way on a stream
//! that is already open, instead of a new stream and (Android ≤ 11) a new VM for `input`.
//!
//! Lifetime, per phone: nothing happens until the first operation that could use it (lazy). That one cleans up
//! (other `xagent-helper-*.dex` files, a stale `xagent.Helper` process of an earlier connector run), pushes the dex
//! when it is not there with the right size, starts `app_process` and waits for the greeting. The session lives
//! until the phone changes state (it went away, or came back: [`Helpers::forget`]) or the connector shuts down
//! ([`Helpers::shutdown`]); dropping it closes the stream, and the helper exits at the end of its input. A session
//! whose stream dies is started once more; the second death, like a start that fails, is kept as the reason and
//! the phone stays on the shell path until it reconnects.
//!
//! Every operation falls back on its own: an operation the greeting says is unavailable, or that answers
//! `unavailable`, `denied` (Xiaomi's security toggle), `unknown_verb` or, twice, `failed`, goes to the shell path
//! from then on with that reason kept; `busy` (another UiAutomation connected) and a request that times out fall
//! back for that one call. What fell back and why is in [`Helpers::report`] (`android_device_status`, the wall,
//! `doctor`).
//!
//! Exactly once: a side effect (an input, typed text, a clipboard write) whose request has gone to the helper is
//! never sent again by another path. When its answer is lost (the stream died, no answer in time) or says it
//! `failed` part-way, the call answers `device_timeout` with `input_may_have_been_sent` and the helper is
//! restarted (or the verb left to the shell path from the next call on), never bypassed for that call: a late
//! helper still delivers what it was given, and the `input` fallback would have made one tap two. Only answers
//! the helper gives before injecting anything (`unavailable`, `unknown_verb`, `denied`, `bad_request`) let the
//! same call go the shell's way.
//!
//! The phone is hostile too: reply lines are bounded (a greeting 1 KiB, a `tree` 8 MiB, anything else 4 KiB), a
//! reply must answer the request in front of the queue (ids are checked), every request has its own timeout, and
//! payloads are parsed as untrusted input by their users.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot};

use super::key::DeviceKey;
use super::link::Device;
use crate::protocol::errors::{ErrorCode, ProtoError};

/// The assembled helper (`phone-helper/xagent-helper.dex`; `tests/phone_helper.rs` checks that it is what its smali
/// source assembles to).
pub const DEX: &[u8] = include_bytes!("../../phone-helper/xagent-helper.dex");

/// Where the dex is pushed: the phone's shell-writable directory, named by the dex's own hash, so a stale or
/// foreign file under another name is never run and a new connector never runs an old dex.
pub fn dex_path() -> String {
    use sha2::Digest;
    let hash = sha2::Sha256::digest(DEX);
    let hex: String = hash.iter().take(8).map(|b| format!("{b:02x}")).collect();
    format!("/data/local/tmp/xagent-helper-{hex}.dex")
}

mod owner;
mod report;
pub use owner::owner_tag;
use owner::OWNER_ARG;
pub use report::{attention, summary};

/// The first Android release the dex runs on (dex version 038, `smali --api 26`).
pub const MIN_SDK: u32 = 26;

/// The protocol version this host speaks.
const PROTOCOL: &str = "1";

/// How long `app_process` may take to greet: ~1 s on a phone, more on a slow or busy one.
const START_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest greeting line accepted.
const GREETING_MAX: usize = 1024;
/// Longest reply line of a `tree` (the protocol's bound) and of anything else (helper 1 writes ≤ ~300 bytes).
const TREE_REPLY_MAX: usize = 8 << 20;
const REPLY_MAX: usize = 4096;
/// A `clip` reply: at most 2048 UTF-16 units of text (≤ 6 KiB of UTF-8) as base64, and its words.
const CLIP_REPLY_MAX: usize = 12 << 10;
/// A `frame` reply: at most 64 × 64 cells of 3 bytes as base64 (16 KiB) and its numbers.
const FRAME_REPLY_MAX: usize = 17 << 10;
/// Bytes of stderr kept from a helper that did not start (for the reason).
const STDERR_KEPT: usize = 2048;
/// What a request may take beyond its own duration (a gesture's, an idle wait's). The helper answers in a few ms;
/// the rest is the host's own time: on a busy host driving several phones (a settled-tap burst on five phones, load
/// 10 on 2 cores) a 1 s slack passed while the tap had landed, answering "may have been sent" and, twice, leaving the
/// phone on the shell path. 3 s keeps that from happening and still ends a stuck helper's request soon.
const REQUEST_SLACK: Duration = Duration::from_secs(3);
/// `text` through the clipboard waits for the focused app to read it (the dispatcher gives up after 10 s).
const PASTE_TIMEOUT: Duration = Duration::from_secs(12);
/// A `tree` of a large screen: the walk, the XML, the base64, the transfer.
const TREE_TIMEOUT: Duration = Duration::from_secs(10);
/// Starts per phone connection: the first, and once more after its stream died.
const STARTS: u32 = 2;
/// The `details` key of the error [`Helpers::call`] answers when the phone left the helper's start-up probe
/// unanswered: the caller counts it, then goes on through the shell path (`AdbBackend::helper`).
pub const START_UNANSWERED: &str = "helper_start_unanswered";

/// `--phone-helper`: whether helpers are used at all, and every phone's helper.
pub struct Helpers {
    enabled: AtomicBool,
    phones: Mutex<HashMap<DeviceKey, Arc<Phone>>>,
    /// This connector's mark on its helpers' command lines ([`Helpers::set_owner`]).
    owner: Mutex<String>,
}

impl Default for Helpers {
    fn default() -> Self {
        Helpers { enabled: AtomicBool::new(true), phones: Mutex::default(), owner: Mutex::new("0".to_owned()) }
    }
}

/// One phone's helper.
#[derive(Default)]
struct Phone {
    /// The session, once started; held across a start so that one start runs at a time.
    session: tokio::sync::Mutex<Option<Session>>,
    book: Mutex<Book>,
}

/// What is known about one phone's helper (its `report`).
#[derive(Default, Clone)]
struct Book {
    /// Starts so far (≤ [`STARTS`]).
    starts: u32,
    /// Why the helper is not used on this phone (nothing: running, or not tried yet).
    down: Option<String>,
    version: Option<String>,
    /// The greeting's `operation=state` pairs.
    operations: BTreeMap<String, String>,
    /// Verbs that fell back to the shell path for good, and why.
    fallbacks: BTreeMap<String, String>,
    /// The last verb that fell back for one call only (busy, timeout), and why.
    last_fallback: Option<(String, String)>,
    /// Requests answered by the helper so far.
    answered: u64,
    /// Side effects (inputs, text, clipboard writes) the helper answered `ok`.
    inputs_ok: u64,
    /// Pastes the helper answered done whose text the host did not see in the field (D4: [`Helpers::paste_unseen`]).
    unseen_pastes: u64,
    running: bool,
}

/// A running helper: requests go to its task, which owns the stream.
struct Session {
    tx: mpsc::Sender<Request>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Session {
    fn drop(&mut self) {
        // Closing the stream ends the helper (end of its input): no process outlives the session.
        self.task.abort();
    }
}

impl Session {
    fn alive(&self) -> bool {
        !self.tx.is_closed() && !self.task.is_finished()
    }
}

struct Request {
    id: String,
    line: String,
    max: usize,
    reply: oneshot::Sender<String>,
    /// Set just before the line is written to the helper's stream: a request that died unwritten never reached the
    /// phone and may go again (exactly once is about what was written).
    written: Arc<AtomicBool>,
}

/// A verb's answer as the caller sees it.
enum Answer {
    Ok(String),
    /// Fall back for this call (and, with `sticky`, for every later one).
    Fallback {
        reason: String,
        sticky: bool,
    },
    /// The stream died or timed out after the request was written: the session is gone.
    Died(String),
    /// The session was gone before the request was written: nothing reached the phone.
    NotSent(String),
}

/// Forgets `phone`'s session that `tx` went to (only that one: another caller may have restarted it already); its
/// starts used, the helper is left down.
async fn ended(phone: &Phone, tx: &mpsc::Sender<Request>, reason: &str) {
    let mut s = phone.session.lock().await;
    if s.as_ref().is_some_and(|s| s.tx.same_channel(tx)) {
        *s = None;
    }
    let mut b = phone.book.lock().unwrap_or_else(|e| e.into_inner());
    b.running = false;
    if b.starts >= STARTS {
        b.down = Some(format!("its stream ended again ({reason})"));
    }
}

/// The greeting operation a verb needs.
fn operation(verb: &str, args: &str) -> &'static str {
    match verb {
        "tap" | "swipe" | "press" | "gesture" => "touch",
        "key" => "key",
        "text" => {
            let ascii = super::shell::base64_decode(args).is_some_and(|b| b.iter().all(|c| (0x20..=0x7e).contains(c)));
            if ascii {
                "text"
            } else {
                "paste"
            }
        }
        "screen" => "screen",
        "tree" => "tree",
        "idle" => "idle",
        "clip" | "setclip" | "clearclip" => "clip",
        "frame" => "frame",
        _ => "ping",
    }
}

/// Verbs that change the phone: once one is written to the helper's stream it is never sent another way.
fn side_effect(verb: &str) -> bool {
    matches!(verb, "tap" | "swipe" | "press" | "gesture" | "key" | "text" | "setclip" | "clearclip")
}

/// The error of a side effect whose request reached the helper and whose outcome is unknown.
fn maybe_sent(verb: &str, why: &str) -> ProtoError {
    ProtoError::new(
        ErrorCode::DeviceTimeout,
        format!(
            "the phone helper took `{verb}` but its answer was lost ({why}); the input may have been delivered, so it \
             was not sent again another way. Check the screen (android_observe) before repeating it"
        ),
    )
    .with_details(json!({"input_may_have_been_sent": true}))
}

impl Helpers {
    pub fn set_enabled(&self, on: bool) {
        self.enabled.store(on, Ordering::Relaxed);
    }

    pub fn enabled(&self) -> bool {
        self.enabled.load(Ordering::Relaxed)
    }

    /// Names this connector on its helpers' command lines: a short hash of `place` (its data directory) and the
    /// host's name, the same across restarts (so a crashed run's helper is recognised and ended) and different for
    /// another connector sharing the phone (whose helper is left alone).
    pub fn set_owner(&self, place: &str) {
        *self.owner.lock().unwrap_or_else(|e| e.into_inner()) = owner_tag(place);
    }

    fn owner(&self) -> String {
        self.owner.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn phone(&self, key: &DeviceKey) -> Arc<Phone> {
        self.phones.lock().unwrap_or_else(|e| e.into_inner()).entry(key.clone()).or_default().clone()
    }

    /// The phone changed state (went away, came back, reconnected): its session ends, and the next use starts
    /// afresh (with the reasons forgotten: a phone that reconnects is probed again).
    pub fn forget(&self, key: &DeviceKey) {
        self.phones.lock().unwrap_or_else(|e| e.into_inner()).remove(key);
    }

    /// The connector shuts down: every session ends (each stream closed, each helper at the end of its input).
    pub fn shutdown(&self) {
        self.phones.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }

    /// Whether a request for `verb` would go to `key`'s helper at all (on, not given up on that phone, the verb
    /// not fallen back): when not, the caller goes the shell's way without a device operation of its own — an
    /// operation that touches nothing must not count as the phone answering (the recovery ladder counts timeouts
    /// in a row, and any answer resets them).
    pub fn would_use(&self, key: &DeviceKey, verb: &str, args: &str) -> bool {
        if !self.enabled() {
            return false;
        }
        let Some(phone) = self.phones.lock().unwrap_or_else(|e| e.into_inner()).get(key).cloned() else {
            return true;
        };
        let b = phone.book.lock().unwrap_or_else(|e| e.into_inner());
        b.down.is_none() && !b.fallbacks.contains_key(verb) && !b.fallbacks.contains_key(operation(verb, args))
    }

    /// Whether `key`'s helper is running now, so that asking it costs no start (settle's frames ask only then:
    /// a start inside a frame's short deadline could be cut off half-way).
    pub fn running(&self, key: &DeviceKey) -> bool {
        let phone = self.phones.lock().unwrap_or_else(|e| e.into_inner()).get(key).cloned();
        phone.is_some_and(|p| p.book.lock().unwrap_or_else(|e| e.into_inner()).running)
    }

    /// Sends `verb args` to `key`'s helper (started first when needed) within `timeout`: the reply's payload, or
    /// `None` when the caller must use the shell path (the reason is kept). `sdk` gates Android 8+. An error when a
    /// side effect's request reached the helper and its outcome is unknown: it must not be sent again another way.
    pub(crate) async fn call(
        &self,
        key: &DeviceKey,
        d: &Device,
        sdk: Option<u32>,
        verb: &str,
        args: &str,
        timeout: Duration,
    ) -> Result<Option<String>, ProtoError> {
        if !self.enabled() {
            return Ok(None);
        }
        let phone = self.phone(key);
        let op = operation(verb, args);
        {
            let b = phone.book.lock().unwrap_or_else(|e| e.into_inner());
            if b.fallbacks.contains_key(verb) || b.fallbacks.contains_key(op) {
                return Ok(None);
            }
        }
        let effect = side_effect(verb);
        // A failed read is retried once (`failed`: the protocol's "retry once, then fall back"); a side effect never.
        let mut failed_once = false;
        loop {
            let Some(tx) = self.session(&phone, d, sdk).await? else { return Ok(None) };
            let state = {
                let b = phone.book.lock().unwrap_or_else(|e| e.into_inner());
                match b.operations.get(op).map(String::as_str) {
                    // Without the virtual key map the helper pastes ASCII too (protocol: `no_key_map`): the text
                    // goes to it whenever it can paste, not to the shell for good.
                    Some("no_key_map") if op == "text" && b.operations.get("paste").is_some_and(|p| p == "ok") => {
                        Some("ok".to_owned())
                    }
                    other => other.map(str::to_owned),
                }
            };
            match state.as_deref() {
                Some("ok") => {}
                // A verb the greeting does not name (an older helper): ask; it answers unknown_verb if so.
                None if op == "ping" => {}
                None => {
                    let why = "not offered by this helper".to_owned();
                    phone.book.lock().unwrap_or_else(|e| e.into_inner()).fallbacks.insert(op.to_owned(), why);
                    return Ok(None);
                }
                Some(reason) => {
                    let why = format!("unavailable: {reason}");
                    phone.book.lock().unwrap_or_else(|e| e.into_inner()).fallbacks.insert(op.to_owned(), why);
                    return Ok(None);
                }
            }
            match request(&tx, verb, args, timeout).await {
                Answer::Ok(payload) => {
                    let mut b = phone.book.lock().unwrap_or_else(|e| e.into_inner());
                    b.answered += 1;
                    b.inputs_ok += u64::from(effect);
                    return Ok(Some(payload));
                }
                Answer::Fallback { reason, sticky: false }
                    if reason.starts_with("failed") && !failed_once && !effect =>
                {
                    failed_once = true;
                }
                Answer::Fallback { reason, .. } if effect && reason.starts_with("failed") => {
                    // The helper gave up part-way (an injection the system answered false, an exception between
                    // events): some of the input may be on the phone. The shell path from the next call on.
                    tracing::warn!(device = %key, verb, reason = %reason, "phone helper: a side effect failed part-way");
                    phone
                        .book
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .fallbacks
                        .insert(verb.to_owned(), reason.clone());
                    return Err(maybe_sent(verb, &format!("the phone helper answered `{reason}`")));
                }
                Answer::Fallback { reason, sticky } => {
                    tracing::info!(device = %key, verb, reason = %reason, "phone helper: falling back to the shell");
                    let mut b = phone.book.lock().unwrap_or_else(|e| e.into_inner());
                    if sticky || reason.starts_with("failed") {
                        b.fallbacks.insert(verb.to_owned(), reason);
                    } else {
                        b.last_fallback = Some((verb.to_owned(), reason));
                    }
                    return Ok(None);
                }
                Answer::NotSent(reason) => {
                    // Nothing reached the phone: a fresh helper takes the request (if its starts allow; else the
                    // shell path does, as for a helper that never started).
                    tracing::info!(device = %key, verb, reason = %reason, "phone helper: its stream had ended");
                    ended(&phone, &tx, &reason).await;
                }
                Answer::Died(reason) => {
                    tracing::warn!(device = %key, verb, reason = %reason, "phone helper: its stream ended");
                    ended(&phone, &tx, &reason).await;
                    let mut b = phone.book.lock().unwrap_or_else(|e| e.into_inner());
                    b.last_fallback = Some((verb.to_owned(), reason.clone()));
                    if verb == "frame" {
                        // Reading the display can kill the process on a ROM whose system-server library aborts
                        // (helper D1): settle keeps screencap on this phone rather than killing it each time.
                        b.fallbacks.insert(verb.to_owned(), format!("the helper died reading the display ({reason})"));
                    }
                    drop(b);
                    if effect {
                        return Err(maybe_sent(verb, &reason));
                    }
                    // A read: the shell path answers it instead.
                    return Ok(None);
                }
            }
        }
    }

    /// The phone's session, started when there is none yet (and starts are left).
    ///
    /// A start whose probe the phone left unanswered is an error (`device_timeout`, [`START_UNANSWERED`] in its
    /// details): the device operation that carried it counts it toward the recovery ladder as any command that timed
    /// out, where the shell fallback's answer would have counted the phone alive.
    async fn session(
        &self,
        phone: &Phone,
        d: &Device,
        sdk: Option<u32>,
    ) -> Result<Option<mpsc::Sender<Request>>, ProtoError> {
        let mut s = phone.session.lock().await;
        if let Some(sess) = s.as_ref().filter(|s| s.alive()) {
            return Ok(Some(sess.tx.clone()));
        }
        if s.take().is_some() {
            // Found dead without a request noticing (killed between requests).
            let mut b = phone.book.lock().unwrap_or_else(|e| e.into_inner());
            b.running = false;
            if b.starts >= STARTS {
                b.down = Some("its stream ended again".to_owned());
            }
        }
        {
            let mut b = phone.book.lock().unwrap_or_else(|e| e.into_inner());
            if b.down.is_some() {
                return Ok(None);
            }
            if sdk.is_some_and(|v| v < MIN_SDK) {
                b.down = Some(format!("Android older than 8 (API {}; the helper needs {MIN_SDK})", sdk.unwrap_or(0)));
                return Ok(None);
            }
            if b.starts >= STARTS {
                // A start cut short (its call's deadline ran out on a phone that stopped answering) counts too: the
                // helper is not started on every call.
                b.down = Some(format!("started {STARTS} times already"));
                return Ok(None);
            }
            b.starts += 1;
        }
        match start(d, &self.owner()).await {
            Ok((sess, version, operations)) => {
                let tx = sess.tx.clone();
                *s = Some(sess);
                let mut b = phone.book.lock().unwrap_or_else(|e| e.into_inner());
                b.version = Some(version);
                b.operations = operations;
                b.running = true;
                Ok(Some(tx))
            }
            Err(StartFailure { reason, unanswered }) => {
                tracing::warn!(reason = %reason, "phone helper did not start; the shell path is used");
                phone.book.lock().unwrap_or_else(|e| e.into_inner()).down = Some(reason.clone());
                if unanswered {
                    return Err(ProtoError::new(
                        ErrorCode::DeviceTimeout,
                        format!("the phone helper's start: {reason}"),
                    )
                    .with_details(json!({ START_UNANSWERED: true })));
                }
                Ok(None)
            }
        }
    }

    /// Why `verb` does not go through `key`'s helper (after [`Helpers::call`] answered `None`): helpers off, the
    /// helper down on this phone, or the operation fallen back, in words for an error message.
    pub fn why_not(&self, key: &DeviceKey, verb: &str) -> String {
        if !self.enabled() {
            return "the connector runs with --phone-helper off".to_owned();
        }
        let Some(phone) = self.phones.lock().unwrap_or_else(|e| e.into_inner()).get(key).cloned() else {
            return "the phone helper has not started on this phone".to_owned();
        };
        let b = phone.book.lock().unwrap_or_else(|e| e.into_inner());
        let op = operation(verb, "");
        if let Some(r) = &b.down {
            return format!("the phone helper cannot run on this phone: {r}");
        }
        if let Some(r) = b.fallbacks.get(verb).or_else(|| b.fallbacks.get(op)) {
            return format!("the phone helper's `{op}` operation is not usable here: {r}");
        }
        match &b.last_fallback {
            Some((v, r)) if v == verb => format!("the phone helper did not answer: {r}"),
            _ => "the phone helper did not answer".to_owned(),
        }
    }

    /// Whether `verb` would go to `key`'s helper now (so a caller can choose work that is cheap only there, such as
    /// the unasked tree delta of an action): helpers on, Android 8+, the phone's helper not down, the verb not
    /// fallen back for good and its operation offered — or the helper not started yet (the next use starts it).
    pub fn may_serve(&self, key: &DeviceKey, sdk: Option<u32>, verb: &str) -> bool {
        if !self.enabled() || sdk.is_some_and(|v| v < MIN_SDK) {
            return false;
        }
        let Some(phone) = self.phones.lock().unwrap_or_else(|e| e.into_inner()).get(key).cloned() else {
            return true;
        };
        let b = phone.book.lock().unwrap_or_else(|e| e.into_inner());
        let op = operation(verb, "");
        b.down.is_none()
            && !b.fallbacks.contains_key(verb)
            && !b.fallbacks.contains_key(op)
            && b.operations.get(op).is_none_or(|s| s == "ok")
    }

    /// What `android_device_status`, `doctor` and the wall show about `key`'s helper.
    pub fn report(&self, key: &DeviceKey) -> Value {
        if !self.enabled() {
            return json!({"state": "off", "reason": "--phone-helper off"});
        }
        let Some(phone) = self.phones.lock().unwrap_or_else(|e| e.into_inner()).get(key).cloned() else {
            return json!({"state": "not_started"});
        };
        let b = phone.book.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let state = match (&b.down, b.running) {
            (Some(_), _) => "unavailable",
            (None, true) => "running",
            (None, false) if b.starts == 0 => "not_started",
            (None, false) => "stopped",
        };
        let mut v = json!({"state": state, "starts": b.starts, "answered": b.answered});
        if let Some(r) = &b.down {
            v["reason"] = json!(r);
        }
        if let Some(ver) = &b.version {
            v["version"] = json!(ver);
        }
        if !b.operations.is_empty() {
            v["operations"] = json!(b.operations);
        }
        if !b.fallbacks.is_empty() {
            v["fell_back"] = json!(b.fallbacks);
        }
        if let Some((verb, why)) = &b.last_fallback {
            v["last_fallback"] = json!({"verb": verb, "reason": why});
        }
        if b.down.is_none() {
            // Whether the phone takes injected input, as far as this helper has seen (`report::injection`).
            let fell_back = v["fell_back"].as_object().cloned().unwrap_or_default();
            v["injection"] = json!(report::injection(&fell_back, b.unseen_pastes, b.inputs_ok));
            if b.unseen_pastes > 0 {
                v["unseen_pastes"] = json!(b.unseen_pastes);
            }
        }
        let items = attention(&v);
        if !items.is_empty() {
            v["attention"] = json!(items);
        }
        v
    }

    /// A paste the helper answered done did not show in the field it went to (the host's read-back, D4: Samsung
    /// One UI may paste an earlier clip): the phone's typed text is unverified, which the report says.
    pub fn paste_unseen(&self, key: &DeviceKey) {
        self.phone(key).book.lock().unwrap_or_else(|e| e.into_inner()).unseen_pastes += 1;
    }

    /// A binding ended with a call cut that may have sent input (`channels::work`): the session ends and the
    /// helper's process on the phone is killed, so a gesture it is still playing stops now instead of reaching
    /// the next lease; the next use starts it afresh (a cut is no failure of the helper: nothing counts against it).
    pub async fn kill_for_cut(&self, key: &DeviceKey, d: &Device) {
        if self.phones.lock().unwrap_or_else(|e| e.into_inner()).remove(key).is_none() {
            return;
        }
        let Ok(ps) = d.shell("ps -A -o PID,ARGS").await else { return };
        // Only this connector's helpers: another connector's on the same phone serves another tenant.
        let pids = owner::own_pids(&ps.stdout, &self.owner());
        if !pids.is_empty() {
            tracing::info!(device = %key, processes = pids.len(), "phone helper: killed for a binding's end");
            let _ = d.shell(&format!("kill -9 {}; true", pids.join(" "))).await;
        }
    }
}

static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// Sends one request and waits for its reply line.
async fn request(tx: &mpsc::Sender<Request>, verb: &str, args: &str, timeout: Duration) -> Answer {
    let id = format!("r{}", NEXT_ID.fetch_add(1, Ordering::Relaxed) % 1_000_000_000);
    let line = if args.is_empty() { format!("{id} {verb}\n") } else { format!("{id} {verb} {args}\n") };
    let max = match verb {
        "tree" => TREE_REPLY_MAX,
        "clip" => CLIP_REPLY_MAX,
        "frame" => FRAME_REPLY_MAX,
        _ => REPLY_MAX,
    };
    let (reply, rx) = oneshot::channel();
    let written = Arc::new(AtomicBool::new(false));
    if tx.send(Request { id: id.clone(), line, max, reply, written: written.clone() }).await.is_err() {
        return Answer::NotSent("the helper's stream is closed".to_owned());
    }
    let line = match tokio::time::timeout(timeout, rx).await {
        Ok(Ok(l)) => l,
        Ok(Err(_)) if !written.load(Ordering::SeqCst) => {
            return Answer::NotSent("the helper's stream ended before the request was written".to_owned());
        }
        Ok(Err(_)) => return Answer::Died("the helper's stream ended".to_owned()),
        // A helper that stops answering holds every request queued behind this one: it is ended (the caller's
        // session is dropped) and, once, started again.
        Err(_) => return Answer::Died(format!("no answer to `{verb}` within {} ms", timeout.as_millis())),
    };
    let rest = &line[id.len()..];
    if let Some(p) = rest.strip_prefix(" ok") {
        return Answer::Ok(p.strip_prefix(' ').unwrap_or(p).to_owned());
    }
    let err = rest.strip_prefix(" err ").unwrap_or("");
    let (code, msg) = err.split_once(' ').unwrap_or((err, ""));
    // The phone's words, on their way into logs and reports: printable and bounded.
    let msg = super::text::phone_text(msg, 120);
    match code {
        "unavailable" => Answer::Fallback { reason: format!("unavailable: {msg}"), sticky: true },
        "denied" if operation(verb, args) == "clip" => Answer::Fallback {
            reason: "denied: the system refused the clipboard to the shell user".to_owned(),
            sticky: true,
        },
        "denied" => {
            Answer::Fallback { reason: format!("{} ({})", report::REFUSED, report::XIAOMI_TOGGLE), sticky: true }
        }
        "unknown_verb" => Answer::Fallback { reason: "unknown_verb: an older helper".to_owned(), sticky: true },
        "busy" => Answer::Fallback { reason: format!("busy: {msg}"), sticky: false },
        "failed" => Answer::Fallback { reason: format!("failed: {msg}"), sticky: false },
        other => {
            let code = super::text::phone_text(other, 40);
            Answer::Fallback { reason: format!("{code}: {msg}"), sticky: true }
        }
    }
}

/// Why a start failed: the words, and whether the phone left the start-up probe unanswered (a hung phone, which the
/// recovery ladder counts as any device timeout: issue 48 item 5) rather than refusing the helper.
struct StartFailure {
    reason: String,
    unanswered: bool,
}

impl From<String> for StartFailure {
    fn from(reason: String) -> Self {
        StartFailure { reason, unanswered: false }
    }
}

/// Cleans up, pushes the dex when needed, starts the helper and reads its greeting: the session, the helper
/// version and the operations' states; or why it cannot be used. `owner` marks this connector's helpers.
async fn start(d: &Device, owner: &str) -> Result<(Session, String, BTreeMap<String, String>), StartFailure> {
    let path = dex_path();
    let name = path.rsplit('/').next().unwrap_or_default().to_owned();
    // One round trip finds what an earlier run left: dex files of other versions, a helper still running.
    let found =
        d.shell("ls /data/local/tmp 2>/dev/null; echo __xagent_ps__; ps -A -o PID,ARGS").await.map_err(|e| {
            StartFailure {
                unanswered: e.code == ErrorCode::DeviceTimeout,
                reason: format!("the clean-up probe failed: {}", e.message),
            }
        })?;
    let (files, procs) = found.stdout.split_once("__xagent_ps__").unwrap_or((&found.stdout, ""));
    let (cmd, foreign) = owner::cleanup(files, procs, &name, owner);
    if foreign > 0 {
        tracing::info!(processes = foreign, "phone helper: another connector's helper runs on this phone; left alone");
    }
    if let Some(cmd) = cmd {
        tracing::info!("phone helper: removing what an earlier run of this connector left");
        // Best effort: a process that ended meanwhile makes `kill` fail, which changes nothing here.
        let _ = d.shell(&format!("{cmd}; true")).await;
    }
    let mut sync = d.sync().await.map_err(|e| format!("sync failed: {}", e.message))?;
    let st = sync.stat(&path).await.map_err(|e| format!("sync STAT failed: {}", e.message))?;
    if !st.is_file() || st.size as usize != DEX.len() {
        let mut r: &[u8] = DEX;
        sync.send(&path, 0o644, &mut r, |_| {})
            .await
            .map_err(|e| format!("pushing the helper failed: {}", e.message))?;
    }
    drop(sync);
    let (server, serial) = d.path();
    let cmd = format!("CLASSPATH={path} app_process / xagent.Helper {OWNER_ARG}{owner}");
    let st = super::transport::open(server, serial, &format!("shell,v2,raw:{cmd}"))
        .await
        .map_err(|e| format!("could not open the helper's stream: {}", e.message))?;
    let mut s = st.into_tcp();
    let mut rd = Reader::default();
    let greeting = match tokio::time::timeout(START_TIMEOUT, rd.line(&mut s, || GREETING_MAX)).await {
        Err(_) => return Err(format!("no greeting within {} s", START_TIMEOUT.as_secs()).into()),
        Ok(Err(e)) => return Err(e.into()),
        Ok(Ok(l)) => l,
    };
    let fields: Vec<&str> = greeting.split(' ').collect();
    if fields.len() < 5 || fields[0] != "*" || fields[1] != "hello" {
        return Err("its first line was not a greeting".to_owned().into());
    }
    if fields[2] != PROTOCOL {
        return Err(format!(
            "it speaks protocol {}, this connector {PROTOCOL}",
            super::text::phone_text(fields[2], 10)
        )
        .into());
    }
    let version = super::text::phone_text(fields[3], 10);
    let mut operations = BTreeMap::new();
    for f in &fields[5..] {
        if let Some((op, state)) = f.split_once('=') {
            let ok = |s: &str| !s.is_empty() && s.len() <= 40 && s.bytes().all(|b| b.is_ascii_lowercase() || b == b'_');
            if ok(op) && ok(state) && operations.len() < 32 {
                operations.insert(op.to_owned(), state.to_owned());
            }
        }
    }
    let (tx, rx) = mpsc::channel(64);
    let task = tokio::spawn(serve(s, rd, rx));
    Ok((Session { tx, task }, version, operations))
}

/// The session's task: writes requests as stdin packets and matches reply lines to them in order. The reading and
/// the writing are two futures of their own: a read is never cut by a request arriving (it is not cancel-safe).
async fn serve(s: TcpStream, mut rd: Reader, mut rx: mpsc::Receiver<Request>) {
    type Pending = VecDeque<(String, usize, oneshot::Sender<String>)>;
    let (mut r, mut w) = s.into_split();
    let pending: Mutex<Pending> = Mutex::default();
    let writer = async {
        while let Some(req) = rx.recv().await {
            // Queued before it is written: the reply may come back before the write returns.
            pending.lock().unwrap_or_else(|e| e.into_inner()).push_back((req.id, req.max, req.reply));
            req.written.store(true, Ordering::SeqCst);
            if w.write_all(&v2(0, req.line.as_bytes())).await.is_err() {
                return;
            }
        }
        // Every sender is gone: close stdin so the helper exits (status 0).
        let _ = w.write_all(&v2(4, &[])).await;
    };
    let reader = async {
        loop {
            // Bounded by what the request in front of the queue may answer (a tap's reply is not buffered up to a
            // tree's 8 MiB); asked again as packets arrive, since that request may be queued while this read waits.
            let max = || pending.lock().unwrap_or_else(|e| e.into_inner()).front().map_or(REPLY_MAX, |p| p.1);
            let Ok(line) = rd.line(&mut r, max).await else { return };
            let Some((id, max, reply)) = pending.lock().unwrap_or_else(|e| e.into_inner()).pop_front() else {
                // A line nobody asked for: not the protocol.
                return;
            };
            if !line.starts_with(&format!("{id} ")) || line.len() > max {
                return;
            }
            let _ = reply.send(line);
        }
    };
    // The reader first: a stream that has ended (the helper killed between two calls) is noticed before a new
    // request is written into it, so that request counts as not sent and goes to a fresh helper.
    tokio::select! {
        biased;
        _ = reader => {}
        _ = writer => {}
    }
}

/// A shell v2 packet.
fn v2(id: u8, data: &[u8]) -> Vec<u8> {
    let mut b = Vec::with_capacity(5 + data.len());
    b.push(id);
    b.extend_from_slice(&(data.len() as u32).to_le_bytes());
    b.extend_from_slice(data);
    b
}

/// Reads the helper's stdout lines out of shell v2 packets, bounded.
#[derive(Default)]
struct Reader {
    /// Stdout bytes not yet returned as a line.
    buf: Vec<u8>,
    stderr: Vec<u8>,
}

impl Reader {
    /// The next stdout line (without `\n`), at most `max` bytes; an error when the stream ends first, the line
    /// runs past `max`, or the helper exits (with what it said on stderr).
    async fn line<R: tokio::io::AsyncRead + Unpin>(
        &mut self,
        s: &mut R,
        max: impl Fn() -> usize,
    ) -> Result<String, String> {
        loop {
            let max = max();
            if let Some(i) = self.buf.iter().position(|b| *b == b'\n') {
                let rest = self.buf.split_off(i + 1);
                let mut line = std::mem::replace(&mut self.buf, rest);
                line.pop();
                if line.len() > max {
                    return Err(format!("a reply line longer than {max} bytes"));
                }
                if !line.iter().all(|b| (0x20..=0x7e).contains(b)) {
                    return Err("a reply line that is not printable ASCII".to_owned());
                }
                return Ok(String::from_utf8_lossy(&line).into_owned());
            }
            if self.buf.len() > max {
                return Err(format!("a reply line longer than {max} bytes"));
            }
            let mut head = [0u8; 5];
            s.read_exact(&mut head).await.map_err(|_| "the stream ended".to_owned())?;
            let len = u32::from_le_bytes([head[1], head[2], head[3], head[4]]) as usize;
            // Checked before anything is allocated: no packet may carry more than the line left to read.
            if self.buf.len().saturating_add(len) > max + 1 + 64 * 1024 {
                return Err(format!("a packet of {len} bytes"));
            }
            let mut data = vec![0u8; len];
            s.read_exact(&mut data).await.map_err(|_| "the stream ended".to_owned())?;
            match head[0] {
                1 => self.buf.extend_from_slice(&data),
                2 => {
                    let room = STDERR_KEPT.saturating_sub(self.stderr.len());
                    self.stderr.extend_from_slice(&data[..data.len().min(room)]);
                }
                3 => {
                    let code = data.first().copied().unwrap_or(255);
                    let said = String::from_utf8_lossy(&self.stderr);
                    let said = super::text::phone_text(said.lines().next().unwrap_or(""), 160);
                    return Err(if said.is_empty() {
                        format!("it exited with status {code}")
                    } else {
                        format!("it exited with status {code}: {said}")
                    });
                }
                _ => {}
            }
        }
    }
}

/// A request's timeout: [`REQUEST_SLACK`] plus what the verb itself takes.
pub fn timeout_for(verb: &str, held: Duration) -> Duration {
    match verb {
        "text" => PASTE_TIMEOUT,
        "tree" => TREE_TIMEOUT,
        _ => REQUEST_SLACK + held,
    }
}

/// Android key codes (`KeyEvent.KEYCODE_*`) of the keys `android_key` offers.
pub fn keycode(name: &str) -> Option<u16> {
    Some(match name {
        "HOME" => 3,
        "BACK" => 4,
        "DPAD_UP" => 19,
        "DPAD_DOWN" => 20,
        "DPAD_LEFT" => 21,
        "DPAD_RIGHT" => 22,
        "DPAD_CENTER" => 23,
        "VOLUME_UP" => 24,
        "VOLUME_DOWN" => 25,
        "POWER" => 26,
        "CAMERA" => 27,
        "TAB" => 61,
        "SPACE" => 62,
        "ENTER" => 66,
        "DEL" => 67,
        "MENU" => 82,
        "SEARCH" => 84,
        "MEDIA_PLAY_PAUSE" => 85,
        "PAGE_UP" => 92,
        "PAGE_DOWN" => 93,
        "ESCAPE" => 111,
        "FORWARD_DEL" => 112,
        "MOVE_HOME" => 122,
        "MOVE_END" => 123,
        "VOLUME_MUTE" => 164,
        "APP_SWITCH" => 187,
        "SLEEP" => 223,
        "WAKEUP" => 224,
        _ => return None,
    })
}

/// How long a long key press is held: past `ViewConfiguration`'s long-press timeout on every version (500 ms
/// before Android 12, 400 ms since).
pub const LONG_KEY_HOLD_MS: u64 = 600;

#[cfg(test)]
mod tests {
    use super::owner::is_helper_dex;
    use super::*;

    #[test]
    fn the_dex_is_embedded_and_named_by_its_hash() {
        assert!(DEX.starts_with(b"dex\n"));
        let p = dex_path();
        let name = p.strip_prefix("/data/local/tmp/").unwrap();
        assert!(is_helper_dex(name), "{p}");
        assert!(!is_helper_dex("xagent-helper-.dex") && !is_helper_dex("xagent-helper-x;rm.dex"));
        assert!(!is_helper_dex("other.dex"));
    }

    #[test]
    fn every_key_of_android_key_has_its_code() {
        for k in crate::tools::input::KEYS {
            assert!(keycode(k).is_some(), "{k}");
        }
    }

    /// A helper that sends a packet announcing more than a reply line may hold is refused before allocating.
    #[tokio::test]
    async fn an_oversized_reply_is_refused() {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        let srv = tokio::spawn(async move {
            let (mut c, _) = l.accept().await.unwrap();
            let mut p = vec![1u8];
            p.extend_from_slice(&0xFFFF_FFF0u32.to_le_bytes());
            c.write_all(&p).await.unwrap();
            tokio::time::sleep(Duration::from_secs(5)).await;
        });
        let mut s = TcpStream::connect(addr).await.unwrap();
        let r = tokio::time::timeout(Duration::from_secs(2), Reader::default().line(&mut s, || REPLY_MAX)).await;
        assert!(r.expect("answered at once").unwrap_err().contains("packet"));
        srv.abort();
    }
}

#[cfg(test)]
mod use_tests {
    use super::*;

    fn key() -> DeviceKey {
        DeviceKey { server: "127.0.0.1:5037".into(), serial: "A".into() }
    }

    /// Issue 48 (item 5): a helper given up on is not asked — so no device operation that touches nothing counts
    /// as the phone answering and resets the recovery ladder's timeouts in a row.
    #[test]
    fn a_helper_given_up_on_or_a_fallen_back_verb_is_not_asked() {
        let h = Helpers::default();
        assert!(h.would_use(&key(), "tap", "1 2"), "not started yet: asked (and started)");
        h.phone(&key()).book.lock().unwrap().fallbacks.insert("touch".into(), "denied".into());
        assert!(!h.would_use(&key(), "tap", "1 2"));
        assert!(h.would_use(&key(), "key", "4 1 0"));
        h.phone(&key()).book.lock().unwrap().down = Some("no greeting".into());
        assert!(!h.would_use(&key(), "key", "4 1 0"));
        h.set_enabled(false);
        h.forget(&key());
        assert!(!h.would_use(&key(), "key", "4 1 0"), "off");
    }
}

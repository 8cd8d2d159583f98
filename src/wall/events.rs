//! `GET /api/v1/events`: the live stream the page (and integrations) follow, as Server-Sent Events.
//!
//! Every event is `event: devices` with the same document as `GET /api/v1/devices`, sent when something changed:
//! at once (within tens of milliseconds) when the device layer announces a state change — the backend's change
//! broadcast, the same one that drives descriptor pushes — and otherwise checked every [`TICK`] (bindings, last
//! calls, battery). "Changed" ignores the connector's `uptime_s` (the page counts it on by itself) and the data
//! dir's free bytes (see [`change_key`]), so an idle wall
//! costs one keepalive comment every [`KEEPALIVE`], which also lets the server notice a closed browser tab.
//!
//! Memory per stream is bounded whatever the client does: there is no queue, only a one-document [`Mailbox`]. A
//! new document *replaces* one the client has not taken yet, so a stream holds at most that document plus the frame
//! hyper is writing (its byte budget: two documents). A client that leaves a document untaken for [`STALL_LIMIT`]
//! (it does not read; its socket buffers are full) is dropped. Streams end when the server shuts down, when the
//! session that opened them ends (logout, expiry), and on a stall.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use hyper::header::{HeaderValue, CACHE_CONTROL, CONTENT_TYPE, RETRY_AFTER};
use hyper::{Response, StatusCode};
use serde_json::Value;
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::Notify;

use super::state::{Wall, MAX_EVENT_STREAMS};
use super::views::snapshot;
use super::wire::sse_event;
use crate::http::{error, Body};
use crate::server::App;

const TICK: Duration = Duration::from_secs(2);
const KEEPALIVE: Duration = Duration::from_secs(15);
/// Changes arriving together (a phone going away touches several fields) are sent as one event.
const DEBOUNCE: Duration = Duration::from_millis(50);
/// Longest a document may wait for a client that does not take it before the stream is dropped.
pub const STALL_LIMIT: Duration = Duration::from_secs(30);

#[derive(Default)]
struct Slot {
    /// The newest document not yet taken by the connection, and since when one has been waiting.
    doc: Option<(Bytes, Instant)>,
    closed: bool,
}

/// The one-document hand-over between a stream's producer task and its response body.
#[derive(Default)]
pub struct Mailbox {
    slot: Mutex<Slot>,
    notify: Notify,
}

impl Mailbox {
    fn lock(&self) -> std::sync::MutexGuard<'_, Slot> {
        self.slot.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Offers a document, replacing an untaken one. `false` when the client has left one untaken for longer than
    /// `stall` (the stream should end).
    pub fn offer(&self, doc: Bytes, now: Instant, stall: Duration) -> bool {
        let mut s = self.lock();
        let since = match &s.doc {
            Some((_, since)) if now.saturating_duration_since(*since) >= stall => return false,
            Some((_, since)) => *since,
            None => now,
        };
        s.doc = Some((doc, since));
        drop(s);
        self.notify.notify_one();
        true
    }

    /// Whether a document has been waiting longer than `stall`.
    pub fn stalled(&self, now: Instant, stall: Duration) -> bool {
        self.lock().doc.as_ref().is_some_and(|(_, since)| now.saturating_duration_since(*since) >= stall)
    }

    pub fn close(&self) {
        self.lock().closed = true;
        self.notify.notify_one();
    }

    /// The next frame for the body: the waiting document, else a keepalive after `keepalive`; `None` once closed.
    pub async fn next(&self, keepalive: Duration) -> Option<Bytes> {
        let deadline = tokio::time::Instant::now() + keepalive;
        loop {
            let notified = self.notify.notified();
            {
                let mut s = self.lock();
                if s.closed {
                    return None;
                }
                if let Some((doc, _)) = s.doc.take() {
                    return Some(doc);
                }
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return Some(Bytes::from_static(b": keepalive\n\n"));
            }
        }
    }
}

/// What decides whether the document changed: everything but the uptime and the data dir's free bytes (both move
/// all the time; a nearly full disk still shows as a change, through its warning).
fn change_key(doc: &Value) -> String {
    let mut d = doc.clone();
    if let Some(c) = d.get_mut("connector").and_then(Value::as_object_mut) {
        c.remove("uptime_s");
        c.remove("data_dir");
    }
    d.to_string()
}

/// `session`: the wall session that opened the stream (the stream ends with it); `None` for Bearer and open walls.
pub async fn stream(app: Arc<App>, w: Arc<Wall>, session: Option<String>) -> Response<Body> {
    let Ok(permit) = w.streams.clone().try_acquire_owned() else {
        let mut r = error(
            StatusCode::SERVICE_UNAVAILABLE,
            "too_many_streams",
            &format!("{MAX_EVENT_STREAMS} event streams (open walls) are open already; retrying shortly"),
        );
        r.headers_mut().insert(RETRY_AFTER, HeaderValue::from_static("5"));
        r.headers_mut().insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
        return r;
    };
    let mailbox = Arc::new(Mailbox::default());
    let mut changes = app.hub.backend().subscribe();
    let mut shutdown = app.shutdown.clone();
    let producer = mailbox.clone();
    tokio::spawn(async move {
        let _permit = permit;
        let mut last = String::new();
        let mut tick = tokio::time::interval(TICK);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let end = |why: &str| {
            tracing::debug!(why, "device wall: event stream ended");
            producer.close();
        };
        loop {
            if session.as_deref().is_some_and(|id| !w.sessions.alive(id)) {
                return end("session ended");
            }
            let doc = snapshot(&app, &w, Duration::ZERO).await;
            let key = change_key(&doc);
            let now = Instant::now();
            if key != last {
                if !producer.offer(sse_event("devices", &doc.to_string()), now, STALL_LIMIT) {
                    return end("client does not read");
                }
                last = key;
            } else if producer.stalled(now, STALL_LIMIT) {
                return end("client does not read");
            }
            tokio::select! {
                _ = shutdown.changed() => return end("shutdown"),
                _ = tick.tick() => {}
                msg = changes.recv() => match msg {
                    Ok(key) => {
                        w.thumbs_changed(&key);
                        tokio::time::sleep(DEBOUNCE).await;
                        while changes.try_recv().is_ok() {}
                    }
                    Err(RecvError::Lagged(_)) => {}
                    Err(RecvError::Closed) => return end("device layer closed"),
                },
            }
            if Arc::strong_count(&producer) == 1 {
                return; // the connection (and with it the body) is gone
            }
        }
    });
    let first = Some(Bytes::from_static(b"retry: 2000\n\n"));
    let body = StreamBody::new(futures_util::stream::unfold((mailbox, first), |(mb, first)| async move {
        let frame = match first {
            Some(f) => f,
            None => mb.next(KEEPALIVE).await?,
        };
        Some((Ok::<_, std::io::Error>(Frame::data(frame)), (mb, None)))
    }));
    let mut r = Response::new(BodyExt::boxed(body));
    let h = r.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert("x-accel-buffering", HeaderValue::from_static("no"));
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_document_replaces_an_untaken_one_and_a_stall_ends_the_stream() {
        let mb = Mailbox::default();
        let t0 = Instant::now();
        assert!(mb.offer(Bytes::from_static(b"one"), t0, STALL_LIMIT));
        assert!(mb.offer(Bytes::from_static(b"two"), t0 + Duration::from_secs(10), STALL_LIMIT));
        assert_eq!(mb.lock().doc.as_ref().unwrap().0, Bytes::from_static(b"two"), "one document held, the newest");
        assert!(!mb.stalled(t0 + Duration::from_secs(29), STALL_LIMIT));
        assert!(mb.stalled(t0 + STALL_LIMIT, STALL_LIMIT), "waiting since the first untaken document");
        assert!(!mb.offer(Bytes::from_static(b"three"), t0 + STALL_LIMIT, STALL_LIMIT));
    }

    #[test]
    fn uptime_alone_is_no_change() {
        let a = serde_json::json!({"connector": {"uptime_s": 1, "version": "1"}, "devices": []});
        let b = serde_json::json!({"connector": {"uptime_s": 9, "version": "1"}, "devices": []});
        let c = serde_json::json!({"connector": {"uptime_s": 9, "version": "1"}, "devices": [1]});
        assert_eq!(change_key(&a), change_key(&b));
        assert_ne!(change_key(&b), change_key(&c));
    }
}

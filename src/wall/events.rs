//! `GET /api/v1/events`: the live stream the page (and integrations) follow, as Server-Sent Events.
//!
//! Every event is `event: devices` with the same document as `GET /api/v1/devices`, sent when something changed:
//! at once (within tens of milliseconds) when the device layer announces a state change — the backend's change
//! broadcast, the same one that drives descriptor pushes — and otherwise checked every [`TICK`] (bindings, last
//! calls, battery). A comment line every [`KEEPALIVE`] keeps proxies from closing an idle stream and lets the
//! server notice a closed browser tab. Streams end when the server shuts down.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use hyper::header::{HeaderValue, CACHE_CONTROL, CONTENT_TYPE};
use hyper::{Response, StatusCode};
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::mpsc;

use super::api::{snapshot, sse_event};
use super::{Wall, MAX_EVENT_STREAMS};
use crate::server::http::{error, Body};
use crate::server::App;

const TICK: Duration = Duration::from_secs(2);
const KEEPALIVE: Duration = Duration::from_secs(15);
/// Changes arriving together (a phone going away touches several fields) are sent as one event.
const DEBOUNCE: Duration = Duration::from_millis(50);

pub async fn stream(app: Arc<App>, w: Arc<Wall>) -> Response<Body> {
    let Ok(permit) = w.streams.clone().try_acquire_owned() else {
        return error(
            StatusCode::TOO_MANY_REQUESTS,
            "rate_limited",
            &format!("{MAX_EVENT_STREAMS} event streams are open already; close a wall tab"),
        );
    };
    let (tx, rx) = mpsc::channel::<Bytes>(4);
    let mut changes = app.hub.backend().subscribe();
    let mut shutdown = app.shutdown.clone();
    tokio::spawn(async move {
        let _permit = permit;
        let _ = tx.send(Bytes::from_static(b"retry: 2000\n\n")).await;
        let mut last = String::new();
        let mut tick = tokio::time::interval(TICK);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut keepalive = tokio::time::interval(KEEPALIVE);
        keepalive.tick().await;
        loop {
            let doc = snapshot(&app, &w, Duration::ZERO).await.to_string();
            if doc != last {
                if tx.send(sse_event("devices", &doc)).await.is_err() {
                    return; // the client went away
                }
                last = doc;
            }
            tokio::select! {
                _ = shutdown.changed() => return,
                _ = tx.closed() => return,
                _ = tick.tick() => {}
                _ = keepalive.tick() => {
                    if tx.send(Bytes::from_static(b": keepalive\n\n")).await.is_err() {
                        return;
                    }
                }
                msg = changes.recv() => match msg {
                    Ok(key) => {
                        w.thumbs_changed(&key);
                        tokio::time::sleep(DEBOUNCE).await;
                        while changes.try_recv().is_ok() {}
                    }
                    Err(RecvError::Lagged(_)) => {}
                    Err(RecvError::Closed) => return,
                },
            }
        }
    });
    let body = StreamBody::new(futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|b| (Ok::<_, std::io::Error>(Frame::data(b)), rx))
    }));
    let mut r = Response::new(BodyExt::boxed(body));
    let h = r.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert("x-accel-buffering", HeaderValue::from_static("no"));
    r
}

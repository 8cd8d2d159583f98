//! The transfer plane (protocol §5): `POST /files/uploads` and `GET /files/refs/{file_ref}`.
//!
//! Download authorisation. xAgent's download chain fetches `download_url` without any header (§3, §5.2), so the
//! URL must authorise by itself: `/files/refs/{file_ref}?token={token}` where the token is 192 random bits, compared
//! in constant time, one-time and bounded by the cache TTL. The token travels in the query rather than the path so
//! that request logging (which records the path only) never sees it. The backend may instead present the system
//! API key plus `X-XAgent-Connector-Channel-ID` of the owning channel (only when a key is configured: without one,
//! a header is no proof of anything). A channel header naming another channel is refused with 403. Unknown,
//! expired, spent or wrongly-tokened refs all answer the same 404, so a probe learns nothing.
//!
//! One-time, but robust to broken connections: [`DownloadBody`] marks the entry consumed when hyper takes the chunk
//! holding the last byte, i.e. every byte has been handed to the connection's write path (hyper only asks for the
//! next chunk once the previous one fit into its bounded write buffer, so a stalled or vanished client stops the
//! polling long before the end). A client that breaks off earlier makes hyper drop the body unfinished, and the
//! URL stays valid. One download runs at a time per entry (a concurrent second one gets 409), and the claim is
//! one compare-and-set of the in-memory claim and the store's consumed flag under one mutex (`FileCache::
//! begin_download`), with the flag written before the claim is released: exactly one request ever receives the
//! whole file, however many race for it. Residual window: the tail still in hyper's write buffer and the kernel's socket
//! buffers (a few hundred KiB) can be lost after the entry was consumed; a client that sees a short body asks the
//! agent for a fresh file.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use http_body_util::BodyExt;
use hyper::body::{Body as HttpBody, Frame, Incoming, SizeHint};
use hyper::header::{HeaderValue, AUTHORIZATION, CACHE_CONTROL, CONTENT_DISPOSITION, CONTENT_LENGTH, CONTENT_TYPE};
use hyper::{Method, Request, Response, StatusCode};
use serde_json::json;
use tokio_util::io::ReaderStream;

use super::auth::Surface;
use super::log_gate::LogGate;
use super::state::App;
use crate::files::{self, names, AsyncWriter, CacheError, ClaimRefused, DownloadClaim, NewFile};
use crate::http::{constant_time_eq, error, full, json_response, Body};

/// Header naming the channel an upload is for (§5.1) or, on a download, the channel asking.
pub const CHANNEL_HEADER: &str = "x-xagent-connector-channel-id";

/// Allowance for the multipart framing around the file (boundaries, part headers, the small optional fields).
const FORM_SLACK: u64 = 64 * 1024;
/// A refused request body up to this size is read and discarded before answering, so the client (which may still
/// be sending) reads our error instead of a connection reset.
const DRAIN_MAX: u64 = 1 << 20;
const DRAIN_TIME: Duration = Duration::from_secs(2);
/// Largest accepted optional text field (`recipient_ref`, `reply_token`).
const SMALL_FIELD_MAX: u64 = 4 * 1024;
/// An upload's own rule instead of the small-body deadline (a 256 MiB file over a slow link takes minutes): it may
/// pause for at most [`UPLOAD_IDLE`], and after that long it must average [`UPLOAD_MIN_RATE`] bytes per second.
/// A client that trickles a byte now and then no longer holds a connection slot (and a staging reservation).
const UPLOAD_IDLE: Duration = Duration::from_secs(30);
const UPLOAD_MIN_RATE: u64 = 1024;

// ---- download ----------------------------------------------------------------------------------------------------

/// Streams a cached file and marks it consumed once every byte went out (see the module docs).
struct DownloadBody {
    inner: ReaderStream<tokio::fs::File>,
    remaining: u64,
    claim: Option<DownloadClaim>,
}

impl HttpBody for DownloadBody {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = &mut *self;
        match this.inner.poll_next_unpin(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Some(Ok(mut chunk))) => {
                if chunk.len() as u64 > this.remaining {
                    // The file cannot grow (entries are immutable), but never send more than Content-Length.
                    chunk.truncate(this.remaining as usize);
                }
                this.remaining -= chunk.len() as u64;
                if this.remaining == 0 {
                    // hyper's Content-Length encoder ends the body on its last byte without polling for the end,
                    // so the last chunk being taken is the completion signal. Spend the URL.
                    this.spend();
                }
                Poll::Ready(Some(Ok(Frame::data(chunk))))
            }
            Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(e))),
            Poll::Ready(None) if this.remaining > 0 => Poll::Ready(Some(Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "cached file is shorter than its index entry",
            )))),
            Poll::Ready(None) => {
                this.spend(); // empty files
                Poll::Ready(None)
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.remaining == 0
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.remaining)
    }
}

impl DownloadBody {
    fn spend(&mut self) {
        if let Some(claim) = self.claim.take() {
            claim.cache().consume(claim.file_ref());
        }
    }
}

fn not_found() -> Response<Body> {
    error(StatusCode::NOT_FOUND, "file_not_found", "file_ref does not exist, has expired or was already downloaded")
}

fn query_param<'a>(query: Option<&'a str>, name: &str) -> Option<&'a str> {
    query?.split('&').find_map(|kv| kv.split_once('=').filter(|(k, _)| *k == name).map(|(_, v)| v))
}

/// `GET|HEAD /files/refs/{file_ref}`.
pub async fn download<B>(app: &Arc<App>, req: &Request<B>, file_ref: &str) -> Response<Body> {
    let Some(row) = app.files.get(file_ref) else { return not_found() };
    if row.consumed_ms.is_some() {
        return not_found();
    }
    let asking_channel = req.headers().get(CHANNEL_HEADER).and_then(|v| v.to_str().ok()).map(str::trim);
    let mut backend_ok = false;
    if req.headers().contains_key(AUTHORIZATION) {
        if let Err(r) = app.check_api_key(req, Surface::Download) {
            return *r;
        }
        backend_ok = app.cfg.api_key.is_some() && asking_channel == Some(row.channel_id.as_str());
    }
    if asking_channel.is_some_and(|c| c != row.channel_id) {
        tracing::info!(%file_ref, "download refused: the file belongs to another channel");
        return error(StatusCode::FORBIDDEN, "permission_denied", "this file belongs to another channel");
    }
    if !backend_ok {
        let token = query_param(req.uri().query(), "token").unwrap_or("");
        if !constant_time_eq(token.as_bytes(), row.token.as_bytes()) {
            return not_found();
        }
    }
    let mime = if names::is_safe_mime(&row.mime) { row.mime.as_str() } else { "application/octet-stream" };
    let mut builder = Response::builder()
        .status(StatusCode::OK)
        .header(CONTENT_TYPE, mime)
        .header(CONTENT_LENGTH, row.byte_size)
        .header(CACHE_CONTROL, "no-store")
        .header("x-content-type-options", "nosniff");
    if let Ok(v) = HeaderValue::from_str(&names::content_disposition(&row.filename)) {
        builder = builder.header(CONTENT_DISPOSITION, v);
    }
    if req.method() == Method::HEAD {
        // Headers only; a HEAD never spends the URL.
        return builder.body(full(Bytes::new())).unwrap_or_else(|_| internal());
    }
    let claim = match app.files.begin_download(file_ref) {
        Ok(c) => c,
        Err(ClaimRefused::Busy) => {
            return error(StatusCode::CONFLICT, "download_in_progress", "this file is being downloaded; retry shortly")
        }
        // Spent (or expired) since the lookup above.
        Err(ClaimRefused::Gone) => return not_found(),
    };
    let file = match tokio::fs::File::open(app.files.path(&row)).await {
        Ok(f) => f,
        Err(e) => {
            // Evicted or swept between the lookup and the open.
            tracing::debug!(%file_ref, error = %e, "cached file vanished before download");
            return not_found();
        }
    };
    tracing::info!(%file_ref, bytes = row.byte_size, "download started");
    let body = DownloadBody {
        inner: ReaderStream::with_capacity(file, 64 * 1024),
        remaining: row.byte_size,
        claim: Some(claim),
    };
    builder.body(body.boxed()).unwrap_or_else(|_| internal())
}

fn internal() -> Response<Body> {
    error(StatusCode::INTERNAL_SERVER_ERROR, "internal_error", "could not build the response")
}

// ---- upload ------------------------------------------------------------------------------------------------------

/// The request body, shared so that it can be drained after the multipart parser gave up on it.
#[derive(Clone)]
struct SharedBody(Arc<Mutex<Incoming>>);

impl Stream for SharedBody {
    type Item = Result<Bytes, hyper::Error>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let mut body = self.0.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            match Pin::new(&mut *body).poll_frame(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(None) => return Poll::Ready(None),
                Poll::Ready(Some(Err(e))) => return Poll::Ready(Some(Err(e))),
                Poll::Ready(Some(Ok(frame))) => {
                    if let Ok(data) = frame.into_data() {
                        return Poll::Ready(Some(Ok(data)));
                    }
                    // Trailers: not data, keep reading.
                }
            }
        }
    }
}

/// Reads and discards what is left of a refused body (bounded in size and time), then answers.
async fn drain_then(body: SharedBody, declared: Option<u64>, resp: Response<Body>) -> Response<Body> {
    if declared.is_some_and(|n| n > DRAIN_MAX) {
        return resp;
    }
    let mut body = body;
    let _ = tokio::time::timeout(DRAIN_TIME, async {
        let mut seen = 0u64;
        while let Some(Ok(chunk)) = body.next().await {
            seen += chunk.len() as u64;
            if seen > DRAIN_MAX {
                break;
            }
        }
    })
    .await;
    resp
}

fn too_large(limit: u64) -> Response<Body> {
    error(
        StatusCode::PAYLOAD_TOO_LARGE,
        "file_too_large",
        &format!("the file is larger than this connector accepts ({limit} bytes)"),
    )
}

/// `POST /files/uploads` (§5.1): system API key, `X-XAgent-Connector-Channel-ID` of an existing channel,
/// multipart field `file`, streamed to the cache under the upload size limit.
pub async fn upload(app: &Arc<App>, req: Request<Incoming>) -> Response<Body> {
    let declared: Option<u64> =
        req.headers().get(CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.trim().parse().ok());
    let checked = check_request(app, &req, declared);
    let body = SharedBody(Arc::new(Mutex::new(req.into_body())));
    let (channel, boundary) = match checked {
        Ok(x) => x,
        Err(resp) => return drain_then(body, declared, *resp).await,
    };
    let limit = app.cfg.upload_max_bytes;
    match receive(app, body.clone(), &boundary, &channel, limit).await {
        Ok(row) => {
            tracing::info!(file_ref = %row.file_ref, channel = %channel, bytes = row.byte_size, "upload stored");
            let out = json!({
                "file_ref": row.file_ref,
                "file_type": files::file_type(&row.mime, &row.filename),
                "filename": row.filename,
                "byte_size": row.byte_size,
                "expires_at": row.expires_ms,
            });
            json_response(StatusCode::OK, out.to_string())
        }
        Err(resp) => {
            tracing::info!(channel = %channel, status = resp.status().as_u16(), "upload refused");
            drain_then(body, None, *resp).await
        }
    }
}

/// Everything that can be refused before reading the body: key, channel, content type, declared size.
fn check_request(
    app: &App,
    req: &Request<Incoming>,
    declared: Option<u64>,
) -> Result<(String, String), Box<Response<Body>>> {
    app.check_api_key(req, Surface::Upload)?;
    let channel = req
        .headers()
        .get(CHANNEL_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .ok_or_else(|| {
            Box::new(error(
                StatusCode::BAD_REQUEST,
                "connector_channel_id_required",
                "send the target channel in the X-XAgent-Connector-Channel-ID header",
            ))
        })?;
    if !app.hub.channel_exists(channel) {
        return Err(Box::new(error(
            StatusCode::NOT_FOUND,
            "connector_channel_unavailable",
            "X-XAgent-Connector-Channel-ID names no channel of this connector",
        )));
    }
    let ct = req.headers().get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    let boundary = multer::parse_boundary(ct).map_err(|_| {
        Box::new(error(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "invalid_upload",
            "the body must be multipart/form-data with a boundary and a `file` field",
        ))
    })?;
    let limit = app.cfg.upload_max_bytes;
    if declared.is_some_and(|n| n > limit.saturating_add(FORM_SLACK)) {
        return Err(Box::new(too_large(limit)));
    }
    Ok((channel.to_owned(), boundary))
}

/// Parses the form and streams `file` into the cache. A refusal drops the writer, which deletes the staging file.
async fn receive(
    app: &Arc<App>,
    body: SharedBody,
    boundary: &str,
    channel: &str,
    limit: u64,
) -> Result<crate::store::files::FileRow, Box<Response<Body>>> {
    let bad = |msg: &str| Box::new(error(StatusCode::BAD_REQUEST, "invalid_upload", msg));
    let constraints = multer::Constraints::new().size_limit(
        multer::SizeLimit::new()
            .whole_stream(limit.saturating_add(FORM_SLACK))
            .for_field("recipient_ref", SMALL_FIELD_MAX)
            .for_field("reply_token", SMALL_FIELD_MAX),
    );
    let started = std::time::Instant::now();
    let stalled = || {
        Box::new(error(
            StatusCode::REQUEST_TIMEOUT,
            "request_timeout",
            &format!("the upload paused for {} s or averaged under {UPLOAD_MIN_RATE} bytes/s", UPLOAD_IDLE.as_secs()),
        ))
    };
    let guarded = super::parts::Guarded::new(body, boundary);
    let mut form = multer::Multipart::with_constraints(guarded, boundary, constraints);
    let mut stored: Option<(AsyncWriter, NewFile)> = None;
    let multer_err = |e: multer::Error| match e {
        multer::Error::StreamSizeExceeded { .. } | multer::Error::FieldSizeExceeded { .. } => {
            Box::new(too_large(limit))
        }
        multer::Error::StreamReadFailed(e)
            if matches!(
                e.downcast_ref::<super::parts::GuardError<hyper::Error>>(),
                Some(super::parts::GuardError::Parts(_))
            ) =>
        {
            bad(&e.to_string())
        }
        other => {
            tracing::debug!(error = %other, "malformed upload");
            bad("the multipart body is malformed or was cut off")
        }
    };
    while let Some(mut field) =
        tokio::time::timeout(UPLOAD_IDLE, form.next_field()).await.map_err(|_| stalled())?.map_err(multer_err)?
    {
        match field.name() {
            Some("file") => {
                if stored.is_some() {
                    return Err(bad("send exactly one `file` field"));
                }
                let filename = names::sanitize_filename(field.file_name().unwrap_or(""), "upload.bin");
                let mime = field
                    .content_type()
                    .map(|m| m.essence_str().to_owned())
                    .filter(|m| m != "application/octet-stream" && names::is_safe_mime(m))
                    .unwrap_or_else(|| files::guess_mime(&filename).to_owned());
                let mut w = app.files.async_writer(limit).await.map_err(|e| cache_err(e, limit))?;
                let mut received = 0u64;
                while let Some(chunk) = tokio::time::timeout(UPLOAD_IDLE, field.chunk())
                    .await
                    .map_err(|_| stalled())?
                    .map_err(multer_err)?
                {
                    received = received.saturating_add(chunk.len() as u64);
                    let secs = started.elapsed().as_secs();
                    if secs >= UPLOAD_IDLE.as_secs() && received < secs.saturating_mul(UPLOAD_MIN_RATE) {
                        return Err(stalled());
                    }
                    w.write(&chunk).await.map_err(|e| cache_err(e, limit))?;
                }
                stored = Some((w, NewFile { channel_id: channel.to_owned(), filename, mime }));
            }
            // Accepted and ignored (§5.1): this connector has no recipients; the device is the channel's binding.
            Some("recipient_ref") | Some("reply_token") => {
                tokio::time::timeout(UPLOAD_IDLE, field.text()).await.map_err(|_| stalled())?.map_err(multer_err)?;
            }
            _ => {
                while tokio::time::timeout(UPLOAD_IDLE, field.chunk())
                    .await
                    .map_err(|_| stalled())?
                    .map_err(multer_err)?
                    .is_some()
                {}
            }
        }
    }
    let (w, meta) = stored.ok_or_else(|| bad("the form has no `file` field"))?;
    app.files.commit(w, meta).await.map_err(|e| cache_err(e, limit))
}

fn cache_err(e: CacheError, limit: u64) -> Box<Response<Body>> {
    match e {
        CacheError::TooLarge { limit: l } => Box::new(too_large(l.min(limit))),
        CacheError::StagingFull { limit } => {
            static GATE: LogGate = LogGate::new();
            if let Some(suppressed) = GATE.allow() {
                tracing::warn!(limit, suppressed, "upload refused: cache staging full");
            }
            Box::new(error(
                StatusCode::INSUFFICIENT_STORAGE,
                "cache_full",
                &format!("uploads in progress already stage {limit} bytes, the file cache capacity; retry later"),
            ))
        }
        CacheError::ShareFull { files, bytes } => Box::new(error(
            StatusCode::INSUFFICIENT_STORAGE,
            "cache_full",
            &format!(
                "the file cache is full and this channel already holds its share of it ({files} files, {bytes} \
                 bytes); use or wait for its earlier files, then retry"
            ),
        )),
        other => {
            tracing::error!(error = %other, "upload could not be stored");
            Box::new(error(StatusCode::INTERNAL_SERVER_ERROR, "internal_error", "the file could not be stored"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::query_param;

    #[test]
    fn query_parameters() {
        assert_eq!(query_param(Some("token=abc"), "token"), Some("abc"));
        assert_eq!(query_param(Some("x=1&token=abc&y"), "token"), Some("abc"));
        assert_eq!(query_param(Some("tokens=abc"), "token"), None);
        assert_eq!(query_param(None, "token"), None);
    }
}

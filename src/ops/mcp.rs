//! `mcp --url URL [--api-key-file F]`: a stdio MCP server for clients that only start processes (editors'
//! one-line MCP configurations). Each JSON-RPC line on stdin is POSTed to the running connector's `/mcp` with the
//! key, and its answer written to stdout as one line; the connector holds the session (the phone, its lease, the
//! audit). At end of input the session is ended (`DELETE`), which gives the phone back. Logs go to stderr only:
//! stdout is the protocol.

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Method, Request};
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};

/// Longest line read from stdin (one JSON-RPC message); the connector refuses larger bodies anyway.
const MAX_LINE: u64 = 16 << 20;
/// Longest answer read from the connector (a result with an inline image is about 1.4 MiB).
const MAX_ANSWER: usize = 32 << 20;

pub struct Target {
    /// `host:port` of the connector.
    pub authority: String,
    /// The endpoint's path (`/mcp` unless the URL names another).
    pub path: String,
}

/// `http://host:port[/path]`: plain HTTP, as the connector serves (put TLS in front of it and give that URL to the
/// client directly: it speaks Streamable HTTP itself).
pub fn parse_url(url: &str) -> Result<Target, String> {
    let rest = url.strip_prefix("http://").ok_or_else(|| format!("--url must be http://HOST:PORT, got {url:?}"))?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    if authority.is_empty() || authority.contains('@') {
        return Err(format!("--url must be http://HOST:PORT, got {url:?}"));
    }
    let path = if path.is_empty() || path == "/" { "/mcp" } else { path };
    Ok(Target { authority: authority.to_owned(), path: path.to_owned() })
}

struct Bridge {
    target: Target,
    key: Option<String>,
    session: Mutex<Option<String>>,
}

impl Bridge {
    /// One request to the connector: status, session header, body. An event stream (a `tools/call` with a progress
    /// token) is not collected: each event's data goes to `out` as it arrives — progress while the call runs, then
    /// its response — and the body returned is empty.
    async fn send(
        &self,
        method: Method,
        body: Vec<u8>,
        out: Option<&tokio::sync::mpsc::Sender<String>>,
    ) -> Result<(u16, Option<String>, Bytes), String> {
        let tcp = tokio::net::TcpStream::connect(&self.target.authority)
            .await
            .map_err(|e| format!("cannot reach the connector at {}: {e}", self.target.authority))?;
        let (mut tx, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
            .await
            .map_err(|e| format!("HTTP handshake with the connector failed: {e}"))?;
        tokio::spawn(conn);
        let mut req = Request::builder()
            .method(method)
            .uri(&self.target.path)
            .header(hyper::header::HOST, &self.target.authority)
            .header(hyper::header::CONTENT_TYPE, "application/json")
            .header(hyper::header::ACCEPT, "application/json, text/event-stream");
        if let Some(k) = &self.key {
            req = req.header(hyper::header::AUTHORIZATION, format!("Bearer {k}"));
        }
        if let Some(s) = self.session.lock().unwrap_or_else(|e| e.into_inner()).as_deref() {
            req = req.header("mcp-session-id", s);
        }
        let req = req.body(Full::new(Bytes::from(body))).map_err(|e| format!("bad request: {e}"))?;
        let resp = tx.send_request(req).await.map_err(|e| format!("the connector did not answer: {e}"))?;
        let status = resp.status().as_u16();
        let session = resp.headers().get("mcp-session-id").and_then(|v| v.to_str().ok()).map(str::to_owned);
        let sse = resp
            .headers()
            .get(hyper::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|c| c.starts_with("text/event-stream"));
        if let (true, Some(out)) = (sse, out) {
            relay_events(resp.into_body(), out).await?;
            return Ok((status, session, Bytes::new()));
        }
        let body = http_body_util::Limited::new(resp.into_body(), MAX_ANSWER)
            .collect()
            .await
            .map_err(|e| format!("reading the connector's answer failed: {e}"))?
            .to_bytes();
        Ok((status, session, body))
    }

    /// Forwards one line; `Some(line)` is what to write to stdout (an event stream's messages went to `out`).
    async fn forward(&self, line: String, out: &tokio::sync::mpsc::Sender<String>) -> Option<String> {
        let msg: Value = match serde_json::from_str(&line) {
            Ok(v) => v,
            Err(_) => {
                return Some(
                    json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "not valid JSON"}})
                        .to_string(),
                )
            }
        };
        let id = msg.get("id").cloned().filter(|_| msg.get("method").is_some());
        let failed = |message: String| {
            id.as_ref().map(|id| {
                json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32000, "message": message}}).to_string()
            })
        };
        match self.send(Method::POST, line.into_bytes(), Some(out)).await {
            Ok((status, session, body)) => {
                if let Some(s) = session {
                    *self.session.lock().unwrap_or_else(|e| e.into_inner()) = Some(s);
                }
                match serde_json::from_slice::<Value>(&body) {
                    Ok(v) if v.get("jsonrpc").is_some() => Some(v.to_string()),
                    // The connector's own refusals (401, 403, 429) are `{"error": {code, message}}`.
                    Ok(v) => failed(format!(
                        "HTTP {status} from the connector: {}",
                        v["error"]["message"].as_str().unwrap_or("(no message)")
                    )),
                    Err(_) if body.is_empty() && status < 300 => None,
                    Err(_) => failed(format!("HTTP {status} from the connector")),
                }
            }
            Err(e) => failed(e),
        }
    }
}

/// Writes each event of an SSE answer (`data:` lines, joined) to `out` as one line, as it arrives. Bounded: an
/// event longer than [`MAX_ANSWER`] ends the stream with an error.
async fn relay_events(mut body: hyper::body::Incoming, out: &tokio::sync::mpsc::Sender<String>) -> Result<(), String> {
    let mut buf: Vec<u8> = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| format!("reading the connector's event stream failed: {e}"))?;
        let Ok(data) = frame.into_data() else { continue };
        buf.extend(data.iter().filter(|b| **b != b'\r'));
        while let Some(end) = buf.windows(2).position(|w| w == b"\n\n") {
            let event: Vec<u8> = buf.drain(..end + 2).collect();
            let text = String::from_utf8_lossy(&event);
            let data: Vec<&str> = text
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .map(|d| d.strip_prefix(' ').unwrap_or(d))
                .collect();
            if !data.is_empty() {
                // One JSON-RPC message per line on stdout: a message's own newlines are JSON whitespace.
                let _ = out.send(data.join(" ")).await;
            }
        }
        if buf.len() > MAX_ANSWER {
            return Err("an event of the connector's stream is too long".into());
        }
    }
    Ok(())
}

/// Runs until stdin ends; the exit code.
pub async fn run(url: &str, key: Option<String>) -> i32 {
    let target = match parse_url(url) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: {e}");
            return crate::config::exit::CONFIG;
        }
    };
    let bridge = Arc::new(Bridge { target, key, session: Mutex::new(None) });
    let (out_tx, mut out_rx) = tokio::sync::mpsc::channel::<String>(64);
    let writer = tokio::spawn(async move {
        let mut stdout = tokio::io::stdout();
        while let Some(line) = out_rx.recv().await {
            if stdout.write_all(format!("{line}\n").as_bytes()).await.is_err() || stdout.flush().await.is_err() {
                return;
            }
        }
    });
    let mut stdin = tokio::io::BufReader::new(tokio::io::stdin());
    let mut tasks = tokio::task::JoinSet::new();
    loop {
        let mut buf = Vec::new();
        match (&mut stdin).take(MAX_LINE).read_until(b'\n', &mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let Ok(line) = String::from_utf8(buf) else { continue };
        let line = line.trim().to_owned();
        if line.is_empty() {
            continue;
        }
        // `initialize` is answered before anything else is sent (the client waits for it), so the session id is
        // known to every later request; the rest run concurrently, as over HTTP.
        let (b, tx) = (bridge.clone(), out_tx.clone());
        let initialize =
            line.contains("\"initialize\"") && bridge.session.lock().unwrap_or_else(|e| e.into_inner()).is_none();
        let job = async move {
            if let Some(out) = b.forward(line, &tx).await {
                let _ = tx.send(out).await;
            }
        };
        if initialize {
            job.await;
        } else {
            tasks.spawn(job);
        }
    }
    while tasks.join_next().await.is_some() {}
    if bridge.session.lock().unwrap_or_else(|e| e.into_inner()).is_some() {
        let _ = bridge.send(Method::DELETE, Vec::new(), None).await;
    }
    drop(out_tx);
    let _ = writer.await;
    0
}

#[cfg(test)]
mod tests {
    #[test]
    fn urls() {
        let t = super::parse_url("http://127.0.0.1:8790").unwrap();
        assert_eq!((t.authority.as_str(), t.path.as_str()), ("127.0.0.1:8790", "/mcp"));
        assert_eq!(super::parse_url("http://[::1]:1/x/mcp").unwrap().path, "/x/mcp");
        assert!(super::parse_url("https://a:1").is_err());
        assert!(super::parse_url("http://u@a:1").is_err());
    }
}

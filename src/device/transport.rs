//! Device services over the adb server's host protocol, on tokio: `host:transport:SERIAL`, then one service —
//! `shell,v2,raw:CMD` (or plain `shell:CMD`), `exec:CMD`, `framebuffer:` or `sync:` (AOSP `SERVICES.TXT`,
//! `SYNC.TXT`, `shell_protocol.h`).
//!
//! Why our own client instead of `adb_client::ADBServerDevice` on blocking threads: a blocking socket cannot be
//! cancelled from outside (adb_client sets no read timeout and offers no way to close its socket), so a command
//! stuck on the phone kept a blocking-pool thread — and, for side effects, the phone's order slot — until the adb
//! server dropped the stream, which it never does for a command that never ends. Here every operation owns exactly
//! one TCP connection to the adb server inside its future. Dropping the future (deadline, closed channel, dropped
//! socket, SIGTERM drain) closes that connection at once; the adb server then closes the device stream and adbd
//! hangs up the command on the phone (SIGHUP, `shell_service.cpp`). No thread is involved, so none can stay behind.
//!
//! Every read and write here is bounded only by the caller's deadline (`tokio::time::timeout` around the whole
//! operation in `device::adb`), never by a per-read timer: a long `pm install` is fine as long as it finishes in time.

use std::net::SocketAddr;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::host::{self, HostError};
use crate::protocol::errors::{ErrorCode, ProtoError};

/// Shell-protocol packet ids (`shell_protocol.h`).
const ID_STDOUT: u8 = 1;
const ID_STDERR: u8 = 2;
const ID_EXIT: u8 = 3;

/// Largest stdout + stderr one shell command may return (a runaway `cat` or `logcat` must not exhaust memory).
pub const SHELL_OUTPUT_MAX: usize = 64 << 20;

/// One sync DATA chunk (`SYNC_DATA_MAX`): the most a SEND may carry per DATA message.
const SYNC_DATA_MAX: usize = 64 * 1024;

/// Output of one shell command.
#[derive(Clone, Debug, Default)]
pub struct ShellOut {
    pub stdout: String,
    pub stderr: String,
    pub code: i32,
}

/// What adbd reports for a path (`STAT`, sync v1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileStat {
    /// `st_mode`; 0 when the path does not exist.
    pub mode: u32,
    pub size: u32,
    pub mtime: u32,
}

impl FileStat {
    pub fn is_file(&self) -> bool {
        self.mode & 0o170_000 == 0o100_000
    }
}

/// Maps a host-protocol failure to a stable error code. Messages come from the adb server and carry no secret.
pub fn map_host_error(e: HostError) -> ProtoError {
    match e {
        HostError::Unreachable(_) => ProtoError::new(ErrorCode::DeviceOffline, "the adb server is not reachable"),
        HostError::Fail(m) => {
            let lower = m.to_lowercase();
            let code = if lower.contains("unauthorized") {
                ErrorCode::DeviceUnauthorized
            } else if lower.contains("offline") || lower.contains("not found") || lower.contains("no devices") {
                ErrorCode::DeviceOffline
            } else {
                ErrorCode::ToolInvokeFailed
            };
            // The adb server relays what the phone's adbd says when a service fails: the phone's words.
            ProtoError::new(code, format!("adb: {}", super::text::phone_text(&m, 300)))
        }
        other => ProtoError::new(ErrorCode::ToolInvokeFailed, format!("adb: {other}")),
    }
}

fn io_failed(what: &str, e: std::io::Error) -> ProtoError {
    ProtoError::new(ErrorCode::ToolInvokeFailed, format!("adb: the device stream of {what} broke: {e}"))
}

/// `host-serial:SERIAL:features`: the features both the adb server and the device support (comma separated).
pub async fn features(server: SocketAddr, serial: &str) -> Result<Vec<String>, ProtoError> {
    let mut s = host::request(server, &format!("host-serial:{serial}:features")).await.map_err(map_host_error)?;
    let text = host::read_block(&mut s).await.map_err(map_host_error)?;
    Ok(text.split(',').map(|f| f.trim().to_owned()).filter(|f| !f.is_empty()).collect())
}

/// `shell,v2,raw:input tap 1 2` → `shell: input tap`; never the command's arguments (see [`super::shell::label`]).
fn service_label(service: &str) -> String {
    let (kind, rest) = service.split_once(':').unwrap_or((service, ""));
    let kind = kind.split(',').next().unwrap_or(kind);
    // `shell_v1` wraps the command in `sh -c '…'`.
    let rest = rest.strip_prefix("sh -c '").unwrap_or(rest);
    match kind {
        "shell" | "exec" => format!("{kind}: {}", super::shell::label(rest)),
        _ => kind.to_owned(),
    }
}

/// A connection to one device service. Dropping it closes the TCP connection and with it the device stream.
pub struct Stream {
    s: TcpStream,
    what: String,
}

/// Opens `service` on the device `serial` through the adb server at `server`.
pub async fn open(server: SocketAddr, serial: &str, service: &str) -> Result<Stream, ProtoError> {
    let mut s = host::request(server, &format!("host:transport:{serial}")).await.map_err(map_host_error)?;
    // The adb server answered `host:transport:` itself; it answers the service request only once the phone has
    // accepted the stream (adbd's OKAY to our OPEN). Silence here is the phone's, not the server's: saying
    // "adb server did not answer" would send the operator after a healthy server.
    host::send_request(&mut s, service).await.map_err(|e| match e {
        HostError::Timeout => ProtoError::new(
            ErrorCode::DeviceTimeout,
            format!(
                "the phone {serial} did not answer `{}` within {} s (the adb server is answering; the phone's adbd \
                 or its USB/network link is hung — replug or reboot the phone)",
                service_label(service),
                host::IO_TIMEOUT.as_secs()
            ),
        ),
        e => map_host_error(e),
    })?;
    let _ = s.set_nodelay(true);
    let what = service.split(':').next().unwrap_or(service).to_owned();
    Ok(Stream { s, what })
}

impl Stream {
    /// The connection itself, for a service that lives as long as its stream (the phone helper's stdin and stdout,
    /// `device::helper`): dropping it still closes the device stream.
    pub fn into_tcp(self) -> TcpStream {
        self.s
    }

    async fn read_exact(&mut self, buf: &mut [u8]) -> Result<(), ProtoError> {
        self.s.read_exact(buf).await.map(|_| ()).map_err(|e| io_failed(&self.what, e))
    }

    async fn write_all(&mut self, buf: &[u8]) -> Result<(), ProtoError> {
        self.s.write_all(buf).await.map_err(|e| io_failed(&self.what, e))
    }

    async fn u32(&mut self) -> Result<u32, ProtoError> {
        let mut b = [0u8; 4];
        self.read_exact(&mut b).await?;
        Ok(u32::from_le_bytes(b))
    }

    /// Everything until the device closes the stream, at most `cap` bytes.
    pub async fn read_to_end(mut self, cap: usize) -> Result<Vec<u8>, ProtoError> {
        let mut out = Vec::new();
        let mut buf = vec![0u8; 256 * 1024];
        loop {
            let n = self.s.read(&mut buf).await.map_err(|e| io_failed(&self.what, e))?;
            if n == 0 {
                return Ok(out);
            }
            if out.len() + n > cap {
                return Err(ProtoError::new(
                    ErrorCode::ToolInvokeFailed,
                    format!("the device's {} output passed {cap} bytes", self.what),
                ));
            }
            out.extend_from_slice(&buf[..n]);
        }
    }
}

/// Runs `cmd` with the shell protocol v2: stdout and stderr apart, the exit status from the exit packet. At most
/// `cap` bytes of output (each packet's length field is checked before anything is allocated).
pub async fn shell_v2(server: SocketAddr, serial: &str, cmd: &str, cap: usize) -> Result<ShellOut, ProtoError> {
    let mut st = open(server, serial, &format!("shell,v2,raw:{cmd}")).await?;
    let (mut out, mut err) = (Vec::new(), Vec::new());
    loop {
        let mut head = [0u8; 5];
        match st.s.read_exact(&mut head).await {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                return Err(ProtoError::new(
                    ErrorCode::ToolInvokeFailed,
                    "the device closed the shell before the command finished",
                ))
            }
            Err(e) => return Err(io_failed("shell", e)),
        }
        let len = u32::from_le_bytes([head[1], head[2], head[3], head[4]]) as usize;
        if out.len().saturating_add(err.len()).saturating_add(len) > cap {
            return Err(ProtoError::new(
                ErrorCode::ToolInvokeFailed,
                format!("the command printed more than {cap} bytes"),
            ));
        }
        let mut data = vec![0u8; len];
        st.read_exact(&mut data).await?;
        match head[0] {
            ID_STDOUT => out.extend_from_slice(&data),
            ID_STDERR => err.extend_from_slice(&data),
            ID_EXIT => {
                let code = data.first().copied().map_or(255, i32::from);
                return Ok(ShellOut {
                    stdout: String::from_utf8_lossy(&out).into_owned(),
                    stderr: String::from_utf8_lossy(&err).into_owned(),
                    code,
                });
            }
            _ => {} // window-size and other ids are not sent to hosts; ignore anything unknown.
        }
    }
}

/// Runs `cmd` through plain `shell:` (phones without the `shell_v2` feature, Android < 7): stderr is merged into
/// stdout and no exit status exists, so the command runs in its own `sh -c` (an `exit N` inside it ends only that
/// shell) followed by a status line carrying a per-call random tag, which the command's own output cannot forge.
pub async fn shell_v1(server: SocketAddr, serial: &str, cmd: &str, cap: usize) -> Result<ShellOut, ProtoError> {
    let tag = format!("__xagent_status_{}__", crate::protocol::ids::random_hex(8));
    let st = open(server, serial, &format!("shell:sh -c {}; echo \"{tag}$?\"", super::shell::quote(cmd))).await?;
    let raw = st.read_to_end(cap).await?;
    let text = String::from_utf8_lossy(&raw);
    let Some(pos) = text.rfind(&tag) else {
        return Err(ProtoError::new(
            ErrorCode::ToolInvokeFailed,
            "the device closed the shell before the command finished",
        ));
    };
    let after = &text[pos + tag.len()..];
    let (status, rest) = after.split_once('\n').unwrap_or((after, ""));
    let code = status.trim().parse::<i32>().unwrap_or(255);
    // Merged stderr may arrive after the status line (it is a separate pipe on the phone): keep it as output.
    let stdout = format!("{}{rest}", &text[..pos]);
    // The old `shell:` service runs under a pty on some versions: undo its CRLF translation.
    let stdout = stdout.replace("\r\n", "\n");
    Ok(ShellOut { stdout, stderr: String::new(), code })
}

/// `exec:CMD`: the command's raw stdout (no pty, no framing), at most `cap` bytes.
pub async fn exec(server: SocketAddr, serial: &str, cmd: &str, cap: usize) -> Result<Vec<u8>, ProtoError> {
    open(server, serial, &format!("exec:{cmd}")).await?.read_to_end(cap).await
}

/// `exec:CMD` whose stdout is one gzip member: inflated as it arrives, bounded as [`super::gunzip`] describes
/// (at most `max_compressed` bytes on the wire). Returns the inflated bytes and the bytes that crossed adb. A
/// stream that is not gzip, lies about its size, is truncated or fails its CRC is `bad_frame`.
pub async fn exec_gunzip(
    server: SocketAddr,
    serial: &str,
    cmd: &str,
    max_compressed: usize,
    mut inflate: super::gunzip::BoundedGunzip,
) -> Result<(Vec<u8>, usize), ProtoError> {
    let wire = exec_feed(server, serial, cmd, max_compressed, &mut inflate).await?;
    let out = inflate.finish().map_err(|why| bad_capture(cmd, why))?;
    Ok((out, wire))
}

fn bad_capture(cmd: &str, why: String) -> ProtoError {
    ProtoError::new(ErrorCode::BadFrame, format!("unreadable screen capture: `{cmd}`: {why}"))
}

/// `exec:CMD` whose stdout is fed to `inflate` as it arrives (at most `max_compressed` bytes); returns the bytes
/// that crossed adb. The caller finishes `inflate` (its checks of the end of the stream are its own). A stream
/// `inflate` refuses is `bad_frame`.
pub async fn exec_feed(
    server: SocketAddr,
    serial: &str,
    cmd: &str,
    max_compressed: usize,
    inflate: &mut impl super::gunzip::Feed,
) -> Result<usize, ProtoError> {
    let mut st = open(server, serial, &format!("exec:{cmd}")).await?;
    // 16 KiB per step: what one step inflates (and, for a fitted capture, downscales: `pixels::fitting`) runs on
    // the runtime's worker between two awaits, and a flat screen deflates ~100:1, so 16 KiB can be 1.6 MB of
    // frame — about a millisecond of work here, a few on a Pi. A whole compressed frame is ~100 KB: the reads
    // this adds are a handful.
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = st.s.read(&mut buf).await.map_err(|e| io_failed("exec", e))?;
        if n == 0 {
            break;
        }
        if inflate.compressed().saturating_add(n) > max_compressed {
            return Err(bad_capture(cmd, format!("more than {max_compressed} compressed bytes")));
        }
        inflate.feed(&buf[..n]).map_err(|why| bad_capture(cmd, why))?;
    }
    Ok(inflate.compressed())
}

/// A decoded `framebuffer:` header (adbd `framebuffer_service.cpp`, versions 1 and 2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FbHeader {
    pub bpp: u32,
    pub size: u32,
    pub width: u32,
    pub height: u32,
    /// (offset, length) in bits of red, green, blue, alpha inside one little-endian pixel.
    pub red: (u32, u32),
    pub green: (u32, u32),
    pub blue: (u32, u32),
    pub alpha: (u32, u32),
}

/// `framebuffer:`: the header and the raw pixels. `max_pixels_bytes` guards against a garbled header.
pub async fn framebuffer(
    server: SocketAddr,
    serial: &str,
    max_pixel_bytes: usize,
) -> Result<(FbHeader, Vec<u8>), ProtoError> {
    let mut st = open(server, serial, "framebuffer:").await?;
    let h = framebuffer_header(&mut st, max_pixel_bytes).await?;
    let mut px = Vec::new();
    read_claimed(&mut st.s, h.size as usize, &mut px).await?;
    Ok((h, px))
}

/// What the pixels of a [`framebuffer_feed`] are handed to, chunk by chunk in order.
pub trait PixelSink {
    /// The next pixel bytes; `Err` says why they are refused.
    fn take(&mut self, px: &[u8]) -> Result<(), String>;
}

/// `framebuffer:` with its pixels handed to a sink as they arrive instead of collected: `start` sees the checked
/// header and returns the sink (or refuses the frame), which then gets exactly `size` bytes in chunks of at most
/// 64 KiB. Returns the header and the sink. A stream that ends early, or bytes the sink refuses, are `bad_frame`.
pub async fn framebuffer_feed<S: PixelSink>(
    server: SocketAddr,
    serial: &str,
    max_pixel_bytes: usize,
    start: impl FnOnce(&FbHeader) -> Result<S, ProtoError>,
) -> Result<(FbHeader, S), ProtoError> {
    let mut st = open(server, serial, "framebuffer:").await?;
    let h = framebuffer_header(&mut st, max_pixel_bytes).await?;
    let mut sink = start(&h)?;
    let size = h.size as usize;
    let mut buf = vec![0u8; size.min(64 * 1024)];
    let mut got = 0;
    while got < size {
        let want = (size - got).min(buf.len());
        let n = st.s.read(&mut buf[..want]).await.map_err(|e| io_failed("framebuffer", e))?;
        if n == 0 {
            return Err(ProtoError::new(
                ErrorCode::BadFrame,
                format!("the framebuffer header announced {size} bytes of pixels, the phone sent {got}"),
            ));
        }
        got += n;
        sink.take(&buf[..n])
            .map_err(|why| ProtoError::new(ErrorCode::BadFrame, format!("unreadable screen capture: {why}")))?;
    }
    Ok((h, sink))
}

/// Reads and checks a `framebuffer:` header (adbd `framebuffer_service.cpp`, versions 1 and 2).
async fn framebuffer_header(st: &mut Stream, max_pixel_bytes: usize) -> Result<FbHeader, ProtoError> {
    let version = st.u32().await?;
    // Version 1: bpp, size, width, height, then offset/length of red, blue, green, alpha (12 words).
    // Version 2 adds a colour space after bpp. Anything else (e.g. a legacy 16 for RGB565) is not supported.
    let words = match version {
        1 => 12,
        2 => 13,
        v => return Err(ProtoError::new(ErrorCode::BadFrame, format!("framebuffer header version {v}"))),
    };
    let mut w = Vec::with_capacity(words);
    for _ in 0..words {
        w.push(st.u32().await?);
    }
    let w = if version == 2 { [&w[..1], &w[2..]].concat() } else { w };
    let h = FbHeader {
        bpp: w[0],
        size: w[1],
        width: w[2],
        height: w[3],
        red: (w[4], w[5]),
        blue: (w[6], w[7]),
        green: (w[8], w[9]),
        alpha: (w[10], w[11]),
    };
    // Every word is the phone's claim: the product is computed checked (u32 × u32 × 4 overflows u64), and only
    // after it matches `size` and the cap is anything allocated.
    let expect = (h.width as usize).checked_mul(h.height as usize).and_then(|n| n.checked_mul(h.bpp as usize / 8));
    if h.size as usize > max_pixel_bytes || expect != Some(h.size as usize) || !matches!(h.bpp, 16 | 24 | 32) {
        return Err(ProtoError::new(
            ErrorCode::BadFrame,
            format!("implausible framebuffer header {}×{} at {} bpp, {} bytes", h.width, h.height, h.bpp, h.size),
        ));
    }
    Ok(h)
}

/// First allocation of [`read_claimed`]: a claim is not data, so no more than this is reserved before bytes come.
const CLAIMED_FIRST: usize = 256 * 1024;

/// Reads exactly `size` bytes, a size the phone only claimed, into `out`: the buffer grows as bytes actually
/// arrive (doubling, never past the claim; large buffers are mmap'd, so growing is a remap, not a copy), so a
/// header announcing 37 MB followed by 64 bytes costs a quarter MiB, not 37 MB. A stream that ends early is
/// `bad_frame`.
async fn read_claimed<R: tokio::io::AsyncRead + Unpin>(
    r: &mut R,
    size: usize,
    out: &mut Vec<u8>,
) -> Result<(), ProtoError> {
    out.reserve_exact(size.min(CLAIMED_FIRST));
    while out.len() < size {
        if out.len() == out.capacity() {
            out.reserve_exact(out.len().min(size - out.len()));
        }
        // `take`: never a byte past the claim, whatever capacity the allocator handed out.
        let mut rest = (&mut *r).take((size - out.len()) as u64);
        match rest.read_buf(out).await {
            Ok(0) => {
                return Err(ProtoError::new(
                    ErrorCode::BadFrame,
                    format!("the framebuffer header announced {size} bytes of pixels, the phone sent {}", out.len()),
                ))
            }
            Ok(_) => {}
            Err(e) => return Err(io_failed("framebuffer", e)),
        }
    }
    Ok(())
}

/// One `sync:` session: STAT, RECV and SEND requests on one device stream.
pub struct Sync {
    st: Stream,
}

impl Sync {
    pub async fn open(server: SocketAddr, serial: &str) -> Result<Sync, ProtoError> {
        Ok(Sync { st: open(server, serial, "sync:").await? })
    }

    async fn request(&mut self, id: &[u8; 4], path: &str) -> Result<(), ProtoError> {
        let mut msg = Vec::with_capacity(8 + path.len());
        msg.extend_from_slice(id);
        msg.extend_from_slice(&(path.len() as u32).to_le_bytes());
        msg.extend_from_slice(path.as_bytes());
        self.st.write_all(&msg).await
    }

    async fn fail_message(&mut self) -> Result<String, ProtoError> {
        let n = self.st.u32().await? as usize;
        let mut m = vec![0u8; n.min(4096)];
        self.st.read_exact(&mut m).await?;
        // adbd's (the phone's) words, on their way into an error message.
        Ok(super::text::phone_text(&String::from_utf8_lossy(&m), 300))
    }

    /// `STAT`: mode 0 means the path does not exist.
    pub async fn stat(&mut self, path: &str) -> Result<FileStat, ProtoError> {
        self.request(b"STAT", path).await?;
        let mut id = [0u8; 4];
        self.st.read_exact(&mut id).await?;
        if &id != b"STAT" {
            return Err(sync_protocol(&id));
        }
        Ok(FileStat { mode: self.st.u32().await?, size: self.st.u32().await?, mtime: self.st.u32().await? })
    }

    /// `RECV`: streams the file into `sink` chunk by chunk; `sink` may refuse (e.g. a size cap) with an error.
    pub async fn recv(
        &mut self,
        path: &str,
        mut sink: impl FnMut(&[u8]) -> Result<(), ProtoError>,
    ) -> Result<(), ProtoError> {
        self.request(b"RECV", path).await?;
        let mut buf = vec![0u8; SYNC_DATA_MAX];
        loop {
            let mut id = [0u8; 4];
            self.st.read_exact(&mut id).await?;
            match &id {
                b"DATA" => {
                    let n = self.st.u32().await? as usize;
                    if n > buf.len() {
                        if n > 1 << 20 {
                            return Err(sync_protocol(b"DATA"));
                        }
                        buf.resize(n, 0);
                    }
                    self.st.read_exact(&mut buf[..n]).await?;
                    sink(&buf[..n])?;
                }
                b"DONE" => {
                    self.st.u32().await?;
                    return Ok(());
                }
                b"FAIL" => {
                    let m = self.fail_message().await?;
                    return Err(ProtoError::new(ErrorCode::ToolInvokeFailed, format!("adb pull {path}: {m}")));
                }
                other => return Err(sync_protocol(other)),
            }
        }
    }

    /// `SEND`: writes `path` (mode `mode`) from `reader` until its end; `progress` gets the bytes sent so far.
    pub async fn send<R: tokio::io::AsyncRead + Unpin>(
        &mut self,
        path: &str,
        mode: u32,
        reader: &mut R,
        mut progress: impl FnMut(u64),
    ) -> Result<(), ProtoError> {
        self.request(b"SEND", &format!("{path},{mode}")).await?;
        let mut msg = vec![0u8; 8 + SYNC_DATA_MAX];
        let mut sent = 0u64;
        loop {
            let n = reader
                .read(&mut msg[8..])
                .await
                .map_err(|e| ProtoError::new(ErrorCode::Internal, format!("cannot read the local file: {e}")))?;
            if n == 0 {
                break;
            }
            msg[..4].copy_from_slice(b"DATA");
            msg[4..8].copy_from_slice(&(n as u32).to_le_bytes());
            self.st.write_all(&msg[..8 + n]).await?;
            sent += n as u64;
            progress(sent);
        }
        let mtime =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs() as u32).unwrap_or(0);
        let mut done = Vec::from(*b"DONE");
        done.extend_from_slice(&mtime.to_le_bytes());
        self.st.write_all(&done).await?;
        let mut id = [0u8; 4];
        self.st.read_exact(&mut id).await?;
        match &id {
            b"OKAY" => {
                self.st.u32().await?;
                Ok(())
            }
            b"FAIL" => {
                let m = self.fail_message().await?;
                Err(ProtoError::new(ErrorCode::ToolInvokeFailed, format!("adb push {path}: {m}")))
            }
            other => Err(sync_protocol(other)),
        }
    }
}

fn sync_protocol(id: &[u8]) -> ProtoError {
    ProtoError::new(
        ErrorCode::ToolInvokeFailed,
        format!("adb: unexpected sync reply {:?}", String::from_utf8_lossy(id)),
    )
}

#[cfg(test)]
mod tests {
    //! Hostile length fields, against a fake adb server on loopback that accepts the transport and the service and
    //! then sends what a lying adbd would: every length is checked before anything is allocated or read.
    use super::*;
    use tokio::net::TcpListener;

    /// A one-connection fake adb server: OKAY to `host:transport:` and to the service, then `reply`, then it
    /// keeps the socket open (a reader that trusted a length would wait for bytes that never come).
    async fn fake_adb(reply: Vec<u8>) -> SocketAddr {
        fake_adb_then(reply, true).await
    }

    /// [`fake_adb`] that, unless `hold`, closes the stream right after `reply` (a phone that hung up mid-frame).
    async fn fake_adb_then(reply: Vec<u8>, hold: bool) -> SocketAddr {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        tokio::spawn(async move {
            let (mut s, _) = l.accept().await.unwrap();
            for _ in 0..2 {
                let mut len = [0u8; 4];
                s.read_exact(&mut len).await.unwrap();
                let n = usize::from_str_radix(std::str::from_utf8(&len).unwrap(), 16).unwrap();
                let mut req = vec![0u8; n];
                s.read_exact(&mut req).await.unwrap();
                s.write_all(b"OKAY").await.unwrap();
            }
            s.write_all(&reply).await.unwrap();
            if hold {
                tokio::time::sleep(std::time::Duration::from_secs(30)).await;
            }
        });
        addr
    }

    async fn bounded<T>(f: impl std::future::Future<Output = T>) -> T {
        tokio::time::timeout(std::time::Duration::from_secs(10), f).await.expect("a lying length made us wait")
    }

    #[tokio::test]
    async fn an_oversized_shell_v2_packet_is_refused_before_reading_it() {
        let mut pkt = vec![ID_STDOUT];
        pkt.extend_from_slice(&u32::MAX.to_le_bytes());
        pkt.extend_from_slice(b"abc");
        let server = fake_adb(pkt).await;
        let e = bounded(shell_v2(server, "x", "true", SHELL_OUTPUT_MAX)).await.unwrap_err();
        assert!(e.message.contains("printed more than"), "{e:?}");
        // Two packets that each fit but together pass the cap.
        let mut two = Vec::new();
        for _ in 0..2 {
            two.push(ID_STDOUT);
            two.extend_from_slice(&600u32.to_le_bytes());
            two.extend_from_slice(&[b'a'; 600]);
        }
        let server = fake_adb(two).await;
        let e = bounded(shell_v2(server, "x", "true", 1000)).await.unwrap_err();
        assert!(e.message.contains("more than 1000 bytes"), "{e:?}");
    }

    #[tokio::test]
    async fn lying_sync_lengths_are_refused() {
        let mut data = b"DATA".to_vec();
        data.extend_from_slice(&0xFFFF_FFF0u32.to_le_bytes());
        let server = fake_adb(data).await;
        let mut sync = Sync::open(server, "x").await.unwrap();
        let e = bounded(sync.recv("/sdcard/f", |_| Ok(()))).await.unwrap_err();
        assert!(e.message.contains("unexpected sync reply"), "{e:?}");
        // A FAIL message claiming 4 GiB: the first 4 KiB are read, nothing more is allocated.
        let mut fail = b"FAIL".to_vec();
        fail.extend_from_slice(&u32::MAX.to_le_bytes());
        fail.extend_from_slice(&[b'm'; 4096]);
        let server = fake_adb(fail).await;
        let mut sync = Sync::open(server, "x").await.unwrap();
        let e = bounded(sync.recv("/sdcard/f", |_| Ok(()))).await.unwrap_err();
        assert!(e.message.len() < 4096 + 100, "{}", e.message.len());
    }

    #[tokio::test]
    async fn a_lying_framebuffer_header_is_bad_frame_before_allocating() {
        let words = |w: &[u32]| w.iter().flat_map(|n| n.to_le_bytes()).collect::<Vec<u8>>();
        // 60 000² × 4 bytes: `size` cannot hold it; width × height × 4 is computed checked.
        let huge = words(&[
            2,
            32,
            1,
            60_000u32.wrapping_mul(60_000).wrapping_mul(4),
            60_000,
            60_000,
            0,
            8,
            16,
            8,
            8,
            8,
            24,
            8,
        ]);
        let e = bounded(framebuffer(fake_adb(huge).await, "x", 160 << 20)).await.unwrap_err();
        assert_eq!(e.code, ErrorCode::BadFrame, "{e:?}");
        // u32::MAX sides: the product overflows even u64.
        let max = words(&[1, 32, 0, u32::MAX, u32::MAX, 0, 8, 16, 8, 8, 8, 24, 8]);
        let e = bounded(framebuffer(fake_adb(max).await, "x", 160 << 20)).await.unwrap_err();
        assert_eq!(e.code, ErrorCode::BadFrame, "{e:?}");
        // An honest header, then fewer pixels than announced and the end of the stream.
        let mut short = words(&[2, 32, 1, 16, 2, 2, 0, 8, 16, 8, 8, 8, 24, 8]);
        short.extend_from_slice(&[0; 8]);
        let e = bounded(framebuffer(fake_adb_then(short, false).await, "x", 160 << 20)).await.unwrap_err();
        assert_eq!(e.code, ErrorCode::BadFrame, "{e:?}");
        assert!(e.message.contains("sent 8"), "{e:?}");
    }

    /// Issue 24, item 3: the pixel buffer grows with the bytes that arrive, not with the header's claim. A phone
    /// claiming a 37.7 MB frame (4096 × 2304 RGBA, the largest accepted) and sending 64 KiB costs the reader at
    /// most the first quarter MiB; an honest stream ends with exactly its bytes, whatever the chunking. On the old
    /// code (`vec![0; size]` up front) the capacity after the lie was the whole claim.
    #[tokio::test]
    async fn a_claimed_size_is_not_allocated_before_the_bytes_arrive() {
        let claim = 4096 * 2304 * 4;
        let (mut tx, mut rx) = tokio::io::duplex(4096);
        let sender = tokio::spawn(async move {
            tx.write_all(&[7u8; 64 * 1024]).await.unwrap();
        });
        let mut buf = Vec::new();
        let e = bounded(read_claimed(&mut rx, claim, &mut buf)).await.unwrap_err();
        sender.await.unwrap();
        assert_eq!(e.code, ErrorCode::BadFrame, "{e:?}");
        assert!(e.message.contains(&format!("announced {claim} bytes")) && e.message.contains("sent 65536"), "{e:?}");
        assert!(buf.capacity() <= CLAIMED_FIRST, "{} bytes reserved for 64 KiB received", buf.capacity());
        // Honest: 3 MB in odd chunks arrive whole, and the buffer never went past the claim.
        let data: Vec<u8> = (0..3_000_001u32).map(|i| (i % 251) as u8).collect();
        let (mut tx, mut rx) = tokio::io::duplex(10_007);
        let expect = data.clone();
        let sender = tokio::spawn(async move {
            tx.write_all(&data).await.unwrap();
        });
        let mut buf = Vec::new();
        bounded(read_claimed(&mut rx, expect.len(), &mut buf)).await.unwrap();
        sender.await.unwrap();
        assert!(buf == expect, "the bytes arrived whole");
        assert!(buf.capacity() <= expect.len() + 64, "capacity {} for {} bytes", buf.capacity(), expect.len());
    }
}

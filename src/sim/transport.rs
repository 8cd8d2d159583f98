//! The ADB transport protocol, device side: message codec, handshake (CNXN/AUTH) and the stream
//! multiplexer (OPEN/OKAY/WRTE/CLSE) with per-stream flow control.
//!
//! Wire format (AOSP `protocol.txt`): a 24-byte little-endian header
//! `command, arg0, arg1, data_length, data_check, magic = command ^ 0xffffffff` then
//! `data_length` payload bytes. `data_check` is a byte *sum* (not a real CRC); peers at version
//! `0x01000001` ("skip checksum") neither require nor verify it, so we compute it and accept
//! anything.
//!
//! Flow control (the classic, pre-`delayed_ack` scheme, because we do not advertise
//! `delayed_ack`): after sending a WRTE the sender waits for the peer's OKAY before sending the
//! next WRTE on that stream; every WRTE received is acknowledged with an OKAY. The device may
//! write immediately after its OKAY that accepts an OPEN.
//!
//! Robustness: the connection task never panics on peer input; protocol violations (bad magic,
//! oversized payloads) close the connection, unknown commands and stream ids are ignored like adbd
//! does.

use std::collections::HashMap;
use std::io;
use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, Semaphore};

use super::{services, Fault, Shared};

pub const A_SYNC: u32 = 0x434e_5953;
pub const A_CNXN: u32 = 0x4e58_4e43;
pub const A_AUTH: u32 = 0x4854_5541;
pub const A_OPEN: u32 = 0x4e45_504f;
pub const A_OKAY: u32 = 0x5941_4b4f;
pub const A_CLSE: u32 = 0x4553_4c43;
pub const A_WRTE: u32 = 0x4554_5257;
pub const A_STLS: u32 = 0x534c_5453;

/// Protocol version we speak: "skip checksum" version.
pub const A_VERSION: u32 = 0x0100_0001;
/// Largest payload we accept (advertised in our CNXN).
pub const MAX_PAYLOAD: u32 = 256 * 1024;
/// Hard limit on what we read from a peer even if it ignores our advertised maximum (newer hosts
/// use 1 MiB); anything larger is a protocol error.
const MAX_ACCEPTED_PAYLOAD: u32 = 1024 * 1024;

pub const AUTH_TOKEN: u32 = 1;
pub const AUTH_SIGNATURE: u32 = 2;
pub const AUTH_RSAPUBLICKEY: u32 = 3;

/// Features advertised in the CNXN banner. We deliberately leave out `delayed_ack` (different
/// flow control), TLS, and the `sendrecv_v2_{brotli,lz4,zstd}` compression features (the sim has
/// no decompressors; hosts then send uncompressed SND2/RCV2 or plain SEND/RECV).
pub const FEATURES: &str = "shell_v2,cmd,stat_v2,ls_v2,fixed_push_mkdir,apex,abb,fixed_push_symlink_timestamp,abb_exec,remount_shell,track_app,sendrecv_v2,sendrecv_v2_dry_run_send,openscreen_mdns,push_sync";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    pub command: u32,
    pub arg0: u32,
    pub arg1: u32,
    pub data: Vec<u8>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub command: u32,
    pub arg0: u32,
    pub arg1: u32,
    pub data_length: u32,
    pub data_check: u32,
    pub magic: u32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CodecError {
    BadMagic,
    TooLarge(u32),
}

/// The legacy "checksum": the sum of all payload bytes.
pub fn checksum(data: &[u8]) -> u32 {
    data.iter().fold(0u32, |a, b| a.wrapping_add(u32::from(*b)))
}

impl Message {
    pub fn new(command: u32, arg0: u32, arg1: u32, data: Vec<u8>) -> Self {
        Message { command, arg0, arg1, data }
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(24 + self.data.len());
        for n in [
            self.command,
            self.arg0,
            self.arg1,
            self.data.len() as u32,
            checksum(&self.data),
            self.command ^ 0xffff_ffff,
        ] {
            v.extend_from_slice(&n.to_le_bytes());
        }
        v.extend_from_slice(&self.data);
        v
    }
}

impl Header {
    pub fn decode(b: &[u8; 24], max: u32) -> Result<Header, CodecError> {
        let w = |i: usize| u32::from_le_bytes([b[i * 4], b[i * 4 + 1], b[i * 4 + 2], b[i * 4 + 3]]);
        let h = Header { command: w(0), arg0: w(1), arg1: w(2), data_length: w(3), data_check: w(4), magic: w(5) };
        if h.magic != h.command ^ 0xffff_ffff {
            return Err(CodecError::BadMagic);
        }
        if h.data_length > max {
            return Err(CodecError::TooLarge(h.data_length));
        }
        Ok(h)
    }
}

/// Reads one message; `Ok(None)` on clean EOF before a header.
pub async fn read_message<R: tokio::io::AsyncRead + Unpin>(r: &mut R) -> io::Result<Option<Message>> {
    let mut hdr = [0u8; 24];
    let mut got = 0;
    while got < 24 {
        let n = r.read(&mut hdr[got..]).await?;
        if n == 0 {
            return if got == 0 { Ok(None) } else { Err(io::ErrorKind::UnexpectedEof.into()) };
        }
        got += n;
    }
    let h = Header::decode(&hdr, MAX_ACCEPTED_PAYLOAD)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("{e:?}")))?;
    let mut data = vec![0u8; h.data_length as usize];
    r.read_exact(&mut data).await?;
    Ok(Some(Message { command: h.command, arg0: h.arg0, arg1: h.arg1, data }))
}

/// Receiving half of a stream as seen by a service: the payloads of the peer's WRTEs, in order.
/// `recv` returns `None` once the peer closed the stream or the connection died.
pub struct StreamIn {
    rx: mpsc::UnboundedReceiver<Vec<u8>>,
    pending: Vec<u8>,
}

impl StreamIn {
    pub async fn recv(&mut self) -> Option<Vec<u8>> {
        if !self.pending.is_empty() {
            return Some(std::mem::take(&mut self.pending));
        }
        self.rx.recv().await
    }

    /// Reads exactly `n` bytes (WRTE boundaries are not message boundaries), or `None` on close.
    pub async fn read_exact(&mut self, n: usize) -> Option<Vec<u8>> {
        while self.pending.len() < n {
            let chunk = self.rx.recv().await?;
            self.pending.extend_from_slice(&chunk);
        }
        let rest = self.pending.split_off(n);
        Some(std::mem::replace(&mut self.pending, rest))
    }

    /// Waits until the peer closes the stream, keeping what it sends for the next `recv`/`read_exact` (a service
    /// that has not started yet must not lose the bytes its client sent right after the OPEN).
    pub async fn wait_closed_keeping(&mut self) {
        while let Some(chunk) = self.rx.recv().await {
            self.pending.extend_from_slice(&chunk);
        }
    }

    /// Waits until the peer closes the stream, discarding anything it sends.
    pub async fn wait_closed(&mut self) {
        self.pending.clear();
        while self.rx.recv().await.is_some() {}
    }
}

/// Sending half of a stream. Dropping it closes the stream (CLSE) unless the peer already did.
pub struct StreamOut {
    tx: mpsc::UnboundedSender<Message>,
    ctl: mpsc::UnboundedSender<u32>,
    local: u32,
    remote: u32,
    max: usize,
    acks: Arc<Semaphore>,
    /// The phone's link (counts every byte) and its rate (0 = not paced).
    link: (Arc<super::Shared>, u64),
}

impl StreamOut {
    /// Sends `data` as one or more WRTEs, each waiting for the previous one's OKAY.
    pub async fn write(&mut self, data: &[u8]) -> io::Result<()> {
        for chunk in data.chunks(self.max) {
            match self.acks.acquire().await {
                Ok(p) => p.forget(),
                Err(_) => return Err(io::ErrorKind::BrokenPipe.into()),
            }
            let (shared, rate) = &self.link;
            shared.link.sent.fetch_add(chunk.len() as u64, std::sync::atomic::Ordering::Relaxed);
            if *rate > 0 {
                // The chunk is on the host once it has crossed the (shared) link.
                tokio::time::sleep_until(shared.link.reserve(chunk.len(), *rate)).await;
            }
            self.tx
                .send(Message::new(A_WRTE, self.local, self.remote, chunk.to_vec()))
                .map_err(|_| io::Error::from(io::ErrorKind::BrokenPipe))?;
        }
        Ok(())
    }

    /// True once the peer closed the stream or the connection went away.
    pub fn is_closed(&self) -> bool {
        self.acks.is_closed() || self.tx.is_closed()
    }

    /// Resolves when the connection this stream belongs to is gone.
    pub async fn connection_closed(&self) {
        self.tx.closed().await
    }
}

impl Drop for StreamOut {
    fn drop(&mut self) {
        if !self.acks.is_closed() {
            let _ = self.tx.send(Message::new(A_CLSE, self.local, self.remote, Vec::new()));
        }
        let _ = self.ctl.send(self.local);
    }
}

struct StreamEntry {
    remote: u32,
    input: mpsc::UnboundedSender<Vec<u8>>,
    acks: Arc<Semaphore>,
}

impl StreamEntry {
    fn close(self) {
        self.acks.close();
    }
}

struct Conn {
    shared: Arc<Shared>,
    tx: mpsc::UnboundedSender<Message>,
    ctl_tx: mpsc::UnboundedSender<u32>,
    connected: bool,
    unauthorized: bool,
    peer_max: usize,
    next_id: u32,
    streams: HashMap<u32, StreamEntry>,
}

/// Serves one TCP connection from an adb host until EOF, error, or a kill request.
pub(crate) async fn serve(sock: TcpStream, shared: Arc<Shared>) {
    let _ = sock.set_nodelay(true);
    let mut kill_rx = shared.kill.subscribe();
    let (mut rd, mut wr) = sock.into_split();
    let (tx, mut out_rx) = mpsc::unbounded_channel::<Message>();
    let (ctl_tx, mut ctl_rx) = mpsc::unbounded_channel::<u32>();
    let (in_tx, mut in_rx) = mpsc::channel::<io::Result<Option<Message>>>(16);
    // Reader and writer are separate tasks so that a partially read message is never lost to
    // `select!` cancellation and a slow peer never blocks message handling.
    let reader = tokio::spawn(async move {
        loop {
            let r = read_message(&mut rd).await;
            let stop = !matches!(r, Ok(Some(_)));
            if in_tx.send(r).await.is_err() || stop {
                break;
            }
        }
    });
    let writer = tokio::spawn(async move {
        while let Some(m) = out_rx.recv().await {
            if wr.write_all(&m.encode()).await.is_err() {
                break;
            }
        }
        let _ = wr.shutdown().await;
    });
    let mut conn = Conn {
        shared: shared.clone(),
        tx,
        ctl_tx,
        connected: false,
        unauthorized: false,
        peer_max: MAX_PAYLOAD as usize,
        next_id: 0,
        streams: HashMap::new(),
    };
    loop {
        tokio::select! {
            r = in_rx.recv() => match r {
                Some(Ok(Some(m))) => conn.handle(m),
                Some(Err(e)) => {
                    tracing::debug!(error = %e, "sim: adb connection read error");
                    break;
                }
                _ => break,
            },
            Some(id) = ctl_rx.recv() => {
                if let Some(s) = conn.streams.remove(&id) {
                    s.close();
                }
            }
            r = kill_rx.changed() => {
                let _ = r;
                break;
            }
        }
    }
    for (_, s) in conn.streams.drain() {
        s.close();
    }
    reader.abort();
    drop(conn);
    // Abrupt close on purpose: a dropped/offline phone does not flush politely.
    writer.abort();
}

impl Conn {
    fn send(&self, command: u32, arg0: u32, arg1: u32, data: Vec<u8>) {
        let _ = self.tx.send(Message::new(command, arg0, arg1, data));
    }

    fn send_cnxn(&mut self) {
        let cfg = &self.shared.cfg;
        let name = cfg.model.to_lowercase().split_whitespace().next().unwrap_or("sim").to_string();
        let banner = format!(
            "device::ro.product.name={name}_sim;ro.product.model={};ro.product.device={name}_sim;features={}",
            cfg.model.replace([';', '='], "_"),
            if cfg.shell_v2 { FEATURES.to_owned() } else { FEATURES.replace("shell_v2,", "") }
        );
        self.send(A_CNXN, A_VERSION, MAX_PAYLOAD, banner.into_bytes());
        self.connected = true;
        self.unauthorized = false;
    }

    fn send_auth_token(&self) {
        let mut token = [0u8; 20];
        if getrandom::fill(&mut token).is_err() {
            token = [0x5a; 20];
        }
        self.send(A_AUTH, AUTH_TOKEN, 0, token.to_vec());
    }

    fn handle(&mut self, m: Message) {
        match m.command {
            A_CNXN => {
                // A new CNXN restarts the session: drop all streams.
                for (_, s) in self.streams.drain() {
                    s.close();
                }
                self.connected = false;
                self.peer_max = (m.arg1 as usize).clamp(256, MAX_PAYLOAD as usize);
                if *self.shared.fault.borrow() == Fault::Unauthorized {
                    self.unauthorized = true;
                    self.send_auth_token();
                } else {
                    self.send_cnxn();
                }
            }
            A_AUTH => {
                if self.connected {
                    return;
                }
                if *self.shared.fault.borrow() != Fault::Unauthorized {
                    // The "user" accepted the key: complete the handshake.
                    self.send_cnxn();
                } else if m.arg0 == AUTH_SIGNATURE {
                    // Signature "rejected": challenge again, as adbd does for unknown keys.
                    self.send_auth_token();
                }
                // AUTH_RSAPUBLICKEY: the real device shows a prompt nobody answers; stay silent.
            }
            A_OPEN if self.connected => self.open(m),
            A_WRTE if self.connected => {
                if let Some(s) = self.streams.get(&m.arg1) {
                    if s.remote == m.arg0 {
                        let _ = s.input.send(m.data);
                        self.send(A_OKAY, m.arg1, m.arg0, Vec::new());
                    }
                }
            }
            A_OKAY if self.connected => {
                if let Some(s) = self.streams.get(&m.arg1) {
                    if s.remote == m.arg0 && s.acks.available_permits() == 0 {
                        s.acks.add_permits(1);
                    }
                }
            }
            A_CLSE if self.connected => {
                let matches = self.streams.get(&m.arg1).is_some_and(|s| s.remote == m.arg0 || m.arg0 == 0);
                if matches {
                    if let Some(s) = self.streams.remove(&m.arg1) {
                        s.close();
                    }
                }
            }
            // STLS (we never advertise TLS), legacy SYNC, and anything before CNXN: ignored.
            _ => {}
        }
    }

    fn open(&mut self, m: Message) {
        let remote = m.arg0;
        if remote == 0 {
            return;
        }
        if *self.shared.fault.borrow() == Fault::Unresponsive {
            tracing::debug!("sim: unresponsive, leaving an OPEN unanswered");
            return;
        }
        let end = m.data.iter().position(|b| *b == 0).unwrap_or(m.data.len());
        let raw = &m.data[..end];
        // abb/abb_exec separate arguments with NULs, so take everything up to the trailing NUL.
        let raw = if raw.starts_with(b"abb") { m.data.strip_suffix(&[0]).unwrap_or(&m.data) } else { raw };
        let name = String::from_utf8_lossy(raw).into_owned();
        let service = services::parse(&name)
            // An adbd without the shell protocol v2 only knows `shell:`: `shell,v2,...:` is an unknown service.
            .filter(|s| self.shared.cfg.shell_v2 || !matches!(s, services::Service::Shell { v2: true, .. }));
        let Some(service) = service else {
            tracing::debug!(service = %name, "sim: unknown adb service");
            self.send(A_CLSE, 0, remote, Vec::new());
            return;
        };
        self.next_id = self.next_id.wrapping_add(1).max(1);
        while self.streams.contains_key(&self.next_id) {
            self.next_id = self.next_id.wrapping_add(1).max(1);
        }
        let local = self.next_id;
        let (in_tx, in_rx) = mpsc::unbounded_channel();
        let acks = Arc::new(Semaphore::new(1));
        self.streams.insert(local, StreamEntry { remote, input: in_tx, acks: acks.clone() });
        self.send(A_OKAY, local, remote, Vec::new());
        let link = (self.shared.clone(), self.shared.cfg.costs.link_bytes_per_s);
        let out =
            StreamOut { tx: self.tx.clone(), ctl: self.ctl_tx.clone(), local, remote, max: self.peer_max, acks, link };
        let input = StreamIn { rx: in_rx, pending: Vec::new() };
        tokio::spawn(services::run(service, self.shared.clone(), input, out));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_decode_roundtrip() {
        let m = Message::new(A_WRTE, 7, 9, b"hello".to_vec());
        let enc = m.encode();
        assert_eq!(enc.len(), 29);
        assert_eq!(&enc[0..4], b"WRTE");
        let hdr: [u8; 24] = enc[..24].try_into().unwrap();
        let h = Header::decode(&hdr, MAX_PAYLOAD).unwrap();
        assert_eq!((h.command, h.arg0, h.arg1, h.data_length), (A_WRTE, 7, 9, 5));
        assert_eq!(h.data_check, 532);
        assert_eq!(h.magic, !A_WRTE);
    }

    #[test]
    fn decode_rejects_bad_magic_and_oversize() {
        let mut enc = Message::new(A_OKAY, 1, 2, vec![]).encode();
        enc[20] ^= 1;
        let hdr: [u8; 24] = enc[..24].try_into().unwrap();
        assert_eq!(Header::decode(&hdr, MAX_PAYLOAD), Err(CodecError::BadMagic));
        let mut enc = Message::new(A_OKAY, 1, 2, vec![]).encode();
        enc[12..16].copy_from_slice(&(MAX_PAYLOAD + 1).to_le_bytes());
        let hdr: [u8; 24] = enc[..24].try_into().unwrap();
        assert_eq!(Header::decode(&hdr, MAX_PAYLOAD), Err(CodecError::TooLarge(MAX_PAYLOAD + 1)));
    }

    #[test]
    fn command_constants_spell_ascii() {
        for (c, s) in [
            (A_CNXN, b"CNXN"),
            (A_AUTH, b"AUTH"),
            (A_OPEN, b"OPEN"),
            (A_OKAY, b"OKAY"),
            (A_CLSE, b"CLSE"),
            (A_WRTE, b"WRTE"),
            (A_STLS, b"STLS"),
            (A_SYNC, b"SYNC"),
        ] {
            assert_eq!(&c.to_le_bytes(), s);
        }
    }

    #[tokio::test]
    async fn read_message_handles_truncation() {
        let enc = Message::new(A_OPEN, 1, 0, b"shell:id\0".to_vec()).encode();
        let mut r = &enc[..];
        let m = read_message(&mut r).await.unwrap().unwrap();
        assert_eq!(m.data, b"shell:id\0");
        assert!(read_message(&mut r).await.unwrap().is_none());
        let mut short = &enc[..10];
        assert!(read_message(&mut short).await.is_err());
        let mut trunc = &enc[..28];
        assert!(read_message(&mut trunc).await.is_err());
    }
}

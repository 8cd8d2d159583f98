//! The ADB transport protocol, device side: one connection's handshake (CNXN/AUTH) and the stream
//! multiplexer (OPEN/OKAY/WRTE/CLSE) with per-stream flow control, on the messages of `wire.rs`; each accepted
//! OPEN becomes a [`StreamIn`]/[`StreamOut`] pair handed to its service (`services.rs`).
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

use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio::sync::{mpsc, Semaphore};

use super::services;
use super::shared::Shared;
use super::state::Fault;
use super::stream::{StreamIn, StreamOut};
use super::wire::{
    read_message, Message, AUTH_SIGNATURE, AUTH_TOKEN, A_AUTH, A_CLSE, A_CNXN, A_OKAY, A_OPEN, A_VERSION, A_WRTE,
    FEATURES, MAX_PAYLOAD,
};

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
                // A wedged adbd (or USB stack) answers nothing: a write on a stream opened before it wedged — the
                // phone helper's — is neither delivered nor acknowledged, like a new OPEN.
                if *self.shared.fault.borrow() == Fault::Unresponsive {
                    tracing::debug!("sim: unresponsive, leaving a WRTE unanswered");
                    return;
                }
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

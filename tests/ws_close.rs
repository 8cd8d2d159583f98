//! WebSocket close codes for broken frames, over a raw socket (a conforming client library cannot send them):
//! a reserved opcode is a protocol error (1002), a text frame that is not UTF-8 is invalid data (1007).

mod common;

use std::time::Duration;

use common::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Upgrades a raw TCP connection to a WebSocket (subprotocol `xagent.connector.packet.v1`).
async fn raw_ws(addr: std::net::SocketAddr) -> TcpStream {
    let mut s = TcpStream::connect(addr).await.unwrap();
    let req = format!(
        "GET /ws HTTP/1.1\r\nHost: {addr}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: \
         dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: \
         xagent.connector.packet.v1\r\n\r\n"
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        let mut b = [0u8; 1];
        assert_eq!(s.read(&mut b).await.unwrap(), 1, "closed during the handshake");
        head.push(b[0]);
    }
    assert!(head.starts_with(b"HTTP/1.1 101"), "{}", String::from_utf8_lossy(&head));
    s
}

/// One masked client frame.
fn frame(first_byte: u8, payload: &[u8]) -> Vec<u8> {
    let mask = [1u8, 2, 3, 4];
    let mut f = vec![first_byte, 0x80 | payload.len() as u8];
    f.extend_from_slice(&mask);
    f.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
    f
}

/// Reads server frames until a close frame; returns its status code.
async fn close_code(s: &mut TcpStream) -> Option<u16> {
    let work = async {
        loop {
            let mut h = [0u8; 2];
            s.read_exact(&mut h).await.ok()?;
            let mut len = (h[1] & 0x7f) as usize;
            if len == 126 {
                let mut l = [0u8; 2];
                s.read_exact(&mut l).await.ok()?;
                len = u16::from_be_bytes(l) as usize;
            }
            let mut payload = vec![0u8; len];
            s.read_exact(&mut payload).await.ok()?;
            if h[0] & 0x0f == 0x8 {
                return (payload.len() >= 2).then(|| u16::from_be_bytes([payload[0], payload[1]]));
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(10), work).await.expect("no close frame within 10 s")
}

#[tokio::test]
async fn broken_frames_get_specific_close_codes() {
    let dir = tempfile::tempdir().unwrap();
    let srv = Server::start(&dir.path().join("data"), &[], &[]);
    for (what, bytes, want) in [
        ("reserved data opcode 0x3", frame(0x83, b"{}"), 1002),
        ("reserved control opcode 0xB", frame(0x8b, b""), 1002),
        ("text frame with invalid UTF-8", frame(0x81, &[b'{', 0xff, 0xfe, b'}']), 1007),
    ] {
        let mut s = raw_ws(srv.addr).await;
        s.write_all(&bytes).await.unwrap();
        assert_eq!(close_code(&mut s).await, Some(want), "{what}");
    }
    // The connector lives on.
    assert_eq!(get(srv.addr, "/health").await.status, 200);
}

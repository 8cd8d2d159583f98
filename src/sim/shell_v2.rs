//! Shell protocol v2 framing (AOSP `shell_protocol.h`): every packet is `id: u8, length: u32 LE, data`;
//! ids stdin=0, stdout=1, stderr=2, exit=3 (one byte: status), close-stdin=4, window-size=5. The `shell,v2`
//! service and the phone helper's stream both speak it.

use super::cmdio::ExecResult;

pub const ID_STDIN: u8 = 0;

pub const ID_STDOUT: u8 = 1;

pub const ID_STDERR: u8 = 2;

pub const ID_EXIT: u8 = 3;

pub const ID_CLOSE_STDIN: u8 = 4;

pub const ID_WINDOW_SIZE: u8 = 5;

/// Largest data length per shell packet we emit (matches adbd's buffer size).
const SHELL_PACKET_MAX: usize = 32 * 1024 - 5;

/// Encodes one shell-protocol packet.
pub fn packet(id: u8, data: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(5 + data.len());
    v.push(id);
    v.extend_from_slice(&(data.len() as u32).to_le_bytes());
    v.extend_from_slice(data);
    v
}

/// Encodes a command result as v2 packets: stdout, stderr, then (unless the command keeps
/// running) exit.
pub fn encode_v2(res: &ExecResult, with_exit: bool) -> Vec<u8> {
    let mut v = Vec::new();
    for (id, data) in [(ID_STDOUT, &res.stdout), (ID_STDERR, &res.stderr)] {
        for chunk in data.chunks(SHELL_PACKET_MAX) {
            v.extend(packet(id, chunk));
        }
    }
    if with_exit {
        v.extend(packet(ID_EXIT, &[(res.status & 0xff) as u8]));
    }
    v
}

/// Incremental decoder for shell v2 packets arriving split across WRTEs.
#[derive(Default)]
pub struct PacketReader {
    buf: Vec<u8>,
}

impl PacketReader {
    pub fn push(&mut self, data: &[u8]) {
        self.buf.extend_from_slice(data);
    }
    /// Next complete packet, if any.
    pub fn next_packet(&mut self) -> Option<(u8, Vec<u8>)> {
        if self.buf.len() < 5 {
            return None;
        }
        let len = u32::from_le_bytes([self.buf[1], self.buf[2], self.buf[3], self.buf[4]]) as usize;
        if self.buf.len() < 5 + len {
            return None;
        }
        let id = self.buf[0];
        let data = self.buf[5..5 + len].to_vec();
        self.buf.drain(..5 + len);
        Some((id, data))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v2_framing_roundtrip() {
        let res = ExecResult { stdout: b"out".to_vec(), stderr: b"err!".to_vec(), status: 3, ..Default::default() };
        let enc = encode_v2(&res, true);
        assert_eq!(&enc[..8], &[1, 3, 0, 0, 0, b'o', b'u', b't']);
        let mut pr = PacketReader::default();
        // Feed byte by byte: packets must only appear once complete.
        let mut got = Vec::new();
        for b in &enc {
            pr.push(&[*b]);
            while let Some(p) = pr.next_packet() {
                got.push(p);
            }
        }
        assert_eq!(got, vec![(ID_STDOUT, b"out".to_vec()), (ID_STDERR, b"err!".to_vec()), (ID_EXIT, vec![3])]);
        let big = ExecResult { stdout: vec![7; 100_000], ..Default::default() };
        let enc = encode_v2(&big, false);
        assert_eq!(enc.len(), 100_000 + 5 * 100_000usize.div_ceil(SHELL_PACKET_MAX));
    }
}

//! The ADB transport protocol's messages, the bottom of the sim: the 24-byte header and its payload, the command
//! words, the codec and `read_message` (AOSP `protocol.txt`; see `transport.rs` for the handshake and streams
//! built on them). Nothing here knows a phone.
//!
//! Wire format (AOSP `protocol.txt`): a 24-byte little-endian header
//! `command, arg0, arg1, data_length, data_check, magic = command ^ 0xffffffff` then
//! `data_length` payload bytes. `data_check` is a byte *sum* (not a real CRC); peers at version
//! `0x01000001` ("skip checksum") neither require nor verify it, so we compute it and accept
//! anything.

use std::io;

use tokio::io::AsyncReadExt;

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

//! The `sync:` file transfer service (AOSP `SYNC.TXT`, `file_sync_protocol.h`), on the
//! in-memory filesystem.
//!
//! Requests are `id[4] + u32 LE length + payload`. Supported: `STAT`/`LSTA` (v1 stat),
//! `STA2`/`LST2` (stat_v2), `LIST`/`LIS2`, `SEND`/`SND2`, `RECV`/`RCV2` (uncompressed only: we do
//! not advertise the compression features) and `QUIT`. Requests may span several WRTEs and
//! several requests may share one, so everything is read through [`StreamIn::read_exact`].
//! Replies are buffered and flushed before blocking on the next read to avoid one WRTE/OKAY round
//! trip per tiny reply.

use std::sync::Arc;

use super::device::now_unix_secs;
use super::fs::{FsError, Stat};
use super::gates::stall_point;
use super::shared::Shared;
use super::stream::{StreamIn, StreamOut};

/// Max payload of one DATA chunk (`SYNC_DATA_MAX`).
pub const SYNC_DATA_MAX: usize = 64 * 1024;
/// Max accepted path length.
const MAX_PATH: usize = 1024;
/// Largest DATA chunk we accept from a peer (newer hosts still use 64 KiB; allow slack).
const MAX_DATA_IN: usize = 1024 * 1024;

/// sendrecv_v2 flags.
const FLAG_DRY_RUN: u32 = 0x8000_0000;

fn le32(b: &[u8]) -> u32 {
    u32::from_le_bytes([b[0], b[1], b[2], b[3]])
}

struct Replies<'a> {
    out: &'a mut StreamOut,
    buf: Vec<u8>,
}

impl Replies<'_> {
    fn id(&mut self, id: &[u8; 4]) {
        self.buf.extend_from_slice(id);
    }
    fn u32(&mut self, n: u32) {
        self.buf.extend_from_slice(&n.to_le_bytes());
    }
    fn u64(&mut self, n: u64) {
        self.buf.extend_from_slice(&n.to_le_bytes());
    }
    fn fail(&mut self, msg: &str) {
        self.id(b"FAIL");
        self.u32(msg.len() as u32);
        self.buf.extend_from_slice(msg.as_bytes());
    }
    fn stat_v2_body(&mut self, st: Result<Stat, FsError>) {
        let (err, st) = match st {
            Ok(s) => (0, s),
            Err(e) => (e.errno(), Stat { mode: 0, size: 0, mtime: 0 }),
        };
        let exists = err == 0;
        self.u32(err);
        self.u64(if exists { 0xfd00 } else { 0 }); // dev
        self.u64(if exists { 1000 + u64::from(st.mtime % 9973) } else { 0 }); // ino
        self.u32(st.mode);
        self.u32(u32::from(exists)); // nlink
        self.u32(if exists { 2000 } else { 0 }); // uid
        self.u32(if exists { 1015 } else { 0 }); // gid (sdcard_rw)
        self.u64(st.size);
        for _ in 0..3 {
            self.u64(u64::from(st.mtime)); // atime, mtime, ctime
        }
    }
    async fn flush(&mut self) -> bool {
        if self.buf.is_empty() {
            return true;
        }
        let b = std::mem::take(&mut self.buf);
        self.out.write(&b).await.is_ok()
    }
}

pub(crate) async fn run(shared: &Arc<Shared>, input: &mut StreamIn, out: &mut StreamOut) {
    let mut r = Replies { out, buf: Vec::new() };
    loop {
        if !r.flush().await {
            return;
        }
        let Some(hdr) = input.read_exact(8).await else {
            return;
        };
        let id: [u8; 4] = [hdr[0], hdr[1], hdr[2], hdr[3]];
        let len = le32(&hdr[4..]) as usize;
        if &id == b"QUIT" {
            let _ = r.flush().await;
            return;
        }
        if !matches!(
            &id,
            b"STAT" | b"LSTA" | b"STA2" | b"LST2" | b"LIST" | b"LIS2" | b"SEND" | b"SND2" | b"RECV" | b"RCV2"
        ) {
            r.fail(&format!("unknown sync request '{}'", String::from_utf8_lossy(&id)));
            let _ = r.flush().await;
            return;
        }
        if len > MAX_PATH {
            r.fail("path too long");
            let _ = r.flush().await;
            return;
        }
        let Some(path) = input.read_exact(len).await else {
            return;
        };
        let path = String::from_utf8_lossy(&path).into_owned();
        if !stall_point(shared, &format!("sync:{} {path}", String::from_utf8_lossy(&id)), input).await {
            return;
        }
        let dev = || shared.device.lock().unwrap_or_else(|e| e.into_inner());
        match &id {
            b"STAT" | b"LSTA" => {
                let st = dev().fs.stat(&path).unwrap_or(Stat { mode: 0, size: 0, mtime: 0 });
                r.id(&id);
                r.u32(st.mode);
                r.u32(st.size.min(u64::from(u32::MAX)) as u32);
                r.u32(st.mtime);
            }
            b"STA2" | b"LST2" => {
                let st = dev().fs.stat(&path);
                r.id(&id);
                r.stat_v2_body(st);
            }
            b"LIST" | b"LIS2" => {
                let v2 = &id == b"LIS2";
                let entries = dev().fs.list(&path).unwrap_or_default();
                for (name, st) in entries {
                    if v2 {
                        r.id(b"DNT2");
                        r.stat_v2_body(Ok(st));
                    } else {
                        r.id(b"DENT");
                        r.u32(st.mode);
                        r.u32(st.size.min(u64::from(u32::MAX)) as u32);
                        r.u32(st.mtime);
                    }
                    r.u32(name.len() as u32);
                    r.buf.extend_from_slice(name.as_bytes());
                }
                r.id(b"DONE");
                let zeros = if v2 { 4 + 8 + 8 + 4 * 4 + 8 * 4 + 4 } else { 16 };
                r.buf.extend(std::iter::repeat_n(0u8, zeros));
            }
            b"SEND" | b"SND2" => {
                let (target, mode, dry_run) = if &id == b"SND2" {
                    let Some(h) = input.read_exact(12).await else {
                        return;
                    };
                    let (mode, flags) = (le32(&h[4..8]), le32(&h[8..12]));
                    if &h[..4] != b"SND2" || flags & !FLAG_DRY_RUN != 0 {
                        r.fail("unsupported send_v2 flags (compression is not supported)");
                        let _ = r.flush().await;
                        return;
                    }
                    (path.clone(), mode, flags & FLAG_DRY_RUN != 0)
                } else {
                    match path.rsplit_once(',') {
                        Some((p, m)) => (p.to_string(), m.parse::<u32>().unwrap_or(0o644), false),
                        None => (path.clone(), 0o644, false),
                    }
                };
                let mut data = Vec::new();
                let mtime = loop {
                    let Some(h) = input.read_exact(8).await else {
                        return;
                    };
                    let n = le32(&h[4..]);
                    match &h[..4] {
                        b"DATA" if (n as usize) <= MAX_DATA_IN => {
                            let Some(d) = input.read_exact(n as usize).await else {
                                return;
                            };
                            data.extend_from_slice(&d);
                        }
                        b"DONE" => break n,
                        _ => {
                            r.fail("invalid data message");
                            let _ = r.flush().await;
                            return;
                        }
                    }
                };
                let mtime = if mtime == 0 { now_unix_secs() } else { mtime };
                let res = if dry_run { Ok(()) } else { dev().fs.write(&target, data, mode & 0o7777, mtime, true) };
                match res {
                    Ok(()) => {
                        r.id(b"OKAY");
                        r.u32(0);
                    }
                    Err(e) => r.fail(&format!("couldn't create file: {}", e.message())),
                }
            }
            b"RECV" | b"RCV2" => {
                if &id == b"RCV2" {
                    let Some(h) = input.read_exact(8).await else {
                        return;
                    };
                    if &h[..4] != b"RCV2" || le32(&h[4..]) != 0 {
                        r.fail("unsupported recv_v2 flags (compression is not supported)");
                        let _ = r.flush().await;
                        return;
                    }
                }
                let data = dev().fs.read(&path).map(<[u8]>::to_vec);
                match data {
                    Ok(d) => {
                        let lie = dev().length_lie;
                        for chunk in d.chunks(SYNC_DATA_MAX) {
                            r.id(b"DATA");
                            r.u32(if lie { 0xFFFF_FFF0 } else { chunk.len() as u32 });
                            r.buf.extend_from_slice(chunk);
                        }
                        r.id(b"DONE");
                        r.u32(0);
                    }
                    Err(e) => r.fail(&format!("open failed: {}", e.message())),
                }
            }
            _ => {}
        }
    }
}

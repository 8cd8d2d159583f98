//! The audit archive (issue 48): where records go when the record cap would otherwise remove records younger than
//! the retention period. One file in the data dir, [`FILE`], a sequence of segments; each segment is
//!
//! ```text
//! XAA1 {"first_seq":…,"last_seq":…,"records":…,"first_time_ms":…,"last_time_ms":…,"prev_hash":"…",
//!       "last_hash":"…","bytes":N,"sha256":"…","prev_segment":"…"}\n
//! <N bytes: raw deflate (flate2, already a dependency) of the records, one JSON object per line>
//! ```
//!
//! Chained twice: the records keep their own SHA-256 chain (`prev_hash`/`hash`, exactly as in the database, so the
//! chain runs from the archive's first record through the database's last), and each header names the SHA-256 of
//! the previous segment's header line (`prev_segment`) and of its own compressed bytes. Deflate because the records
//! are JSON text that compresses ~5×, and a line-framed header keeps the file readable with `head` and
//! `zlib-flate`. Segments whose newest record is older than the retention period are dropped from the front
//! (rewriting the file), so the archive holds at most the retention period within its byte budget.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::store::audit::AuditRow;

/// The archive's file name in the data dir.
pub const FILE: &str = "audit-archive.xaa";
const MAGIC: &str = "XAA1 ";
/// Most records one segment holds (bounds the memory a segment takes to write or verify: ~15 MB inflated).
pub const SEGMENT_RECORDS: usize = 50_000;

/// The header of one segment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Segment {
    pub first_seq: i64,
    pub last_seq: i64,
    pub records: u64,
    pub first_time_ms: u64,
    pub last_time_ms: u64,
    /// `prev_hash` of the segment's first record.
    pub prev_hash: String,
    /// `hash` of its last record.
    pub last_hash: String,
    bytes: u64,
    sha256: String,
    prev_segment: String,
    /// SHA-256 of this header line (what the next segment's `prev_segment` names).
    line_hash: String,
}

/// What the whole archive holds, once verified.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    pub segments: u64,
    pub records: u64,
    /// (seq, hash, time) of the newest archived record.
    pub last: Option<(i64, String, u64)>,
    pub bytes: u64,
}

pub fn path(data_dir: &Path) -> PathBuf {
    data_dir.join(FILE)
}

fn hex(d: impl AsRef<[u8]>) -> String {
    d.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

fn row_json(r: &AuditRow) -> Value {
    json!({"seq": r.seq, "time_ms": r.time_ms, "connector_id": r.connector_id, "channel_id": r.channel_id,
           "tool_call_id": r.tool_call_id, "tool_id": r.tool_id, "device": r.device, "arguments": r.arguments,
           "result": r.result, "prev_hash": r.prev_hash, "hash": r.hash})
}

fn row_from(v: &Value) -> Option<AuditRow> {
    let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
    Some(AuditRow {
        seq: v.get("seq")?.as_i64()?,
        time_ms: v.get("time_ms")?.as_u64()?,
        connector_id: s("connector_id")?,
        channel_id: s("channel_id")?,
        tool_call_id: s("tool_call_id"),
        tool_id: s("tool_id")?,
        device: s("device")?,
        arguments: s("arguments")?,
        result: s("result")?,
        prev_hash: s("prev_hash")?,
        hash: s("hash")?,
    })
}

/// One segment's bytes (header line + compressed records), `prev_segment` = the previous header's hash.
pub fn encode(rows: &[AuditRow], prev_segment: &str) -> std::io::Result<Vec<u8>> {
    let (Some(first), Some(last)) = (rows.first(), rows.last()) else { return Ok(Vec::new()) };
    let mut z = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
    for r in rows {
        z.write_all(row_json(r).to_string().as_bytes())?;
        z.write_all(b"\n")?;
    }
    let body = z.finish()?;
    let header = json!({"first_seq": first.seq, "last_seq": last.seq, "records": rows.len(),
        "first_time_ms": first.time_ms, "last_time_ms": last.time_ms, "prev_hash": first.prev_hash,
        "last_hash": last.hash, "bytes": body.len(), "sha256": hex(Sha256::digest(&body)),
        "prev_segment": prev_segment});
    let mut out = format!("{MAGIC}{header}\n").into_bytes();
    out.extend_from_slice(&body);
    Ok(out)
}

/// Reads a segment header line (without its newline).
fn parse_header(line: &str) -> Result<Segment, String> {
    let json = line.strip_prefix(MAGIC).ok_or("a segment does not start with its XAA1 header")?;
    let v: Value = serde_json::from_str(json).map_err(|e| format!("a segment header is not JSON: {e}"))?;
    let n = |k: &str| v.get(k).and_then(Value::as_u64).ok_or(format!("a segment header has no {k}"));
    let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned).ok_or(format!("a segment header has no {k}"));
    Ok(Segment {
        first_seq: n("first_seq")? as i64,
        last_seq: n("last_seq")? as i64,
        records: n("records")?,
        first_time_ms: n("first_time_ms")?,
        last_time_ms: n("last_time_ms")?,
        prev_hash: s("prev_hash")?,
        last_hash: s("last_hash")?,
        bytes: n("bytes")?,
        sha256: s("sha256")?,
        prev_segment: s("prev_segment")?,
        line_hash: hex(Sha256::digest(line.as_bytes())),
    })
}

/// Walks the archive: every segment's header and compressed bytes, handed to `each` (header, body).
fn walk(file: &Path, mut each: impl FnMut(&Segment, Vec<u8>) -> Result<(), String>) -> Result<u64, String> {
    let f = match std::fs::File::open(file) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(format!("cannot read the audit archive {}: {e}", file.display())),
    };
    let mut r = BufReader::new(f);
    let mut total = 0u64;
    loop {
        let mut line = String::new();
        let n = r.read_line(&mut line).map_err(|e| format!("cannot read the audit archive: {e}"))?;
        if n == 0 {
            return Ok(total);
        }
        let seg = parse_header(line.trim_end_matches('\n'))?;
        let mut body = vec![0u8; usize::try_from(seg.bytes).map_err(|_| "a segment is too large")?];
        r.read_exact(&mut body)
            .map_err(|_| format!("segment of records {}..={} is cut short", seg.first_seq, seg.last_seq))?;
        total += n as u64 + seg.bytes;
        each(&seg, body)?;
    }
}

/// The segment headers, in order (no decompression: what pruning and appending need).
pub fn segments(file: &Path) -> Result<Vec<Segment>, String> {
    let mut out = Vec::new();
    walk(file, |s, _| {
        out.push(s.clone());
        Ok(())
    })?;
    Ok(out)
}

/// Checks the whole archive — each segment's digest and link to the previous one, every record's hash and link —
/// and calls `each` for every record. `hash_of` is the chain's record hash (`crate::audit::hash`).
pub fn verify(
    file: &Path,
    hash_of: fn(&AuditRow) -> String,
    mut each: impl FnMut(&AuditRow),
) -> Result<Summary, (i64, String)> {
    let mut sum = Summary::default();
    let mut prev_line: Option<String> = None;
    let mut prev_record: Option<String> = None;
    let bytes = walk(file, |seg, body| {
        let at = |why: String| format!("archive segment of records {}..={}: {why}", seg.first_seq, seg.last_seq);
        if hex(Sha256::digest(&body)) != seg.sha256 {
            return Err(at("its compressed records do not match their digest (edited)".into()));
        }
        if let Some(p) = &prev_line {
            if &seg.prev_segment != p {
                return Err(at("its link to the previous segment is broken (a segment was removed or changed)".into()));
            }
        }
        let mut text = String::new();
        flate2::read::DeflateDecoder::new(&body[..])
            .take(512 << 20)
            .read_to_string(&mut text)
            .map_err(|e| at(format!("cannot be inflated: {e}")))?;
        let mut n = 0u64;
        let mut prev = prev_record.clone().unwrap_or_else(|| seg.prev_hash.clone());
        for line in text.lines() {
            let v: Value = serde_json::from_str(line).map_err(|_| at("a record is not JSON".into()))?;
            let r = row_from(&v).ok_or_else(|| at("a record lacks a field".into()))?;
            if r.prev_hash != prev {
                return Err(at(format!("record {}: its link to the previous record is broken", r.seq)));
            }
            if hash_of(&r) != r.hash {
                return Err(at(format!("record {}: its content does not match its hash (edited)", r.seq)));
            }
            prev = r.hash.clone();
            each(&r);
            sum.last = Some((r.seq, r.hash.clone(), r.time_ms));
            n += 1;
        }
        if n != seg.records || prev != seg.last_hash {
            return Err(at("it holds other records than its header says".into()));
        }
        sum.records += n;
        sum.segments += 1;
        prev_line = Some(seg.line_hash.clone());
        prev_record = Some(prev);
        Ok(())
    })
    .map_err(|why| (0, why))?;
    sum.bytes = bytes;
    Ok(sum)
}

/// Appends one segment of `rows` (chained to the archive's last segment) and syncs it to disk. `Ok(false)`: it would
/// take the archive past `max_bytes` — nothing was written.
pub fn append(file: &Path, rows: &[AuditRow], max_bytes: u64) -> Result<bool, String> {
    let segs = segments(file)?;
    let prev = segs.last().map_or_else(|| "0".repeat(64), |s| s.line_hash.clone());
    let seg = encode(rows, &prev).map_err(|e| format!("cannot compress audit records: {e}"))?;
    let size = std::fs::metadata(file).map_or(0, |m| m.len());
    if size + seg.len() as u64 > max_bytes {
        return Ok(false);
    }
    crate::store::private::file(file).map_err(|e| format!("cannot create the audit archive: {e}"))?;
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(file)
        .map_err(|e| format!("cannot open the audit archive: {e}"))?;
    f.write_all(&seg).and_then(|()| f.sync_all()).map_err(|e| format!("cannot write the audit archive: {e}"))?;
    Ok(true)
}

/// Drops the leading segments whose newest record is older than `before_ms` (rewrites the file through a temporary
/// one). Returns how many records went.
pub fn expire(file: &Path, before_ms: u64) -> Result<u64, String> {
    let segs = segments(file)?;
    let old = segs.iter().take_while(|s| s.last_time_ms < before_ms).count();
    if old == 0 {
        return Ok(0);
    }
    let gone: u64 = segs[..old].iter().map(|s| s.records).sum();
    let mut kept = Vec::new();
    let mut i = 0;
    walk(file, |seg, body| {
        if i >= old {
            kept.extend_from_slice(format!("{MAGIC}{}\n", header_json(seg)).as_bytes());
            kept.extend_from_slice(&body);
        }
        i += 1;
        Ok(())
    })?;
    let tmp = file.with_extension("tmp");
    let _ = std::fs::remove_file(&tmp);
    let mut f = crate::store::private::new_file_options()
        .open(&tmp)
        .map_err(|e| format!("cannot rewrite the audit archive: {e}"))?;
    f.write_all(&kept).and_then(|()| f.sync_all()).map_err(|e| format!("cannot rewrite the audit archive: {e}"))?;
    std::fs::rename(&tmp, file).map_err(|e| format!("cannot rewrite the audit archive: {e}"))?;
    Ok(gone)
}

/// A header as it was read (re-serialised with the same fields and order, so its line hash is unchanged).
fn header_json(s: &Segment) -> Value {
    json!({"first_seq": s.first_seq, "last_seq": s.last_seq, "records": s.records,
        "first_time_ms": s.first_time_ms, "last_time_ms": s.last_time_ms, "prev_hash": s.prev_hash,
        "last_hash": s.last_hash, "bytes": s.bytes, "sha256": s.sha256, "prev_segment": s.prev_segment})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(from: i64, n: i64, time: u64) -> Vec<AuditRow> {
        let mut prev = if from == 1 { "0".repeat(64) } else { format!("{:064}", from - 1) };
        (from..from + n)
            .map(|seq| {
                let mut r = AuditRow {
                    seq,
                    time_ms: time + seq as u64,
                    connector_id: "conn".into(),
                    channel_id: "cch".into(),
                    tool_call_id: None,
                    tool_id: "android_tap".into(),
                    device: "SER@srv".into(),
                    arguments: format!("{{\"x\":{seq}}}"),
                    result: "ok".into(),
                    prev_hash: prev.clone(),
                    hash: String::new(),
                };
                r.hash = crate::audit::hash(&r);
                prev = r.hash.clone();
                r
            })
            .collect()
    }

    #[test]
    fn segments_chain_verify_and_expire() {
        let dir = tempfile::tempdir().unwrap();
        let f = path(dir.path());
        let a = rows(1, 100, 1_000);
        let mut b = rows(101, 50, 5_000);
        b[0].prev_hash = a[99].hash.clone();
        for i in 0..b.len() {
            if i > 0 {
                b[i].prev_hash = b[i - 1].hash.clone();
            }
            b[i].hash = crate::audit::hash(&b[i]);
        }
        assert!(append(&f, &a, 1 << 20).unwrap());
        assert!(append(&f, &b, 1 << 20).unwrap());
        let mut seen = 0;
        let s = verify(&f, crate::audit::hash, |_| seen += 1).unwrap();
        assert_eq!((s.segments, s.records, seen), (2, 150, 150));
        assert_eq!(s.last.as_ref().unwrap().0, 150);
        // The budget is kept: a segment that does not fit is not written.
        assert!(!append(&f, &rows(151, 10, 9_000), s.bytes + 10).unwrap());
        // Expiring the first segment keeps the rest verifiable.
        assert_eq!(expire(&f, 2_000).unwrap(), 100);
        assert_eq!(verify(&f, crate::audit::hash, |_| {}).unwrap().records, 50);
        // An edited byte is caught.
        let mut bytes = std::fs::read(&f).unwrap();
        let n = bytes.len();
        bytes[n - 3] ^= 1;
        std::fs::write(&f, bytes).unwrap();
        assert!(verify(&f, crate::audit::hash, |_| {}).unwrap_err().1.contains("digest"));
    }
}

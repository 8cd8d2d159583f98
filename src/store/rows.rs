//! An audit record as stored: its row type, how it is read and inserted (hashes as 32 bytes). Apart from the
//! audit SQL (`audit.rs`) because the group-commit writer (`group.rs`) inserts records too.

use rusqlite::params;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuditRow {
    pub seq: i64,
    pub time_ms: u64,
    pub connector_id: String,
    pub channel_id: String,
    pub tool_call_id: Option<String>,
    pub tool_id: String,
    pub device: String,
    pub arguments: String,
    pub result: String,
    pub prev_hash: String,
    pub hash: String,
}

pub(super) const COLUMNS: &str =
    "seq, time_ms, connector_id, channel_id, tool_call_id, tool_id, device, arguments, result, prev_hash, hash";

pub(super) fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<AuditRow> {
    Ok(AuditRow {
        seq: r.get(0)?,
        time_ms: r.get::<_, i64>(1)? as u64,
        connector_id: r.get(2)?,
        channel_id: r.get(3)?,
        tool_call_id: r.get(4)?,
        tool_id: r.get(5)?,
        device: r.get(6)?,
        arguments: r.get(7)?,
        result: r.get(8)?,
        prev_hash: hash_hex(r.get_ref(9)?),
        hash: hash_hex(r.get_ref(10)?),
    })
}

/// A record's hashes are stored as their 32 bytes (issue 21: the two hex hashes were 128 of an audit row's ~300
/// bytes, and at ~300 bytes only one row fit a 512-byte page, so every call appended a new page); records written
/// before keep their hex TEXT. Both read back as hex, which is what the chain is computed over.
fn hash_value(hex: &str) -> rusqlite::types::Value {
    use rusqlite::types::Value;
    let b = hex.as_bytes();
    let bytes: Option<Vec<u8>> = (b.len() == 64)
        .then(|| {
            b.chunks(2).map(|p| std::str::from_utf8(p).ok().and_then(|p| u8::from_str_radix(p, 16).ok())).collect()
        })
        .flatten();
    // Only lower-case hex round-trips through bytes; anything else is kept as written.
    match bytes {
        Some(bytes) if hex.bytes().all(|c| !c.is_ascii_uppercase()) => Value::Blob(bytes),
        _ => Value::Text(hex.to_owned()),
    }
}

pub(super) fn hash_hex(v: rusqlite::types::ValueRef<'_>) -> String {
    use rusqlite::types::ValueRef;
    match v {
        ValueRef::Blob(b) => b.iter().map(|x| format!("{x:02x}")).collect(),
        ValueRef::Text(t) => String::from_utf8_lossy(t).into_owned(),
        _ => String::new(),
    }
}

/// Inserts one chained record (its seq and hashes set) in the caller's transaction.
pub(super) fn insert(tx: &rusqlite::Transaction<'_>, rec: &AuditRow) -> rusqlite::Result<()> {
    tx.prepare_cached(
        "INSERT INTO audit (seq, time_ms, connector_id, channel_id, tool_call_id, tool_id, device, arguments, result,
                            prev_hash, hash) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
    )?
    .execute(params![
        rec.seq,
        rec.time_ms as i64,
        rec.connector_id,
        rec.channel_id,
        rec.tool_call_id,
        rec.tool_id,
        rec.device,
        rec.arguments,
        rec.result,
        hash_value(&rec.prev_hash),
        hash_value(&rec.hash)
    ])?;
    Ok(())
}

//! The compact encodings of an idempotency record (issue 21; see `calls.rs`): the deflated outcome, the 128-bit
//! arguments digest and the 64-bit key hash. Apart from the SQL that reads and writes them, because both the
//! group-commit writer (`group.rs`) and the migrations (`db.rs`) encode them too.

use rusqlite::types::ValueRef;

/// Bytes of the arguments' SHA-256 a record keeps.
pub(super) const ARGS_DIGEST_BYTES: usize = 16;

/// The first byte of a packed outcome: how the rest is encoded. Never change what a shipped version means (records
/// live 24 hours and across upgrades): add a version.
const PACK_V1: u8 = 1;

/// The preset dictionary of [`PACK_V1`] (raw deflate): the words every recorded outcome repeats — the envelope,
/// the input tools' result keys and a settled tap's `effect` (serde_json writes keys sorted). zlib matches best
/// against the dictionary's end, so the most common text comes last. Frozen with `PACK_V1`.
const DICT_V1: &[u8] = br#"{"error":{"code":"tool_invoke_failed","details":null,"message":"device_timeout did not finish within its ms deadline"}}{"result":{"duration_ms":0,"element":{"bounds":[0,0,0,0],"class":"android.widget.","resource_id":"","text":""},"key":"","long_press":false,"method":"","opened":true,"submitted":false,"typed_chars":0,"url":"","woke":true,"effect":{"foreground":"com.android./.MainActivity","foreground_changed":false,"keyboard_shown":false,"screen_changed":false,"settle_ms":0,"settled":true},"x":0,"y":0}}"#;

/// Largest outcome a packed record may inflate to: an outcome is a tool's ack (kilobytes); a record that claims
/// more is corrupt, and reading it must not take the memory.
const MAX_OUTCOME: usize = 1 << 20;

/// `[PACK_V1] + raw deflate(outcome, DICT_V1)` as a BLOB; the TEXT itself should compression fail (it cannot, in
/// memory) — readable either way.
pub(super) fn pack_outcome(json: &str) -> rusqlite::types::Value {
    use rusqlite::types::Value;
    let packed = (|| {
        let mut c = flate2::Compress::new(flate2::Compression::best(), false);
        c.set_dictionary(DICT_V1).ok()?;
        // Deflate never grows text by more than a few bytes per 16 KiB block: one call with room to spare.
        let mut out = Vec::with_capacity(json.len() + json.len() / 8 + 64);
        out.push(PACK_V1);
        match c.compress_vec(json.as_bytes(), &mut out, flate2::FlushCompress::Finish).ok()? {
            flate2::Status::StreamEnd => Some(out),
            _ => None,
        }
    })();
    packed.map_or_else(|| Value::Text(json.to_owned()), Value::Blob)
}

/// The outcome JSON of a stored value: TEXT as written before, or a packed BLOB.
pub(super) fn unpack_outcome(v: ValueRef<'_>) -> std::result::Result<Option<String>, String> {
    match v {
        ValueRef::Null => Ok(None),
        ValueRef::Text(t) => Ok(Some(String::from_utf8_lossy(t).into_owned())),
        ValueRef::Blob([PACK_V1, rest @ ..]) => {
            let corrupt = |why: &str| format!("a recorded outcome is corrupt: {why}");
            let mut d = flate2::Decompress::new(false);
            d.set_dictionary(DICT_V1).map_err(|e| corrupt(&e.to_string()))?;
            let mut out = Vec::with_capacity(rest.len() * 4);
            loop {
                let consumed = d.total_in() as usize;
                if out.len() == out.capacity() {
                    if out.len() >= MAX_OUTCOME {
                        return Err(corrupt("it inflates beyond 1 MiB"));
                    }
                    out.reserve(out.len().max(256));
                }
                let before = (d.total_in(), d.total_out());
                let input = rest.get(consumed..).unwrap_or_default();
                match d.decompress_vec(input, &mut out, flate2::FlushDecompress::Finish) {
                    Ok(flate2::Status::StreamEnd) => break,
                    Ok(_) if (d.total_in(), d.total_out()) == before && out.len() < out.capacity() => {
                        return Err(corrupt("the stream ends early"))
                    }
                    Ok(_) => {}
                    Err(e) => return Err(corrupt(&e.to_string())),
                }
            }
            String::from_utf8(out).map(Some).map_err(|_| corrupt("it is not UTF-8"))
        }
        ValueRef::Blob(b) => Err(format!("a recorded outcome has an unknown encoding (first byte {:?})", b.first())),
        _ => Err("a recorded outcome is neither text nor bytes".into()),
    }
}

/// The record's index key: the first 64 bits of SHA-256 over the length-prefixed key (channel, tool, call id).
/// The index on it is UNIQUE, so two different keys with the same hash cannot both be recorded: with 100,000
/// records (the cap) the chance that a new call collides with one is 100,000 / 2^64 ≈ 5·10^-15, and the call would
/// then fail with the store's error — never be answered with another call's outcome (lookups compare the key
/// strings as well).
pub(super) fn key_hash(channel: &str, tool: &str, call_id: &str) -> i64 {
    use sha2::Digest;
    let mut h = sha2::Sha256::new();
    for part in [channel, tool, call_id] {
        h.update((part.len() as u64).to_le_bytes());
        h.update(part.as_bytes());
    }
    let d = h.finalize();
    i64::from_le_bytes(d[..8].try_into().expect("SHA-256 has 32 bytes"))
}

/// Hex of a stored arguments digest (TEXT hex before, bytes now).
pub(super) fn digest_hex(v: ValueRef<'_>) -> String {
    match v {
        ValueRef::Text(t) => String::from_utf8_lossy(t).into_owned(),
        ValueRef::Blob(b) => b.iter().map(|x| format!("{x:02x}")).collect(),
        _ => String::new(),
    }
}

/// What a record keeps of the arguments' SHA-256 (hex): its first [`ARGS_DIGEST_BYTES`] as bytes; anything that
/// is not a SHA-256 in lower-case hex is kept as it is.
pub(super) fn pack_digest(sha256_hex: &str) -> rusqlite::types::Value {
    use rusqlite::types::Value;
    let b = sha256_hex.as_bytes();
    if b.len() != 64 || !b.iter().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f')) {
        return Value::Text(sha256_hex.to_owned());
    }
    let nibble = |c: u8| if c <= b'9' { c - b'0' } else { c - b'a' + 10 };
    Value::Blob((0..ARGS_DIGEST_BYTES).map(|i| nibble(b[2 * i]) << 4 | nibble(b[2 * i + 1])).collect())
}

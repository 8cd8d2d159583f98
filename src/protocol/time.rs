//! Time as the wire says it: Unix milliseconds, and RFC 3339 for a person or a model to read.

/// Current Unix time in milliseconds, the unit of every `time` and `expires_at` on the wire.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

/// Milliseconds since the epoch as RFC 3339 UTC with milliseconds, e.g. `2026-11-30T12:00:00.123Z`: how a time
/// is said in a message a person or a model reads (`audit tail`, `operator_control`'s end of the hold).
pub fn utc(ms: u64) -> String {
    let secs = (ms / 1000) as i64;
    let (y, mo, d) = crate::build_info::civil_from_days(secs.div_euclid(86_400));
    let rem = secs.rem_euclid(86_400);
    format!("{y:04}-{mo:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z", rem / 3600, (rem % 3600) / 60, rem % 60, ms % 1000)
}

//! Reading clients' strings: a payload's string field, and a client string made safe for a log line. Shared by the
//! dispatcher, the tool-call handler and the session's error replies.

use serde_json::{Map, Value};

/// A client string made safe for a log line: control characters escaped, cut to 64 characters.
pub fn log_str(s: &str) -> String {
    let cut: String = s.chars().take(64).collect();
    let mut out: String = cut.chars().flat_map(char::escape_debug).collect();
    if s.chars().count() > 64 {
        out.push('…');
    }
    out
}

/// Reads a string field of a payload.
pub fn str_field<'a>(payload: &'a Map<String, Value>, name: &str) -> Option<&'a str> {
    payload.get(name).and_then(Value::as_str)
}

//! Building device shell commands safely, and reading their exit status reliably.
//!
//! Every argument that came from outside (text, package names, paths) is passed through [`quote`]: a POSIX
//! single-quoted word, in which the device's `sh` interprets nothing. Exit codes: `adb_client` returns `Ok(None)`
//! even when the device sent a shell-v2 exit status, so every command is followed by an exit marker that we parse
//! back out of stdout.

/// Single-quotes `s` for `sh`: `it's` → `'it'\''s'`.
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('\'');
    for c in s.chars() {
        if c == '\'' {
            out.push_str("'\\''");
        } else {
            out.push(c);
        }
    }
    out.push('\'');
    out
}

/// Marker line appended by [`with_exit_marker`]; unlikely in real output and fixed-format.
const MARKER: &str = "__XAGENT_EXIT__";

/// `CMD; echo __XAGENT_EXIT__$?` — run after any command, so the status of the last one is printed.
pub fn with_exit_marker(cmd: &str) -> String {
    format!("{cmd}; echo {MARKER}$?")
}

/// Splits the marker off the captured stdout. `None` when the marker is missing (the command was cut off).
pub fn split_exit_marker(stdout: &[u8]) -> Option<(Vec<u8>, i32)> {
    let text = stdout;
    let pos = find_last(text, MARKER.as_bytes())?;
    let rest = std::str::from_utf8(&text[pos + MARKER.len()..]).ok()?;
    let code: i32 = rest.trim().parse().ok()?;
    Some((text[..pos].to_vec(), code))
}

fn find_last(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.len() > hay.len() {
        return None;
    }
    (0..=hay.len() - needle.len()).rev().find(|&i| &hay[i..i + needle.len()] == needle)
}

/// `input text` treats `%s` as a space and cannot type a literal `%s`; spaces must be sent as `%s`. This splits
/// the text into chunks that each encode exactly the original characters, for one `input text` call each.
pub fn input_text_chunks(text: &str) -> Vec<String> {
    let mut chunks = Vec::new();
    let mut cur = String::new();
    let mut prev_percent = false;
    for c in text.chars() {
        if c == 's' && prev_percent {
            // Break between '%' and 's' so no chunk contains a literal "%s".
            chunks.push(std::mem::take(&mut cur));
        }
        if c == ' ' {
            cur.push_str("%s");
        } else {
            cur.push(c);
        }
        prev_percent = c == '%';
    }
    if !cur.is_empty() {
        chunks.push(cur);
    }
    chunks
}

/// Standard base64 with padding (for the ADB Keyboard's `ADB_INPUT_B64` broadcast, whose alphabet needs no
/// shell quoting beyond what [`quote`] adds anyway).
pub fn base64(data: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let b = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(A[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_neutralises_every_metacharacter() {
        assert_eq!(quote("abc"), "'abc'");
        assert_eq!(quote("it's"), "'it'\\''s'");
        assert_eq!(quote("a; rm -rf / && $(id) `id` | x > y"), "'a; rm -rf / && $(id) `id` | x > y'");
        assert_eq!(quote(""), "''");
    }

    #[test]
    fn exit_marker_round_trip() {
        assert_eq!(with_exit_marker("ls"), "ls; echo __XAGENT_EXIT__$?");
        let (out, code) = split_exit_marker(b"hello\n__XAGENT_EXIT__0\n").unwrap();
        assert_eq!((out.as_slice(), code), (&b"hello\n"[..], 0));
        let (out, code) = split_exit_marker(b"__XAGENT_EXIT__127\n").unwrap();
        assert_eq!((out.as_slice(), code), (&b""[..], 127));
        // Output without a trailing newline: the marker follows on the same line.
        let (out, code) = split_exit_marker(b"no-newline__XAGENT_EXIT__1\n").unwrap();
        assert_eq!((out.as_slice(), code), (&b"no-newline"[..], 1));
        assert!(split_exit_marker(b"cut off").is_none());
    }

    #[test]
    fn base64_matches_rfc4648_vectors() {
        for (plain, enc) in
            [("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("foob", "Zm9vYg=="), ("foobar", "Zm9vYmFy")]
        {
            assert_eq!(base64(plain.as_bytes()), enc);
        }
        assert_eq!(base64("你好".as_bytes()), "5L2g5aW9");
    }

    #[test]
    fn input_text_chunks_encode_spaces_and_avoid_percent_s() {
        assert_eq!(input_text_chunks("hello world"), vec!["hello%sworld"]);
        assert_eq!(input_text_chunks("50%s off"), vec!["50%", "s%soff"]);
        assert_eq!(input_text_chunks("100%"), vec!["100%"]);
        assert!(input_text_chunks("").is_empty());
    }
}

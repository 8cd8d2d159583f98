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
    fn input_text_chunks_encode_spaces_and_avoid_percent_s() {
        assert_eq!(input_text_chunks("hello world"), vec!["hello%sworld"]);
        assert_eq!(input_text_chunks("50%s off"), vec!["50%", "s%soff"]);
        assert_eq!(input_text_chunks("100%"), vec!["100%"]);
        assert!(input_text_chunks("").is_empty());
    }
}

//! Building device shell commands safely.
//!
//! Every argument that came from outside (text, package names, paths) is passed through [`quote`]: a POSIX
//! single-quoted word, in which the device's `sh` interprets nothing. (Exit statuses come from the shell protocol
//! v2 itself, see `device::transport`.)

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

/// What an error may say about a command: its program and, for tools with verbs (`input tap`, `dumpsys window`,
/// `am start`), the verb — never further arguments, which can carry typed text or other secrets.
pub fn label(cmd: &str) -> String {
    let mut words = cmd.split_whitespace();
    let Some(prog) = words.next() else { return String::new() };
    let prog: String = prog.chars().take(40).collect();
    let verb_tools = ["input", "dumpsys", "am", "pm", "cmd", "wm", "settings", "uiautomator", "screencap", "getprop"];
    match words.next() {
        Some(v)
            if verb_tools.contains(&prog.as_str())
                && v.len() <= 24
                && v.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == '-') =>
        {
            format!("{prog} {v}")
        }
        _ => prog,
    }
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

/// Standard base64 (padding optional) back to bytes; `None` on any other character or a dangling bit group.
pub fn base64_decode(s: &str) -> Option<Vec<u8>> {
    let val = |c: u8| match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    };
    let body = s.trim_end_matches('=');
    if s.len() - body.len() > 2 || body.len() % 4 == 1 {
        return None;
    }
    let mut out = Vec::with_capacity(body.len() / 4 * 3 + 2);
    let (mut acc, mut bits) = (0u32, 0);
    for &c in body.as_bytes() {
        acc = ((acc << 6) | u32::from(val(c)?)) & 0xFF_FFFF;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_round_trips() {
        for t in ["", "a", "ab", "abc", "Hello, 世界 ✓"] {
            assert_eq!(base64_decode(&base64(t.as_bytes())).as_deref(), Some(t.as_bytes()));
        }
        assert_eq!(base64_decode("YQ").as_deref(), Some(&b"a"[..]));
        assert!(base64_decode("Y").is_none() && base64_decode("a*b=").is_none() && base64_decode("YQ===").is_none());
    }

    #[test]
    fn labels_name_the_command_but_never_its_arguments() {
        assert_eq!(label("input text 'hunter2'"), "input text");
        assert_eq!(label("input tap 5 5"), "input tap");
        assert_eq!(label("dumpsys window displays | grep x"), "dumpsys window");
        assert_eq!(label("echo 'secret'"), "echo");
        assert_eq!(label("am broadcast -a ADB_INPUT_B64 --es msg aGk="), "am broadcast");
        assert_eq!(label("input 'secret with spaces'"), "input");
        assert_eq!(label(""), "");
    }

    #[test]
    fn quoting_neutralises_every_metacharacter() {
        assert_eq!(quote("abc"), "'abc'");
        assert_eq!(quote("it's"), "'it'\\''s'");
        assert_eq!(quote("a; rm -rf / && $(id) `id` | x > y"), "'a; rm -rf / && $(id) `id` | x > y'");
        assert_eq!(quote(""), "''");
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

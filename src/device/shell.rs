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

/// The ADB Keyboard's `ADB_INPUT_B64` broadcast is base64 (whose alphabet needs no shell quoting beyond what
/// [`quote`] adds anyway); tools and the helper's replies spell it through here.
pub use crate::base64::{decode as base64_decode, encode as base64};

#[cfg(test)]
mod tests {
    use super::*;

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
    fn input_text_chunks_encode_spaces_and_avoid_percent_s() {
        assert_eq!(input_text_chunks("hello world"), vec!["hello%sworld"]);
        assert_eq!(input_text_chunks("50%s off"), vec!["50%", "s%soff"]);
        assert_eq!(input_text_chunks("100%"), vec!["100%"]);
        assert!(input_text_chunks("").is_empty());
    }
}

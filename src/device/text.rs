//! Strings a phone reports (`getprop` values, package names, battery text, the adb server's `model:` field), made
//! safe to show and to send where they enter. A phone controls them completely: a 16 MiB `ro.product.model` made
//! `/api/v1/devices` 16 MB and reached agents as `display_name`; a U+202E (right-to-left override) in a model name
//! reversed the serial printed after it on the wall.
//!
//! [`phone_text`] keeps printable characters only — control characters (C0, DEL, C1) and the Unicode bidi controls
//! are removed (a tab or line break becomes a space, so the lines of a phone's error message stay apart) — trims,
//! and cuts at a character limit (never inside a character).
//!
//! [`terminal_text`] and [`terminal_json`] are the same rule for text shown on an operator's terminal that someone
//! else chose (an agent's `tool_call_id` in `audit tail`, a connector's error message in `call`): the characters
//! [`phone_text`] removes are written as visible escapes instead (`\x1b`, `\n`, `\u{202e}`), so nothing in the
//! text acts on the terminal (no forged lines, no erased line, no new window title, no reordered columns) and
//! nothing is lost.

use std::borrow::Cow;

/// Longest model / manufacturer name kept, in characters.
pub const MAX_NAME_CHARS: usize = 128;
/// Longest short value kept (Android version, SDK level, boot id, …), in characters.
pub const MAX_SHORT_CHARS: usize = 64;

/// Whether `c` may reorder or hide the text around it: the bidi embeddings, overrides and isolates, the implicit
/// marks, and the zero-width/BOM characters that make two strings look the same.
fn invisible_control(c: char) -> bool {
    matches!(c,
        '\u{061C}' | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2060}'..='\u{2069}' | '\u{FEFF}')
}

/// Whether `c` must never reach a terminal or a page as itself: a control character (C0, DEL, C1: line breaks,
/// `ESC` sequences, 8-bit `CSI`) or an [`invisible_control`].
fn acts(c: char) -> bool {
    c.is_control() || invisible_control(c)
}

/// `s` with control and bidi characters removed (whitespace controls become a space), trimmed, at most
/// `max_chars` characters.
pub fn phone_text(s: &str, max_chars: usize) -> String {
    let kept: String = s
        .chars()
        .filter_map(|c| match c {
            '\t' | '\n' | '\r' => Some(' '),
            c if acts(c) => None,
            c => Some(c),
        })
        .skip_while(|c| c.is_whitespace())
        .take(max_chars)
        .collect();
    kept.trim_end().to_owned()
}

/// `s` for a terminal: each character [`phone_text`] would remove written as an escape — `\n`, `\r`, `\t`,
/// `\xNN` below U+0080, `\u{NNNN}` above — everything else as it is. Borrowed when there is nothing to escape.
pub fn terminal_text(s: &str) -> Cow<'_, str> {
    if !s.chars().any(acts) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if acts(c) && (c as u32) < 0x80 => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if acts(c) => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// Serialized JSON (`serde_json`'s output) for a terminal, as the same JSON value: `serde_json` writes C0 controls
/// in strings as `\u00NN` but DEL, C1 and the bidi controls as themselves; they are written as `\uNNNN` here too.
/// The tabs and line breaks left are the layout's (a string cannot hold them raw).
pub fn terminal_json(json: &str) -> Cow<'_, str> {
    let escape = |c: char| acts(c) && !matches!(c, '\t' | '\n' | '\r');
    if !json.chars().any(escape) {
        return Cow::Borrowed(json);
    }
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        if escape(c) {
            // Every such character is in the Basic Multilingual Plane: one `\uNNNN` each.
            out.push_str(&format!("\\u{:04x}", c as u32));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_and_bidi_go_and_length_is_capped() {
        assert_eq!(phone_text("  Pixel 7\t\r\n", MAX_NAME_CHARS), "Pixel 7");
        assert_eq!(phone_text("Pixel\u{202E}7 orP\u{2066}\u{200F}", MAX_NAME_CHARS), "Pixel7 orP");
        assert_eq!(phone_text("a\u{0}b\u{1b}[31mc\u{7f}\u{9b}d", MAX_NAME_CHARS), "ab[31mcd");
        let long = "é".repeat(100_000);
        let cut = phone_text(&long, MAX_NAME_CHARS);
        assert_eq!(cut.chars().count(), MAX_NAME_CHARS);
        assert_eq!(phone_text("Galaxy S23 — 日本語", 10), "Galaxy S23");
        assert_eq!(phone_text(&format!("{}x", " ".repeat(500)), 4), "x");
        // The lines of a message stay apart.
        assert_eq!(phone_text("Error: Unknown command\nUsage: input\r\n", 200), "Error: Unknown command Usage: input");
    }

    #[test]
    fn terminal_text_escapes_what_acts_and_keeps_the_rest() {
        assert!(matches!(terminal_text("call_1 — 日本語 é"), Cow::Borrowed("call_1 — 日本語 é")));
        let forged = "c1\n 9  2026-01-01 \x1b[1A\x1b[2K\x1b]0;owned\x07\t\r\x7f\u{9b}31m\u{202e}\u{2066}\u{200b}x";
        let shown = terminal_text(forged);
        assert_eq!(
            shown,
            "c1\\n 9  2026-01-01 \\x1b[1A\\x1b[2K\\x1b]0;owned\\x07\\t\\r\\x7f\\u{9b}31m\\u{202e}\\u{2066}\\u{200b}x"
        );
        assert!(!shown.chars().any(acts), "{shown}");
        // What phone_text removes is exactly what terminal_text escapes.
        for c in (0..0x3000u32).chain(0xFE00..0xFF00).filter_map(char::from_u32) {
            let s = format!("a{c}b");
            assert_eq!(phone_text(&s, 10) != s, terminal_text(&s) != s, "U+{:04X}", c as u32);
        }
    }

    #[test]
    fn terminal_json_is_the_same_value_without_raw_controls() {
        let v = serde_json::json!({"id": "a\u{1b}[2K\u{7f}\u{85}\u{9b}\u{202e}\u{feff}b\n", "n": 1});
        let text = serde_json::to_string_pretty(&v).unwrap();
        let shown = terminal_json(&text);
        assert!(!shown.chars().any(|c| acts(c) && c != '\n'), "{shown}");
        assert_eq!(serde_json::from_str::<serde_json::Value>(&shown).unwrap(), v);
        assert!(shown.contains("\\u202e") && shown.contains("\\u007f"), "{shown}");
        let plain = serde_json::to_string(&serde_json::json!({"a": "日本"})).unwrap();
        assert!(matches!(terminal_json(&plain), Cow::Borrowed(_)));
    }
}

//! Strings a phone reports (`getprop` values, package names, battery text, the adb server's `model:` field), made
//! safe to show and to send where they enter. A phone controls them completely: a 16 MiB `ro.product.model` made
//! `/api/v1/devices` 16 MB and reached agents as `display_name`; a U+202E (right-to-left override) in a model name
//! reversed the serial printed after it on the wall.
//!
//! [`phone_text`] keeps printable characters only — control characters (C0, DEL, C1) and the Unicode bidi controls
//! are removed — trims, and cuts at a character limit (never inside a character).

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

/// `s` with control and bidi characters removed, trimmed, at most `max_chars` characters.
pub fn phone_text(s: &str, max_chars: usize) -> String {
    let kept: String = s
        .chars()
        .filter(|c| !c.is_control() && !invisible_control(*c))
        .skip_while(|c| c.is_whitespace())
        .take(max_chars)
        .collect();
    kept.trim_end().to_owned()
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
    }
}

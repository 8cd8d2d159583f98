//! The phone's notifications from `dumpsys notification`, as real phones print it (`tests/fixtures/real/
//! notification-*.txt`): one `NotificationRecord(0x…: pkg=… key=…: Notification(…))` header per notification in the
//! `Notification List:` section, its `flags=` line (hex `0x62` up to Android 14, symbolic `AUTO_CANCEL|…` on 16),
//! `when=` (`N` or `N/N`), an `extras={ … }` block and, where printed, `mCreationTimeMs=` (when it was posted).
//!
//! The texts are the apps': any app can post a title or text holding newlines and lines that look like the dump
//! (a fake `NotificationRecord(… pkg=com.bank …)` with a code of its choosing). So the structure is never read from
//! text an app wrote: [`COMMAND`] prints the dump twice, redacted (what `dumpsys notification` prints by default:
//! `android.title=String [length=17]`, no app text) and with `--noredact`. Records, packages, flags and times come
//! from the redacted dump; each redacted value is then taken from the other dump by walking both line by line
//! ([`merge`]): the full value is exactly the redacted length (UTF-16 units, Java's `length()`) after `(`, whatever
//! it contains, so nothing inside a text can start a record, close a block or stand for another field. When the two
//! dumps disagree (a notification came or went between them) no text is trusted: [`Parsed::texts`] is false and
//! the caller may read again. A phone that does not redact at all (no `[length=` anywhere) gives its texts as
//! printed, cut at the line end.
//!
//! Bounded: at most [`MAX_RECORDS`] records, texts cleaned by `text::phone_text` and cut to [`MAX_TEXT`] chars.

use super::text::phone_text;

/// Between the two dumps of [`COMMAND`]; a line of its own (the caller adds a random suffix so no app can print it).
pub const MARK: &str = "--xagent-notifications-";
/// Most notifications kept from one dump (a phone shows a few dozen at most; Android caps an app at 50).
pub const MAX_RECORDS: usize = 200;
/// Longest title or text kept (Android itself cuts them at 5 KiB).
pub const MAX_TEXT: usize = 2000;

/// The shell command: the redacted dump, the mark line, the full dump.
pub fn command(mark: &str) -> String {
    format!("dumpsys notification; echo {MARK}{mark}; dumpsys notification --noredact")
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Notification {
    pub package: String,
    /// `user|pkg|id|tag|uid`: the phone's identity of the notification.
    pub key: String,
    pub title: Option<String>,
    pub text: Option<String>,
    /// When it was posted (`mCreationTimeMs`, else the app's `when`), phone clock, ms since the epoch.
    pub time_ms: Option<u64>,
    pub ongoing: bool,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Parsed {
    pub notifications: Vec<Notification>,
    /// Whether titles and texts could be read (see the module docs); false: they are all `None`.
    pub texts: bool,
    /// More records than [`MAX_RECORDS`] were printed.
    pub truncated: bool,
}

/// Splits [`command`]'s output at its mark line and parses it.
pub fn parse_command_output(out: &str, mark: &str) -> Parsed {
    let line = format!("{MARK}{mark}");
    let Some(at) = out.find(&line) else { return parse(out, None) };
    let (redacted, rest) = out.split_at(at);
    let full = rest[line.len()..].strip_prefix('\n').unwrap_or(&rest[line.len()..]);
    parse(redacted, Some(full))
}

/// `redacted`: `dumpsys notification`; `full`: `dumpsys notification --noredact` taken right after (or `None`).
pub fn parse(redacted: &str, full: Option<&str>) -> Parsed {
    let lines: Vec<&str> = redacted.lines().collect();
    let redacts = redacted.contains(" [length=");
    let values = match (redacts, full) {
        (true, Some(f)) => merge(&lines, f),
        _ => None,
    };
    // Without redaction the (single) dump's texts are read as printed; with it, only through the merge.
    let texts = if redacts { values.is_some() } else { true };
    let mut out = Parsed { texts, ..Default::default() };
    let mut indent = None;
    let mut in_list = false;
    let mut cur: Open = None;
    for (i, line) in lines.iter().enumerate() {
        let trimmed = line.trim_start();
        let ind = line.len() - trimmed.len();
        if trimmed.starts_with("Notification List:") {
            in_list = true;
            continue;
        }
        if !in_list {
            continue;
        }
        if let Some(h) = header(trimmed) {
            if indent.is_none() {
                indent = Some(ind);
            }
            if indent == Some(ind) {
                finish(&mut cur, &mut out);
                cur = Some((
                    Notification { package: h.0, key: h.1, title: None, text: None, time_ms: None, ongoing: h.2 },
                    None,
                    None,
                ));
                continue;
            }
        }
        // A line at or left of the records' indentation that is no record ends the list (the next section).
        if indent.is_some_and(|r| ind <= r) && !trimmed.is_empty() {
            finish(&mut cur, &mut out);
            in_list = false;
            continue;
        }
        let Some((n, created, when)) = cur.as_mut() else { continue };
        if let Some(v) = trimmed.strip_prefix("flags=") {
            n.ongoing = ongoing(v);
        } else if let Some(v) = trimmed.strip_prefix("when=") {
            *when = v.split('/').next().and_then(|w| w.trim().parse().ok()).filter(|&w| w > 0);
        } else if let Some(v) = trimmed.strip_prefix("mCreationTimeMs=") {
            *created = v.trim().parse().ok().filter(|&w| w > 0);
        } else if let Some(v) = trimmed.strip_prefix("android.title=") {
            n.title = value(v, i, &values, texts);
        } else if let Some(v) = trimmed.strip_prefix("android.text=") {
            n.text = value(v, i, &values, texts);
        } else if let Some(v) = trimmed.strip_prefix("android.bigText=") {
            // The expanded text is the whole of what `text` may only begin.
            if let Some(b) = value(v, i, &values, texts) {
                n.text = Some(b);
            }
        }
    }
    finish(&mut cur, &mut out);
    out
}

type Open = Option<(Notification, Option<u64>, Option<u64>)>;

fn finish(cur: &mut Open, out: &mut Parsed) {
    if let Some((mut n, created, when)) = cur.take() {
        n.time_ms = created.or(when);
        if out.notifications.len() < MAX_RECORDS {
            out.notifications.push(n);
        } else {
            out.truncated = true;
        }
    }
}

/// `NotificationRecord(0x…: pkg=P user=… key=K: Notification(… flags=F …))` → (package, key, ongoing by the
/// header's flags). `None` for anything else, or a package that is not a package name.
fn header(t: &str) -> Option<(String, String, bool)> {
    let rest = t.strip_prefix("NotificationRecord(0x")?;
    let (hash, rest) = rest.split_once(": pkg=")?;
    if hash.is_empty() || !hash.chars().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    let (pkg, rest) = rest.split_once(' ')?;
    let pkg_ok = pkg.len() <= 255
        && !pkg.is_empty()
        && pkg.split('.').all(|s| {
            s.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
                && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        });
    if !pkg_ok {
        return None;
    }
    let key = rest.split(" key=").nth(1)?.split(": Notification(").next()?;
    let key = phone_text(key, 300);
    let flags = rest.split(" flags=").nth(1).and_then(|f| f.split(' ').next()).unwrap_or("");
    Some((pkg.to_owned(), key, ongoing(flags)))
}

/// `0x62` (FLAG_ONGOING_EVENT = 0x2) or `ONGOING_EVENT|NO_CLEAR|…`.
fn ongoing(flags: &str) -> bool {
    let f = flags.trim();
    if let Some(hex) = f.strip_prefix("0x") {
        return u32::from_str_radix(hex, 16).is_ok_and(|v| v & 0x2 != 0);
    }
    f.split('|').any(|s| s == "ONGOING_EVENT")
}

/// An extras value: `null`, `Type (text)` or `Type [length=N]` (its text from the merge, by line index).
fn value(v: &str, line: usize, merged: &Option<Vec<(usize, String)>>, texts: bool) -> Option<String> {
    if !texts {
        return None;
    }
    let v = v.trim_end();
    if v == "null" {
        return None;
    }
    let (_ty, rest) = v.split_once(' ')?;
    let raw = if rest.starts_with("[length=") {
        merged.as_ref()?.iter().find(|(i, _)| *i == line).map(|(_, s)| s.clone())?
    } else {
        rest.strip_prefix('(')?.strip_suffix(')')?.to_owned()
    };
    let clean = phone_text(&raw, MAX_TEXT);
    (!clean.is_empty()).then_some(clean)
}

/// Walks the redacted lines and the full dump together. A redacted line `PREFIX [length=N]` is `PREFIX (`, exactly
/// N UTF-16 units (newlines included) and `)` in the full dump; any other line is one line there with the same
/// indentation and label (the text before its first `=`, `(` or space: numbers such as airtime may differ between
/// the two reads). Returns (redacted line index, full value) for every redacted value, or `None` when the two do
/// not line up.
fn merge(redacted: &[&str], full: &str) -> Option<Vec<(usize, String)>> {
    let mut rest = full;
    let mut out = Vec::new();
    for (i, line) in redacted.iter().enumerate() {
        if let Some((prefix, n)) = redacted_value(line) {
            let after = rest.strip_prefix(prefix)?.strip_prefix(" (")?;
            let (val, tail) = take_utf16(after, n)?;
            let tail = tail.strip_prefix(')')?;
            let tail = match tail.find('\n') {
                // Whatever follows on the line (nothing, on real phones) is the redacted line's too.
                Some(nl) if tail[..nl].trim_end_matches('\r').is_empty() => &tail[nl + 1..],
                None if tail.trim_end().is_empty() => "",
                _ => return None,
            };
            out.push((i, val.to_owned()));
            rest = tail;
            continue;
        }
        let (fline, tail) = match rest.find('\n') {
            Some(nl) => (&rest[..nl], &rest[nl + 1..]),
            None if !rest.is_empty() => (rest, ""),
            None => return None,
        };
        if label(line) != label(fline) {
            return None;
        }
        rest = tail;
    }
    Some(out)
}

/// `  android.title=String [length=17]` → (`  android.title=String`, 17).
fn redacted_value(line: &str) -> Option<(&str, usize)> {
    let t = line.trim_end();
    let at = t.rfind(" [length=")?;
    let n = t[at + " [length=".len()..].strip_suffix(']')?.parse().ok()?;
    Some((&t[..at], n))
}

fn label(line: &str) -> (usize, &str) {
    let t = line.trim_start();
    let end = t.find(['=', '(', ' ']).unwrap_or(t.len());
    (line.len() - t.len(), &t[..end])
}

/// The first `n` UTF-16 code units of `s` (a Java string's `length()`), and the rest; `None` if `s` is shorter or
/// the cut falls inside a surrogate pair.
fn take_utf16(s: &str, n: usize) -> Option<(&str, &str)> {
    let mut units = 0;
    for (at, c) in s.char_indices() {
        if units == n {
            return Some(s.split_at(at));
        }
        units += c.len_utf16();
        if units > n {
            return None;
        }
    }
    (units == n).then_some((s, ""))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf16_lengths_are_javas() {
        assert_eq!(take_utf16("a😀b)", 3), Some(("a😀", "b)")));
        assert_eq!(take_utf16("a😀b", 2), None, "inside a surrogate pair");
        assert_eq!(take_utf16("ab", 3), None);
        assert_eq!(take_utf16("ab", 2), Some(("ab", "")));
    }
}

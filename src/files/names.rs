//! File names, MIME types and `file_type` classification of cached files, and the identifier formats the cache
//! accepts. Names come from uploads and device paths, so they are treated as hostile: they end up in a
//! `Content-Disposition` header and in tool results.

/// Longest stored filename, in characters.
const MAX_NAME_CHARS: usize = 128;

/// A usable display name: the last path component, without control characters, quotes, separators or leading
/// dots (no hidden or relative names), at most 128 characters. `fallback` when nothing usable is left.
pub fn sanitize_filename(raw: &str, fallback: &str) -> String {
    let base = raw.rsplit(['/', '\\']).next().unwrap_or("");
    let cleaned: String =
        base.chars()
            .map(|c| {
                if c.is_control() || matches!(c, '"' | '\'' | ';' | '<' | '>' | '|' | '*' | '?' | ':') {
                    '_'
                } else {
                    c
                }
            })
            .take(MAX_NAME_CHARS)
            .collect();
    let cleaned = cleaned.trim().trim_start_matches('.').trim().to_owned();
    if cleaned.is_empty() || cleaned.chars().all(|c| c == '_') {
        fallback.to_owned()
    } else {
        cleaned
    }
}

/// `Content-Disposition: attachment` for `name`: an ASCII-only `filename` (others become `_`) plus the exact UTF-8
/// name as RFC 6266/5987 `filename*`.
pub fn content_disposition(name: &str) -> String {
    let name = sanitize_filename(name, "download");
    let ascii: String = name.chars().map(|c| if c.is_ascii_graphic() || c == ' ' { c } else { '_' }).collect();
    if ascii == name {
        return format!("attachment; filename=\"{ascii}\"");
    }
    let mut encoded = String::new();
    for b in name.bytes() {
        if b.is_ascii_alphanumeric() || b"!#$&+-.^_`|~".contains(&b) {
            encoded.push(b as char);
        } else {
            encoded.push_str(&format!("%{b:02X}"));
        }
    }
    format!("attachment; filename=\"{ascii}\"; filename*=UTF-8''{encoded}")
}

pub const APK_MIME: &str = "application/vnd.android.package-archive";

/// MIME type from the file name's extension; `application/octet-stream` when unknown.
pub fn guess_mime(name: &str) -> &'static str {
    let ext = name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase()).unwrap_or_default();
    match ext.as_str() {
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "bmp" => "image/bmp",
        "apk" => APK_MIME,
        "txt" | "log" => "text/plain; charset=utf-8",
        "csv" => "text/csv",
        "json" => "application/json",
        "xml" => "application/xml",
        "html" | "htm" => "text/html",
        "pdf" => "application/pdf",
        "zip" => "application/zip",
        "mp4" => "video/mp4",
        "mp3" => "audio/mpeg",
        _ => "application/octet-stream",
    }
}

/// A MIME type we are willing to put in a `Content-Type` header: `type/subtype` with token characters and an
/// optional simple parameter, nothing that could split a header.
pub fn is_safe_mime(m: &str) -> bool {
    m.len() <= 100
        && m.split_once('/').is_some_and(|(a, b)| !a.is_empty() && !b.is_empty())
        && m.chars().all(|c| c.is_ascii_alphanumeric() || "/+-.;= _".contains(c))
}

/// The §5.1 `file_type`: `image`, `apk`, `text` or `file`.
pub fn file_type(mime: &str, filename: &str) -> &'static str {
    let m = mime.to_ascii_lowercase();
    if m.starts_with("image/") {
        "image"
    } else if m.starts_with(APK_MIME) || filename.to_ascii_lowercase().ends_with(".apk") {
        "apk"
    } else if m.starts_with("text/") || m.starts_with("application/json") || m.starts_with("application/xml") {
        "text"
    } else {
        "file"
    }
}

/// `file_` + 24 lowercase hex digits: the only shape of file_ref we issue (checked before any lookup).
pub fn is_file_ref(s: &str) -> bool {
    s.strip_prefix("file_").is_some_and(|h| h.len() == 24 && h.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))
}

/// An index `path` must be one plain component inside the cache directory.
pub fn is_plain_name(s: &str) -> bool {
    !s.is_empty() && s != "." && s != ".." && !s.contains(['/', '\\', '\0'])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filenames_are_sanitised() {
        assert_eq!(sanitize_filename("../../etc/passwd", "f"), "passwd");
        assert_eq!(sanitize_filename("C:\\Users\\x\\shot.png", "f"), "shot.png");
        assert_eq!(sanitize_filename("a\"b\r\nc.txt", "f"), "a_b__c.txt");
        assert_eq!(sanitize_filename("..", "f"), "f");
        assert_eq!(sanitize_filename(".hidden", "f"), "hidden");
        assert_eq!(sanitize_filename("", "f"), "f");
        assert_eq!(sanitize_filename(&"x".repeat(300), "f").len(), 128);
        assert_eq!(sanitize_filename("截图.png", "f"), "截图.png");
    }

    #[test]
    fn content_disposition_is_one_safe_header() {
        assert_eq!(content_disposition("a.png"), "attachment; filename=\"a.png\"");
        let cd = content_disposition("截图 1.png");
        assert_eq!(cd, "attachment; filename=\"__ 1.png\"; filename*=UTF-8''%E6%88%AA%E5%9B%BE%201.png");
        assert!(!content_disposition("x\"\r\nSet-Cookie: a").contains(['\r', '\n']));
    }

    #[test]
    fn types_and_refs() {
        assert_eq!(file_type("image/jpeg", "x"), "image");
        assert_eq!(file_type("application/octet-stream", "app.APK"), "apk");
        assert_eq!(file_type(guess_mime("a.log"), "a.log"), "text");
        assert_eq!(file_type(guess_mime("a.bin"), "a.bin"), "file");
        assert!(is_file_ref("file_0123456789abcdef01234567"));
        assert!(!is_file_ref("file_0123456789ABCDEF01234567"));
        assert!(!is_file_ref("file_../../x"));
        assert!(is_safe_mime("text/plain; charset=utf-8"));
        assert!(!is_safe_mime("text/plain\r\nX: y"));
        assert!(!is_plain_name("../x") && is_plain_name("file_00"));
    }
}

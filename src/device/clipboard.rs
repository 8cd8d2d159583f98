//! The phone's clipboard, read and set through the resident phone helper's `clip`/`setclip`/`clearclip` verbs
//! (helper 3; `device-profile/phone-helper.md`). There is no shell path: Android ships no reliable shell command for
//! the clipboard (AOSP's clipboard service implements no `cmd clipboard`: it answers "No shell command
//! implementation."), and `service call clipboard` needs per-version transaction numbers and a parcelled
//! `ClipData` nobody can build by hand. So where the helper does not run, the error says why and what would make it
//! work.
//!
//! The clip is another app's text: it is bounded by the helper (2048 UTF-16 units, `cut` beyond), decoded here as
//! untrusted bytes, and never logged; callers keep it out of audit records and human-facing output.

use std::time::Duration;

use super::adb::AdbBackend;
use super::key::DeviceKey;
use crate::protocol::errors::{ErrorCode, ProtoError};

/// Longest text `clipboard_set` sends, in UTF-8 bytes: its base64 and the request's words stay under the helper's
/// 16384-byte line.
pub const MAX_SET_BYTES: usize = 12_000;

/// What the primary clip holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Clip {
    /// No clip, a clip whose first item is not text (a URI, an intent), or (Android 10+) a read the system did not
    /// let the shell user make: the helper cannot tell these apart.
    None,
    /// The first item's text; `cut`: only its first 2048 UTF-16 units came.
    Text { text: String, cut: bool },
}

/// Parses a `clip` reply's payload (`clip <B64>`, `clip`, `cut <B64>`, `none`); `None` for anything else.
pub fn parse_clip(payload: &str) -> Option<Clip> {
    if payload == "none" {
        return Some(Clip::None);
    }
    if payload == "clip" {
        return Some(Clip::Text { text: String::new(), cut: false });
    }
    let (word, b64) = payload.split_once(' ')?;
    let cut = match word {
        "clip" => false,
        "cut" => true,
        _ => return None,
    };
    let bytes = super::shell::base64_decode(b64)?;
    // The helper encodes Java strings as UTF-8 (a lone surrogate becomes '?'); anything else is not from it.
    let text = String::from_utf8(bytes).ok()?;
    (text.encode_utf16().count() <= 2048).then_some(Clip::Text { text, cut })
}

/// The error of a phone where the helper cannot reach the clipboard: why, and what would make it work.
fn unavailable(why: &str) -> ProtoError {
    ProtoError::new(
        ErrorCode::ToolInvokeFailed,
        format!(
            "the clipboard is reached only through the phone helper, and {why}. Android has no reliable shell \
             command for the clipboard (AOSP's clipboard service implements no `cmd clipboard`), so there is no \
             other path: it needs Android 8 or newer and the connector's --phone-helper on (the default)"
        ),
    )
}

impl AdbBackend {
    /// The phone's primary clip (through the helper; a read, not ordered with side effects).
    pub async fn clipboard_get(&self, key: &DeviceKey, deadline: Duration) -> Result<Clip, ProtoError> {
        let Some(payload) = self.helper(key, false, deadline, "clip", "", Duration::ZERO).await? else {
            return Err(unavailable(&self.helpers().why_not(key, "clip")));
        };
        parse_clip(&payload).ok_or_else(|| {
            ProtoError::new(ErrorCode::ToolInvokeFailed, "the phone helper's clip answer was not in its format")
        })
    }

    /// Sets the primary clip to `text` (a plain-text clip labelled `xagent`, set as `com.android.shell`), or clears
    /// it (`None`; on Android 8, which has no clear, an empty clip). A side effect, ordered. What a lease's release
    /// uses to put a clipboard back.
    pub async fn clipboard_set(
        &self,
        key: &DeviceKey,
        text: Option<&str>,
        deadline: Duration,
    ) -> Result<(), ProtoError> {
        let (verb, args) = match text {
            Some(t) if t.len() > MAX_SET_BYTES => {
                return Err(ProtoError::new(
                    ErrorCode::InvalidArguments,
                    format!("the clipboard text is {} bytes of UTF-8; at most {MAX_SET_BYTES}", t.len()),
                ))
            }
            Some(t) => ("setclip", super::shell::base64(t.as_bytes())),
            None => ("clearclip", String::new()),
        };
        match self.helper(key, true, deadline, verb, &args, Duration::ZERO).await? {
            Some(_) => Ok(()),
            None => Err(unavailable(&self.helpers().why_not(key, verb))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clip_answers_parse_and_anything_else_is_refused() {
        assert_eq!(parse_clip("none"), Some(Clip::None));
        assert_eq!(parse_clip("clip"), Some(Clip::Text { text: String::new(), cut: false }));
        let hw = Clip::Text { text: "Hello, 世界 ✓".into(), cut: false };
        assert_eq!(parse_clip("clip SGVsbG8sIOS4lueVjCDinJM="), Some(hw));
        assert_eq!(parse_clip("cut YQ=="), Some(Clip::Text { text: "a".into(), cut: true }));
        // not base64, not UTF-8, an unknown word, longer than the helper's bound
        for bad in ["clip %%", "clip /w==", "text YQ==", "", "clip  YQ=="] {
            assert_eq!(parse_clip(bad), None, "{bad}");
        }
        let long = crate::device::shell::base64("x".repeat(2049).as_bytes());
        assert_eq!(parse_clip(&format!("clip {long}")), None);
    }
}

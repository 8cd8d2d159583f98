//! `android_logcat`: the tail of the device log, optionally filtered by tag and minimum priority.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use super::device::{invalid, tool};
use super::{Tool, ToolSpec};
use crate::device::adb::AdbBackend;
use crate::files::{self, NewFile};
use crate::protocol::errors::{ErrorCode, ProtoError};

/// Largest log text returned inline in the ack; beyond it the whole text becomes a text file ref, so a big log
/// never bloats a WebSocket message (the profile keeps bulk data on the transfer plane).
pub const INLINE_MAX_BYTES: usize = 64 * 1024;
/// Largest log text kept at all (2000 lines of logcat are typically well under 1 MiB).
const FILE_MAX_BYTES: usize = 16 << 20;

pub fn tools(adb: &Arc<AdbBackend>) -> Vec<Arc<dyn Tool>> {
    vec![tool(
        ToolSpec {
            id: "android_logcat",
            title: "Read the device log",
            description: "The last `lines` lines of logcat (default 200), optionally only one tag and/or a minimum \
                          priority. Use it to diagnose crashes (tag AndroidRuntime, priority E). Up to 64 KiB of \
                          text comes back inline as `lines`; a larger log comes back as a text file in `files` \
                          (one-time download URL) instead.",
            input: json!({"type": "object", "additionalProperties": false, "properties": {
                "lines": {"type": "integer", "minimum": 1, "maximum": 2000, "default": 200},
                "tag": {"type": "string", "minLength": 1, "maxLength": 64, "description": "Only this log tag (letters, digits, _ . -)"},
                "priority": {"type": "string", "enum": ["V", "D", "I", "W", "E", "F"], "default": "V", "description": "Minimum priority"}}}),
            output: json!({"type": "object", "required": ["count", "truncated"], "properties": {
                "lines": {"type": "array", "items": {"type": "string"}, "description": "The log, when it is at most 64 KiB"},
                "files": {"type": "array", "items": files::file_item_schema(), "description": "The log as a text file, when larger"},
                "count": {"type": "integer"}, "truncated": {"type": "boolean"}}}),
            side_effect: false,
            settles: false,
            deadline: Duration::from_secs(20),
        },
        adb,
        |c| async move {
            let n = c.i64("lines").unwrap_or(200);
            let pri = c.str("priority").unwrap_or("V").to_owned();
            if !["V", "D", "I", "W", "E", "F"].contains(&pri.as_str()) {
                return Err(invalid("argument `priority` must be one of V, D, I, W, E, F"));
            }
            let filter = match c.str("tag") {
                Some(tag) => {
                    if !tag.chars().all(|ch| ch.is_ascii_alphanumeric() || "_.-".contains(ch)) {
                        return Err(invalid("argument `tag` may contain only letters, digits, `_`, `.` and `-`"));
                    }
                    format!("{tag}:{pri} *:S")
                }
                None => format!("*:{pri}"),
            };
            let out = c
                .adb
                .shell_ok(&c.device, &format!("logcat -d -v threadtime -t {n} {filter}"), false, c.spec.deadline)
                .await?;
            let mut total = 0;
            let mut lines = Vec::new();
            let mut truncated = false;
            // Keep the newest lines when over the cap.
            for l in out.lines().rev().filter(|l| !l.starts_with("--------- beginning of")) {
                total += l.len() + 1;
                if total > FILE_MAX_BYTES {
                    truncated = true;
                    break;
                }
                lines.push(l);
            }
            lines.reverse();
            if total <= INLINE_MAX_BYTES {
                return Ok(json!({"count": lines.len(), "truncated": truncated, "lines": lines}));
            }
            let mut text = lines.join("\n");
            text.push('\n');
            let meta = NewFile {
                channel_id: c.call.channel_id.clone(),
                filename: format!("logcat-{}.txt", crate::protocol::now_ms()),
                mime: "text/plain; charset=utf-8".into(),
            };
            let count = lines.len();
            let cache = c.files.clone();
            let row = tokio::task::spawn_blocking(move || cache.store_bytes(text.as_bytes(), meta))
                .await
                .map_err(|_| ProtoError::new(ErrorCode::Internal, "storing the log failed unexpectedly"))?
                .map_err(|e| e.into_proto("the log"))?;
            Ok(json!({"count": count, "truncated": truncated, "files": [files::describe(&row)]}))
        },
    )]
}

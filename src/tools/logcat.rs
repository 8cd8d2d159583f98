//! `android_logcat`: the tail of the device log, optionally filtered by tag and minimum priority.

use std::sync::Arc;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::context::invalid;
use super::device::tool;
use super::registry::{Tool, ToolSpec};
use crate::device::adb::AdbBackend;
use crate::files::{self, NewFile};
use crate::protocol::errors::{ErrorCode, ProtoError};

/// Largest log text returned inline in the ack; beyond it the whole text becomes a text file ref, so a big log
/// never bloats a WebSocket message (the profile keeps bulk data on the transfer plane).
pub const INLINE_MAX_BYTES: usize = 64 * 1024;
/// Largest log text kept at all (2000 lines of logcat are typically well under 1 MiB).
const FILE_MAX_BYTES: usize = 16 << 20;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct LogcatArgs {
    #[schemars(range(min = 1, max = 2000))]
    #[serde(default = "lines_200")]
    lines: u32,
    /// Only this tag (letters, digits, _ . -)
    #[schemars(length(min = 1, max = 64))]
    tag: Option<String>,
    /// Minimum priority
    #[serde(default)]
    priority: Priority,
}

fn lines_200() -> u32 {
    200
}

// Serialize: schemars writes a field's `default` only for a type it can serialize.
#[derive(Clone, Copy, Default, Deserialize, serde::Serialize, JsonSchema)]
enum Priority {
    #[default]
    V,
    D,
    I,
    W,
    E,
    F,
}

impl Priority {
    fn as_str(self) -> &'static str {
        match self {
            Priority::V => "V",
            Priority::D => "D",
            Priority::I => "I",
            Priority::W => "W",
            Priority::E => "E",
            Priority::F => "F",
        }
    }
}

pub fn tools(adb: &Arc<AdbBackend>) -> Vec<Arc<dyn Tool>> {
    vec![tool(
        ToolSpec {
            id: "android_logcat",
            title: "Read the device log",
            description: "The last lines of logcat (crashes: tag AndroidRuntime, priority E); over 64 KiB as a \
                          text file.",
            input: super::args::schema::<LogcatArgs>(),
            output: json!({"type": "object", "properties": {
                "lines": {"type": "array", "items": {"type": "string"}, },
                "files": {"type": "array", "items": files::file_item_schema(), },
                "count": {"type": "integer"}, "truncated": {"type": "boolean"}}}),
            side_effect: false,
            settles: false,
            deadline: Duration::from_secs(20),
        },
        adb,
        |c| async move {
            let a: LogcatArgs = c.parse()?;
            let n = a.lines;
            let pri = a.priority.as_str();
            let filter = match a.tag.as_deref() {
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

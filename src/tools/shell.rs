//! `android_shell` (opt-in, operator policy): runs one allowlisted command. Absent from the card unless the policy
//! enables it; even then every command that matches no `shell_allow_prefixes` entry as a whole command (see
//! `Policy::shell_allows`), or has any shell syntax, is refused before it reaches the device.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use super::device::tool;
use super::registry::{Tool, ToolSpec};
use crate::device::adb::AdbBackend;
use crate::policy::Policy;
use crate::protocol::errors::{ErrorCode, ProtoError};

/// Output cap: shell output is returned inline.
const MAX_OUTPUT: usize = 64 * 1024;

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct ShellArgs {
    #[schemars(length(min = 1, max = 1000))]
    command: String,
}

pub fn tools(adb: &Arc<AdbBackend>, policy: &Arc<Policy>) -> Vec<Arc<dyn Tool>> {
    let policy = policy.clone();
    vec![tool(
        ToolSpec {
            id: "android_shell",
            title: "Run an allowed shell command",
            description: "Run one shell command from the operator's allowlist (plain words: no pipes, \
                          redirections, quotes or chaining; anything else is permission_denied).",
            input: super::args::schema::<ShellArgs>(),
            output: json!({"type": "object", "properties": {
                "exit_code": {"type": "integer"}, "stdout": {"type": "string"}, "stderr": {"type": "string"},
                "truncated": {"type": "boolean"}}}),
            // Unknown commands may change state: treat as a side effect (ordered, idempotent per tool_call_id).
            side_effect: true,
            settles: false,
            deadline: Duration::from_secs(30),
        },
        adb,
        move |c| {
            let policy = policy.clone();
            async move {
                let command = c.parse::<ShellArgs>()?.command.trim().to_owned();
                policy.shell_allows(&command).map_err(|m| ProtoError::new(ErrorCode::PermissionDenied, m))?;
                let out = c.adb.shell(&c.device, &command, true, c.spec.deadline).await?;
                let cut = |s: String| -> (String, bool) {
                    if s.len() <= MAX_OUTPUT {
                        return (s, false);
                    }
                    let mut end = MAX_OUTPUT;
                    while !s.is_char_boundary(end) {
                        end -= 1;
                    }
                    (s[..end].to_owned(), true)
                };
                let (stdout, t1) = cut(out.stdout);
                let (stderr, t2) = cut(out.stderr);
                Ok(json!({"exit_code": out.code, "stdout": stdout, "stderr": stderr, "truncated": t1 || t2}))
            }
        },
    )]
}

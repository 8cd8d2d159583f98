//! `android_notifications`: the notifications the phone shows now (package, title, text, time, ongoing), read from
//! `dumpsys notification` (parsed in `device::notifications`, which explains why the dump is read twice); `since_ms`
//! keeps only those posted after a time the agent got from an earlier answer (`latest_ms`, the phone's clock).
//!
//! The operator's policy may leave the tool out (`disabled_tools`) or restrict whose notifications an agent sees
//! (`notification_packages`): the others never leave this file, only their count (`withheld`). The audit counts
//! the call like every read (`audit::reads`: tool, channel, outcome, and the arguments — never a title or a text).

use std::sync::Arc;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

use super::context::check_package;
use super::device::tool;
use super::registry::{Tool, ToolSpec};
use crate::device::adb::AdbBackend;
use crate::device::notifications;
use crate::policy::Policy;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct NotificationsArgs {
    /// Only those posted after this (a latest_ms from before)
    #[schemars(range(min = 0))]
    since_ms: Option<u64>,
    /// Only this app's
    #[schemars(length(min = 1, max = 255))]
    package: Option<String>,
}

pub fn tools(adb: &Arc<AdbBackend>, policy: &Arc<Policy>) -> Vec<Arc<dyn Tool>> {
    let allowed = policy.notification_packages.clone();
    vec![tool(
        ToolSpec {
            id: "android_notifications",
            title: "Read the notifications",
            description: "The phone's current notifications, newest first (one-time codes, messages); since_ms: only \
                          newer ones.",
            input: super::args::schema::<NotificationsArgs>(),
            output: json!({"type": "object", "properties": {
                "notifications": {"type": "array", "items": {"type": "object", "description":
                    "package, title, text (null when unknown), time_ms, ongoing"}},
                "latest_ms": {"type": ["integer", "null"]}, "withheld": {"type": "integer"},
                "texts_read": {"type": "boolean"}}}),
            side_effect: false,
            settles: false,
            deadline: Duration::from_secs(20),
        },
        adb,
        move |c| {
            let allowed = allowed.clone();
            async move {
                let a: NotificationsArgs = c.parse()?;
                if let Some(p) = &a.package {
                    check_package(p)?;
                }
                let mark = crate::protocol::ids::random_hex(8);
                let cmd = notifications::command(&mark);
                let mut parsed = None;
                // The two dumps disagree when a notification came or went between them: one more read then.
                for _ in 0..2 {
                    let out = c.adb.shell_ok(&c.device, &cmd, false, c.spec.deadline).await?;
                    let p = notifications::parse_command_output(&out, &mark);
                    let done = p.texts;
                    parsed = Some(p);
                    if done {
                        break;
                    }
                }
                let parsed = parsed.unwrap_or_default();
                let mut withheld = 0;
                let mut list: Vec<Value> = Vec::new();
                let mut shown: Vec<&notifications::Notification> = parsed
                    .notifications
                    .iter()
                    .filter(|n| {
                        let ok = allowed.as_ref().is_none_or(|a| a.iter().any(|p| p == &n.package));
                        withheld += usize::from(!ok);
                        ok
                    })
                    .filter(|n| a.package.as_ref().is_none_or(|p| p == &n.package))
                    .filter(|n| a.since_ms.is_none_or(|s| n.time_ms.is_some_and(|t| t > s)))
                    .collect();
                // Of what the policy lets this agent see only: a withheld app's times are not the agent's either.
                let latest_ms = parsed
                    .notifications
                    .iter()
                    .filter(|n| allowed.as_ref().is_none_or(|a| a.iter().any(|p| p == &n.package)))
                    .filter_map(|n| n.time_ms)
                    .max();
                shown.sort_by_key(|n| std::cmp::Reverse(n.time_ms));
                for n in shown {
                    list.push(json!({
                        "package": n.package, "title": n.title, "text": n.text,
                        "time_ms": n.time_ms, "ongoing": n.ongoing,
                    }));
                }
                Ok(json!({
                    "notifications": list,
                    "latest_ms": latest_ms,
                    "withheld": withheld,
                    "texts_read": parsed.texts,
                }))
            }
        },
    )]
}

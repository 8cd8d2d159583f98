//! App tools: `android_app_launch`, `android_app_stop` (side effects) and `android_app_list` (observation).

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use super::device::{check_package, tool};
use super::{Tool, ToolSpec};
use crate::device::adb::AdbBackend;
use crate::device::shell::quote;
use crate::protocol::errors::{ErrorCode, ProtoError};

fn package_schema() -> serde_json::Value {
    json!({"type": "string", "minLength": 3, "maxLength": 255, "description": "Android package name, e.g. com.android.settings (see android_app_list)"})
}

pub fn tools(adb: &Arc<AdbBackend>) -> Vec<Arc<dyn Tool>> {
    vec![
        tool(
            ToolSpec {
                id: "android_app_launch",
                title: "Launch an app",
                description: "Start an installed app by package name (its launcher activity), or bring it to the \
                              front if it is running. Repeating the call is harmless.",
                input: json!({"type": "object", "additionalProperties": false, "required": ["package"], "properties": {"package": package_schema()}}),
                output: json!({"type": "object", "required": ["package", "launched"], "properties": {
                    "package": {"type": "string"}, "launched": {"type": "boolean"}}}),
                side_effect: true,
                deadline: Duration::from_secs(20),
            },
            adb,
            |c| async move {
                let pkg = c.str("package").unwrap_or("").to_owned();
                check_package(&pkg)?;
                let cmd = format!("monkey -p {} -c android.intent.category.LAUNCHER 1", quote(&pkg));
                let out = c.adb.shell(&c.device, &cmd, true, c.spec.deadline).await?;
                let text = format!("{}{}", out.stdout, out.stderr);
                if out.code != 0 || text.contains("No activities found") || text.contains("aborted") {
                    return Err(ProtoError::new(
                        ErrorCode::ToolInvokeFailed,
                        format!("{pkg} could not be launched: is it installed and does it have a launcher activity? (see android_app_list)"),
                    ));
                }
                Ok(json!({"package": pkg, "launched": true}))
            },
        ),
        tool(
            ToolSpec {
                id: "android_app_stop",
                title: "Force-stop an app",
                description: "Force-stop an app (am force-stop). Its unsaved state is lost. Repeating is harmless.",
                input: json!({"type": "object", "additionalProperties": false, "required": ["package"], "properties": {"package": package_schema()}}),
                output: json!({"type": "object", "required": ["package", "stopped"], "properties": {
                    "package": {"type": "string"}, "stopped": {"type": "boolean"}}}),
                side_effect: true,
                deadline: Duration::from_secs(15),
            },
            adb,
            |c| async move {
                let pkg = c.str("package").unwrap_or("").to_owned();
                check_package(&pkg)?;
                c.adb.shell_ok(&c.device, &format!("am force-stop {}", quote(&pkg)), true, c.spec.deadline).await?;
                Ok(json!({"package": pkg, "stopped": true}))
            },
        ),
        tool(
            ToolSpec {
                id: "android_app_list",
                title: "List installed apps",
                description: "Package names of installed apps; by default only user-installed (third-party) apps.",
                input: json!({"type": "object", "additionalProperties": false, "properties": {
                    "include_system": {"type": "boolean", "default": false, "description": "Include system apps"}}}),
                output: json!({"type": "object", "required": ["packages", "count"], "properties": {
                    "packages": {"type": "array", "items": {"type": "string"}}, "count": {"type": "integer"}}}),
                side_effect: false,
                deadline: Duration::from_secs(20),
            },
            adb,
            |c| async move {
                let cmd =
                    if c.bool("include_system").unwrap_or(false) { "pm list packages" } else { "pm list packages -3" };
                let out = c.adb.shell_ok(&c.device, cmd, false, c.spec.deadline).await?;
                let mut packages: Vec<&str> = out.lines().filter_map(|l| l.trim().strip_prefix("package:")).collect();
                packages.sort_unstable();
                Ok(json!({"count": packages.len(), "packages": packages}))
            },
        ),
    ]
}

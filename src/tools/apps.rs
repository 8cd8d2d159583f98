//! App tools: `android_app_launch`, `android_app_stop` (side effects) and `android_app_list` (observation).

use std::sync::Arc;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::args;
use super::context::{check_package, invalid};
use super::device::tool;
use super::registry::{Tool, ToolSpec};
use crate::device::adb::AdbBackend;
use crate::device::shell::quote;
use crate::policy::Policy;
use crate::protocol::errors::{ErrorCode, ProtoError};

/// The arguments of the tools that take just a package.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct PackageArgs {
    /// e.g. com.android.settings (android_app_list)
    #[schemars(length(min = 3, max = 255))]
    package: String,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct LaunchArgs {
    /// e.g. com.android.settings (android_app_list)
    #[schemars(length(min = 3, max = 255))]
    package: String,
    /// Activity class, full or relative (.MainActivity); default: the launcher activity
    #[schemars(length(min = 2, max = 255))]
    activity: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ListArgs {
    #[serde(default)]
    include_system: bool,
}

/// Activity class names: a Java class name, optionally relative to the package (`.Main`).
fn check_activity(a: &str) -> Result<(), ProtoError> {
    let body = a.strip_prefix('.').unwrap_or(a);
    let ok = !body.is_empty()
        && body.split('.').all(|seg| {
            seg.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && seg.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
        });
    if ok {
        Ok(())
    } else {
        Err(invalid(format!(
            "{a:?} is not an activity class name (like .MainActivity or com.example.app.MainActivity)"
        )))
    }
}

pub fn tools(adb: &Arc<AdbBackend>) -> Vec<Arc<dyn Tool>> {
    vec![
        tool(
            ToolSpec {
                id: "android_app_launch",
                title: "Launch an app",
                description: "Start an installed app, or bring it to the front if it runs. Repeating is harmless.",
                input: args::schema::<LaunchArgs>(),
                output: json!({"type": "object", "properties": {
                    "package": {"type": "string"}, "launched": {"type": "boolean"}}}),
                side_effect: true,
                settles: true,
                deadline: Duration::from_secs(20),
            },
            adb,
            |c| async move {
                let a: LaunchArgs = c.parse()?;
                let pkg = a.package;
                check_package(&pkg)?;
                let cmd = match a.activity.as_deref() {
                    Some(act) => {
                        check_activity(act)?;
                        format!("am start -n {}", quote(&format!("{pkg}/{act}")))
                    }
                    None => format!("monkey -p {} -c android.intent.category.LAUNCHER 1", quote(&pkg)),
                };
                // The release stops what the lease opened (its typed text goes with it): recorded first (issue 47).
                crate::device::conditions::lease_did(&c.adb, &c.device, crate::device::lease::OPENED, &pkg)?;
                let out = c.adb.shell(&c.device, &cmd, true, c.spec.deadline).await?;
                let text = format!("{}{}", out.stdout, out.stderr);
                if out.code != 0
                    || text.contains("No activities found")
                    || text.contains("aborted")
                    || text.contains("Error")
                {
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
                description: "Force-stop an app; its unsaved state is lost. Repeating is harmless.",
                input: args::schema::<PackageArgs>(),
                output: json!({"type": "object", "properties": {
                    "package": {"type": "string"}, "stopped": {"type": "boolean"}}}),
                side_effect: true,
                settles: true,
                deadline: Duration::from_secs(15),
            },
            adb,
            |c| async move {
                let pkg = c.parse::<PackageArgs>()?.package;
                check_package(&pkg)?;
                c.adb.shell_ok(&c.device, &format!("am force-stop {}", quote(&pkg)), true, c.spec.deadline).await?;
                Ok(json!({"package": pkg, "stopped": true}))
            },
        ),
        tool(
            ToolSpec {
                id: "android_app_list",
                title: "List installed apps",
                description: "Package names of installed apps (by default only user-installed ones).",
                input: args::schema::<ListArgs>(),
                output: json!({"type": "object", "properties": {
                    "packages": {"type": "array", "items": {"type": "string"}}, "count": {"type": "integer"}}}),
                side_effect: false,
                settles: false,
                deadline: Duration::from_secs(20),
            },
            adb,
            |c| async move {
                let all = c.parse::<ListArgs>()?.include_system;
                let cmd = if all { "pm list packages" } else { "pm list packages -3" };
                let out = c.adb.shell_ok(&c.device, cmd, false, c.spec.deadline).await?;
                // The phone's output: only lines that are package names (ASCII letters, digits, `.`, `_`; ≤ 255
                // bytes — what Android allows) reach the agent, and at most MAX_LISTED_PACKAGES of them (real
                // phones have a few hundred).
                let mut packages: Vec<&str> = out
                    .lines()
                    .filter_map(|l| l.trim().strip_prefix("package:"))
                    .filter(|p| {
                        !p.is_empty()
                            && p.len() <= 255
                            && p.bytes().all(|b| b.is_ascii_alphanumeric() || b"._".contains(&b))
                    })
                    .collect();
                packages.sort_unstable();
                let truncated = packages.len() > MAX_LISTED_PACKAGES;
                packages.truncate(MAX_LISTED_PACKAGES);
                let mut r = json!({"count": packages.len(), "packages": packages});
                if truncated {
                    r["truncated"] = json!(true);
                }
                Ok(r)
            },
        ),
    ]
}

/// Most package names `android_app_list` returns (a phone printing a million lines must not reach the agent).
const MAX_LISTED_PACKAGES: usize = 10_000;

/// Opt-in app tools (operator policy `enabled_risky_tools`): they destroy user data.
pub fn risky_tools(adb: &Arc<AdbBackend>, policy: &Arc<Policy>) -> Vec<Arc<dyn Tool>> {
    vec![
        pm_tool(
            adb,
            "android_app_uninstall",
            "Uninstall an app",
            "Uninstall an app and delete its data (operator opt-in). A new call on an absent app fails.",
            "uninstall",
            "uninstalled",
            None,
        ),
        pm_tool(
            adb,
            "android_app_clear_data",
            "Clear an app's data",
            "Delete all data of an app: accounts, settings, caches (operator opt-in). System packages are \
             refused (permission_denied) unless the operator's policy names them.",
            "clear",
            "cleared",
            Some(policy.clone()),
        ),
    ]
}

/// A destructive `pm <verb> PACKAGE` tool answering `{package, <done>: true}`, or pm's own failure text.
fn pm_tool(
    adb: &Arc<AdbBackend>,
    id: &'static str,
    title: &'static str,
    description: &'static str,
    verb: &'static str,
    done: &'static str,
    // `Some`: refuse system packages unless this policy names them (`clear_data_allow_system`).
    system_guard: Option<Arc<Policy>>,
) -> Arc<dyn Tool> {
    tool(
        ToolSpec {
            id,
            title,
            description,
            input: args::schema::<PackageArgs>(),
            output: json!({"type": "object", "properties": {
                "package": {"type": "string"}, done: {"type": "boolean"}}}),
            side_effect: true,
            settles: false,
            deadline: Duration::from_secs(60),
        },
        adb,
        move |c| {
            let system_guard = system_guard.clone();
            async move {
                let pkg = c.parse::<PackageArgs>()?.package;
                let guarded = system_guard.is_some_and(|p| !p.clear_data_allow_system.contains(&pkg));
                let refuse = || {
                    ProtoError::new(
                        ErrorCode::PermissionDenied,
                        format!(
                            "{pkg} is a system package; clearing its data can break the phone. The operator's \
                             policy must name it in clear_data_allow_system"
                        ),
                    )
                };
                // `android` (the framework) is not a dotted package name: refuse it before the grammar check does.
                if guarded && (pkg == "android" || pkg.starts_with("com.android.")) {
                    return Err(refuse());
                }
                check_package(&pkg)?;
                if guarded {
                    // Other system apps (vendor, Google): ask the package manager.
                    let list = format!("pm list packages -s {}", quote(&pkg));
                    let out = c.adb.shell_ok(&c.device, &list, false, c.spec.deadline).await?;
                    if out.lines().any(|l| l.trim().strip_prefix("package:") == Some(pkg.as_str())) {
                        return Err(refuse());
                    }
                }
                let out = c.adb.shell(&c.device, &format!("pm {verb} {}", quote(&pkg)), true, c.spec.deadline).await?;
                if out.code != 0 || !out.stdout.contains("Success") {
                    let why = format!("{}{}", out.stdout, out.stderr);
                    return Err(ProtoError::new(
                        ErrorCode::ToolInvokeFailed,
                        format!("pm {verb} {pkg}: {}", crate::device::text::phone_text(&why, 300)),
                    ));
                }
                Ok(json!({"package": pkg, done: true}))
            }
        },
    )
}

#[cfg(test)]
mod tests {
    use super::check_activity;

    #[test]
    fn activity_names() {
        assert!(check_activity(".Settings").is_ok());
        assert!(check_activity("com.android.settings.Settings$Wifi").is_ok());
        for bad in ["", ".", "a;b", ".Main X", "com..Main", "$(id)"] {
            assert!(check_activity(bad).is_err(), "{bad}");
        }
    }
}

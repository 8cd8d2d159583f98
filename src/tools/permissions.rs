//! `android_permission`: an app's runtime permissions — `list` them with their grant state (user 0, from `dumpsys
//! package`, parsed in `device::permissions`), `grant` or `revoke` one (`pm grant`/`pm revoke`). Only runtime
//! permissions can change: the phone refuses the others ("… is not a changeable permission type"), and that refusal
//! comes back in the phone's words, cleaned of control characters and bounded.
//!
//! The operator's policy may restrict which apps an agent may look at or change (`permission_packages`): any other
//! package is refused before the phone is asked anything.

use std::sync::Arc;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

use super::context::{check_package, invalid};
use super::device::tool;
use super::registry::{Tool, ToolSpec};
use crate::device::adb::AdbBackend;
use crate::device::permissions;
use crate::device::shell::quote;
use crate::policy::Policy;
use crate::protocol::errors::{ErrorCode, ProtoError};

#[derive(Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Action {
    List,
    Grant,
    Revoke,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct PermissionArgs {
    action: Action,
    #[schemars(length(min = 1, max = 255))]
    package: String,
    /// e.g. android.permission.CAMERA (grant, revoke)
    #[schemars(length(min = 3, max = 255))]
    permission: Option<String>,
}

pub fn tools(adb: &Arc<AdbBackend>, policy: &Arc<Policy>) -> Vec<Arc<dyn Tool>> {
    let allowed = policy.permission_packages.clone();
    vec![tool(
        ToolSpec {
            id: "android_permission",
            title: "List, grant or revoke app permissions",
            description: "An app's runtime permissions: list them with their grant state, grant or revoke one \
                          (skips the permission dialog).",
            input: super::args::schema::<PermissionArgs>(),
            output: json!({"type": "object", "properties": {
                "package": {"type": "string"},
                "permissions": {"type": "array", "items": {"type": "object", "description": "name, granted, flags"}},
                "permission": {"type": "string"}, "granted": {"type": "boolean"}}}),
            side_effect: true,
            settles: false,
            deadline: Duration::from_secs(20),
        },
        adb,
        move |c| {
            let allowed = allowed.clone();
            async move {
                let a: PermissionArgs = c.parse()?;
                let pkg = a.package;
                check_package(&pkg)?;
                if allowed.as_ref().is_some_and(|list| !list.contains(&pkg)) {
                    return Err(ProtoError::new(
                        ErrorCode::PermissionDenied,
                        format!("{pkg} is not among the apps the operator's policy lets agents change permissions of (permission_packages)"),
                    ));
                }
                let dl = c.spec.deadline;
                let (verb, granted) = match (a.action, a.permission) {
                    (Action::List, None) => {
                        let out =
                            c.adb.shell_ok(&c.device, &format!("dumpsys package {}", quote(&pkg)), false, dl).await?;
                        if permissions::unknown_package(&out) {
                            return Err(ProtoError::new(
                                ErrorCode::ToolInvokeFailed,
                                format!("{pkg} is not installed"),
                            ));
                        }
                        let sections = permissions::parse_runtime(&out, &pkg);
                        let list: Vec<Value> = permissions::user0(&sections)
                            .map(|s| {
                                s.permissions
                                    .iter()
                                    .map(|p| json!({"name": p.name, "granted": p.granted, "flags": p.flags}))
                                    .collect()
                            })
                            .unwrap_or_default();
                        return Ok(json!({"package": pkg, "permissions": list}));
                    }
                    (Action::List, Some(_)) => return Err(invalid("list takes no permission")),
                    (_, None) => return Err(invalid("grant and revoke need a permission")),
                    (Action::Grant, Some(p)) => (("grant", p), true),
                    (Action::Revoke, Some(p)) => (("revoke", p), false),
                };
                let (verb, perm) = verb;
                if !permissions::valid_name(&perm) {
                    return Err(invalid(format!("{perm:?} is not a permission name (like android.permission.CAMERA)")));
                }
                // A grant the phone did not have is revoked at release (issue 47): recorded before it is made.
                let granted_kind = crate::device::lease::GRANTED;
                if verb == "grant" && crate::device::conditions::undoes(&c.adb, granted_kind) {
                    let out = c.adb.shell_ok(&c.device, &format!("dumpsys package {}", quote(&pkg)), false, dl).await?;
                    let sections = permissions::parse_runtime(&out, &pkg);
                    let had = permissions::user0(&sections)
                        .is_some_and(|s| s.permissions.iter().any(|p| p.name == perm && p.granted));
                    if !had {
                        crate::device::conditions::lease_did(
                            &c.adb,
                            &c.device,
                            granted_kind,
                            &format!("{pkg} {perm}"),
                        )?;
                    }
                }
                let out =
                    c.adb.shell(&c.device, &format!("pm {verb} {} {}", quote(&pkg), quote(&perm)), true, dl).await?;
                let said = format!("{}\n{}", out.stdout, out.stderr);
                if out.code != 0 || said.contains("Exception") || said.contains("Unknown package") {
                    let why = crate::device::text::phone_text(permissions::pm_reason(&said), 300);
                    return Err(ProtoError::new(ErrorCode::ToolInvokeFailed, format!("pm {verb} {pkg} {perm}: {why}")));
                }
                Ok(json!({"package": pkg, "permission": perm, "granted": granted}))
            }
        },
    )]
}

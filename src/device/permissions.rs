//! An app's runtime permissions as `dumpsys package <pkg>` prints them, and what `pm grant`/`pm revoke` answer.
//!
//! The dump (every Android since 6; AOSP `Settings.dumpRuntimePermissionsLPr`, later `PackageManagerService`'s
//! dump helpers) has, inside the app's `Package [<pkg>] (<hash>):` block, one `User <id>: …` line per user and
//! under it a `runtime permissions:` section: one `<name>: granted=<bool>` line per permission, followed by
//! `, flags=[ A|B]` when any flag is set. Android 8–9 list only permissions with a grant or a flag (a requested
//! one missing from the list is not granted); later versions list every requested runtime permission. A grep of
//! the dump (no `Packages:` header) is read as one section of an unknown user. Real outputs of several versions are
//! in `tests/fixtures/real/` (`package-*`).
//!
//! The dump is the phone's (and an app's: it names its own permissions): lines that are not exactly that shape are
//! skipped, names and flags are checked against what Android allows, and the list is bounded.

/// Most permissions kept per user section (real apps request tens).
pub const MAX_PERMISSIONS: usize = 500;

/// One runtime permission of an app for one user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Permission {
    pub name: String,
    pub granted: bool,
    pub flags: Vec<String>,
}

/// One `runtime permissions:` section: whose (`User <id>:`; `None` in a grep without the user line).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct UserSection {
    pub user: Option<u32>,
    pub permissions: Vec<Permission>,
}

/// A permission name as Android allows them: `a.b.C_D` (letters, digits, `_`, `.`), at most 255 bytes.
pub fn valid_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 255
        && s.contains('.')
        && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.')
        && !s.starts_with('.')
        && !s.ends_with('.')
}

fn indent(l: &str) -> usize {
    l.len() - l.trim_start_matches(' ').len()
}

/// `NAME: granted=BOOL[, flags=[ A|B]]`, or `None`.
fn permission_line(t: &str) -> Option<Permission> {
    let (name, rest) = t.split_once(": granted=")?;
    let (granted, flags) = match rest.split_once(", flags=[") {
        Some((g, f)) => (g, Some(f.strip_suffix(']')?)),
        None => (rest, None),
    };
    let granted = match granted {
        "true" => true,
        "false" => false,
        _ => return None,
    };
    let mut list = Vec::new();
    for f in flags.unwrap_or("").split(['|', ' ']).filter(|f| !f.is_empty()).take(32) {
        if f.len() > 64 || !f.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_') {
            return None;
        }
        list.push(f.to_owned());
    }
    valid_name(name).then(|| Permission { name: name.to_owned(), granted, flags: list })
}

/// The runtime-permission sections of `package` in a `dumpsys package` output, in order.
pub fn parse_runtime(dump: &str, package: &str) -> Vec<UserSection> {
    let whole_dump = dump.lines().any(|l| l == "Packages:");
    let (mut in_packages, mut in_target) = (!whole_dump, !whole_dump);
    let mut user: Option<u32> = None;
    let mut section: Option<usize> = None;
    let mut out: Vec<UserSection> = Vec::new();
    for l in dump.lines().take(200_000) {
        let t = l.trim();
        if let Some(at) = section {
            if !t.is_empty() && indent(l) > at {
                if let Some(p) = permission_line(t) {
                    let s = out.last_mut().expect("a section is open");
                    if s.permissions.len() < MAX_PERMISSIONS {
                        s.permissions.push(p);
                    }
                    continue;
                }
            }
            if !t.is_empty() {
                section = None;
            } else {
                continue;
            }
        }
        if t.is_empty() {
            continue;
        }
        if whole_dump && indent(l) == 0 {
            in_packages = l == "Packages:";
            in_target = false;
            continue;
        }
        if !in_packages {
            continue;
        }
        if let Some(rest) = t.strip_prefix("Package [") {
            in_target = rest.split_once(']').is_some_and(|(name, _)| name == package);
            user = None;
            continue;
        }
        if !in_target {
            continue;
        }
        if let Some(rest) = t.strip_prefix("User ") {
            if let Some((id, _)) = rest.split_once(':') {
                user = id.parse().ok();
            }
            continue;
        }
        if t == "runtime permissions:" && out.len() < 64 {
            section = Some(indent(l));
            out.push(UserSection { user, permissions: Vec::new() });
        }
    }
    out
}

/// The section of user 0 (or of the one unnamed user of a grep); `None` when the dump has none for the package.
pub fn user0(sections: &[UserSection]) -> Option<&UserSection> {
    sections.iter().find(|s| s.user == Some(0)).or_else(|| sections.iter().find(|s| s.user.is_none()))
}

/// Whether `dumpsys package <pkg>` found no such package (it prints `Unable to find package: <pkg>` then).
pub fn unknown_package(dump: &str) -> bool {
    dump.lines().any(|l| l.trim_start().starts_with("Unable to find package:"))
}

/// The reason in a failed `pm grant`/`pm revoke`'s words: the exception line (`java.lang.SecurityException:
/// Permission … is not a changeable permission type`, `…IllegalArgumentException: Unknown permission: …`), without
/// the "Exception occurred while executing" header and the stack frames.
pub fn pm_reason(output: &str) -> &str {
    let lines = || output.lines().map(str::trim).filter(|l| !l.is_empty());
    lines()
        .find(|l| l.contains("Exception: ") && !l.starts_with("at "))
        .or_else(|| lines().find(|l| !l.starts_with("Exception occurred while executing") && !l.starts_with("at ")))
        .unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_of_other_shapes_are_not_permissions() {
        let p = permission_line("android.permission.CAMERA: granted=true, flags=[ USER_SET|USER_FIXED]").unwrap();
        assert_eq!((p.granted, p.flags.len()), (true, 2));
        assert!(permission_line("android.permission.CAMERA: granted=true").is_some_and(|p| p.flags.is_empty()));
        for bad in [
            "android.permission.CAMERA: granted=yes",
            "android.permission.CAMERA: granted=true, flags=[ USER_SET",
            "bad name: granted=true",
            "android.permission.CAMERA: granted=true, flags=[ \u{1b}[31m]",
            "android.permission.CAMERA",
        ] {
            assert_eq!(permission_line(bad), None, "{bad}");
        }
    }

    #[test]
    fn only_the_asked_package_counts_and_sections_are_per_user() {
        let dump = "Packages:\n  Package [com.other] (1):\n    User 0: installed=true\n      runtime permissions:\n        \
                    android.permission.CAMERA: granted=true\n  Package [com.me] (2):\n    User 0: installed=true\n      \
                    runtime permissions:\n        android.permission.CAMERA: granted=false, flags=[ USER_SET]\n    \
                    User 10: installed=true\n      runtime permissions:\n        android.permission.CAMERA: granted=true\n\
                    Hidden system packages:\n  Package [com.me] (3):\n    User 0: installed=true\n      runtime \
                    permissions:\n        android.permission.CAMERA: granted=true\n";
        let s = parse_runtime(dump, "com.me");
        assert_eq!(s.len(), 2, "{s:?}");
        assert_eq!((s[0].user, s[0].permissions[0].granted), (Some(0), false));
        assert_eq!((s[1].user, s[1].permissions[0].granted), (Some(10), true));
        assert!(!user0(&s).unwrap().permissions[0].granted);
    }

    #[test]
    fn pm_reasons_are_the_exception_line() {
        let err = "Exception occurred while executing 'grant':\njava.lang.SecurityException: Permission \
                   android.permission.INTERNET requested by com.me is not a changeable permission type\n\tat \
                   com.android.server.pm.permission.PermissionManagerServiceImpl.grantRuntimePermissionInternal(X.java:1)\n";
        assert!(pm_reason(err).starts_with("java.lang.SecurityException: Permission android.permission.INTERNET"));
        assert_eq!(pm_reason("Unknown package: com.me\n"), "Unknown package: com.me");
    }
}

//! Runtime permissions as a real phone keeps them: what `dumpsys package <pkg>` prints of them in the form of the
//! SDK level (`tests/fixtures/real/package-*`), and `pm grant`/`pm revoke` changing them, refusing what a real
//! package manager refuses with its words (an unknown package or permission, one the app did not request, one that
//! is not a runtime permission: "… is not a changeable permission type").
//!
//! The demo app (`com.xagent.demo`) requests CAMERA, RECORD_AUDIO, ACCESS_FINE_LOCATION (and POST_NOTIFICATIONS
//! from Android 13) as runtime permissions and INTERNET as an install-time one; other apps request none.

use super::cmdio::CmdIo;
use super::device::Device;

/// Permissions the sim's package manager knows, and whether each is a runtime ("dangerous") one.
const KNOWN: &[(&str, bool)] = &[
    ("android.permission.CAMERA", true),
    ("android.permission.RECORD_AUDIO", true),
    ("android.permission.ACCESS_FINE_LOCATION", true),
    ("android.permission.POST_NOTIFICATIONS", true),
    ("android.permission.READ_CONTACTS", true),
    ("android.permission.INTERNET", false),
    ("android.permission.ACCESS_NETWORK_STATE", false),
];

/// What `package` requests, runtime and install-time, on this SDK level.
fn requested(dev: &Device, package: &str) -> Vec<&'static str> {
    if package != "com.xagent.demo" {
        return Vec::new();
    }
    let mut r = vec![
        "android.permission.INTERNET",
        "android.permission.CAMERA",
        "android.permission.RECORD_AUDIO",
        "android.permission.ACCESS_FINE_LOCATION",
    ];
    if dev.cfg.sdk >= 33 {
        r.push("android.permission.POST_NOTIFICATIONS");
    }
    r
}

fn runtime(perm: &str) -> bool {
    KNOWN.iter().any(|(p, rt)| *p == perm && *rt)
}

/// `dumpsys package <pkg>`: the package's block with its permission sections (other fields as a real dump has
/// them, abridged), or what a real one says of a package that is not there.
pub fn dumpsys_package(dev: &Device, args: &[&str], io: &mut CmdIo) -> i32 {
    let Some(pkg) = args.get(1).copied() else {
        io.out("Packages:\n");
        return 0;
    };
    let Some(p) = dev.packages.get(pkg) else {
        io.out(&format!("Unable to find package: {pkg}\n"));
        return 0;
    };
    let sdk = dev.cfg.sdk;
    let req = requested(dev, pkg);
    let mut s = format!("Packages:\n  Package [{pkg}] (5c6c43c):\n    userId=10{:03}\n", pkg.len());
    s.push_str(&format!("    codePath={}\n", p.path.trim_end_matches("/base.apk")));
    s.push_str(&format!("    versionCode=1 minSdk=26 targetSdk={sdk}\n"));
    s.push_str("    requested permissions:\n");
    for r in &req {
        s.push_str(&format!("      {r}\n"));
    }
    s.push_str("    install permissions:\n");
    for r in req.iter().filter(|r| !runtime(r)) {
        s.push_str(&format!("      {r}: granted=true\n"));
    }
    s.push_str(
        "    User 0: ceDataInode=395674 installed=true hidden=false suspended=false stopped=false notLaunched=false \
         enabled=0 instant=false virtual=false\n      gids=[3003]\n      runtime permissions:\n",
    );
    for r in req.iter().filter(|r| runtime(r)) {
        let granted = dev.granted.contains(&(pkg.to_owned(), r.to_string()));
        if sdk >= 29 {
            // Android 10+ lists every requested runtime permission, with the sensitivity flags the permission
            // controller sets on them (the form of package-13-runtime-flags-developer-android.txt).
            s.push_str(&format!(
                "        {r}: granted={granted}, flags=[ USER_SENSITIVE_WHEN_GRANTED|USER_SENSITIVE_WHEN_DENIED]\n"
            ));
        } else if granted {
            // 8–9 list only what has a grant or a flag (package-9-runtime-granted-no-flags-pms-blog.txt).
            s.push_str(&format!("        {r}: granted=true\n"));
        }
    }
    s.push('\n');
    io.out(&s);
    0
}

/// `pm grant|revoke [--user 0] PACKAGE PERMISSION`.
pub fn grant(dev: &mut Device, verb: &str, args: &[&str], io: &mut CmdIo) -> i32 {
    let args: Vec<&str> = match args {
        ["--user", _, rest @ ..] => rest.to_vec(),
        rest => rest.to_vec(),
    };
    let [pkg, perm] = args[..] else {
        io.err("Error: no package or permission specified\n");
        return 1;
    };
    let refuse = |io: &mut CmdIo, exception: String| {
        let header = if dev.cfg.sdk >= 30 {
            format!("Exception occurred while executing '{verb}':\n")
        } else {
            "Exception occurred while executing:\n".to_owned()
        };
        let frame = if dev.cfg.sdk >= 33 {
            "\tat com.android.server.pm.permission.PermissionManagerServiceImpl.grantRuntimePermissionInternal(PermissionManagerServiceImpl.java:1423)\n"
        } else {
            "\tat com.android.server.pm.permission.PermissionManagerService.grantRuntimePermission(PermissionManagerService.java:1572)\n"
        };
        io.err(&format!("{header}{exception}\n{frame}"));
        255
    };
    if !dev.packages.contains_key(pkg) {
        return refuse(io, format!("java.lang.IllegalArgumentException: Unknown package: {pkg}"));
    }
    if !KNOWN.iter().any(|(p, _)| *p == perm) {
        return refuse(io, format!("java.lang.IllegalArgumentException: Unknown permission: {perm}"));
    }
    if !requested(dev, pkg).contains(&perm) {
        return refuse(io, format!("java.lang.SecurityException: Package {pkg} has not requested permission {perm}"));
    }
    if !runtime(perm) {
        // AOSP BasePermission.enforceDeclaredUsedAndRuntimeOrDevelopment (9+); 8 did not name the package.
        let by = if dev.cfg.sdk >= 28 { format!(" requested by {pkg}") } else { String::new() };
        return refuse(
            io,
            format!("java.lang.SecurityException: Permission {perm}{by} is not a changeable permission type"),
        );
    }
    let key = (pkg.to_owned(), perm.to_owned());
    if verb == "grant" {
        dev.granted.insert(key);
    } else {
        dev.granted.remove(&key);
    }
    0
}

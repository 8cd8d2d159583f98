//! `pm list packages`, `pm path`, `pm install` (from a file or streamed with `-S`), `pm uninstall`, `pm clear`:
//! `package:` lines and the installer's `Success` / `Failure [INSTALL_FAILED_…]` answers as the package manager's
//! shell prints them; `cmd package resolve-activity` / `query-activities` (how tools find an app's launcher
//! activity before `am start -n`, mobile-mcp's among them). `pm grant`/`revoke` are `packages.rs` (their refusals: tests/fixtures/real/pm-grant-*).

use crate::sim::cmdio::CmdIo;
use crate::sim::device::{Device, Package};
use crate::sim::ui::HOME_PACKAGE;

fn min_sdk_marker(data: &[u8]) -> Option<u32> {
    const KEY: &[u8] = b"minSdkVersion=";
    let at = data.windows(KEY.len()).position(|w| w == KEY)? + KEY.len();
    let digits: String = data[at..].iter().take_while(|b| b.is_ascii_digit()).map(|&b| b as char).collect();
    digits.parse().ok()
}

fn is_zip(data: &[u8]) -> bool {
    data.starts_with(b"PK\x03\x04")
}

/// Installs an APK image. The sim cannot parse the manifest, so the package name comes from the
/// file name when it looks like one (`com.example.app.apk`), else a generated one.
fn install_apk(dev: &mut Device, data: &[u8], file_hint: Option<&str>, io: &mut CmdIo) -> i32 {
    if !is_zip(data) {
        io.out("Failure [INSTALL_FAILED_INVALID_APK: Failed to parse APK: not a zip archive]\n");
        return 1;
    }
    // Real manifests are binary XML; the sim reads a plain-text `minSdkVersion=N` marker instead, so tests can
    // provoke the installer's own refusal (`INSTALL_FAILED_OLDER_SDK`).
    if let Some(min_sdk) = min_sdk_marker(data).filter(|&n| n > dev.cfg.sdk) {
        io.out(&format!(
            "Failure [INSTALL_FAILED_OLDER_SDK: Failed parse during installPackageLI: /data/app/vmdl{}.tmp/base.apk \
             (at Binary XML file line #7): Requires newer sdk version #{min_sdk} (current version is #{})]\n",
            dev.installs + 1,
            dev.cfg.sdk
        ));
        return 1;
    }
    dev.installs += 1;
    let stem = file_hint.and_then(|f| f.rsplit('/').next()).map(|f| f.trim_end_matches(".apk").to_string());
    let pkg = match stem {
        Some(s) if s.contains('.') && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '_') => s,
        _ => format!("com.sim.installed.app{}", dev.installs),
    };
    dev.packages.insert(
        pkg.clone(),
        Package {
            system: false,
            path: format!("/data/app/~~sim{}/{pkg}-1/base.apk", dev.installs),
            launcher_activity: format!("{pkg}.MainActivity"),
        },
    );
    dev.log('I', "PackageManager", &format!("Package {pkg} installed"));
    io.out("Success\n");
    0
}

pub(super) fn pm(dev: &mut Device, args: &[&str], stdin: &[u8], io: &mut CmdIo) -> i32 {
    let sub = args.first().copied().unwrap_or("");
    let rest = &args[1.min(args.len())..];
    match sub {
        "list" if rest.first() == Some(&"packages") => {
            let opts: String = rest[1..].iter().filter(|a| a.starts_with('-')).map(|a| &a[1..]).collect();
            let filter = rest[1..].iter().find(|a| !a.starts_with('-')).copied().unwrap_or("");
            for (name, p) in &dev.packages {
                if (opts.contains('3') && p.system) || (opts.contains('s') && !p.system) || !name.contains(filter) {
                    continue;
                }
                if opts.contains('f') {
                    io.out(&format!("package:{}={name}\n", p.path));
                } else {
                    io.out(&format!("package:{name}\n"));
                }
            }
            0
        }
        "path" => match rest.first().and_then(|p| dev.packages.get(*p)) {
            Some(p) => {
                io.out(&format!("package:{}\n", p.path));
                0
            }
            None => 1,
        },
        "install" => {
            let mut size: Option<usize> = None;
            let mut path = None;
            let mut i = 0;
            while i < rest.len() {
                match rest[i] {
                    "-S" => {
                        size = rest.get(i + 1).and_then(|s| s.parse().ok());
                        i += 1;
                    }
                    "-i" | "--user" | "--install-reason" | "-p" | "--abi" => i += 1,
                    a if a.starts_with('-') => {}
                    a => path = Some(a.to_string()),
                }
                i += 1;
            }
            if let Some(n) = size {
                let data = &stdin[..n.min(stdin.len())];
                return install_apk(dev, data, None, io);
            }
            let Some(path) = path else {
                io.err("Error: no package specified\n");
                return 1;
            };
            let data = match dev.fs.read(&path) {
                Ok(d) => d.to_vec(),
                Err(_) => {
                    io.err(&format!("Error: Can't open file: {path}\nException occurred while executing 'install':\njava.lang.IllegalArgumentException: Error: Can't open file: {path}\n"));
                    return 1;
                }
            };
            install_apk(dev, &data, Some(&path), io)
        }
        "uninstall" => {
            let Some(pkg) = rest.iter().find(|a| !a.starts_with('-')) else {
                io.err("Error: package name not specified\n");
                return 1;
            };
            match dev.packages.get(*pkg) {
                Some(p) if !p.system => {
                    dev.packages.remove(*pkg);
                    dev.ui.force_stop(pkg);
                    io.out("Success\n");
                    0
                }
                _ => {
                    io.out("Failure [DELETE_FAILED_INTERNAL_ERROR]\n");
                    1
                }
            }
        }
        "clear" => {
            let pkg = rest.iter().find(|a| !a.starts_with('-')).copied().unwrap_or("");
            if dev.packages.contains_key(pkg) {
                dev.ui.force_stop(pkg);
                if pkg == HOME_PACKAGE {
                    dev.ui.counter = 0;
                    dev.ui.text.clear();
                }
                io.out("Success\n");
                0
            } else {
                io.out("Failed\n");
                1
            }
        }
        "grant" | "revoke" => crate::sim::packages::grant(dev, sub, rest, io),
        "resolve-activity" | "query-activities" => resolve(dev, sub == "query-activities", rest, io),
        "disable-user" | "enable" | "disable" => 0,
        _ => {
            io.err(&format!("Unknown command: {sub}\n"));
            1
        }
    }
}

/// `resolve-activity` / `query-activities` as AOSP's `PackageManagerShellCommand` answers them (`runResolveActivity`,
/// `runQueryIntentActivities`, `printResolveInfo`): the intent from `-a`/`-c`/`-n` and a last argument that is a
/// component (has `/`) or a package; `--brief` prints the match line and `ComponentName.flattenToShortString()`,
/// `--components` the component alone, and no match is `No activity found` / `No activities found`, exit 0. The
/// match line of a launcher resolution is the one real phones print
/// (tests/fixtures/real/cmd-package-resolve-activity-brief-settings.txt). Without either flag a real phone prints
/// `ResolveInfo.dump`, which the sim shortens to its first lines.
fn resolve(dev: &Device, all: bool, args: &[&str], io: &mut CmdIo) -> i32 {
    let (mut brief, mut components) = (false, false);
    let (mut action, mut categories, mut target) = (None, Vec::new(), None);
    let mut i = 0;
    while i < args.len() {
        match args[i] {
            "--brief" => brief = true,
            "--components" => components = true,
            "-a" => action = args.get(i + 1).copied(),
            "-c" => categories.extend(args.get(i + 1).copied()),
            "-n" => target = args.get(i + 1).copied(),
            "--user" | "--query-flags" | "-t" | "-d" | "-f" => {}
            a if a.starts_with('-') => {}
            a => target = Some(a),
        }
        if matches!(args[i], "-a" | "-c" | "-n" | "--user" | "--query-flags" | "-t" | "-d" | "-f") {
            i += 1;
        }
        i += 1;
    }
    // The activity the intent resolves to: an explicit component of an installed package, or a package's (or, for
    // MAIN + HOME alone, the home app's) launcher activity. Other intents find nothing here.
    let found: Option<(String, String)> = match target {
        Some(t) if t.contains('/') => t.split_once('/').and_then(|(pkg, cls)| {
            let cls = if cls.starts_with('.') { format!("{pkg}{cls}") } else { cls.to_owned() };
            dev.packages.contains_key(pkg).then(|| (pkg.to_owned(), cls))
        }),
        Some(pkg) => dev
            .packages
            .get(pkg)
            .filter(|p| !p.launcher_activity.is_empty())
            .map(|p| (pkg.to_owned(), p.launcher_activity.clone())),
        None if action == Some("android.intent.action.MAIN")
            && categories.contains(&"android.intent.category.HOME") =>
        {
            dev.packages.get(HOME_PACKAGE).map(|p| (HOME_PACKAGE.to_owned(), p.launcher_activity.clone()))
        }
        None => None,
    };
    let Some((pkg, cls)) = found else {
        io.out(if all { "No activities found\n" } else { "No activity found\n" });
        return 0;
    };
    // `ComponentName.flattenToShortString()`: the class relative to the package when it lies inside it.
    let short = match cls.strip_prefix(pkg.as_str()) {
        Some(rest) if rest.starts_with('.') => format!("{pkg}/{rest}"),
        _ => format!("{pkg}/{cls}"),
    };
    let prefix = if all && !components { "    " } else { "" };
    if all && !components {
        io.out("1 activities found:\n  Activity #0:\n");
    }
    if components {
        io.out(&format!("{short}\n"));
    } else {
        io.out(&format!("{prefix}priority=0 preferredOrder=0 match=0x108000 specificIndex=-1 isDefault=false\n"));
        if brief {
            io.out(&format!("{prefix}{short}\n"));
        } else {
            io.out(&format!("{prefix}ActivityInfo:\n{prefix}  name={cls}\n{prefix}  packageName={pkg}\n"));
        }
    }
    0
}

//! `am start`, `am force-stop`, `am broadcast` and `monkey -p PKG … 1`: the activity manager's `Starting: Intent
//! { … }` lines, `-W`'s launch report, its errors for unknown components and intents, and the ADB Keyboard IME's
//! broadcasts (`ADB_INPUT_TEXT`, `ADB_INPUT_B64`, `ADB_CLEAR_TEXT`) typed while it is the active input method.

use crate::sim::cmdio::CmdIo;
use crate::sim::device::Device;
use crate::sim::state::InputEvent;
use crate::sim::ui::Activity;

fn start_activity(dev: &mut Device, act: Activity) {
    dev.log('I', "ActivityTaskManager", &format!("START u0 {{cmp={}}} from uid 2000", act.component()));
    dev.ui.launch(act);
}

pub(super) fn am(dev: &mut Device, args: &[&str], io: &mut CmdIo) -> i32 {
    let sub = args.first().copied().unwrap_or("");
    let rest = &args[1.min(args.len())..];
    match sub {
        "start" | "start-activity" => {
            let mut component = None;
            let mut action = None;
            let mut data = None;
            let mut wait = false;
            let mut i = 0;
            while i < rest.len() {
                match rest[i] {
                    "-n" => {
                        component = rest.get(i + 1).map(|s| s.to_string());
                        i += 1;
                    }
                    "-a" => {
                        action = rest.get(i + 1).map(|s| s.to_string());
                        i += 1;
                    }
                    "-d" => {
                        data = rest.get(i + 1).map(|s| s.to_string());
                        i += 1;
                    }
                    "-W" => wait = true,
                    "-c" | "-t" | "--user" | "-f" | "--es" | "--ei" | "--ez" => {
                        i += if rest[i].starts_with("--e") { 2 } else { 1 };
                    }
                    a if !a.starts_with('-') && component.is_none() && a.contains('/') => {
                        component = Some(a.to_string())
                    }
                    _ => {}
                }
                i += 1;
            }
            let act = if let Some(c) = &component {
                let Some((pkg, cls)) = c.split_once('/') else {
                    io.err(&format!("Error: Bad component name: {c}\n"));
                    return 1;
                };
                let cls = if cls.starts_with('.') { format!("{pkg}{cls}") } else { cls.to_string() };
                io.out(&format!(
                    "Starting: Intent {{ cmp={pkg}/{} }}\n",
                    cls.strip_prefix(pkg).filter(|s| s.starts_with('.')).unwrap_or(&cls)
                ));
                if !dev.packages.contains_key(pkg) {
                    io.err(&format!("Error type 3\nError: Activity class {{{pkg}/{cls}}} does not exist.\n"));
                    return 1;
                }
                Activity { package: pkg.into(), activity: cls }
            } else if data.is_some() {
                io.out(&format!(
                    "Starting: Intent {{ act={} dat={} }}\n",
                    action.as_deref().unwrap_or("android.intent.action.VIEW"),
                    data.as_deref().unwrap_or("")
                ));
                let url = data.clone().unwrap_or_default();
                let lower = url.to_ascii_lowercase();
                if lower.starts_with("http://") || lower.starts_with("https://") {
                    // Chrome opens the link (`ui/web.rs`): the page of the sim's site, or Chrome's error page.
                    let act = Activity {
                        package: "com.android.chrome".into(),
                        activity: "com.google.android.apps.chrome.Main".into(),
                    };
                    dev.log(
                        'I',
                        "ActivityTaskManager",
                        &format!(
                            "START u0 {{act=android.intent.action.VIEW dat={url} cmp={}}} from uid 2000",
                            act.component()
                        ),
                    );
                    dev.ui.open_url(&url);
                    if wait {
                        let comp = act.component();
                        io.out(&format!("Status: ok\nLaunchState: WARM\nActivity: {comp}\nTotalTime: 212\nWaitTime: 218\nComplete\n"));
                    }
                    return 0;
                }
                Activity {
                    package: "com.android.chrome".into(),
                    activity: "com.google.android.apps.chrome.Main".into(),
                }
            } else if action.as_deref() == Some("android.intent.action.MAIN") || action.is_none() {
                io.out("Starting: Intent { act=android.intent.action.MAIN cat=[android.intent.category.HOME] }\n");
                Activity::home()
            } else {
                io.err(&format!(
                    "Error: Activity not started, unable to resolve Intent {{ act={} }}\n",
                    action.unwrap_or_default()
                ));
                return 1;
            };
            let comp = act.component();
            start_activity(dev, act);
            if wait {
                io.out(&format!(
                    "Status: ok\nLaunchState: COLD\nActivity: {comp}\nTotalTime: 312\nWaitTime: 318\nComplete\n"
                ));
            }
            0
        }
        "force-stop" | "kill" => {
            if let Some(pkg) = rest.iter().find(|a| !a.starts_with('-')) {
                dev.ui.force_stop(pkg);
                dev.log('I', "ActivityManager", &format!("Force stopping {pkg} appid=10123 user=0: from pid 4242"));
            }
            0
        }
        "broadcast" => {
            io.out("Broadcasting: Intent { flg=0x400000 }\nBroadcast completed: result=0\n");
            adb_keyboard_broadcast(dev, rest);
            0
        }
        _ => {
            io.err(&format!("Error: Unknown command: {sub}\n"));
            1
        }
    }
}

/// The ADB Keyboard IME types what it receives in `ADB_INPUT_TEXT` / `ADB_INPUT_B64` broadcasts, but only while
/// it is the active input method (as on a real phone).
fn adb_keyboard_broadcast(dev: &mut Device, args: &[&str]) {
    let active = dev.settings.get(&("secure".to_string(), "default_input_method".to_string()));
    if active.map(String::as_str) != Some(crate::sim::device::ADB_KEYBOARD) {
        return;
    }
    let action = args.iter().position(|a| *a == "-a").and_then(|i| args.get(i + 1)).copied();
    let msg = args
        .iter()
        .position(|a| *a == "--es")
        .and_then(|i| (args.get(i + 1) == Some(&"msg")).then(|| args.get(i + 2)).flatten());
    if action == Some("ADB_CLEAR_TEXT") {
        // AdbIME: `getCurrentInputConnection().deleteSurroundingText(…)` around the cursor — the whole field.
        dev.ui.clear_focused();
        return;
    }
    let text = match (action, msg) {
        (Some("ADB_INPUT_TEXT"), Some(m)) => Some(m.to_string()),
        (Some("ADB_INPUT_B64"), Some(m)) => crate::base64::decode(m).and_then(|b| String::from_utf8(b).ok()),
        _ => None,
    };
    if let Some(text) = text {
        dev.record_event(InputEvent::Text(text.clone()));
        dev.ui.type_text(&text);
    }
}

pub(super) fn monkey(dev: &mut Device, args: &[&str], io: &mut CmdIo) -> i32 {
    let pkg = args.iter().position(|a| *a == "-p").and_then(|i| args.get(i + 1)).copied();
    let Some(pkg) = pkg else {
        io.err("** Error: no package specified\n");
        return 1;
    };
    let Some(p) = dev.packages.get(pkg).filter(|p| !p.launcher_activity.is_empty()).cloned() else {
        io.err("** No activities found to run, monkey aborted.\n");
        return 252;
    };
    io.out(&format!("  bash arg: -p\n  bash arg: {pkg}\n  bash arg: -c\n  bash arg: android.intent.category.LAUNCHER\n  bash arg: 1\nargs: [-p, {pkg}, -c, android.intent.category.LAUNCHER, 1]\n arg: \"-p\"\n arg: \"{pkg}\"\n data=\"{pkg}\"\n"));
    io.out("Events injected: 1\n## Network stats: elapsed time=12ms (0ms mobile, 0ms wifi, 12ms not connected)\n");
    start_activity(dev, Activity { package: pkg.into(), activity: p.launcher_activity });
    0
}

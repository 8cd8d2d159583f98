//! Builtin implementations of the Android commands the sim understands, one file per family; this file is the
//! dispatch (command name → family) and `cmd SERVICE …`, which reaches a family through it.
//!
//! Output strings copy the real tools' wording (including quirks such as uiautomator's
//! "hierchary" typo) because connectors parse them; exit statuses follow toybox/mksh. Where a family imitates
//! what real phones print, its file says which samples of tests/fixtures/real/ it follows.

mod am;
mod builtins;
mod capture;
mod dumpsys;
mod files;
mod gzip;
mod ime;
mod input;
mod logcat;
mod pm;
mod procs;
mod props;
mod record;
mod settings;
mod text;
mod uiautomator;
mod uimode;
mod wm;

#[cfg(test)]
mod tests;

use super::cmdio::{CmdIo, ExecResult};
use super::device::Device;
use super::shell::run_script;

pub use builtins::NPROC_SINCE_SDK;
pub use gzip::GZIP_SINCE_SDK;
pub(crate) use input::{key, keycode_name, swipe, tap, type_text};

/// Runs a command line on the phone: the shell's grammar (`shell.rs`) with these commands.
pub fn run_line(dev: &mut Device, src: &str, stdin: &[u8]) -> ExecResult {
    run_script(dev, src, stdin, run)
}

/// Runs one simple command. `argv[0]` may be a full path (`/system/bin/input`). The phone's time for starting
/// and running it ([`super::PhoneCosts::command`]) is added to the line's time.
pub fn run(dev: &mut Device, argv: &[String], stdin: &[u8], io: &mut CmdIo) -> i32 {
    let name = argv[0].rsplit('/').next().unwrap_or("");
    if !dev.cfg.missing_commands.iter().any(|m| m == name) {
        let words: Vec<&str> = argv.iter().map(String::as_str).collect();
        io.sleep += dev.cfg.costs.command(dev.cfg.sdk, &words);
    }
    dispatch(dev, argv, stdin, io)
}

/// [`run`] without the start cost: `cmd SERVICE …` reaches its tool through here (`cmd` was charged once).
fn dispatch(dev: &mut Device, argv: &[String], stdin: &[u8], io: &mut CmdIo) -> i32 {
    let name = argv[0].rsplit('/').next().unwrap_or("").to_string();
    let args: Vec<&str> = argv[1..].iter().map(String::as_str).collect();
    if dev.cfg.missing_commands.contains(&name) {
        io.err(&format!("/system/bin/sh: {}: inaccessible or not found\n", argv[0]));
        return 127;
    }
    match name.as_str() {
        "true" | ":" | "cd" | "export" | "chmod" | "chown" | "sync" => 0,
        "false" => 1,
        "echo" => builtins::echo(&args, io),
        "exit" => builtins::exit(&args, io),
        "sleep" => builtins::sleep(&args, io),
        "id" => builtins::id(io),
        "whoami" => builtins::whoami(io),
        "pwd" => builtins::pwd(io),
        "date" => builtins::date(&args, io),
        "sh" => sh(dev, &args, stdin, io),
        "getprop" => props::getprop(dev, &args, io),
        "setprop" => props::setprop(dev, &args, io),
        "wm" => wm::wm(dev, &args, io),
        "input" => input::input(dev, &args, io),
        "screencap" => capture::screencap(dev, &args, io),
        "screenrecord" => record::screenrecord(dev, &args, io),
        // toybox gzip: in Android's toybox since 8.0 (tests/fixtures/real/toybox-applets-by-android-version.md).
        "gzip" if dev.cfg.sdk >= GZIP_SINCE_SDK => gzip::gzip(dev, &args, stdin, io),
        // toybox nproc: new in Android 10's toybox (AOSP shell_and_utilities/README.md, tests/fixtures/real/).
        "nproc" if dev.cfg.sdk >= NPROC_SINCE_SDK => builtins::nproc(dev, io),
        "dd" => files::dd(dev, &args, stdin, io),
        "stat" => files::stat(dev, &args, io),
        "find" => files::find(dev, &args, io),
        "umask" => builtins::umask(dev, &args, io),
        "uiautomator" => uiautomator::uiautomator(dev, &args, io),
        "cat" => files::cat(dev, &args, stdin, io),
        "df" => files::df(dev, &args, io),
        "rm" => files::rm(dev, &args, io),
        "ps" => procs::ps(dev, io),
        "kill" => procs::kill(dev, &args, io),
        "ls" => files::ls(dev, &args, io),
        "mkdir" => files::mkdir(dev, &args, io),
        "touch" => files::touch(dev, &args, io),
        "cp" | "mv" => files::cp_mv(dev, &name, &args, io),
        "grep" => text::grep(&args, stdin, io),
        "head" | "tail" => text::head_tail(&name, &args, stdin, io),
        "wc" => text::wc(&args, stdin, io),
        "pm" => pm::pm(dev, &args, stdin, io),
        "am" => am::am(dev, &args, io),
        "monkey" => am::monkey(dev, &args, io),
        "dumpsys" => {
            // SMS that arrived are posted before a read, but not between the connector's redacted read and the
            // `--noredact` one right after it (one record set for both).
            if !args.contains(&"--noredact") {
                dev.deliver_sms();
            }
            dumpsys::dumpsys(dev, &args, io)
        }
        "logcat" => logcat::logcat(dev, &args, io),
        "settings" => settings::settings(dev, &args, io),
        "ime" => ime::ime(dev, &args, io),
        "svc" => 0,
        "cmd" => {
            let Some(service) = args.first() else {
                io.err("cmd: No service specified; use -l to list all running services.\n");
                return 255;
            };
            let tool = match *service {
                "package" => "pm",
                "activity" => "am",
                "window" => "wm",
                "input" => "input",
                "settings" => "settings",
                "input_method" => "ime",
                "uimode" => return uimode::uimode(dev, &args[1..], io),
                // The shade (`ui/world.rs`): `cmd statusbar expand-notifications` / `collapse`, silent as real.
                "statusbar" => {
                    match args.get(1).copied() {
                        Some("expand-notifications" | "expand-settings") => dev.ui.shade_open = dev.ui.screen_on,
                        Some("collapse") => dev.ui.shade_open = false,
                        _ => {}
                    }
                    return 0;
                }
                "battery" | "power" => "svc",
                other => {
                    io.err(&format!("cmd: Can't find service: {other}\n"));
                    return 20;
                }
            };
            let mut v = vec![tool.to_string()];
            v.extend(args[1..].iter().map(|s| s.to_string()));
            dispatch(dev, &v, stdin, io)
        }
        _ => {
            io.err(&format!("/system/bin/sh: {}: inaccessible or not found\n", argv[0]));
            127
        }
    }
}

/// `sh -c SCRIPT`: the script runs through the same shell and commands, its output and time the command's.
fn sh(dev: &mut Device, args: &[&str], stdin: &[u8], io: &mut CmdIo) -> i32 {
    if args.first() == Some(&"-c") {
        let script = args.get(1).copied().unwrap_or("");
        let r = run_line(dev, script, stdin);
        io.out.extend_from_slice(&r.stdout);
        io.err.extend_from_slice(&r.stderr);
        io.sleep += r.sleep;
        io.follow |= r.follow;
        r.status
    } else {
        0
    }
}

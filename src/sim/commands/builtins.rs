//! The shell's own builtins and the toybox tools that print where and who the shell is: `echo`, `exit`,
//! `sleep`, `umask` (mksh builtins: `echo -n`/`-e`, `exit N` masked to 8 bits, `umask` as four octal digits and
//! mksh's "bad number"), `id`, `whoami`, `pwd`, `date`, `nproc`. What they print is the shell user's on every
//! phone (uid 2000 and its groups, `/` as adbd starts it); `date` prints the phone's clock as logcat's `time`
//! format does; which release has `nproc` is recorded in
//! tests/fixtures/real/toybox-applets-10-bsd-dd-8.0-9.0-aosp-shell-and-utilities.txt.

use std::time::Duration;

use crate::sim::cmdio::CmdIo;
use crate::sim::device::{format_log, now_unix_ms, now_unix_secs, Device, LogLine};

pub(super) fn echo(args: &[&str], io: &mut CmdIo) -> i32 {
    let mut newline = true;
    let mut rest = args;
    while let Some(first) = rest.first() {
        match *first {
            "-n" => newline = false,
            "-e" | "-E" => {}
            _ => break,
        }
        rest = &rest[1..];
    }
    io.out(&rest.join(" "));
    if newline {
        io.out("\n");
    }
    0
}

/// mksh `exit [N]`: ends the command line with N's low eight bits.
pub(super) fn exit(args: &[&str], io: &mut CmdIo) -> i32 {
    let code = args.first().and_then(|a| a.parse::<i32>().ok()).unwrap_or(0);
    io.exit = Some(code & 0xff);
    code & 0xff
}

/// `sleep SECONDS` (fractions and an `s` suffix allowed): adds to the command line's modelled time.
pub(super) fn sleep(args: &[&str], io: &mut CmdIo) -> i32 {
    let secs: f64 = args.first().and_then(|a| a.trim_end_matches('s').parse().ok()).unwrap_or(-1.0);
    if !(0.0..=1e6).contains(&secs) {
        io.err("sleep: bad argument\n");
        return 1;
    }
    io.sleep += Duration::from_secs_f64(secs);
    0
}

pub(super) fn id(io: &mut CmdIo) -> i32 {
    io.out("uid=2000(shell) gid=2000(shell) groups=2000(shell),1004(input),1007(log),1011(adb),1015(sdcard_rw),1028(sdcard_r),3001(net_bt_admin),3002(net_bt),3003(inet),3006(net_bw_stats),3009(readproc),3011(uhid) context=u:r:shell:s0\n");
    0
}

pub(super) fn whoami(io: &mut CmdIo) -> i32 {
    io.out("shell\n");
    0
}

pub(super) fn pwd(io: &mut CmdIo) -> i32 {
    io.out("/\n");
    0
}

/// `date [+%s]`: seconds since the epoch, or the phone's clock as logcat's `time` format prints it.
pub(super) fn date(args: &[&str], io: &mut CmdIo) -> i32 {
    if args.first() == Some(&"+%s") {
        io.out(&format!("{}\n", now_unix_secs()));
    } else {
        io.out(&format!(
            "{}\n",
            format_log(
                &LogLine { unix_ms: now_unix_ms(), pid: 0, tid: 0, prio: 'I', tag: String::new(), msg: String::new() },
                "time"
            )
            .split(' ')
            .take(2)
            .collect::<Vec<_>>()
            .join(" ")
        ));
    }
    0
}

/// mksh `umask [MODE]`: prints the shell's file-creation mask as four octal digits, or sets it.
pub(super) fn umask(dev: &mut Device, args: &[&str], io: &mut CmdIo) -> i32 {
    match args.first() {
        None => {
            io.out(&format!("{:04o}\n", dev.umask));
            0
        }
        Some(m) => match u32::from_str_radix(m, 8) {
            Ok(v) if v <= 0o777 => {
                dev.umask = v;
                0
            }
            _ => {
                io.err(&format!("/system/bin/sh: umask: {m}: bad number\n"));
                1
            }
        },
    }
}

/// First SDK whose toybox has `nproc` (Android 10, toybox 0.8.0; AOSP `shell_and_utilities/README.md`).
pub const NPROC_SINCE_SDK: u32 = 29;

/// toybox `nproc`: the CPUs the phone's kernel offers a shell process.
pub(super) fn nproc(dev: &Device, io: &mut CmdIo) -> i32 {
    io.out(&format!("{}\n", dev.cfg.cpus.max(1)));
    0
}

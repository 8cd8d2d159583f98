//! The file tools of toybox (and toolbox/BSD before it): `cat`, `ls`, `rm`, `mkdir`, `touch`, `cp`/`mv`, `stat -c`,
//! `find`, `dd`, `df`, on the simulated file system (`sim/fs.rs`), with toybox's error lines. `dd`'s summary is
//! NetBSD's before Android 10 and toybox's from 10, and `df` toolbox's before 6.0 and toybox's from 6.0, as
//! recorded in tests/fixtures/real/toybox-applets-*.txt and df-*.txt. `cat` also reads the kernel's files the
//! simulator makes up as it goes: `/proc/uptime` and `/proc/net/unix` (the DevTools socket, `sim/devtools.rs`).

use crate::sim::cmdio::CmdIo;
use crate::sim::device::{now_unix_secs, Device};

/// First SDK whose `dd` is toybox's (Android 10); before, AOSP shipped NetBSD's `dd` (same operands, its own
/// summary line).
const TOYBOX_DD_SINCE_SDK: u32 = 29;

/// A `dd` size operand: decimal with the suffixes both toybox and BSD dd take (`k` = 1024, `m`, `g`; `b` = 512).
fn dd_number(v: &str) -> Option<u64> {
    let (digits, mult) = match v.char_indices().last()? {
        (i, 'k' | 'K') => (&v[..i], 1u64 << 10),
        (i, 'm' | 'M') => (&v[..i], 1 << 20),
        (i, 'g' | 'G') => (&v[..i], 1 << 30),
        (i, 'b') => (&v[..i], 512),
        _ => (v, 1),
    };
    digits.parse::<u64>().ok()?.checked_mul(mult)
}

/// `dd [if=F] [of=F] [bs=N] [ibs=N] [obs=N] [skip=N] [count=N] [status=…]`: copies `count` input blocks of `bs`
/// bytes starting `skip` blocks in (a regular file: every read is a full block but the last). Reads the simulated
/// file system; the page cache makes that free on a phone too (the file was just written), so no cost is paid. The
/// summary goes to stderr as toybox (Android 10+) or NetBSD dd (before) prints it.
pub(super) fn dd(dev: &mut Device, args: &[&str], stdin: &[u8], io: &mut CmdIo) -> i32 {
    let (mut input, mut output, mut bs, mut skip, mut count, mut quiet) = (None, None, 512u64, 0u64, None, false);
    for a in args {
        let Some((k, v)) = a.split_once('=') else {
            io.err(&format!("dd: unknown operand {a}\n"));
            return 1;
        };
        let num = || dd_number(v);
        match k {
            "if" => input = Some(v.to_string()),
            "of" => output = Some(v.to_string()),
            "status" => quiet = v == "none",
            "bs" | "ibs" | "obs" | "skip" | "count" => {
                let Some(n) = num() else {
                    io.err(&format!("dd: {k}: invalid number '{v}'\n"));
                    return 1;
                };
                match k {
                    "skip" => skip = n,
                    "count" => count = Some(n),
                    _ if n == 0 => {
                        io.err(&format!("dd: {k}: invalid number '{v}'\n"));
                        return 1;
                    }
                    "obs" => {}
                    _ => bs = n,
                }
            }
            _ => {
                io.err(&format!("dd: unknown operand {k}\n"));
                return 1;
            }
        }
    }
    let data: &[u8] = match &input {
        None => stdin,
        Some(f) => match dev.fs.read(f) {
            Ok(d) => d,
            Err(e) => {
                io.err(&format!("dd: {f}: {}\n", e.message()));
                return 1;
            }
        },
    };
    let start = skip.saturating_mul(bs).min(data.len() as u64) as usize;
    let mut end = data.len();
    if let Some(c) = count {
        end = end.min(start.saturating_add(c.saturating_mul(bs).min(usize::MAX as u64) as usize));
    }
    let chunk = data[start..end].to_vec();
    let bs = bs as usize;
    let (full, partial) = (chunk.len() / bs, usize::from(chunk.len() % bs != 0));
    let bytes = chunk.len();
    match output {
        Some(f) => {
            if let Err(e) = dev.fs.write(&f, chunk, 0o666 & !dev.umask, now_unix_secs(), false) {
                io.err(&format!("dd: {f}: {}\n", e.message()));
                return 1;
            }
        }
        None => io.out.extend_from_slice(&chunk),
    }
    if !quiet {
        io.err(&format!("{full}+{partial} records in\n{full}+{partial} records out\n"));
        if dev.cfg.sdk >= TOYBOX_DD_SINCE_SDK {
            io.err(&format!(
                "{bytes} bytes ({:.1} M) copied, 0.010 s, {:.0} M/s\n",
                bytes as f64 / 1048576.0,
                bytes as f64 / 10485.76
            ));
        } else {
            io.err(&format!("{bytes} bytes transferred in 0.010 secs ({} bytes/sec)\n", bytes * 100));
        }
    }
    0
}

/// A `find -name` pattern: `*` and `?` (what the connector's sweep uses; no character classes).
fn glob_match(pat: &[u8], s: &[u8]) -> bool {
    match pat.split_first() {
        None => s.is_empty(),
        Some((b'*', rest)) => (0..=s.len()).any(|i| glob_match(rest, &s[i..])),
        Some((b'?', rest)) => !s.is_empty() && glob_match(rest, &s[1..]),
        Some((c, rest)) => s.first() == Some(c) && glob_match(rest, &s[1..]),
    }
}

/// toybox `find DIR [-maxdepth N] [-name PATTERN] [-type f|d] [-mmin ±N] [-delete|-print]`, the primaries the
/// connector's sweep of stale captures uses (any other is refused on stderr, as toybox refuses unknown ones). One
/// level below DIR is all the simulated file system needs (`-maxdepth 1`); without `-delete` matches are printed.
pub(super) fn find(dev: &mut Device, args: &[&str], io: &mut CmdIo) -> i32 {
    let Some((dir, rest)) = args.split_first() else {
        io.err("find: Needs 1 argument\n");
        return 1;
    };
    let (mut name, mut kind, mut mmin, mut delete) = (None, None, None::<(char, u64)>, false);
    let mut it = rest.iter();
    while let Some(a) = it.next() {
        match *a {
            "-maxdepth" | "-name" | "-type" | "-mmin" => {
                let Some(v) = it.next() else {
                    io.err(&format!("find: '{a}' needs 1 arg\n"));
                    return 1;
                };
                match *a {
                    "-name" => name = Some(v.to_string()),
                    "-type" => kind = v.chars().next(),
                    "-mmin" => {
                        let (sign, n) = match v.chars().next() {
                            Some(c @ ('+' | '-')) => (c, &v[1..]),
                            _ => ('=', *v),
                        };
                        let Ok(n) = n.parse::<u64>() else {
                            io.err(&format!("find: not a number '{v}'\n"));
                            return 1;
                        };
                        mmin = Some((sign, n));
                    }
                    _ => {}
                }
            }
            "-delete" => delete = true,
            "-print" => {}
            other => {
                io.err(&format!("find: Unknown option '{other}'\n"));
                return 1;
            }
        }
    }
    let entries = match dev.fs.list(dir) {
        Ok(e) => e,
        Err(e) => {
            io.err(&format!("find: '{dir}': {}\n", e.message()));
            return 1;
        }
    };
    let now = u64::from(now_unix_secs());
    let mut rc = 0;
    for (child, st) in entries {
        let is_dir = st.mode & 0o170000 == 0o040000;
        if kind.is_some_and(|k| (k == 'd') != is_dir)
            || name.as_ref().is_some_and(|n| !glob_match(n.as_bytes(), child.as_bytes()))
        {
            continue;
        }
        if let Some((sign, n)) = mmin {
            // Minutes of age, rounded up as find counts them.
            let age = now.saturating_sub(u64::from(st.mtime)).div_ceil(60);
            let hit = match sign {
                '+' => age > n,
                '-' => age < n,
                _ => age == n,
            };
            if !hit {
                continue;
            }
        }
        let path = format!("{}/{child}", dir.trim_end_matches('/'));
        if delete {
            if let Err(e) = dev.fs.remove(&path, false) {
                io.err(&format!("find: '{path}': {}\n", e.message()));
                rc = 1;
            }
        } else {
            io.out(&format!("{path}\n"));
        }
    }
    rc
}

/// toybox `stat [-c FORMAT] FILE…`: `%s` size, `%a` octal permissions, `%n` name, `%Y` mtime; without `-c`
/// only the size line matters to anyone here, so the sim refuses the default format rather than fake it.
pub(super) fn stat(dev: &Device, args: &[&str], io: &mut CmdIo) -> i32 {
    let (fmt, files) = match args {
        ["-c", fmt, files @ ..] => (*fmt, files),
        _ => {
            io.err("stat: the simulator knows only `stat -c FORMAT FILE…`\n");
            return 1;
        }
    };
    if files.is_empty() {
        io.err("stat: Needs 1 argument (see \"stat --help\")\n");
        return 1;
    }
    let mut rc = 0;
    for f in files {
        match dev.fs.stat(f) {
            Ok(st) => {
                let mut line = String::new();
                let mut chars = fmt.chars();
                while let Some(c) = chars.next() {
                    if c != '%' {
                        line.push(c);
                        continue;
                    }
                    match chars.next() {
                        Some('s') => line.push_str(&st.size.to_string()),
                        Some('a') => line.push_str(&format!("{:o}", st.mode & 0o7777)),
                        Some('n') => line.push_str(f),
                        Some('Y') => line.push_str(&st.mtime.to_string()),
                        Some(o) => {
                            line.push('%');
                            line.push(o);
                        }
                        None => line.push('%'),
                    }
                }
                io.out(&format!("{line}\n"));
            }
            Err(e) => {
                io.err(&format!("stat: '{f}': {}\n", e.message()));
                rc = 1;
            }
        }
    }
    rc
}

pub(super) fn cat(dev: &Device, args: &[&str], stdin: &[u8], io: &mut CmdIo) -> i32 {
    let files: Vec<&&str> = args.iter().filter(|a| !a.starts_with('-') || **a == "-").collect();
    if files.is_empty() {
        io.out.extend_from_slice(stdin);
        return 0;
    }
    let mut rc = 0;
    for f in files {
        if *f == "-" {
            io.out.extend_from_slice(stdin);
            continue;
        }
        if *f == "/proc/net/unix" {
            io.out(&crate::sim::devtools::proc_net_unix(dev));
            continue;
        }
        if *f == "/proc/uptime" {
            // Linux fs/proc/uptime.c: seconds since boot and idle seconds of all CPUs, two decimals each.
            let up = dev.booted.elapsed();
            let idle = up * 3;
            io.out(&format!(
                "{}.{:02} {}.{:02}\n",
                up.as_secs(),
                up.subsec_millis() / 10,
                idle.as_secs(),
                idle.subsec_millis() / 10
            ));
            continue;
        }
        match dev.fs.read(f) {
            Ok(d) => io.out.extend_from_slice(d),
            Err(e) => {
                io.err(&format!("cat: {f}: {}\n", e.message()));
                rc = 1;
            }
        }
    }
    rc
}

pub(super) fn rm(dev: &mut Device, args: &[&str], io: &mut CmdIo) -> i32 {
    let flags: String = args.iter().filter(|a| a.starts_with('-') && a.len() > 1).map(|a| &a[1..]).collect();
    let force = flags.contains('f');
    let recursive = flags.contains('r') || flags.contains('R');
    let files: Vec<&&str> = args.iter().filter(|a| !a.starts_with('-')).collect();
    if files.is_empty() && !force {
        io.err("rm: Need 1 argument\n");
        return 1;
    }
    let mut rc = 0;
    for f in files {
        if let Err(e) = dev.fs.remove(f, recursive) {
            if !(force && e == crate::sim::fs::FsError::NotFound) {
                io.err(&format!("rm: {f}: {}\n", e.message()));
                rc = 1;
            }
        }
    }
    rc
}

pub(super) fn ls(dev: &Device, args: &[&str], io: &mut CmdIo) -> i32 {
    let flags: String = args.iter().filter(|a| a.starts_with('-')).map(|a| &a[1..]).collect();
    let long = flags.contains('l');
    let mut paths: Vec<&str> = args.iter().filter(|a| !a.starts_with('-')).copied().collect();
    if paths.is_empty() {
        paths.push("/");
    }
    let mut rc = 0;
    for p in paths {
        let entries = match dev.fs.stat(p) {
            Ok(st) if !st.is_dir() => vec![(p.to_string(), st)],
            Ok(_) => dev.fs.list(p).unwrap_or_default(),
            Err(e) => {
                io.err(&format!("ls: {p}: {}\n", e.message()));
                rc = 1;
                continue;
            }
        };
        for (name, st) in entries {
            if long {
                let kind = if st.is_dir() { 'd' } else { '-' };
                io.out(&format!("{kind}rw-rw---- 1 shell shell {:>8} 2024-01-01 00:00 {name}\n", st.size));
            } else {
                io.out(&format!("{name}\n"));
            }
        }
    }
    rc
}

/// `df [PATH]` for the /data file system, in the format of the phone's SDK level: toybox from Android 6 (API 23:
/// `1K-blocks … Mounted on`, mount point last — tests/fixtures/real/df-11-oneplus8pro-toybox.txt), toolbox before
/// (mount point first, `Size Used Free Blksize` in whole K/M/G — df-4.x-toolbox-aafm-30.txt).
pub(super) fn df(dev: &Device, args: &[&str], io: &mut CmdIo) -> i32 {
    let paths: Vec<&&str> = args.iter().filter(|a| !a.starts_with('-')).collect();
    if let Some(p) = paths.iter().find(|p| ***p != "/data" && !p.starts_with("/data/")) {
        io.err(&format!("df: {p}: No such file or directory\n"));
        return 1;
    }
    let (free, total) = (dev.data_free_kib, dev.data_total_kib);
    let used = total.saturating_sub(free);
    if dev.cfg.sdk >= 23 {
        let pct = (used * 100).checked_div(total).unwrap_or(0);
        io.out(&format!(
            "Filesystem        1K-blocks     Used Available Use% Mounted on\n/dev/block/dm-15 {total:>10} {used:>8} {free:>9} {pct:>3}% /data\n"
        ));
    } else {
        let human = |kib: u64| match kib {
            k if k >= 1 << 20 => format!("{}G", k >> 20),
            k if k >= 1 << 10 => format!("{}M", k >> 10),
            k => format!("{k}K"),
        };
        io.out(&format!(
            "Filesystem             Size   Used   Free   Blksize\n/data {:>21} {:>6} {:>6}   4096\n",
            human(total),
            human(used),
            human(free)
        ));
    }
    0
}

/// `mkdir [-p] DIR…`.
pub(super) fn mkdir(dev: &mut Device, args: &[&str], io: &mut CmdIo) -> i32 {
    let parents = args.contains(&"-p");
    let mut rc = 0;
    for p in args.iter().filter(|a| !a.starts_with('-')) {
        if let Err(e) = dev.fs.mkdir(p, parents) {
            if !(parents && e == crate::sim::fs::FsError::NotDir) {
                io.err(&format!("mkdir: '{p}': {}\n", e.message()));
                rc = 1;
            }
        }
    }
    rc
}

/// `touch FILE…`: creates the missing ones, empty.
pub(super) fn touch(dev: &mut Device, args: &[&str], io: &mut CmdIo) -> i32 {
    let mut rc = 0;
    for p in args.iter().filter(|a| !a.starts_with('-')) {
        if dev.fs.stat(p).is_err() {
            if let Err(e) = dev.fs.write(p, Vec::new(), 0o660, now_unix_secs(), false) {
                io.err(&format!("touch: '{p}': {}\n", e.message()));
                rc = 1;
            }
        }
    }
    rc
}

/// `cp SRC DST` / `mv SRC DST` (`name` says which), DST a file or a directory.
pub(super) fn cp_mv(dev: &mut Device, name: &str, args: &[&str], io: &mut CmdIo) -> i32 {
    let files: Vec<&&str> = args.iter().filter(|a| !a.starts_with('-')).collect();
    if files.len() != 2 {
        io.err(&format!("{name}: Need 2 arguments\n"));
        return 1;
    }
    let data = match dev.fs.read(files[0]) {
        Ok(d) => d.to_vec(),
        Err(e) => {
            io.err(&format!("{name}: {}: {}\n", files[0], e.message()));
            return 1;
        }
    };
    let mut dst = files[1].to_string();
    if dev.fs.stat(&dst).map(|s| s.is_dir()).unwrap_or(false) {
        dst = format!("{dst}/{}", files[0].rsplit('/').next().unwrap_or(""));
    }
    if let Err(e) = dev.fs.write(&dst, data, 0o660, now_unix_secs(), false) {
        io.err(&format!("{name}: {dst}: {}\n", e.message()));
        return 1;
    }
    if name == "mv" {
        let _ = dev.fs.remove(files[0], false);
    }
    0
}

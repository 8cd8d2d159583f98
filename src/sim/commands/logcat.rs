//! `logcat [-d] [-c] [-t N] [-v FORMAT] [TAG:PRIO …]`: the phone's log buffer in logcat's formats (`threadtime`,
//! the default since Android 7, `brief`, `time`, `tag`, `raw`), filtered by tag and priority; without `-d` it
//! follows (the stream stays open), as on a phone.

use crate::sim::cmdio::CmdIo;
use crate::sim::device::{format_log, Device};

fn prio_rank(p: char) -> u8 {
    match p.to_ascii_uppercase() {
        'V' | '*' => 0,
        'D' => 1,
        'I' => 2,
        'W' => 3,
        'E' => 4,
        'F' => 5,
        'S' => 6,
        _ => 0,
    }
}

pub(super) fn logcat(dev: &mut Device, args: &[&str], io: &mut CmdIo) -> i32 {
    let mut dump = false;
    let mut count: Option<usize> = None;
    let mut format = "threadtime".to_string();
    let mut specs: Vec<(String, u8)> = Vec::new();
    let mut silent_default = false;
    let mut i = 0;
    while i < args.len() {
        let a = args[i];
        match a {
            "-d" => dump = true,
            "-c" => {
                dev.logcat.clear();
                return 0;
            }
            "-t" | "-T" | "-m" => {
                count = args.get(i + 1).and_then(|s| s.parse().ok());
                dump |= a == "-t" || a == "-m";
                i += 1;
            }
            "-v" => {
                if let Some(f) = args.get(i + 1) {
                    if ["brief", "time", "tag", "raw", "threadtime"].contains(f) {
                        format = f.to_string();
                    }
                }
                i += 1;
            }
            "-b" | "-e" | "--pid" | "-f" => i += 1,
            "-s" => silent_default = true,
            _ if a.starts_with('-') => {}
            spec => {
                let (tag, pri) = spec.rsplit_once(':').unwrap_or((spec, "V"));
                specs.push((tag.to_string(), prio_rank(pri.chars().next().unwrap_or('V'))));
            }
        }
        i += 1;
    }
    let default_min =
        specs.iter().find(|(t, _)| t == "*").map(|(_, p)| *p).unwrap_or(if silent_default { 6 } else { 0 });
    let lines: Vec<String> = dev
        .logcat
        .iter()
        .filter(|l| {
            let min = specs.iter().find(|(t, _)| *t == l.tag).map(|(_, p)| *p).unwrap_or(default_min);
            prio_rank(l.prio) >= min && min < 6
        })
        .map(|l| format_log(l, &format))
        .collect();
    let start = count.map(|n| lines.len().saturating_sub(n)).unwrap_or(0);
    if format == "threadtime" || format == "brief" || format == "time" {
        io.out("--------- beginning of main\n");
    }
    for l in &lines[start..] {
        io.out(l);
        io.out("\n");
    }
    io.follow = !dump;
    0
}

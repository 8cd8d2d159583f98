//! The text filters of toybox a host pipes phone output into: `grep`, `head`, `tail`, `wc`.

use crate::sim::cmdio::CmdIo;

pub(super) fn grep(args: &[&str], stdin: &[u8], io: &mut CmdIo) -> i32 {
    let mut invert = false;
    let mut icase = false;
    let mut count = false;
    let mut pattern: Option<String> = None;
    let mut i = 0;
    while i < args.len() {
        let a = args[i];
        if a == "-e" {
            pattern = args.get(i + 1).map(|s| s.to_string());
            i += 1;
        } else if a.starts_with('-') && a.len() > 1 && pattern.is_none() {
            invert |= a.contains('v');
            icase |= a.contains('i');
            count |= a.contains('c');
        } else if pattern.is_none() {
            pattern = Some(a.to_string());
        }
        i += 1;
    }
    let Some(pattern) = pattern else {
        io.err("usage: grep [-civ] PATTERN\n");
        return 2;
    };
    // Plain substring match; `a|b` and `a\|b` alternations are honoured since clients commonly
    // use `grep -E 'mCurrentFocus|mFocusedApp'`.
    let alts: Vec<String> =
        pattern.replace("\\|", "|").split('|').map(|s| if icase { s.to_lowercase() } else { s.to_string() }).collect();
    let text = String::from_utf8_lossy(stdin);
    let mut n = 0;
    for line in text.lines() {
        let hay = if icase { line.to_lowercase() } else { line.to_string() };
        let hit = alts.iter().any(|a| hay.contains(a.as_str()));
        if hit != invert {
            n += 1;
            if !count {
                io.out(&format!("{line}\n"));
            }
        }
    }
    if count {
        io.out(&format!("{n}\n"));
    }
    if n > 0 {
        0
    } else {
        1
    }
}

pub(super) fn head_tail(name: &str, args: &[&str], stdin: &[u8], io: &mut CmdIo) -> i32 {
    let mut n = 10usize;
    let mut i = 0;
    while i < args.len() {
        if args[i] == "-n" {
            n = args.get(i + 1).and_then(|s| s.parse().ok()).unwrap_or(10);
            i += 1;
        } else if let Some(num) = args[i].strip_prefix('-') {
            n = num.parse().unwrap_or(10);
        }
        i += 1;
    }
    let text = String::from_utf8_lossy(stdin);
    let lines: Vec<&str> = text.lines().collect();
    let sel = if name == "head" { &lines[..n.min(lines.len())] } else { &lines[lines.len().saturating_sub(n)..] };
    for l in sel {
        io.out(&format!("{l}\n"));
    }
    0
}

/// `wc [-l|-c]` on stdin.
pub(super) fn wc(args: &[&str], stdin: &[u8], io: &mut CmdIo) -> i32 {
    let text = String::from_utf8_lossy(stdin);
    if args.contains(&"-l") {
        io.out(&format!("{}\n", text.matches('\n').count()));
    } else if args.contains(&"-c") {
        io.out(&format!("{}\n", stdin.len()));
    } else {
        io.out(&format!("{} {} {}\n", text.matches('\n').count(), text.split_whitespace().count(), stdin.len()));
    }
    0
}

//! `uiautomator dump [FILE]`: the UI tree as XML (`sim/ui.rs`), then `UI hierchary dumped to: FILE` — the real
//! tool's typo, which parsers match (tests/fixtures/real/ui-huawei-wechat-dumped-to-first-appium-14726.txt) —, its
//! wait for an idle UI, and `ERROR: could not get idle state.` when there is none
//! (state-uiautomator-never-idle-appagent-39.txt).

use crate::sim::cmdio::CmdIo;
use crate::sim::device::{now_unix_secs, Device};

pub(super) fn uiautomator(dev: &mut Device, args: &[&str], io: &mut CmdIo) -> i32 {
    if args.first() != Some(&"dump") {
        io.err("Usage: uiautomator <subcommand> [options]\n\nAvailable subcommands:\n\nhelp: displays help message\n\nruntest: executes UI automation tests\n\ndump: creates an XML dump of current UI hierarchy\n\nevents: prints out accessibility events until terminated\n");
        return 1;
    }
    let path = args[1..]
        .iter()
        .find(|a| !a.starts_with('-'))
        .map(|s| s.to_string())
        .unwrap_or_else(|| "/sdcard/window_dump.xml".into());
    if dev.ui.never_idle {
        // DumpCommand: waitForIdle(1 s idle within 10 s) times out → this line on stderr, no file, and the
        // command still exits 0.
        io.sleep += dev.idle_timeout;
        io.err("ERROR: could not get idle state.\n");
        return 0;
    }
    // DumpCommand waits for an idle UI first: a running transition delays the dump until it ends.
    if let Some(left) = dev.ui.animation_left() {
        io.sleep += left;
    }
    let xml = dev.ui.dump_xml();
    // Then a second of accessibility quiet (waitForIdle(1000, …)) and the tree serialised node by node.
    let nodes = xml.matches("<node ").count() as u32;
    io.sleep += dev.cfg.costs.dump_idle + dev.cfg.costs.dump_per_node * nodes;
    if path == "/dev/tty" || path == "/dev/stdout" {
        if dev.cfg.dump_to_tty {
            io.out(&xml);
        }
    } else if let Err(e) = dev.fs.write(&path, xml.into_bytes(), 0o660, now_unix_secs(), false) {
        io.err(&format!("ERROR: could not write to {path}: {}\n", e.message()));
        return 1;
    }
    io.out(&format!("UI hierchary dumped to: {path}\n"));
    0
}

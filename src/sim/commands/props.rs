//! `getprop` and `setprop`: `[name]: [value]` lines for the whole list, the bare value for one (as every
//! release prints them; tests/fixtures/real/getprop-14-emulator-multiline-boot-reason-history.txt), and
//! `setprop`'s refusal of a read-only `ro.` property that is already set.

use crate::sim::cmdio::CmdIo;
use crate::sim::device::Device;

pub(super) fn getprop(dev: &Device, args: &[&str], io: &mut CmdIo) -> i32 {
    match args.first() {
        None => {
            for (k, v) in &dev.props {
                io.out(&format!("[{k}]: [{v}]\n"));
            }
        }
        Some(k) => {
            let v = dev.props.get(*k).cloned().or_else(|| args.get(1).map(|s| s.to_string())).unwrap_or_default();
            io.out(&format!("{v}\n"));
        }
    }
    0
}

/// `setprop NAME VALUE`: a read-only (`ro.`) property that is set already stays as it is.
pub(super) fn setprop(dev: &mut Device, args: &[&str], io: &mut CmdIo) -> i32 {
    if args.len() != 2 {
        io.err("usage: setprop NAME VALUE\n");
        return 1;
    }
    if args[0].starts_with("ro.") && dev.props.contains_key(args[0]) {
        io.err(&format!("Failed to set property '{}' to '{}'.\nSee dmesg for error reason.\n", args[0], args[1]));
        return 1;
    }
    dev.props.insert(args[0].into(), args[1].into());
    0
}

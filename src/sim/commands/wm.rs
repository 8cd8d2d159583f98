//! `wm size`, `wm density`, `wm dismiss-keyguard`: `Physical size: WxH` and `Physical density: N` as the window
//! manager's shell prints them (tests/fixtures/real/wm-size-*.txt).

use crate::sim::cmdio::CmdIo;
use crate::sim::device::Device;

pub(super) fn wm(dev: &mut Device, args: &[&str], io: &mut CmdIo) -> i32 {
    match args.first() {
        // Silent and exit 0 whatever the keyguard does, as on a real phone (a secure keyguard shows its bouncer).
        Some(&"dismiss-keyguard") => {
            dev.ui.dismiss_keyguard();
            0
        }
        Some(&"size") => {
            io.out(&format!("Physical size: {}x{}\n", dev.cfg.screen_width, dev.cfg.screen_height));
            0
        }
        Some(&"density") => {
            io.out(&format!("Physical density: {}\n", dev.cfg.density));
            0
        }
        _ => {
            io.err("Error: unknown command\n");
            255
        }
    }
}

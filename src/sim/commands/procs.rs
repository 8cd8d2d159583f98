//! toybox `ps` and `kill` as a host uses them to find and end a stale phone helper: a few system processes and every
//! running helper (`ps -A -o PID,ARGS`), `kill [-9|-KILL|-s SIG] PID…` with toybox's refusals.

use crate::sim::cmdio::CmdIo;
use crate::sim::device::Device;

/// `ps` (toybox; every form the connector uses prints PID and ARGS): a few system processes and each helper.
pub(super) fn ps(dev: &Device, io: &mut CmdIo) -> i32 {
    io.out("  PID ARGS\n");
    for (pid, args) in [
        (1, "/system/bin/init second_stage"),
        (612, "/apex/com.android.adbd/bin/adbd --root_seclabel=u:r:su:s0"),
        (1325, "system_server"),
    ] {
        io.out(&format!("{pid:>5} {args}\n"));
    }
    for p in &dev.processes {
        io.out(&format!("{:>5} {}\n", p.pid, p.args));
    }
    0
}

/// `kill [-9|-KILL|-s SIG] PID…`: ends helper processes (the system ones are not the shell user's to kill).
pub(super) fn kill(dev: &mut Device, args: &[&str], io: &mut CmdIo) -> i32 {
    let mut rc = 0;
    let mut skip = false;
    for a in args {
        if std::mem::take(&mut skip) || a.starts_with('-') {
            skip = *a == "-s";
            continue;
        }
        match a.parse::<u32>().ok().and_then(|pid| dev.processes.iter().position(|p| p.pid == pid)) {
            Some(i) => {
                let p = dev.processes.remove(i);
                p.kill.notify_one();
            }
            None => {
                let what = if a.parse::<u32>().is_ok() { "No such process" } else { "Operation not permitted" };
                io.err(&format!("kill: {a}: {what}\n"));
                rc = 1;
            }
        }
    }
    rc
}

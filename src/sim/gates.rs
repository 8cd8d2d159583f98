//! The fault gates every command-running service passes before it runs (a shell command line, a sync request, the
//! phone helper): the per-command stall ([`stall_point`], `SimPhone::stall`) and the connection-wide `Latency`
//! and `Hang` faults ([`apply_fault`]). Both give way when the host closes the stream, as adbd hangs up a command
//! whose host went away.

use std::sync::Arc;

use super::shared::Shared;
use super::state::Fault;
use super::stream::{StreamIn, StreamOut};

/// The per-command stall fault: holds `what` while a stall pattern matches it. False when the host closed the
/// stream meanwhile (recorded in `hung_up`; the caller ends the command without output).
pub(crate) async fn stall_point(shared: &Arc<Shared>, what: &str, input: &mut StreamIn) -> bool {
    let matches = |shared: &Arc<Shared>| {
        shared.stalls.lock().unwrap_or_else(|e| e.into_inner()).patterns.iter().any(|p| what.starts_with(p.as_str()))
    };
    if !matches(shared) {
        return true;
    }
    let mut release = shared.stall_release.subscribe();
    shared.stalls.lock().unwrap_or_else(|e| e.into_inner()).held.push(what.to_owned());
    let unhold = |shared: &Arc<Shared>, hung_up: bool| {
        let mut st = shared.stalls.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = st.held.iter().position(|h| h == what) {
            st.held.remove(i);
        }
        if hung_up {
            st.hung_up.push(what.to_owned());
        }
    };
    loop {
        tokio::select! {
            _ = release.changed() => {
                if !matches(shared) {
                    unhold(shared, false);
                    return true;
                }
            }
            _ = input.wait_closed() => {
                unhold(shared, true);
                return false;
            }
        }
    }
}

/// Waits out `Latency`/`Hang`; false if the connection died or the host closed the stream meanwhile (adbd hangs
/// up a command whose host went away).
pub(crate) async fn apply_fault(shared: &Arc<Shared>, input: &mut StreamIn, out: &StreamOut) -> bool {
    let mut fault_rx = shared.fault.subscribe();
    loop {
        let f = fault_rx.borrow_and_update().clone();
        match f {
            Fault::Latency(d) => {
                tokio::select! {
                    _ = tokio::time::sleep(d) => {}
                    _ = out.connection_closed() => return false,
                    _ = input.wait_closed() => return false,
                }
                return true;
            }
            Fault::Hang => {
                tokio::select! {
                    r = fault_rx.changed() => if r.is_err() { return false },
                    _ = out.connection_closed() => return false,
                    _ = input.wait_closed() => return false,
                }
            }
            _ => return true,
        }
    }
}

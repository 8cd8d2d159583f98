//! `xagent-adb-connector audit verify|tail`: check the audit chain, show recent device actions.

use std::path::Path;

use crate::store::Store;

fn open(data_dir: &Path) -> Result<Store, i32> {
    Store::open_existing(data_dir).ok_or_else(|| {
        eprintln!("error: no connector state in {} (use --data-dir)", data_dir.display());
        crate::cli::exit::CONFIG
    })
}

/// Exit 0 when the chain is intact, 1 naming the first bad record otherwise.
pub fn verify(data_dir: &Path) -> i32 {
    let store = match open(data_dir) {
        Ok(s) => s,
        Err(code) => return code,
    };
    match crate::audit::verify(&store) {
        Ok(n) => {
            println!("audit log intact: {n} record(s)");
            0
        }
        Err((seq, why)) => {
            println!("audit log TAMPERED: record {seq}: {why}");
            1
        }
    }
}

pub fn tail(data_dir: &Path, n: u64) -> i32 {
    let store = match open(data_dir) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let rows = match store.audit_tail(n) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot read the audit log: {e}");
            return crate::cli::exit::FAILURE;
        }
    };
    for r in rows {
        println!(
            "{:>6}  {}  {}  {}  {}  {}  {}  {}",
            r.seq,
            r.time_ms,
            r.channel_id,
            r.tool_call_id.as_deref().unwrap_or("-"),
            r.device,
            r.tool_id,
            r.result,
            r.arguments
        );
    }
    0
}

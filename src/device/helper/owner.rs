//! Which helpers are this connector's: the `--owner=<tag>` on a helper's command line (the helper ignores its
//! arguments; `ps` shows them). Start-up clean-up and a binding's cut end only this connector's helpers, never
//! another connector's that shares the phone.

/// What `ps` shows for a helper (`app_process` keeps its arguments; the class path is in the environment).
pub(super) const PROCESS_MARK: &str = "xagent.Helper";

/// The argument that names the connector a helper belongs to (the helper ignores its arguments; `ps` shows them):
/// start-up clean-up kills only this connector's own leftovers, never another connector's running helper.
pub(super) const OWNER_ARG: &str = "--owner=";

/// `xagent-helper-<hex>.dex`, nothing else (a name the host recognises as one of its own).
pub(super) fn is_helper_dex(name: &str) -> bool {
    name.strip_prefix("xagent-helper-")
        .and_then(|r| r.strip_suffix(".dex"))
        .is_some_and(|h| (1..=64).contains(&h.len()) && h.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// The mark `Helpers::set_owner` gives a connector whose data directory is `place`: 12 hex digits of a SHA-256
/// of the host's name and `place`.
pub fn owner_tag(place: &str) -> String {
    use sha2::Digest;
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let hash = sha2::Sha256::digest(format!("{}\0{place}", host.trim()).as_bytes());
    hash.iter().take(6).map(|b| format!("{b:02x}")).collect()
}

/// The pids of this connector's helpers (`owner`'s) in `ps -A -o PID,ARGS` output.
pub(super) fn own_pids<'a>(procs: &'a str, owner: &str) -> Vec<&'a str> {
    let mine = format!("{PROCESS_MARK} {OWNER_ARG}{owner}");
    procs
        .lines()
        .map(str::trim)
        .filter(|l| l.trim_end().ends_with(&mine))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|p| !p.is_empty() && p.len() <= 10 && p.bytes().all(|b| b.is_ascii_digit()))
        .collect()
}

/// What start-up removes, from `ls /data/local/tmp` and `ps -A -o PID,ARGS`: this connector's own helpers left
/// running by an earlier run (their `--owner=` is ours) are killed; dex files of other versions are deleted only
/// while no other connector's helper runs (it may be using one: a helper's dex is named in its environment, which
/// `ps` does not show). The shell command, and how many foreign helpers run.
pub(super) fn cleanup(files: &str, procs: &str, ours: &str, owner: &str) -> (Option<String>, usize) {
    let mine = format!("{PROCESS_MARK} {OWNER_ARG}{owner}");
    let mut pids = Vec::new();
    let mut foreign = 0;
    for l in procs.lines().map(str::trim).filter(|l| l.contains(PROCESS_MARK)) {
        let (pid, args) = l.split_once(char::is_whitespace).unwrap_or((l, ""));
        if !args.trim_end().ends_with(&mine) {
            foreign += 1;
        } else if !pid.is_empty() && pid.len() <= 10 && pid.bytes().all(|b| b.is_ascii_digit()) {
            pids.push(pid.to_owned());
        }
    }
    let stale: Vec<String> = if foreign > 0 {
        Vec::new()
    } else {
        files
            .lines()
            .map(str::trim)
            .filter(|f| is_helper_dex(f) && *f != ours)
            .map(|f| crate::device::shell::quote(&format!("/data/local/tmp/{f}")))
            .collect()
    };
    let mut cmd = Vec::new();
    if !stale.is_empty() {
        cmd.push(format!("rm -f {}", stale.join(" ")));
    }
    if !pids.is_empty() {
        cmd.push(format!("kill -9 {}", pids.join(" ")));
    }
    ((!cmd.is_empty()).then(|| cmd.join("; ")), foreign)
}

#[cfg(test)]
mod cleanup_tests {
    use super::{cleanup, own_pids};

    const PS: &str = "  PID ARGS\n    1 /system/bin/init second_stage\n 5001 app_process / xagent.Helper \
                      --owner=0e2feb5e090d\n 5002 app_process / xagent.Helper --owner=0123456789ab\n";
    const LS: &str = "notes.txt\nxagent-helper-00000000deadbeef.dex\nxagent-helper-1111111111111111.dex\n";

    #[test]
    fn only_our_own_helpers_are_killed_and_old_dex_kept_while_another_runs() {
        let (cmd, foreign) = cleanup(LS, PS, "xagent-helper-1111111111111111.dex", "0e2feb5e090d");
        assert_eq!((cmd.as_deref(), foreign), (Some("kill -9 5001"), 1));
    }

    #[test]
    fn with_no_other_connector_old_dex_files_go_too() {
        let ps = PS.lines().filter(|l| !l.contains("0123456789ab")).collect::<Vec<_>>().join("\n");
        let (cmd, foreign) = cleanup(LS, &ps, "xagent-helper-1111111111111111.dex", "0e2feb5e090d");
        assert_eq!(
            (cmd.as_deref(), foreign),
            (Some("rm -f '/data/local/tmp/xagent-helper-00000000deadbeef.dex'; kill -9 5001"), 0)
        );
    }

    #[test]
    fn a_cut_finds_only_our_own_helpers() {
        assert_eq!(own_pids(PS, "0e2feb5e090d"), vec!["5001"]);
        assert!(own_pids(PS, "ffffffffffff").is_empty());
    }
}

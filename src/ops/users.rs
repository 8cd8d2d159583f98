//! `xagent-adb-connector users add|list|remove`: the device wall's operator accounts (`wall::users`: the users
//! file in the data dir, roles, salted password hashes). The password is read from the terminal without echo
//! (asked twice) or from the first line of stdin (scripts); it is never an argument (it would show in `ps` and the
//! shell history), never printed, and no error message contains it.

use std::io::{BufRead, IsTerminal, Write};
use std::path::Path;

use super::out::outln;
use crate::config::exit;
use crate::wall::users::{self, Role};

/// `users add NAME --role R [--replace]`.
pub fn add(data_dir: &Path, name: &str, role: &str, replace: bool) -> i32 {
    let role = match Role::parse(role) {
        Ok(r) => r,
        Err(e) => return fail(&e, exit::USAGE),
    };
    if let Err(e) = users::check_name(name) {
        return fail(&e, exit::USAGE);
    }
    let path = users::path(data_dir);
    let mut all = match users::load(&path) {
        Ok(a) => a,
        Err(e) => return fail(&e, exit::CONFIG),
    };
    let existing = all.iter().position(|a| a.name == name);
    if existing.is_some() && !replace {
        return fail(&format!("operator {name:?} exists already; pass --replace to change it"), exit::FAILURE);
    }
    if existing.is_none() && all.len() >= users::MAX_USERS {
        return fail(&format!("the users file holds {} operators at most", users::MAX_USERS), exit::FAILURE);
    }
    let password = match read_password(name) {
        Ok(p) => p,
        Err(e) => return fail(&e, exit::FAILURE),
    };
    let account = match users::new_account(name, role, &password) {
        Ok(a) => a,
        Err(e) => return fail(&e, exit::FAILURE),
    };
    match existing {
        Some(i) => all[i] = account,
        None => all.push(account),
    }
    if let Err(e) = write(data_dir, &path, &all) {
        return fail(&e, exit::FAILURE);
    }
    let verb = if existing.is_some() { "changed" } else { "added" };
    outln!("{verb} operator {name} ({}) in {}", role.as_str(), path.display());
    0
}

/// `users list`: name, role, created (UTC); never the hash.
pub fn list(data_dir: &Path) -> i32 {
    let path = users::path(data_dir);
    let all = match users::load(&path) {
        Ok(a) => a,
        Err(e) => return fail(&e, exit::CONFIG),
    };
    if all.is_empty() {
        outln!("no operators in {} (add one: users add NAME --role viewer|operator|admin)", path.display());
        return 0;
    }
    outln!("{:<24} {:<9} CREATED (UTC)", "NAME", "ROLE");
    for a in &all {
        outln!("{:<24} {:<9} {}", a.name, a.role.as_str(), crate::protocol::utc(a.created_ms));
    }
    0
}

/// `users remove NAME`.
pub fn remove(data_dir: &Path, name: &str) -> i32 {
    let path = users::path(data_dir);
    let mut all = match users::load(&path) {
        Ok(a) => a,
        Err(e) => return fail(&e, exit::CONFIG),
    };
    let before = all.len();
    all.retain(|a| a.name != name);
    if all.len() == before {
        return fail(&format!("no operator {name:?} in {}", path.display()), exit::FAILURE);
    }
    if let Err(e) = write(data_dir, &path, &all) {
        return fail(&e, exit::FAILURE);
    }
    outln!("removed operator {name}; their open wall sessions end at their next request");
    0
}

fn fail(message: &str, code: i32) -> i32 {
    eprintln!("error: {message}");
    code
}

/// Saves the file; run as root on an installed box, hands it to the data dir's owner (the service's user, which
/// must read it).
fn write(data_dir: &Path, path: &Path, all: &[users::Account]) -> Result<(), String> {
    users::save(path, all)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if let Ok(m) = std::fs::metadata(data_dir) {
            // SAFETY: geteuid has no preconditions.
            if unsafe { libc::geteuid() } == 0 && m.uid() != 0 {
                std::os::unix::fs::chown(path, Some(m.uid()), Some(m.gid()))
                    .map_err(|e| format!("cannot give {} to the data dir's owner: {e}", path.display()))?;
            }
        }
    }
    Ok(())
}

/// The new password: asked twice without echo on a terminal, else the first line of stdin.
fn read_password(name: &str) -> Result<String, String> {
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        let mut line = String::new();
        stdin.lock().read_line(&mut line).map_err(|e| format!("cannot read the password from stdin: {e}"))?;
        let pw = line.trim_end_matches(['\n', '\r']).to_owned();
        if pw.is_empty() {
            return Err("no password on stdin (its first line is the password)".into());
        }
        return Ok(pw);
    }
    let first = prompt(&format!("password for {name}: "))?;
    users::check_password(&first)?;
    let again = prompt("again: ")?;
    if first != again {
        return Err("the two passwords differ; nothing changed".into());
    }
    Ok(first)
}

/// One line from the terminal with echo off (restored on every path).
fn prompt(text: &str) -> Result<String, String> {
    eprint!("{text}");
    let _ = std::io::stderr().flush();
    let echo = Echo::off();
    let mut line = String::new();
    let r = std::io::stdin().lock().read_line(&mut line);
    drop(echo);
    eprintln!();
    r.map_err(|e| format!("cannot read the password: {e}"))?;
    Ok(line.trim_end_matches(['\n', '\r']).to_owned())
}

/// Terminal echo switched off until dropped.
struct Echo(#[cfg(unix)] Option<libc::termios>);

impl Echo {
    fn off() -> Echo {
        #[cfg(unix)]
        {
            // SAFETY: tcgetattr/tcsetattr on fd 0 with a zeroed termios they fill; failures leave echo as it was.
            unsafe {
                let mut t: libc::termios = std::mem::zeroed();
                if libc::tcgetattr(0, &mut t) != 0 {
                    return Echo(None);
                }
                let saved = t;
                t.c_lflag &= !libc::ECHO;
                t.c_lflag |= libc::ECHONL;
                if libc::tcsetattr(0, libc::TCSANOW, &t) != 0 {
                    return Echo(None);
                }
                Echo(Some(saved))
            }
        }
        #[cfg(not(unix))]
        Echo()
    }
}

impl Drop for Echo {
    fn drop(&mut self) {
        #[cfg(unix)]
        if let Some(saved) = self.0 {
            // SAFETY: restores the attributes read in `off`.
            unsafe {
                libc::tcsetattr(0, libc::TCSANOW, &saved);
            }
        }
    }
}

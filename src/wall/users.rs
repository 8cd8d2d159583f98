//! Operator accounts (issue 50): one login per person, apart from the system API key. The users file
//! (`<data dir>/users.json`, 0600, written whole through a 0600 temporary file and a rename) holds each operator's
//! name, role and a salted PBKDF2-HMAC-SHA256 hash of the password — never the password. `xagent-adb-connector
//! users add|list|remove` (`ops/users.rs`) manages it; the wall reads it at every login, so a change needs no
//! restart. Roles: `viewer` watches the wall, `operator` also takes phones over and returns them, `admin` also
//! releases bindings. The system API key is the admin named [`API_KEY_NAME`] (automation keeps working).
//!
//! Why PBKDF2 (the `pbkdf2` crate): it is built from the SHA-256 the binary already carries (`sha2`), adds two
//! tiny crates and nothing that needs C or much memory on a Pi; the work factor is stored per account, so it can
//! be raised later without breaking existing accounts. A password check compares derived hashes in constant time
//! and derives one for an unknown name too (a name's existence does not show in the answer time).
//!
//! Also here: [`Cidr`], the `--trusted-proxy` networks whose `--trusted-user-header` names the operator (SSO
//! through a reverse proxy).

use std::net::IpAddr;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::http::constant_time_eq;

/// The users file's name in the data dir.
pub const FILE_NAME: &str = "users.json";
/// PBKDF2 rounds of a new account (OWASP's 2023 figure for PBKDF2-HMAC-SHA256).
pub const ITERATIONS: u32 = 600_000;
/// Fewest rounds a stored account may claim (a file edited to 1 round is refused, not trusted).
pub const MIN_ITERATIONS: u32 = 100_000;
/// Shortest password `users add` accepts.
pub const MIN_PASSWORD_CHARS: usize = 8;
/// Longest password (a login body is small; a huge one would only cost hashing time).
pub const MAX_PASSWORD_BYTES: usize = 1024;
/// Accounts one file holds at most.
pub const MAX_USERS: usize = 1000;
/// The operator name of the system API key (Bearer, or a wall login with the key).
pub const API_KEY_NAME: &str = "api-key";
const KDF: &str = "pbkdf2-sha256";

/// What an operator may do on the wall.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Watches the wall and the live view.
    Viewer,
    /// Also takes phones over, controls and returns them.
    Operator,
    /// Also releases an agent's binding.
    Admin,
}

impl Role {
    pub const ALL: [Role; 3] = [Role::Viewer, Role::Operator, Role::Admin];

    pub fn as_str(self) -> &'static str {
        match self {
            Role::Viewer => "viewer",
            Role::Operator => "operator",
            Role::Admin => "admin",
        }
    }

    pub fn parse(s: &str) -> Result<Role, String> {
        Role::ALL
            .into_iter()
            .find(|r| r.as_str() == s)
            .ok_or_else(|| format!("unknown role {s:?}: use viewer, operator or admin"))
    }
}

/// One account as stored. `Debug` leaves out the salt and hash.
#[derive(Clone, Serialize, Deserialize)]
pub struct Account {
    pub name: String,
    pub role: Role,
    kdf: String,
    iterations: u32,
    salt: String,
    hash: String,
    #[serde(default)]
    pub created_ms: u64,
}

impl std::fmt::Debug for Account {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Account").field("name", &self.name).field("role", &self.role).finish_non_exhaustive()
    }
}

#[derive(Serialize, Deserialize)]
struct Doc {
    version: u32,
    users: Vec<Account>,
}

/// `<data dir>/users.json`.
pub fn path(data_dir: &Path) -> PathBuf {
    data_dir.join(FILE_NAME)
}

/// A name: 1..=64 of `A-Z a-z 0-9 . _ @ -`, not [`API_KEY_NAME`] (it appears in audit records and logs as is).
pub fn check_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '@' | '-'));
    if !ok {
        return Err(format!(
            "user name {:?} is not allowed: 1 to 64 characters of A-Z a-z 0-9 . _ @ -",
            name.chars().take(70).collect::<String>()
        ));
    }
    if name == API_KEY_NAME {
        return Err(format!("{API_KEY_NAME:?} is the system API key's name; choose another"));
    }
    Ok(())
}

/// The accounts in `path`; a missing file is no accounts.
pub fn load(path: &Path) -> Result<Vec<Account>, String> {
    let text = match std::fs::read(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(format!("cannot read the users file {}: {e}", path.display())),
    };
    let doc: Doc =
        serde_json::from_slice(&text).map_err(|e| format!("the users file {} is not valid: {e}", path.display()))?;
    if doc.version != 1 {
        return Err(format!("the users file {} has version {}; this binary reads 1", path.display(), doc.version));
    }
    Ok(doc.users)
}

/// Writes `accounts` to `path` (0600, through a temporary file and a rename: a crash leaves the old file or the
/// new one, never half of one).
pub fn save(path: &Path, accounts: &[Account]) -> Result<(), String> {
    use std::io::Write;
    if let Some(dir) = path.parent() {
        crate::store::private::dir(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    let tmp = path.with_extension(format!("json.tmp-{}", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    let body = serde_json::to_vec_pretty(&Doc { version: 1, users: accounts.to_vec() }).expect("serialisable");
    let write = || -> std::io::Result<()> {
        let mut f = crate::store::private::new_file_options().open(&tmp)?;
        f.write_all(&body)?;
        f.write_all(b"\n")?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    };
    write().map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        format!("cannot write the users file {}: {e}", path.display())
    })
}

/// A new account with a fresh random salt. The password is checked for length only.
pub fn new_account(name: &str, role: Role, password: &str) -> Result<Account, String> {
    check_name(name)?;
    check_password(password)?;
    let mut salt = [0u8; 16];
    getrandom::fill(&mut salt).map_err(|e| format!("no randomness for the salt: {e}"))?;
    Ok(Account {
        name: name.to_owned(),
        role,
        kdf: KDF.to_owned(),
        iterations: ITERATIONS,
        salt: hex(&salt),
        hash: hex(&derive(password.as_bytes(), &salt, ITERATIONS)),
        created_ms: crate::protocol::now_ms(),
    })
}

/// Length rules of a new password (the message never contains it).
pub fn check_password(password: &str) -> Result<(), String> {
    let n = password.chars().count();
    if n < MIN_PASSWORD_CHARS {
        return Err(format!("the password is too short: at least {MIN_PASSWORD_CHARS} characters (it has {n})"));
    }
    if password.len() > MAX_PASSWORD_BYTES {
        return Err(format!("the password is too long: at most {MAX_PASSWORD_BYTES} bytes"));
    }
    Ok(())
}

/// The role of `name` when `password` is its password. Always derives one hash (a dummy one for an unknown name
/// or an unusable entry), compared in constant time.
pub fn verify(accounts: &[Account], name: &str, password: &str) -> Option<Role> {
    let account = accounts.iter().find(|a| a.name == name);
    let usable = account.and_then(|a| {
        let salt = unhex(&a.salt)?;
        let hash = unhex(&a.hash)?;
        (a.kdf == KDF && a.iterations >= MIN_ITERATIONS && hash.len() == 32).then_some((a, salt, hash))
    });
    match usable {
        Some((a, salt, hash)) if password.len() <= MAX_PASSWORD_BYTES => {
            let got = derive(password.as_bytes(), &salt, a.iterations);
            constant_time_eq(&got, &hash).then_some(a.role)
        }
        _ => {
            let _ = derive(password.as_bytes(), b"xagent-unknown-user", ITERATIONS);
            None
        }
    }
}

fn derive(password: &[u8], salt: &[u8], iterations: u32) -> [u8; 32] {
    let mut out = [0u8; 32];
    pbkdf2::pbkdf2_hmac::<sha2::Sha256>(password, salt, iterations, &mut out);
    out
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if s.len() % 2 != 0 || !s.is_ascii() {
        return None;
    }
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).ok()).collect()
}

/// A network of `--trusted-proxy`: `ADDR/BITS` or a bare address (all bits).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cidr {
    net: IpAddr,
    bits: u8,
}

impl Cidr {
    pub fn parse(s: &str) -> Result<Cidr, String> {
        let bad = || format!("{s:?} is not a network: use ADDR/BITS (10.0.0.0/8, 127.0.0.1/32, fd00::/8) or ADDR");
        let (addr, bits) = match s.trim().split_once('/') {
            Some((a, b)) => (a, Some(b)),
            None => (s.trim(), None),
        };
        let net: IpAddr = addr.parse().map_err(|_| bad())?;
        let max = if net.is_ipv4() { 32 } else { 128 };
        let bits = match bits {
            Some(b) => b.parse::<u8>().ok().filter(|b| *b <= max).ok_or_else(bad)?,
            None => max,
        };
        Ok(Cidr { net, bits })
    }

    /// Whether `ip` is inside (an IPv4-mapped IPv6 address counts as its IPv4 address).
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
            v4 => v4,
        };
        match (self.net, ip) {
            (IpAddr::V4(n), IpAddr::V4(a)) => prefix_eq(&n.octets(), &a.octets(), self.bits),
            (IpAddr::V6(n), IpAddr::V6(a)) => prefix_eq(&n.octets(), &a.octets(), self.bits),
            _ => false,
        }
    }
}

impl std::fmt::Display for Cidr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.net, self.bits)
    }
}

fn prefix_eq(a: &[u8], b: &[u8], bits: u8) -> bool {
    let (whole, rest) = ((bits / 8) as usize, bits % 8);
    if a[..whole] != b[..whole] {
        return false;
    }
    rest == 0 || {
        let mask = 0xffu8 << (8 - rest);
        a[whole] & mask == b[whole] & mask
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_password_verifies_and_a_wrong_one_does_not() {
        let a = new_account("ana", Role::Operator, "correct horse").unwrap();
        let text = serde_json::to_string(&a).unwrap();
        assert!(!text.contains("correct horse") && text.contains("pbkdf2-sha256"), "{text}");
        assert!(!format!("{a:?}").contains(&a.hash));
        let all = vec![a];
        assert_eq!(verify(&all, "ana", "correct horse"), Some(Role::Operator));
        assert_eq!(verify(&all, "ana", "correct horsf"), None);
        assert_eq!(verify(&all, "bob", "correct horse"), None);
        assert!(new_account("ana", Role::Viewer, "short").unwrap_err().contains("too short"));
        assert!(check_name("api-key").is_err() && check_name("a b").is_err() && check_name("ok.name@x").is_ok());
    }

    #[test]
    fn networks_contain_their_addresses() {
        let n = Cidr::parse("10.1.0.0/16").unwrap();
        assert!(n.contains("10.1.200.3".parse().unwrap()) && !n.contains("10.2.0.1".parse().unwrap()));
        assert!(n.contains("::ffff:10.1.0.9".parse().unwrap()));
        assert!(Cidr::parse("127.0.0.1").unwrap().contains("127.0.0.1".parse().unwrap()));
        assert!(!Cidr::parse("127.0.0.1").unwrap().contains("127.0.0.2".parse().unwrap()));
        assert!(Cidr::parse("fd00::/8").unwrap().contains("fd12::1".parse().unwrap()));
        assert!(Cidr::parse("10.0.0.0/33").is_err() && Cidr::parse("nope").is_err());
    }
}

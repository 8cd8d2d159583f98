//! In-memory filesystem backing the simulated phone's storage.
//!
//! Why in memory: the sim must be hermetic (tests run in parallel, nothing may leak onto the host
//! disk) and both the sync service (`adb push`/`pull`) and shell commands (`cat`, `rm`,
//! `uiautomator dump`) must observe the *same* files, exactly like on a real device.
//! Paths are normalised so `/storage/emulated/0/x` and `/sdcard/x` name the same file, as they do
//! on Android through symlinks.

use std::collections::{BTreeMap, BTreeSet};

/// POSIX file type bits, as reported over the sync protocol (`STAT`/`STA2`/`DENT`).
pub const S_IFREG: u32 = 0o100000;
pub const S_IFDIR: u32 = 0o040000;

/// Errors carry an errno so the sync protocol (`STA2` error field) and the shell
/// (`cat: X: No such file or directory`) can report them the way Android does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FsError {
    NotFound,
    IsDir,
    NotDir,
    ReadOnly,
    NotEmpty,
    Invalid,
}

impl FsError {
    pub fn errno(self) -> u32 {
        match self {
            FsError::NotFound => 2,
            FsError::IsDir => 21,
            FsError::NotDir => 20,
            FsError::ReadOnly => 30,
            FsError::NotEmpty => 39,
            FsError::Invalid => 22,
        }
    }
    pub fn message(self) -> &'static str {
        match self {
            FsError::NotFound => "No such file or directory",
            FsError::IsDir => "Is a directory",
            FsError::NotDir => "Not a directory",
            FsError::ReadOnly => "Read-only file system",
            FsError::NotEmpty => "Directory not empty",
            FsError::Invalid => "Invalid argument",
        }
    }
}

#[derive(Debug, Clone)]
pub struct FileEntry {
    pub data: Vec<u8>,
    /// Permission bits only (e.g. 0o644); the type bit is added by [`Stat`].
    pub perm: u32,
    pub mtime: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stat {
    /// Full st_mode (type + permission bits).
    pub mode: u32,
    pub size: u64,
    pub mtime: u32,
}

impl Stat {
    pub fn is_dir(&self) -> bool {
        self.mode & 0o170000 == S_IFDIR
    }
}

#[derive(Debug, Clone)]
pub struct MemFs {
    files: BTreeMap<String, FileEntry>,
    dirs: BTreeSet<String>,
    /// Time stamp given to directories (boot time of the sim).
    boot_time: u32,
    /// Mounts made read-only at run time (tests: a full or read-only data partition).
    read_only_mounts: Vec<String>,
}

/// Directories a freshly booted phone has; clients commonly push to `/data/local/tmp` and
/// `/sdcard`, and list `/sdcard/Download`.
const DEFAULT_DIRS: &[&str] = &[
    "/",
    "/data",
    "/data/local",
    "/data/local/tmp",
    "/sdcard",
    "/sdcard/Download",
    "/sdcard/DCIM",
    "/sdcard/Pictures",
    "/storage",
    "/system",
    "/system/bin",
    "/dev",
    "/proc",
];

/// Prefixes that are read-only on a production build (writes fail with EROFS).
const READ_ONLY: &[&str] = &["/system", "/proc", "/dev"];

impl MemFs {
    pub fn new(boot_time: u32) -> Self {
        let mut fs = MemFs { files: BTreeMap::new(), dirs: BTreeSet::new(), boot_time, read_only_mounts: Vec::new() };
        for d in DEFAULT_DIRS {
            fs.dirs.insert((*d).to_string());
        }
        fs
    }

    /// Normalises a path: resolves `.`/`..`, collapses slashes, treats relative paths as relative
    /// to `/` (adbd's cwd) and folds the external-storage aliases onto `/sdcard`.
    pub fn normalize(path: &str) -> String {
        let mut parts: Vec<&str> = Vec::new();
        for comp in path.split('/') {
            match comp {
                "" | "." => {}
                ".." => {
                    parts.pop();
                }
                c => parts.push(c),
            }
        }
        let mut out = String::from("/");
        out.push_str(&parts.join("/"));
        for alias in ["/storage/emulated/0", "/storage/self/primary", "/mnt/sdcard"] {
            if out == alias {
                return "/sdcard".to_string();
            }
            if let Some(rest) = out.strip_prefix(alias) {
                if rest.starts_with('/') {
                    return format!("/sdcard{rest}");
                }
            }
        }
        out
    }

    fn parent(path: &str) -> Option<String> {
        if path == "/" {
            return None;
        }
        match path.rfind('/') {
            Some(0) => Some("/".to_string()),
            Some(i) => Some(path[..i].to_string()),
            None => None,
        }
    }

    fn read_only(&self, path: &str) -> bool {
        READ_ONLY
            .iter()
            .copied()
            .chain(self.read_only_mounts.iter().map(String::as_str))
            .any(|p| path == p || path.starts_with(&format!("{p}/")))
    }

    /// Makes `path` and everything below it read-only.
    pub fn mount_read_only(&mut self, path: &str) {
        self.read_only_mounts.push(Self::normalize(path));
    }

    /// Full paths of the files under `dir` (at any depth).
    pub fn files_under(&self, dir: &str) -> Vec<String> {
        let prefix = format!("{}/", Self::normalize(dir).trim_end_matches('/'));
        self.files.keys().filter(|k| k.starts_with(&prefix)).cloned().collect()
    }

    pub fn stat(&self, path: &str) -> Result<Stat, FsError> {
        let p = Self::normalize(path);
        if let Some(f) = self.files.get(&p) {
            return Ok(Stat { mode: S_IFREG | f.perm, size: f.data.len() as u64, mtime: f.mtime });
        }
        if self.dirs.contains(&p) {
            return Ok(Stat { mode: S_IFDIR | 0o771, size: 4096, mtime: self.boot_time });
        }
        Err(FsError::NotFound)
    }

    pub fn read(&self, path: &str) -> Result<&[u8], FsError> {
        let p = Self::normalize(path);
        if let Some(f) = self.files.get(&p) {
            return Ok(&f.data);
        }
        if self.dirs.contains(&p) {
            return Err(FsError::IsDir);
        }
        Err(FsError::NotFound)
    }

    /// Creates or replaces a file. `mkdirs` creates missing parents (adbd does this for pushes
    /// since the `fixed_push_mkdir` feature); the shell's `>` redirection does not.
    pub fn write(&mut self, path: &str, data: Vec<u8>, perm: u32, mtime: u32, mkdirs: bool) -> Result<(), FsError> {
        let p = Self::normalize(path);
        if p == "/" || self.dirs.contains(&p) {
            return Err(FsError::IsDir);
        }
        if self.read_only(&p) {
            return Err(FsError::ReadOnly);
        }
        let parent = Self::parent(&p).ok_or(FsError::Invalid)?;
        if self.files.contains_key(&parent) {
            return Err(FsError::NotDir);
        }
        if !self.dirs.contains(&parent) {
            if !mkdirs {
                return Err(FsError::NotFound);
            }
            self.mkdir(&parent, true)?;
        }
        self.files.insert(p, FileEntry { data, perm: perm & 0o7777, mtime });
        Ok(())
    }

    /// Places a file the system provides (kernel `/proc` entries, …) regardless of the read-only mounts, with
    /// its parent directories.
    pub fn put_system_file(&mut self, path: &str, data: Vec<u8>, perm: u32) {
        let p = Self::normalize(path);
        let mut dir = String::new();
        for part in p.split('/').filter(|c| !c.is_empty()).collect::<Vec<_>>().split_last().map_or(&[][..], |(_, d)| d)
        {
            dir.push('/');
            dir.push_str(part);
            self.dirs.insert(dir.clone());
        }
        self.files.insert(p, FileEntry { data, perm: perm & 0o7777, mtime: self.boot_time });
    }

    pub fn append(&mut self, path: &str, data: &[u8], mtime: u32) -> Result<(), FsError> {
        let p = Self::normalize(path);
        match self.files.get_mut(&p) {
            Some(f) => {
                f.data.extend_from_slice(data);
                f.mtime = mtime;
                Ok(())
            }
            None => self.write(&p, data.to_vec(), 0o660, mtime, false),
        }
    }

    pub fn mkdir(&mut self, path: &str, parents: bool) -> Result<(), FsError> {
        let p = Self::normalize(path);
        if self.files.contains_key(&p) {
            return Err(FsError::NotDir);
        }
        if self.dirs.contains(&p) {
            return Ok(());
        }
        if self.read_only(&p) {
            return Err(FsError::ReadOnly);
        }
        if let Some(parent) = Self::parent(&p) {
            if !self.dirs.contains(&parent) {
                if !parents {
                    return Err(FsError::NotFound);
                }
                self.mkdir(&parent, true)?;
            }
        }
        self.dirs.insert(p);
        Ok(())
    }

    /// Removes a file, or (with `recursive`) a directory tree.
    pub fn remove(&mut self, path: &str, recursive: bool) -> Result<(), FsError> {
        let p = Self::normalize(path);
        if self.files.remove(&p).is_some() {
            return Ok(());
        }
        if !self.dirs.contains(&p) {
            return Err(FsError::NotFound);
        }
        if !recursive {
            return Err(FsError::IsDir);
        }
        if self.read_only(&p) || p == "/" {
            return Err(FsError::ReadOnly);
        }
        let prefix = format!("{p}/");
        self.files.retain(|k, _| !k.starts_with(&prefix));
        self.dirs.retain(|k| k != &p && !k.starts_with(&prefix));
        Ok(())
    }

    /// Lists the direct children of a directory (names only, sorted).
    pub fn list(&self, path: &str) -> Result<Vec<(String, Stat)>, FsError> {
        let p = Self::normalize(path);
        if self.files.contains_key(&p) {
            return Err(FsError::NotDir);
        }
        if !self.dirs.contains(&p) {
            return Err(FsError::NotFound);
        }
        let prefix = if p == "/" { "/".to_string() } else { format!("{p}/") };
        let mut out = Vec::new();
        let children = self.dirs.iter().cloned().chain(self.files.keys().cloned());
        for child in children {
            if let Some(rest) = child.strip_prefix(&prefix) {
                if !rest.is_empty() && !rest.contains('/') {
                    if let Ok(st) = self.stat(&child) {
                        out.push((rest.to_string(), st));
                    }
                }
            }
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_aliases_and_dots() {
        assert_eq!(MemFs::normalize("/storage/emulated/0/a.txt"), "/sdcard/a.txt");
        assert_eq!(MemFs::normalize("//sdcard/./x/../y"), "/sdcard/y");
        assert_eq!(MemFs::normalize("rel"), "/rel");
    }

    #[test]
    fn write_read_list_remove() {
        let mut fs = MemFs::new(0);
        assert_eq!(fs.write("/sdcard/a/b.txt", b"x".to_vec(), 0o644, 1, false), Err(FsError::NotFound));
        fs.write("/sdcard/a/b.txt", b"hi".to_vec(), 0o644, 1, true).unwrap();
        assert_eq!(fs.read("/storage/emulated/0/a/b.txt").unwrap(), b"hi");
        assert!(fs.stat("/sdcard/a").unwrap().is_dir());
        let l = fs.list("/sdcard/a").unwrap();
        assert_eq!(l.len(), 1);
        assert_eq!(l[0].0, "b.txt");
        assert_eq!(fs.write("/system/x", vec![], 0o644, 1, true), Err(FsError::ReadOnly));
        fs.remove("/sdcard/a/b.txt", false).unwrap();
        assert_eq!(fs.read("/sdcard/a/b.txt"), Err(FsError::NotFound));
    }
}

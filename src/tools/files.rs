//! File tools of the transfer plane: `android_app_install` (an uploaded APK), `android_file_pull` (device → file
//! ref) and `android_file_push` (file ref → device). File bytes move between the cache and the device through the
//! adb sync protocol, streamed from/to disk; they never travel on the WebSocket or in arguments.
//!
//! Device paths are confined to shared storage and the shell's scratch dir ([`ALLOWED_PREFIXES`]) and must be
//! plain absolute paths: no `..`/`.` segments, `//`, backslashes, NUL or control characters. The sync protocol does
//! not involve a shell; the one shell command here (`pm install`, `rm`) only sees paths we generated, quoted anyway.

use std::io::{Read, Write};
use std::sync::Arc;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::args;
use super::context::invalid;
use super::device::tool;
use super::registry::{ProgressFn, Tool, ToolSpec};
use crate::device::adb::AdbBackend;
use crate::device::shell::quote;
use crate::files::{self, NewFile};
use crate::protocol::errors::{ErrorCode, ProtoError};
use crate::protocol::ids;

/// Where `android_file_pull`/`android_file_push` may read and write.
pub const ALLOWED_PREFIXES: &[&str] = &["/sdcard/", "/data/local/tmp/"];
/// Largest file `android_file_pull` fetches.
pub const PULL_MAX_BYTES: u64 = 64 << 20;
const MAX_PATH: usize = 1024;

/// Checks a device path against the rules in the module docs.
pub fn check_device_path(p: &str) -> Result<(), ProtoError> {
    let allowed = ALLOWED_PREFIXES.join(" or ");
    if !p.starts_with('/') {
        return Err(invalid(format!("path {p:?} must be absolute, under {allowed}")));
    }
    if p.len() > MAX_PATH || p.chars().any(|c| c.is_control() || c == '\\') || p.contains("//") {
        return Err(invalid(format!(
            "path {p:?} is not a plain path (no backslashes, control characters or empty segments)"
        )));
    }
    if p.split('/').any(|seg| seg == ".." || seg == ".") {
        return Err(invalid(format!("path {p:?} must not contain `.` or `..` segments")));
    }
    if !ALLOWED_PREFIXES.iter().any(|pre| p.starts_with(pre)) {
        return Err(invalid(format!("path {p:?} is outside the allowed locations ({allowed})")));
    }
    if p.ends_with('/') {
        return Err(invalid(format!("path {p:?} names a directory; give a file path")));
    }
    Ok(())
}

/// Reports how far a transfer got (at most every 5 %), for `tool.progress.push`. `weight` is the share of the whole
/// tool the transfer represents (the rest is the install).
fn transfer_progress(progress: ProgressFn, total: u64, weight: f64) -> impl FnMut(u64) {
    let mut next_report = 0u64;
    move |done: u64| {
        if done >= next_report || done == total {
            let frac = if total == 0 { 1.0 } else { done as f64 / total as f64 };
            let mib = |b: u64| b as f64 / f64::from(1 << 20);
            progress(&format!("copying to the device: {:.1} of {:.1} MiB", mib(done), mib(total)), Some(frac * weight));
            next_report = done + (total / 20).max(256 * 1024);
        }
    }
}

/// Removes a copied APK when the install was cancelled midway (deadline, closed channel): the ordered operation
/// was dropped before its own `rm -f`, so a short detached clean-up runs instead.
struct RemoveOnDrop {
    adb: Arc<crate::device::adb::AdbBackend>,
    device: crate::device::DeviceKey,
    /// Empty = nothing to do.
    path: String,
}

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        if self.path.is_empty() {
            return;
        }
        let (adb, device, cmd) = (self.adb.clone(), self.device.clone(), format!("rm -f {}", quote(&self.path)));
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                let _ = adb.shell(&device, &cmd, false, Duration::from_secs(10)).await;
            });
        }
    }
}

/// `Failure [INSTALL_FAILED_…: detail]` (or any last line) out of `pm install` output.
fn install_failure(output: &str) -> String {
    let text = output.trim();
    let reason = text
        .find("Failure [")
        .map(|i| {
            let rest = &text[i + "Failure [".len()..];
            rest.split(']').next().unwrap_or(rest)
        })
        .or_else(|| text.lines().rev().find(|l| !l.trim().is_empty()))
        .unwrap_or("pm install printed nothing");
    // The phone's words: printable and bounded before they enter a message (agent, logs, `call`'s terminal).
    crate::device::text::phone_text(reason, 400)
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct InstallArgs {
    /// From POST /files/uploads on this channel
    #[schemars(length(min = 1, max = 64))]
    file_ref: String,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct PullArgs {
    /// Absolute, under /sdcard/ or /data/local/tmp/
    #[schemars(length(min = 2, max = 1024))]
    path: String,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct PushArgs {
    /// From POST /files/uploads on this channel
    #[schemars(length(min = 1, max = 64))]
    file_ref: String,
    /// Absolute, under /sdcard/ or /data/local/tmp/
    #[schemars(length(min = 2, max = 1024))]
    path: String,
}

pub fn tools(adb: &Arc<AdbBackend>) -> Vec<Arc<dyn Tool>> {
    vec![
        tool(
            ToolSpec {
                id: "android_app_install",
                title: "Install an app",
                description: "Install or update (keeping data) an APK uploaded to this channel; errors carry the \
                              installer's reason.",
                input: args::schema::<InstallArgs>(),
                output: json!({"type": "object", "properties": {
                    "installed": {"type": "boolean"}, "byte_size": {"type": "integer"}, "filename": {"type": "string"}}}),
                side_effect: true,
                settles: false,
                deadline: Duration::from_secs(300),
            },
            adb,
            |c| async move {
                let file_ref = c.parse::<InstallArgs>()?.file_ref;
                let row = c.files.for_channel(&file_ref, &c.call.channel_id)?;
                let local = c.files.path(&row);
                let mut magic = [0u8; 4];
                let is_zip = std::fs::File::open(&local).and_then(|mut f| f.read_exact(&mut magic)).is_ok()
                    && &magic == b"PK\x03\x04";
                if !is_zip {
                    return Err(invalid(format!(
                        "file_ref {file_ref} ({}) is not an APK (not a zip archive)",
                        row.filename
                    )));
                }
                let mut file = tokio::io::BufReader::with_capacity(
                    256 * 1024,
                    tokio::fs::File::open(&local).await.map_err(|e| {
                        ProtoError::new(ErrorCode::Internal, format!("cannot read the cached APK: {e}"))
                    })?,
                );
                let remote = format!("/data/local/tmp/xagent-install-{}.apk", ids::random_hex(8));
                let progress = c.call.progress.clone();
                let total = row.byte_size;
                progress("copying the APK to the device", Some(0.0));
                // One ordered device operation: no other side effect on this device runs between the copy, the
                // install and the clean-up. Cancelled as a whole (the install's shell is hung up) when dropped.
                let mut cleanup = RemoveOnDrop { adb: c.adb.clone(), device: c.device.clone(), path: remote.clone() };
                // A package the lease adds is uninstalled at release (issue 47): the list before and after says
                // which one the install added.
                let installed_kind = crate::device::lease::INSTALLED;
                let track = crate::device::conditions::undoes(&c.adb, installed_kind);
                // Recorded before the copy (issue 47): a `kill -9` or a cut mid-install still uninstalls it.
                let (adb, device, apk) = (c.adb.clone(), c.device.clone(), remote.clone());
                let out = c
                    .adb
                    .op(&c.device, true, c.spec.deadline, |d| async move {
                        let list = || async { d.shell("pm list packages").await.map(|o| o.stdout).unwrap_or_default() };
                        let before = if track { list().await } else { String::new() };
                        if track {
                            crate::device::conditions::installing(&adb, &device, &remote, &before)?;
                        }
                        let sent = transfer_progress(progress.clone(), total, 0.8);
                        d.sync().await?.send(&remote, 0o644, &mut file, sent).await?;
                        progress("installing", Some(0.85));
                        let installed = d.shell(&format!("pm install -r {}", quote(&remote))).await;
                        // Always clean up, even when the install failed.
                        let _ = d.shell(&format!("rm -f {}", quote(&remote))).await;
                        let ok = installed.as_ref().is_ok_and(|o| o.code == 0 && o.stdout.contains("Success"));
                        let after = if track && ok { list().await } else { String::new() };
                        let names = |t: &str| -> Vec<String> {
                            t.lines().filter_map(|l| l.trim().strip_prefix("package:")).map(str::to_owned).collect()
                        };
                        let had = names(&before);
                        let added: Vec<String> = names(&after)
                            .into_iter()
                            .filter(|p| !had.contains(p))
                            .filter(|p| {
                                p.len() <= 255 && p.bytes().all(|b| b.is_ascii_alphanumeric() || b"._".contains(&b))
                            })
                            .collect();
                        installed.map(|o| (o, added))
                    })
                    .await;
                cleanup.path.clear(); // ran to the end (the clean-up ran too); only a cancelled call needs it
                let (out, added) = out?;
                for p in &added {
                    crate::device::conditions::lease_did(&c.adb, &c.device, installed_kind, p)?;
                }
                crate::device::conditions::install_recorded(&c.adb, &c.device, &apk);
                let text = out.stdout;
                if out.code != 0 || !text.contains("Success") {
                    // Older `pm` versions print the failure on stderr.
                    let all = format!("{text}\n{}", out.stderr);
                    return Err(ProtoError::new(
                        ErrorCode::ToolInvokeFailed,
                        format!("install failed: {}", install_failure(&all)),
                    ));
                }
                (c.call.progress)("installed", Some(1.0));
                Ok(json!({"installed": true, "byte_size": row.byte_size, "filename": row.filename}))
            },
        ),
        tool(
            ToolSpec {
                id: "android_file_pull",
                title: "Fetch a file from the phone",
                description: "Copy one file (up to 64 MiB) from /sdcard/ or /data/local/tmp/ into a file reference \
                              (one-time download URL).",
                input: args::schema::<PullArgs>(),
                output: json!({"type": "object", "properties": {
                    "files": {"type": "array", "items": files::file_item_schema()},
                    "path": {"type": "string"}, "byte_size": {"type": "integer"}}}),
                side_effect: false,
                settles: false,
                deadline: Duration::from_secs(120),
            },
            adb,
            |c| async move {
                let path = c.parse::<PullArgs>()?.path;
                check_device_path(&path)?;
                let writer = c.files.writer(PULL_MAX_BYTES).map_err(|e| e.into_proto("the file"))?;
                let cap = writer.cap();
                let st = c.adb.stat(&c.device, &path, c.spec.deadline).await?;
                if !st.is_file() {
                    let what = if st.mode == 0 { "does not exist" } else { "is not a regular file" };
                    return Err(invalid(format!("{path} {what} on the device")));
                }
                if u64::from(st.size) > cap {
                    return Err(invalid(format!(
                        "{path} is {} bytes; android_file_pull fetches at most {cap} bytes",
                        st.size
                    )));
                }
                let mut writer = writer;
                let overflow = || invalid(format!("{path} grew past {cap} bytes while being read"));
                // The sink writes each 64 KiB chunk into the cache file (page cache, microseconds): no device I/O.
                let sink = |chunk: &[u8]| {
                    writer.write_all(chunk).map_err(|e| {
                        if e.kind() == std::io::ErrorKind::FileTooLarge {
                            overflow()
                        } else {
                            ProtoError::new(ErrorCode::Internal, format!("cannot write the cache file: {e}"))
                        }
                    })
                };
                c.adb.pull(&c.device, &path, sink, c.spec.deadline).await?;
                let pulled = writer;
                let name = files::sanitize_filename(&path, "device-file");
                let meta = NewFile {
                    channel_id: c.call.channel_id.clone(),
                    mime: files::guess_mime(&name).to_owned(),
                    filename: name,
                };
                let cache = c.files.clone();
                let row = tokio::task::spawn_blocking(move || cache.commit_sync(pulled, meta))
                    .await
                    .map_err(|_| ProtoError::new(ErrorCode::Internal, "storing the file failed unexpectedly"))?
                    .map_err(|e| e.into_proto("the file"))?;
                Ok(json!({"files": [files::describe(&row)], "path": path, "byte_size": row.byte_size}))
            },
        ),
        tool(
            ToolSpec {
                id: "android_file_push",
                title: "Put a file on the phone",
                description: "Copy a file uploaded to this channel to `path` on the phone, replacing any file there.",
                input: args::schema::<PushArgs>(),
                output: json!({"type": "object", "properties": {
                    "path": {"type": "string"}, "byte_size": {"type": "integer"}}}),
                side_effect: true,
                settles: false,
                deadline: Duration::from_secs(300),
            },
            adb,
            |c| async move {
                let PushArgs { path, file_ref } = c.parse()?;
                check_device_path(&path)?;
                let row = c.files.for_channel(&file_ref, &c.call.channel_id)?;
                let mut file = tokio::io::BufReader::with_capacity(
                    256 * 1024,
                    tokio::fs::File::open(c.files.path(&row)).await.map_err(|e| {
                        ProtoError::new(ErrorCode::Internal, format!("cannot read the cached file: {e}"))
                    })?,
                );
                let sent = transfer_progress(c.call.progress.clone(), row.byte_size, 1.0);
                // A file the lease puts where there was none is removed at release (issue 47): recorded first.
                let pushed = crate::device::lease::PUSHED;
                if crate::device::conditions::undoes(&c.adb, pushed) {
                    let st = c.adb.stat(&c.device, &path, c.spec.deadline).await?;
                    if st.mode == 0 {
                        crate::device::conditions::lease_did(&c.adb, &c.device, pushed, &path)?;
                    }
                }
                c.adb.push(&c.device, &path, 0o644, &mut file, sent, c.spec.deadline).await?;
                Ok(json!({"path": path, "byte_size": row.byte_size}))
            },
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_paths_are_confined() {
        for ok in ["/sdcard/a.txt", "/sdcard/Download/x y.png", "/data/local/tmp/t.apk", "/sdcard/.hidden"] {
            assert!(check_device_path(ok).is_ok(), "{ok}");
        }
        for bad in [
            "sdcard/a.txt",
            "/sdcard/../data/system/x",
            "/sdcard/./a",
            "/sdcard//a",
            "/sdcard/a\0b",
            "/sdcard\\a",
            "/data/data/com.x/db",
            "/sdcard/",
            "/sdcardx/a",
            "/system/bin/sh",
            "/sdcard/a\nb",
        ] {
            assert!(check_device_path(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn installer_failures_are_extracted() {
        assert_eq!(
            install_failure("Performing Streamed Install\nFailure [INSTALL_FAILED_INVALID_APK: not a zip]\n"),
            "INSTALL_FAILED_INVALID_APK: not a zip"
        );
        assert_eq!(install_failure("Error: Can't open file: /x\n"), "Error: Can't open file: /x");
        assert_eq!(install_failure(""), "pm install printed nothing");
    }
}

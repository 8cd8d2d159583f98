//! `android_screen_record` (issue 34 item 5): the phone's own `screenrecord` for `duration_s` seconds (1 ..= 180,
//! screenrecord's `kMaxTimeLimitSec`), the MP4 pulled over the sync protocol into the file cache and answered as a
//! one-time download like a screenshot.
//!
//! One call, not start/stop: the recording belongs to the call's future, so whatever ends the call (its end,
//! its deadline, `channel.close`, `auth.logout`, the socket gone, the connector's drain) ends the recording, and no
//! recording can outlive the lease or session that asked for it. It is an observation (no order slot): the agent's
//! taps and swipes on the same phone run while it records, which is what a recording is for.
//!
//! One at a time per phone (a second one while one runs is `device_busy`, saying when the first ends): a phone has
//! one display encoder to spare. The phone's file (`/data/local/tmp/xagent-rec-<random>.mp4`, `umask 077`) is
//! removed on every path by a spawned `pkill` + `rm -f` (`Remote`'s drop, as `pixels/parallel.rs` removes its temp
//! file): success, error, cancel, timeout. A connector killed mid-recording leaves the file behind; every recording
//! first sweeps `xagent-rec-*.mp4` files older than [`STALE_MIN`] minutes (longer than any recording lives).
//!
//! Bounded: the bit rate is fixed at [`BIT_RATE`] (180 s ≈ 45 MB at most; a still screen is far less), the pull
//! at [`MAX_BYTES`] and the file cache's own limits. The phone's refusals are its own words, printable and bounded
//! (`device::text::phone_text`); a phone without `screenrecord` (before Android 4.4) is told apart.

use std::collections::HashMap;
use std::future::Future;
use std::io::Write;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::args;
use super::device::tool;
use super::registry::{Tool, ToolSpec};
use crate::device::adb::AdbBackend;
use crate::device::DeviceKey;
use crate::files::{self, NewFile};
use crate::protocol::errors::{ErrorCode, ProtoError};

/// The shell user's own scratch directory, on every release (where captures write their temp files too).
const TEMP_DIR: &str = "/data/local/tmp";
/// screenrecord's own limit (`kMaxTimeLimitSec`, Android 4.4 – 14).
pub const MAX_SECONDS: u32 = 180;
/// `--bit-rate`: 2 Mbps (screenrecord's default is 20 Mbps, 450 MB for three minutes).
pub const BIT_RATE: u32 = 2_000_000;
/// The largest recording pulled.
pub const MAX_BYTES: u64 = 64 << 20;
/// Recordings older than this (minutes) are leftovers of a connector that was killed.
pub const STALE_MIN: u32 = 5;
/// How long screenrecord may take to start and finish its file beyond its time limit.
const GRACE: Duration = Duration::from_secs(15);
/// How long the clean-up may take before it is given up (the next recording's sweep catches what it missed).
const RM_DEADLINE: Duration = Duration::from_secs(5);

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct RecordArgs {
    /// Seconds (the phone's limit: 180)
    #[schemars(range(min = 1, max = 180))]
    duration_s: u32,
}

/// The phones recording now: when each recording ends.
#[derive(Default)]
struct Recording(Mutex<HashMap<DeviceKey, Instant>>);

/// A phone's place in [`Recording`], given up when the call ends whichever way.
struct Slot<'a> {
    book: &'a Recording,
    key: DeviceKey,
}

impl Recording {
    fn take(&self, key: &DeviceKey, seconds: u32) -> Result<Slot<'_>, ProtoError> {
        let mut m = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(ends) = m.get(key) {
            let left = ends.saturating_duration_since(Instant::now()).as_secs();
            return Err(ProtoError::new(
                ErrorCode::DeviceBusy,
                format!(
                    "a screen recording is already running on this phone (one at a time); it ends within {} s",
                    left + GRACE.as_secs()
                ),
            ));
        }
        m.insert(key.clone(), Instant::now() + Duration::from_secs(u64::from(seconds)));
        Ok(Slot { book: self, key: key.clone() })
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.book.0.lock().unwrap_or_else(|e| e.into_inner()).remove(&self.key);
    }
}

/// The phone's recording file, stopped and removed when dropped (success, error, or the call's future dropped:
/// cancelled). Spawned, not awaited: the agent's answer does not wait a round trip for housekeeping.
struct Remote {
    rm: Option<Pin<Box<dyn Future<Output = ()> + Send + 'static>>>,
}

/// The clean-up command of a recording's `file` named by its random `tag`: `pkill -f` matches its own shell's
/// command line too, so the pattern brackets one character (`[x]y` matches `xy`, not itself).
fn cleanup_command(file: &str, tag: &str) -> String {
    let (first, rest) = tag.split_at(1);
    format!("pkill -f 'xagent-rec-[{first}]{rest}' 2>/dev/null; rm -f {file}")
}

impl Remote {
    fn new(adb: &AdbBackend, key: &DeviceKey, file: &str, tag: &str) -> Remote {
        let rm = adb.detached_exec(key, cleanup_command(file, tag), RM_DEADLINE);
        let file = file.to_owned();
        Remote {
            rm: Some(Box::pin(async move {
                if let Err(e) = rm.await {
                    tracing::debug!(file, error = %e, "could not remove a recording (the next recording sweeps it)");
                }
            })),
        }
    }
}

impl Drop for Remote {
    fn drop(&mut self) {
        if let (Some(rm), Ok(rt)) = (self.rm.take(), tokio::runtime::Handle::try_current()) {
            rt.spawn(rm);
        }
    }
}

/// The screenrecord command line: sweep, then record privately.
fn command(file: &str, seconds: u32) -> String {
    format!(
        "find /data/local/tmp -maxdepth 1 -name 'xagent-rec-*.mp4' -mmin +{STALE_MIN} -delete 2>/dev/null; \
         umask 077; screenrecord --time-limit {seconds} --bit-rate {BIT_RATE} {file}"
    )
}

/// What a failed screenrecord means, in the phone's words.
fn refused(code: i32, stderr: &str, stdout: &str) -> ProtoError {
    let said = if stderr.trim().is_empty() { stdout.trim() } else { stderr.trim() };
    let said = crate::device::text::phone_text(said, 300);
    if code == 127 || said.contains("not found") {
        return ProtoError::new(
            ErrorCode::ToolInvokeFailed,
            format!("this phone has no screenrecord (Android 4.4 and later have it): {said}"),
        );
    }
    ProtoError::new(ErrorCode::ToolInvokeFailed, format!("screenrecord failed (exit {code}): {said}"))
}

pub fn tools(adb: &Arc<AdbBackend>) -> Vec<Arc<dyn Tool>> {
    let book = Arc::new(Recording::default());
    vec![tool(
        ToolSpec {
            id: "android_screen_record",
            title: "Record the screen",
            description: "Record the screen for duration_s; other calls run meanwhile. Answers at the end with \
                          the MP4 (one-time download). One per phone at a time.",
            input: args::schema::<RecordArgs>(),
            output: json!({"type": "object", "properties": {
                "files": {"type": "array", "items": files::file_item_schema()},
                "duration_s": {"type": "integer"}}}),
            side_effect: false,
            settles: false,
            deadline: Duration::from_secs(u64::from(MAX_SECONDS)) + GRACE + Duration::from_secs(60),
        },
        adb,
        move |c| {
            let book = book.clone();
            async move {
                let seconds = c.parse::<RecordArgs>()?.duration_s;
                let _slot = book.take(&c.device, seconds)?;
                let writer = c.files.writer(MAX_BYTES).map_err(|e| e.into_proto("the recording"))?;
                let cap = writer.cap();
                let tag = crate::protocol::ids::random_hex(12);
                let file = format!("{TEMP_DIR}/xagent-rec-{tag}.mp4");
                let _removed_when_dropped = Remote::new(&c.adb, &c.device, &file, &tag);
                (c.call.progress)(&format!("recording for {seconds} s"), Some(0.0));
                let limit = Duration::from_secs(u64::from(seconds)) + GRACE;
                let out = c.adb.shell(&c.device, &command(&file, seconds), false, limit).await?;
                if out.code != 0 {
                    return Err(refused(out.code, &out.stderr, &out.stdout));
                }
                let st = c.adb.stat(&c.device, &file, c.spec.deadline).await?;
                if !st.is_file() || st.size == 0 {
                    return Err(ProtoError::new(
                        ErrorCode::ToolInvokeFailed,
                        "screenrecord ended without a video (some phones refuse to record a secure window)",
                    ));
                }
                if u64::from(st.size) > cap {
                    return Err(ProtoError::new(
                        ErrorCode::ToolInvokeFailed,
                        format!("the recording is {} bytes; at most {cap} are fetched", st.size),
                    ));
                }
                (c.call.progress)("fetching the recording", Some(0.9));
                let mut writer = writer;
                let mut head = Vec::with_capacity(8);
                let sink = |chunk: &[u8]| {
                    if head.len() < 8 {
                        head.extend(chunk.iter().take(8 - head.len()));
                    }
                    writer.write_all(chunk).map_err(|e| {
                        if e.kind() == std::io::ErrorKind::FileTooLarge {
                            ProtoError::new(ErrorCode::ToolInvokeFailed, format!("the recording grew past {cap} bytes"))
                        } else {
                            ProtoError::new(ErrorCode::Internal, format!("cannot write the cache file: {e}"))
                        }
                    })
                };
                c.adb.pull(&c.device, &file, sink, c.spec.deadline).await?;
                // An MP4 begins with its ftyp box; anything else is not what was asked for.
                if head.get(4..8) != Some(b"ftyp".as_slice()) {
                    return Err(ProtoError::new(
                        ErrorCode::ToolInvokeFailed,
                        "the phone's recording is not an MP4 file (no ftyp box at its start)",
                    ));
                }
                let meta = NewFile {
                    channel_id: c.call.channel_id.clone(),
                    mime: "video/mp4".to_owned(),
                    filename: format!("screen-record-{}.mp4", crate::protocol::now_ms()),
                };
                let cache = c.files.clone();
                let row = tokio::task::spawn_blocking(move || cache.commit_sync(writer, meta))
                    .await
                    .map_err(|_| ProtoError::new(ErrorCode::Internal, "storing the recording failed unexpectedly"))?
                    .map_err(|e| e.into_proto("the recording"))?;
                Ok(json!({"files": [files::describe(&row)], "duration_s": seconds}))
            }
        },
    )]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cleanup_does_not_match_its_own_shell() {
        let c = cleanup_command("/data/local/tmp/xagent-rec-abc123.mp4", "abc123");
        assert_eq!(c, "pkill -f 'xagent-rec-[a]bc123' 2>/dev/null; rm -f /data/local/tmp/xagent-rec-abc123.mp4");
        assert!(!c.contains("xagent-rec-abc123'"), "the pattern would match the shell running it");
    }

    #[test]
    fn one_recording_per_phone() {
        let book = Recording::default();
        let k = DeviceKey { server: "s".into(), serial: "A".into() };
        let slot = book.take(&k, 10).unwrap();
        let e = book.take(&k, 10).err().unwrap();
        assert_eq!(e.code, ErrorCode::DeviceBusy);
        drop(slot);
        assert!(book.take(&k, 10).is_ok());
    }
}

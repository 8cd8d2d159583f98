//! The resident phone helper, spoken natively: what `CLASSPATH=/data/local/tmp/xagent-helper-<hash>.dex
//! app_process / xagent.Helper` does on a real phone (the dex in `phone-helper/`), here acting on the simulated
//! phone's UI model exactly as the shell path's `input` does (`commands::tap`, `swipe`, `key`, `type_text`).
//!
//! The wire protocol is `device-profile/phone-helper.md` (protocol 1; this is helper version 3, with `tree`,
//! `idle` and the clipboard verbs): one request line on stdin, one reply line on stdout, the greeting first. It runs only when the host has
//! pushed a dex under that name (it must start with the dex magic: `app_process` loads nothing else), on a
//! `shell,v2` stream, and ends at the end of stdin (exit 0), when the host drops the stream, or when `kill` ends
//! its process (exit 137, as adbd reports a SIGKILL). `ps -A -o PID,ARGS` lists it, so a host can find a stale one.
//!
//! [`Mode`] makes it fail the ways real phones do, so every fallback of the host can be tested: no start at all,
//! no injection API, injection refused (Xiaomi's "USB debugging (Security settings)"), UiAutomation taken by
//! another tool, a clipboard that cannot be read back. What it costs a phone is [`super::PhoneCosts`]'s
//! `helper_*` figures (zero unless the cost profile is on); gestures and idle waits take their real time always.

use std::sync::Arc;
use std::time::Duration;

use super::device::{Device, Process};
use super::gates::{apply_fault, stall_point};
use super::shared::Shared;
use super::shell_v2::{packet, PacketReader, ID_CLOSE_STDIN, ID_EXIT, ID_STDERR, ID_STDIN, ID_STDOUT};
use super::state::InputEvent;
use super::stream::{StreamIn, StreamOut};

/// How the helper behaves on this phone (defined with the phone's configuration, `state.rs`).
pub use super::state::HelperMode as Mode;

/// The protocol version and helper version the greeting carries.
pub const PROTOCOL: u32 = 1;
pub const VERSION: u32 = 4;

/// Longest request line (without its `\n`).
const MAX_LINE: usize = 16384;

/// What `ps` shows for a running helper (the class path travels in the environment, not in the arguments).
pub const ARGS: &str = "app_process / xagent.Helper";

/// The dex a helper command line names, when the line is the helper's start command (`app_process` passes what
/// follows the class to its `main`, which the helper ignores: the host's `--owner=` mark, which `ps` shows).
pub fn command_dex(cmd: &str) -> Option<&str> {
    let rest = cmd.trim().strip_prefix("CLASSPATH=")?;
    let (path, tail) = rest.split_once(' ')?;
    let name = path.strip_prefix("/data/local/tmp/xagent-helper-")?.strip_suffix(".dex")?;
    let tail = tail.trim();
    let args_ok = tail == ARGS || tail.strip_prefix(ARGS).is_some_and(|t| t.starts_with(' '));
    (args_ok && !name.is_empty() && !name.contains('/')).then_some(path)
}

/// Runs the helper on one `shell,v2` stream until its end (see the module docs).
pub(crate) async fn serve(shared: &Arc<Shared>, cmd: &str, dex: &str, input: &mut StreamIn, out: &mut StreamOut) {
    shared.device.lock().unwrap_or_else(|e| e.into_inner()).record_command(cmd);
    if !stall_point(shared, cmd.trim_start(), input).await || !apply_fault(shared, input, out).await {
        return;
    }
    let (loads, sdk) = {
        let dev = shared.device.lock().unwrap_or_else(|e| e.into_inner());
        (dev.fs.read(dex).is_ok_and(|b| b.starts_with(b"dex\n")), dev.cfg.sdk)
    };
    // The dex is version 038 (API 26): older runtimes refuse it, as they refuse a file that is no dex at all.
    if !loads || sdk < 26 || shared.cfg.helper == Mode::NoStart {
        let mut b = packet(ID_STDERR, b"Error: Could not find class 'xagent.Helper'\n");
        b.extend(packet(ID_EXIT, &[1]));
        let _ = out.write(&b).await;
        return;
    }
    let kill = Arc::new(tokio::sync::Notify::new());
    let pid = {
        let mut dev = shared.device.lock().unwrap_or_else(|e| e.into_inner());
        dev.next_pid += 1;
        let pid = dev.next_pid;
        // What `ps` shows: the command line after the class path (in the environment, not the arguments).
        let args = cmd.trim().split_once(' ').map_or(ARGS, |(_, a)| a.trim()).to_owned();
        dev.processes.push(Process { pid, args, kill: kill.clone() });
        pid
    };
    let status = run(shared, input, out, &kill).await;
    shared.device.lock().unwrap_or_else(|e| e.into_inner()).processes.retain(|p| p.pid != pid);
    if let Some(code) = status {
        let _ = out.write(&packet(ID_EXIT, &[code])).await;
    }
}

/// The helper's life after the dex loaded: its exit status, or `None` when the host went away first.
async fn run(
    shared: &Arc<Shared>,
    input: &mut StreamIn,
    out: &mut StreamOut,
    kill: &tokio::sync::Notify,
) -> Option<u8> {
    const KILLED: u8 = 137;
    let start = shared.cfg.costs.helper_start;
    if !start.is_zero() {
        tokio::select! {
            _ = tokio::time::sleep(start) => {}
            _ = kill.notified() => return Some(KILLED),
            _ = input.wait_closed() => return None,
        }
    }
    let greeting = format!("* hello {}\n", hello(shared));
    if out.write(&packet(ID_STDOUT, greeting.as_bytes())).await.is_err() {
        return None;
    }
    let mut pr = PacketReader::default();
    let mut line: Vec<u8> = Vec::new();
    let mut too_long = false;
    loop {
        let chunk = tokio::select! {
            c = input.recv() => c?,
            _ = kill.notified() => return Some(KILLED),
        };
        pr.push(&chunk);
        let mut eof = false;
        let mut typed = Vec::new();
        while let Some((id, d)) = pr.next_packet() {
            match id {
                ID_STDIN => typed.extend_from_slice(&d),
                ID_CLOSE_STDIN => eof = true,
                _ => {}
            }
        }
        for b in typed {
            if b != b'\n' {
                if line.len() < MAX_LINE + 1 {
                    line.push(b);
                } else {
                    too_long = true;
                }
                continue;
            }
            let req = std::mem::take(&mut line);
            let (reply, wait) = if std::mem::take(&mut too_long) || req.len() > MAX_LINE {
                ("- err too_long request line longer than 16384 bytes".to_owned(), Duration::ZERO)
            } else {
                let (reply, wait) = handle(shared, &req);
                let input = req
                    .split(|b| *b == b' ')
                    .nth(1)
                    .is_some_and(|v| matches!(v, b"tap" | b"swipe" | b"press" | b"gesture" | b"key" | b"text"));
                let late = shared.cfg.helper == Mode::Late && input;
                let late = if late { super::state::LATE_REPLY } else { Duration::ZERO };
                (reply, wait + late)
            };
            if !wait.is_zero() {
                tokio::select! {
                    _ = tokio::time::sleep(wait) => {}
                    _ = kill.notified() => return Some(KILLED),
                }
            }
            if out.write(&packet(ID_STDOUT, format!("{reply}\n").as_bytes())).await.is_err() {
                return None;
            }
        }
        // A last line without `\n` at the end of input is not a request.
        if eof {
            return Some(0);
        }
    }
}

/// Each operation's state: `ok` or why it is unavailable.
fn states(shared: &Shared) -> [(&'static str, &'static str); 9] {
    let inject = if shared.cfg.helper == Mode::Unavailable { "no_inject_method" } else { "ok" };
    let ui = if shared.cfg.helper == Mode::Unavailable { "no_uiautomation" } else { "ok" };
    [
        ("touch", inject),
        ("key", inject),
        ("text", if shared.cfg.helper == Mode::NoKeyMap { "no_key_map" } else { inject }),
        ("paste", inject),
        ("screen", "ok"),
        ("tree", ui),
        ("idle", ui),
        // The clipboard service is there whatever happened to injection.
        ("clip", "ok"),
        ("frame", if shared.cfg.helper == Mode::Unavailable { "no_screenshot_api" } else { "ok" }),
    ]
}

/// The greeting's payload (also `hello`'s).
fn hello(shared: &Shared) -> String {
    let ops: Vec<String> = states(shared).iter().map(|(op, st)| format!("{op}={st}")).collect();
    format!("{PROTOCOL} {VERSION} {} {}", shared.cfg.sdk, ops.join(" "))
}

fn valid_id(id: &[u8]) -> bool {
    (1..=16).contains(&id.len()) && id.iter().all(|b| b.is_ascii_alphanumeric() || *b == b'_' || *b == b'-')
}

const WRONG_ARGS: &str = "bad_request wrong number of arguments";
const BAD_NUMBER: &str = "bad_request an argument is not a number in its range";
const DENIED: &str = "denied SecurityException: the system refused the shell user";

/// A decimal integer within `lo..=hi`.
fn num(s: &str, lo: i64, hi: i64) -> Result<i64, &'static str> {
    s.parse::<i64>().ok().filter(|n| (lo..=hi).contains(n)).ok_or(BAD_NUMBER)
}

/// One request line → its reply line and how long the phone takes before sending it.
fn handle(shared: &Arc<Shared>, req: &[u8]) -> (String, Duration) {
    if req.iter().any(|b| !(0x20..=0x7e).contains(b)) {
        return ("- err bad_request a request is printable ASCII only".to_owned(), Duration::ZERO);
    }
    let text = String::from_utf8_lossy(req);
    let mut fields = text.split(' ');
    let id = fields.next().unwrap_or("");
    if !valid_id(id.as_bytes()) {
        return ("- err bad_id an id is 1 to 16 of A-Z a-z 0-9 _ -".to_owned(), Duration::ZERO);
    }
    let Some(verb) = fields.next() else {
        return (format!("{id} err bad_request missing verb"), Duration::ZERO);
    };
    let args: Vec<&str> = fields.collect();
    match verb_reply(shared, verb, &args) {
        Ok((payload, wait)) if payload.is_empty() => (format!("{id} ok"), wait),
        Ok((payload, wait)) => (format!("{id} ok {payload}"), wait),
        Err(e) => (format!("{id} err {e}"), Duration::ZERO),
    }
}

type Answer = Result<(String, Duration), String>;

fn verb_reply(shared: &Arc<Shared>, verb: &str, args: &[&str]) -> Answer {
    let costs = shared.cfg.costs;
    let count = |n: usize| if args.len() == n { Ok(()) } else { Err(WRONG_ARGS.to_owned()) };
    let injecting = matches!(verb, "tap" | "swipe" | "press" | "gesture" | "key" | "text");
    match verb {
        "hello" => {
            count(0)?;
            return Ok((hello(shared), Duration::ZERO));
        }
        "ping" => {
            count(0)?;
            return Ok(("pong".to_owned(), Duration::ZERO));
        }
        "tree" | "idle" | "screen" | "frame" => {}
        "clip" | "setclip" | "clearclip" => {
            let mut dev = shared.device.lock().unwrap_or_else(|e| e.into_inner());
            return clip_reply(shared, &mut dev, verb, args).map(|p| (p, costs.helper_call));
        }
        _ if injecting => {}
        _ => return Err("unknown_verb unknown verb".to_owned()),
    }
    let mut dev = shared.device.lock().unwrap_or_else(|e| e.into_inner());
    match verb {
        "tap" => {
            count(2)?;
            let (x, y) = (coord(args[0])?, coord(args[1])?);
            refuse(shared, "touch")?;
            super::commands::tap(&mut dev, x, y);
            Ok((String::new(), costs.helper_call))
        }
        "swipe" => {
            count(5)?;
            let p = [coord(args[0])?, coord(args[1])?, coord(args[2])?, coord(args[3])?];
            let ms = num(args[4], 0, 60_000)? as u32;
            refuse(shared, "touch")?;
            super::commands::swipe(&mut dev, p, ms);
            Ok((String::new(), costs.helper_call + Duration::from_millis(u64::from(ms))))
        }
        "press" => {
            count(3)?;
            let (x, y) = (coord(args[0])?, coord(args[1])?);
            let ms = num(args[2], 0, 60_000)? as u32;
            refuse(shared, "touch")?;
            if ms == 0 {
                super::commands::tap(&mut dev, x, y);
            } else {
                super::commands::swipe(&mut dev, [x, y, x, y], ms);
            }
            Ok((String::new(), costs.helper_call + Duration::from_millis(u64::from(ms))))
        }
        "gesture" => {
            let ms = args.first().map(|a| num(a, 0, 60_000)).transpose()?;
            let paths = args.get(1..).unwrap_or(&[]);
            let (Some(ms), 1..=10) = (ms, paths.len()) else {
                return Err("bad_request gesture takes a duration and 1 to 10 paths".to_owned());
            };
            const BAD_PATH: &str = "bad_request a path is 1 to 64 x,y points, the same count for every pointer";
            let mut pointers: Vec<Vec<i32>> = Vec::new();
            for p in paths {
                let nums = p.split(',').map(coord).collect::<Result<Vec<i32>, String>>();
                let nums = nums.map_err(|e| if p.split(',').any(str::is_empty) { BAD_PATH.to_owned() } else { e })?;
                if nums.len() % 2 != 0 || !(2..=128).contains(&nums.len()) {
                    return Err(BAD_PATH.to_owned());
                }
                pointers.push(nums);
            }
            if pointers.iter().any(|p| p.len() != pointers[0].len()) {
                return Err(BAD_PATH.to_owned());
            }
            refuse(shared, "touch")?;
            let pointers: Vec<Vec<(i32, i32)>> =
                pointers.iter().map(|p| p.chunks(2).map(|xy| (xy[0], xy[1])).collect()).collect();
            // Recorded as it arrived (every pointer's points), so a test sees what a phone would have been sent.
            dev.record_event(InputEvent::Gesture { duration_ms: ms as u32, pointers: pointers.clone() });
            let fingers = pointers.len();
            dev.log('D', "InputDispatcher", &format!("Delivering a {fingers}-pointer gesture {ms}ms"));
            // The simulated UI knows single touches: one finger's path scrolls as a swipe does; more fingers
            // (pinch, rotate) change nothing it models.
            if let [p] = pointers.as_slice() {
                let ((x1, y1), (x2, y2)) = (p[0], p[p.len() - 1]);
                dev.ui.swipe(x1, y1, x2, y2);
            }
            Ok((String::new(), costs.helper_call + Duration::from_millis(ms as u64)))
        }
        "key" => {
            count(3)?;
            let code = num(args[0], 1, 999)?;
            let times = num(args[1], 1, 50)?;
            let hold = num(args[2], 0, 10_000)? as u64;
            refuse(shared, "key")?;
            let name = super::commands::keycode_name(&code.to_string()).unwrap_or_else(|| format!("KEYCODE_{code}"));
            for _ in 0..times {
                super::commands::key(&mut dev, &name);
            }
            Ok((String::new(), costs.helper_call + Duration::from_millis(hold * times as u64)))
        }
        "text" => {
            count(1)?;
            let bytes = crate::base64::decode(args[0]).ok_or("bad_request text is not base64")?;
            let text = String::from_utf8_lossy(&bytes).into_owned();
            // Without the virtual key map (`no_key_map`) ASCII goes through the clipboard too.
            let keys = text.bytes().all(|b| (0x20..=0x7e).contains(&b)) && shared.cfg.helper != Mode::NoKeyMap;
            refuse(shared, if keys { "text" } else { "paste" })?;
            if keys {
                let shifted = text.chars().filter(|c| c.is_ascii_uppercase() || "~!@#$%^&*()_+{}|:\"<>?".contains(*c));
                let events = 2 * (text.len() + shifted.count());
                if !text.is_empty() {
                    super::commands::type_text(&mut dev, &text);
                }
                return Ok((format!("keys {events}"), costs.helper_call));
            }
            // The clipboard as com.android.shell, KEYCODE_PASTE into the focused field, the previous clip back.
            let previous = dev.clipboard.replace(text.clone());
            let pasted = match (&previous, shared.cfg.helper) {
                (Some(p), Mode::StalePaste) => p.clone(),
                _ => text.clone(),
            };
            super::commands::type_text(&mut dev, &pasted);
            let how = if shared.cfg.helper == Mode::ClipUnreadable {
                "not_restored"
            } else if let Some(p) = previous {
                dev.clipboard = Some(p);
                "restored"
            } else if shared.cfg.sdk >= 28 {
                // clearPrimaryClip exists from Android 9.
                dev.clipboard = None;
                "cleared"
            } else {
                // Android 8's IClipboard has no clearPrimaryClip (AOSP api26 ClipboardService): the helper replaces
                // ours with an empty clip, as `clearclip` does there (helper D8).
                dev.clipboard = Some(String::new());
                "cleared"
            };
            Ok((format!("paste {how}"), costs.helper_call))
        }
        "screen" => {
            count(0)?;
            let ui = &dev.ui;
            let (w, h) = ui.logical_size();
            let b = |v: bool| u8::from(v);
            let secure = ui.lock == super::ui::LockMode::Secure;
            Ok((
                format!(
                    "interactive={} locked={} secure={} rotation={} width={w} height={h}",
                    b(ui.screen_on),
                    b(ui.keyguard_showing),
                    b(secure),
                    ui.rotation % 4
                ),
                costs.helper_call,
            ))
        }
        "tree" => {
            count(0)?;
            ui_ready(shared)?;
            // No idle wait: the tree as it is now, animating or not.
            let xml = dev.ui.tree_xml();
            let cost = costs.helper_tree + costs.helper_tree_per_kb.mul_f64(xml.len() as f64 / 1024.0);
            Ok((format!("xml {}", crate::base64::encode(xml.as_bytes())), cost))
        }
        "idle" => {
            count(2)?;
            let quiet = num(args[0], 0, 10_000)? as u64;
            let timeout = num(args[1], 0, 60_000)? as u64;
            ui_ready(shared)?;
            // Accessibility events flow while something moves: forever on a screen that never idles or ticks,
            // until its end for a transition.
            let busy_for = if dev.ui.never_idle || dev.ui.ticking.is_some() {
                None
            } else {
                Some(dev.ui.animation_left().map_or(0, |d| d.as_millis() as u64))
            };
            match busy_for.map(|b| b + quiet).filter(|w| *w <= timeout) {
                Some(waited) => Ok((format!("idle {waited}"), Duration::from_millis(waited))),
                None => Ok((format!("busy {timeout}"), Duration::from_millis(timeout))),
            }
        }
        "frame" => {
            count(2)?;
            let gw = num(args[0], 8, 64)? as u32;
            let gh = num(args[1], 8, 64)? as u32;
            if shared.cfg.helper == Mode::Unavailable {
                return Err("unavailable no_screenshot_api".to_owned());
            }
            let (w, h) = dev.ui.logical_size();
            let cells = frame_cells(&dev.ui.render_rgba(), w, h, gw, gh);
            let cost = costs.helper_frame + costs.helper_frame_per_megapixel.mul_f64(f64::from(w) * f64::from(h) / 1e6);
            Ok((format!("frame {w} {h} {gw} {gh} {}", crate::base64::encode(&cells)), cost))
        }
        _ => Err("unknown_verb unknown verb".to_owned()),
    }
}

/// `frame`'s cells as `phone-helper/smali/xagent/Frame.smali` computes them (device-profile/phone-helper.md §4):
/// pixel (x, y) of the `w` × `h` RGBA picture goes to cell (x·gw/w, y·gh/h); each cell is the rounded mean
/// (`(sum + n/2) / n`) of its pixels' R, G and B, row by row.
fn frame_cells(rgba: &[u8], w: u32, h: u32, gw: u32, gh: u32) -> Vec<u8> {
    let (w, h, gw, gh) = (w as usize, h as usize, gw as usize, gh as usize);
    let mut sums = vec![[0u64; 4]; gw * gh];
    let col: Vec<usize> = (0..w).map(|x| x * gw / w).collect();
    for (y, row) in rgba.chunks_exact(w * 4).take(h).enumerate() {
        let base = y * gh / h * gw;
        for (x, p) in row.chunks_exact(4).enumerate() {
            let s = &mut sums[base + col[x]];
            s[0] += u64::from(p[0]);
            s[1] += u64::from(p[1]);
            s[2] += u64::from(p[2]);
            s[3] += 1;
        }
    }
    let mut out = Vec::with_capacity(gw * gh * 3);
    for [r, g, b, n] in sums {
        let n = n.max(1);
        out.extend([r, g, b].map(|v| ((v + n / 2) / n) as u8));
    }
    out
}

/// The clipboard verbs on the simulated clipboard (`Device::clipboard`), as `phone-helper/smali/xagent/Clip.smali`
/// answers them: the first 2048 UTF-16 units of a longer clip (`cut`, one less rather than half a surrogate pair),
/// an empty clip on Android 8 for `clearclip` (no clearPrimaryClip there), a refused read when background reads are
/// refused ([`Mode::ClipUnreadable`]).
fn clip_reply(shared: &Shared, dev: &mut Device, verb: &str, args: &[&str]) -> Result<String, String> {
    let want = if verb == "setclip" { 1 } else { 0 };
    if args.len() != want {
        return Err(WRONG_ARGS.to_owned());
    }
    match verb {
        "clip" => {
            if shared.cfg.helper == Mode::ClipUnreadable {
                return Err(DENIED.to_owned());
            }
            let Some(text) = dev.clipboard.as_deref() else { return Ok("none".to_owned()) };
            let units: Vec<u16> = text.encode_utf16().collect();
            let (units, word) = if units.len() > 2048 {
                let n = if (0xD800..0xDC00).contains(&units[2047]) { 2047 } else { 2048 };
                (&units[..n], "cut")
            } else {
                (&units[..], "clip")
            };
            let b64 = crate::base64::encode(String::from_utf16_lossy(units).as_bytes());
            Ok(if b64.is_empty() { word.to_owned() } else { format!("{word} {b64}") })
        }
        "setclip" => {
            let bytes = crate::base64::decode(args[0]).ok_or("bad_request text is not base64")?;
            dev.clipboard = Some(String::from_utf8_lossy(&bytes).into_owned());
            Ok(String::new())
        }
        _ => {
            dev.clipboard = if shared.cfg.sdk >= 28 { None } else { Some(String::new()) };
            Ok(String::new())
        }
    }
}

fn coord(s: &str) -> Result<i32, String> {
    num(s, 0, 32767).map(|n| n as i32).map_err(str::to_owned)
}

/// An injecting verb's refusal: the operation is unavailable on this phone, or the system denies it.
fn refuse(shared: &Shared, op: &str) -> Result<(), String> {
    let state = states(shared).iter().find(|(o, _)| *o == op).map_or("ok", |(_, s)| *s);
    if state != "ok" {
        return Err(format!("unavailable {state}"));
    }
    if shared.cfg.helper == Mode::Denied {
        return Err(DENIED.to_owned());
    }
    Ok(())
}

/// Whether a UiAutomation can be had now (tree, idle).
fn ui_ready(shared: &Shared) -> Result<(), String> {
    match shared.cfg.helper {
        Mode::Unavailable => Err("unavailable no_uiautomation".to_owned()),
        Mode::TreeBusy => Err("busy uiautomation_in_use".to_owned()),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The simulator's `frame` arithmetic is the bytecode's: the stub picture of the JVM cases (a ramp, and 20 × 30
    /// pixels that do not divide into 8 × 8 cells), averaged here, gives the replies those cases expect of the real
    /// dex (`tests/fixtures/phone-helper/34-frame.case`, `36-frame-pie.case`); in landscape the dex answers the
    /// display upright at its logical size, as the simulator does (helper D11: cases 51, 52 on 8.x, 54 on 10).
    #[test]
    fn frame_cells_agree_with_the_helpers_cases() {
        // tests/phone_helper/stubs/android/graphics/Bitmap.java's pattern
        let ramp = |w: u32, h: u32| -> Vec<u8> {
            let mut v = Vec::new();
            for y in 0..h {
                for x in 0..w {
                    v.extend([((x * 16) & 0xff) as u8, ((y * 8) & 0xff) as u8, (((x + y) * 7) & 0xff) as u8, 255]);
                }
            }
            v
        };
        let case = |name: &str| {
            let path = format!("{}/tests/fixtures/phone-helper/{name}", env!("CARGO_MANIFEST_DIR"));
            let text = std::fs::read_to_string(path).unwrap();
            let reply = text.lines().find_map(|l| l.strip_prefix("< f1 ok frame ")).unwrap().to_owned();
            reply.rsplit(' ').next().unwrap().to_owned()
        };
        assert_eq!(crate::base64::encode(&frame_cells(&ramp(16, 32), 16, 32, 8, 16)), case("34-frame.case"));
        assert_eq!(crate::base64::encode(&frame_cells(&ramp(20, 30), 20, 30, 8, 8)), case("36-frame-pie.case"));
        assert_eq!(
            crate::base64::encode(&frame_cells(&ramp(32, 16), 32, 16, 8, 8)),
            case("51-frame-oreo-landscape.case")
        );
        let turned = case("52-frame-oreo-landscape-270.case");
        assert_eq!(crate::base64::encode(&frame_cells(&ramp(32, 16), 32, 16, 16, 8)), turned);
        assert_eq!(crate::base64::encode(&frame_cells(&ramp(32, 16), 32, 16, 8, 8)), case("54-frame-q-landscape.case"));
    }
}

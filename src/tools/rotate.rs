//! `android_rotate` (issue 49 item 6): the display's orientation through the two settings the window manager reads
//! (AOSP `DisplayRotation`): `accelerometer_rotation` 0 locks the display to `user_rotation` (0–3 quarter turns from
//! the natural orientation), 1 lets the sensor decide (and `user_rotation` is then ignored). Both old values are
//! recorded as lease conditions before anything changes (`device::conditions::lease_sets`): the release puts them
//! back. An app that fixes its own orientation keeps it whatever the settings say: the result reports the
//! rotation the display reached, `applied: false` when it is not the one asked for.

use std::sync::Arc;
use std::time::{Duration, Instant};

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

use super::args;
use super::context::Ctx;
use super::device::tool;
use super::registry::{Tool, ToolSpec};
use crate::device::adb::AdbBackend;
use crate::protocol::errors::ProtoError;

/// The settings a rotation changes (and the release restores).
const SETTINGS: &[(&str, &str)] = &[("system", "accelerometer_rotation"), ("system", "user_rotation")];
/// How long the display gets to reach the rotation asked for (the window manager turns it within a frame or two; a
/// loaded phone's animation takes longer).
const TURN: Duration = Duration::from_secs(3);

#[derive(Deserialize, JsonSchema, Clone, Copy, PartialEq, Eq, Debug)]
#[serde(rename_all = "snake_case")]
enum Orientation {
    Portrait,
    Landscape,
    ReversePortrait,
    ReverseLandscape,
    Auto,
}

impl Orientation {
    /// Quarter turns of `user_rotation` (`None`: auto-rotate).
    fn quarter_turns(self) -> Option<u8> {
        match self {
            Orientation::Portrait => Some(0),
            Orientation::Landscape => Some(1),
            Orientation::ReversePortrait => Some(2),
            Orientation::ReverseLandscape => Some(3),
            Orientation::Auto => None,
        }
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct RotateArgs {
    orientation: Orientation,
}

fn name_of(rotation: u8) -> &'static str {
    ["portrait", "landscape", "reverse_portrait", "reverse_landscape"][usize::from(rotation % 4)]
}

pub fn tools(adb: &Arc<AdbBackend>) -> Vec<Arc<dyn Tool>> {
    vec![tool(
        ToolSpec {
            id: "android_rotate",
            title: "Rotate the screen",
            description: "Turn the display (auto: follow the sensor); restored at release. applied: false when \
                          the app fixes its orientation.",
            input: args::schema::<RotateArgs>(),
            output: json!({"type": "object", "properties": {
                "orientation": {"type": "string"}, "rotation_degrees": {"type": "integer"},
                "auto_rotate": {"type": "boolean"}, "applied": {"type": "boolean"},
                "width": {"type": "integer"}, "height": {"type": "integer"}, "note": {"type": "string"}}}),
            side_effect: true,
            settles: true,
            deadline: Duration::from_secs(15),
        },
        adb,
        |c| async move { rotate(c).await },
    )]
}

async fn rotate(c: Ctx) -> Result<Value, ProtoError> {
    let a: RotateArgs = c.parse()?;
    let d = c.spec.deadline;
    // Recorded before the phone changes: whatever happens next, the release can put the old values back.
    crate::device::conditions::lease_sets(&c.adb, &c.device, SETTINGS, d).await?;
    let turns = a.orientation.quarter_turns();
    let cmd = match turns {
        Some(r) => format!("settings put system accelerometer_rotation 0 && settings put system user_rotation {r}"),
        None => "settings put system accelerometer_rotation 1".to_owned(),
    };
    c.adb.shell_ok(&c.device, &cmd, true, d).await?;
    // The rotation as the display has it (never the cached one): until it is the one asked for, or TURN passed.
    let started = Instant::now();
    let rotation = loop {
        let r = c.adb.rotation_now(&c.device).await?;
        if turns.is_none_or(|t| t == r) || started.elapsed() >= TURN {
            break r;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    c.adb.forget_screen_state(&c.device);
    let (w, h) = c.adb.screen_size(&c.device).await?;
    let (w, h) = if rotation % 2 == 1 { (h, w) } else { (w, h) };
    let applied = turns.is_none_or(|t| t == rotation);
    let mut out = json!({
        "orientation": name_of(rotation),
        "rotation_degrees": u16::from(rotation % 4) * 90,
        "auto_rotate": turns.is_none(),
        "applied": applied,
        "width": w,
        "height": h,
    });
    if !applied {
        out["note"] = json!(format!(
            "the display stayed {} for {} ms: the app in front fixes its own orientation",
            name_of(rotation),
            TURN.as_millis()
        ));
    }
    Ok(out)
}

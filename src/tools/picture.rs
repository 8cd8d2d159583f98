//! What the picture tools (`android_screenshot`, `android_observe`) share: the verdict on what a frame shows
//! (`frame`, `frame_blank`, `hint`), the screen state read for it, and the picture arguments' bounds and defaults.

use std::time::Duration;

use super::context::Ctx;
use crate::device::formats;

/// What a captured frame shows, for a result's `frame`: the picture, or why it shows nothing. Peers hand an agent
/// a black picture without a word (peers-2026 §2.8); a wrong word is worse, so each verdict rests on a read of
/// the phone, not on the pixels alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shows {
    /// The picture shows the screen.
    Ok,
    /// Black because the screen is off.
    ScreenOff,
    /// Black because the focused window has `FLAG_SECURE` (SurfaceFlinger leaves it out of captures); the
    /// accessibility tree is not affected, so the elements are the way to see it.
    SecureWindow,
    /// One uniform colour while the screen is on and no secure window is known: a splash or loading screen, an
    /// app that draws nothing yet, or a failed capture.
    Blank([u8; 3]),
}

impl Shows {
    pub fn as_str(self) -> &'static str {
        match self {
            Shows::Ok => "ok",
            Shows::ScreenOff => "screen_off",
            Shows::SecureWindow => "secure_window",
            Shows::Blank(_) => "blank",
        }
    }

    /// `frame_blank` (kept beside `frame` for agents written against it): a uniform frame of a lit screen.
    pub fn blank(self) -> bool {
        matches!(self, Shows::SecureWindow | Shows::Blank(_))
    }

    /// What the agent can do about it, when anything.
    pub fn hint(self) -> Option<String> {
        match self {
            Shows::Ok => None,
            Shows::ScreenOff => {
                Some("the screen is off, so the picture is black: input tools wake it, or call android_wake".into())
            }
            Shows::SecureWindow => Some(
                "the picture is black because the focused window is secure (FLAG_SECURE: banking, passwords, DRM \
                 video): the phone leaves it out of every capture. Its elements are readable: use the element list \
                 (android_ui_dump, or the elements of android_observe) to see and act"
                    .into(),
            ),
            Shows::Blank([r, g, b]) => Some(format!(
                "the picture is one uniform colour (#{r:02x}{g:02x}{b:02x}) although the screen is on and no secure \
                 window has focus: a splash or loading screen, or a failed capture. Wait a moment and look again, or \
                 use the element list (android_ui_dump / the elements of android_observe)"
            )),
        }
    }
}

/// The [`Shows`] verdict of a capture whose uniform colour is `uniform` (from `uniform_colour`), with the screen
/// state read for it (see [`screen_on_for`]). Only a uniform frame of a lit screen costs a round trip: the window
/// flags of [`formats::secure_window_command`]. An unreadable screen state counts as on (the picture failed
/// either way); unreadable window flags give `blank`, never a guessed `secure_window`.
pub async fn frame_verdict(c: &Ctx, uniform: Option<[u8; 3]>, screen_on: Option<bool>) -> Shows {
    let Some(colour) = uniform else {
        return if screen_on == Some(false) { Shows::ScreenOff } else { Shows::Ok };
    };
    if screen_on == Some(false) {
        return Shows::ScreenOff;
    }
    let sdk = crate::device::Backend::info(&*c.adb, &c.device).and_then(|i| i.sdk);
    let cmd = formats::secure_window_command(sdk);
    let out = c.adb.shell(&c.device, &cmd, false, Duration::from_secs(5)).await;
    match out.ok().and_then(|o| formats::focused_window_secure(&o.stdout)) {
        Some(true) => Shows::SecureWindow,
        _ => Shows::Blank(colour),
    }
}

/// Whether the screen is on, to go with a capture: the cached state for a normal frame; read afresh for a uniform
/// one, which is either a phone that fell asleep since the last read or a blank frame (a wrong guess here would
/// send the agent after the wrong cause). An unreadable state is `None` (frame_blank cannot exclude sleep then).
pub async fn screen_on_for(c: &Ctx, uniform: bool) -> Option<bool> {
    if uniform {
        c.adb.forget_screen_state(&c.device);
    }
    c.adb.screen_state(&c.device).await.ok().and_then(|s| s.screen_on)
}

/// Longest side of `android_observe`'s picture when the frame is one uniform colour (screen off, blank, a secure
/// window): it shows nothing but its colour, so a thumbnail (a few hundred bytes) stands in for a full-size black
/// frame (53 KB with its marks, issue 49); `frame` and `hint` say why. `android_screenshot` keeps the size asked for.
pub const UNIFORM_SIDE: u32 = 32;

/// Largest `max_side` an agent may ask for (the biggest phone screens are ~3200 px).
pub const MAX_SIDE_ARG: u32 = 8192;

/// Default longest side of `android_screenshot`'s picture: the one an agent asks for when it wants to look closely.
pub fn side_1280() -> u32 {
    1280
}

/// Default longest side of `android_observe`'s picture, chosen from what a model pays for it (BENCHMARKS.md, "What
/// an agent pays", issue 49 item 2): 346 × 768 on a 1080 × 2400 phone is 355 image tokens by Anthropic's formula
/// and 425 by OpenAI's, against 984 / 1,105 at 1280, and a 14 sp label is still ~12 px tall. Every label is in the
/// element list as text anyway; the picture is for layout and what has no text. `max_side` asks for more.
pub const OBSERVE_SIDE: u32 = 768;

/// [`OBSERVE_SIDE`] for serde's `default`.
pub fn side_observe() -> u32 {
    OBSERVE_SIDE
}

/// Default JPEG quality (`android_screenshot`, `android_observe`).
pub fn quality_80() -> u8 {
    80
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts_say_why_a_frame_shows_nothing() {
        assert!(Shows::SecureWindow.hint().unwrap().contains("FLAG_SECURE"));
        assert!(Shows::Blank([0, 0, 0]).hint().unwrap().contains("#000000"));
        assert!(Shows::SecureWindow.blank() && Shows::Blank([1, 2, 3]).blank());
        assert!(!Shows::ScreenOff.blank() && !Shows::Ok.blank() && Shows::Ok.hint().is_none());
    }
}

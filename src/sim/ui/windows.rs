//! The windows a real phone shows above the app (issue 33 item 5): the soft keyboard — an input method window —
//! while a text field of the home screen has the focus, and a runtime-permission prompt from the permission
//! controller floating over the app (`SimPhone::show_permission_prompt`).
//!
//! As on a phone, the phone helper's `tree` lists every window, top first, each with its nodes; `uiautomator dump`
//! gives the active window only: the prompt alone while it shows (the app behind it is missing), the app alone
//! while the keyboard is up (the keyboard is missing). The prompt's shape — package
//! `com.google.android.permissioncontroller`, ids `com.android.permissioncontroller:id/permission_message`,
//! `…/permission_allow_button`, `…/permission_deny_button`, a floating window of buttons the width of the screen
//! less a margin — is the one recorded from real phones in `tests/fixtures/real/ui-permission-prompt-*.txt`.
//!
//! The prompt is modal: taps outside it do nothing, BACK dismisses it (as "Don't allow"), typed text goes nowhere.

use super::render::Canvas;
use super::{xml_escape, Node, PermissionPrompt, Rect, TapOutcome, Ui};

/// The permission controller's package on phones with Google's build (AOSP's is `com.android.permissioncontroller`;
/// the resource ids keep the AOSP name on both, as the fixtures show).
pub const PERMISSION_PACKAGE: &str = "com.google.android.permissioncontroller";
/// The keyboard's package (Gboard).
pub const KEYBOARD_PACKAGE: &str = "com.google.android.inputmethod.latin";
/// The keys of the keyboard's one row.
const KEYS: &str = "qwertyuiop";

/// Where the prompt's parts are (a 1080 × 2400 phone: the buttons are 72…1008 px wide, as recorded).
struct PromptLayout {
    window: Rect,
    message: Rect,
    allow: Rect,
    deny: Rect,
}

impl Ui {
    /// The soft keyboard is up: the home screen's text field (or the sign-in screen's password field) has the focus
    /// and nothing covers it (the rule the simulated `dumpsys input_method` follows too).
    pub fn keyboard_up(&self) -> bool {
        ((self.text_focused && self.on_home()) || (self.password_focused && self.on_sign_in()))
            && self.screen_on
            && !self.keyguard_showing
            && self.permission_prompt.is_none()
    }

    fn prompt_layout(&self) -> PromptLayout {
        let (w, h) = self.logical_size();
        let (w, h) = (w as i32, h as i32);
        let x = |n: i32| w * n / 1080;
        let y = |n: i32| h * n / 2400;
        PromptLayout {
            window: Rect { left: x(72) - x(24), top: y(1380), right: x(1008) + x(24), bottom: y(1950) },
            message: Rect { left: x(120), top: y(1440), right: x(960), bottom: y(1600) },
            allow: Rect { left: x(72), top: y(1667), right: x(1008), bottom: y(1775) },
            deny: Rect { left: x(72), top: y(1799), right: x(1008), bottom: y(1907) },
        }
    }

    fn keyboard_rect(&self) -> Rect {
        let (w, h) = self.logical_size();
        let (w, h) = (w as i32, h as i32);
        Rect { left: 0, top: h * 9 / 10, right: w, bottom: h }
    }

    fn prompt_nodes(&self, p: &PermissionPrompt) -> Vec<Node> {
        let l = self.prompt_layout();
        vec![
            Node::text(&p.message, "com.android.permissioncontroller:id/permission_message", l.message),
            Node::button("Allow", "com.android.permissioncontroller:id/permission_allow_button", l.allow),
            Node::button("Don\u{2019}t allow", "com.android.permissioncontroller:id/permission_deny_button", l.deny),
        ]
    }

    fn keyboard_nodes(&self) -> Vec<Node> {
        let k = self.keyboard_rect();
        let n = KEYS.len() as i32;
        let step = (k.right - k.left) / n;
        KEYS.chars()
            .enumerate()
            .map(|(i, c)| {
                let left = k.left + i as i32 * step;
                let mut key = Node::text("", "", Rect { left, top: k.top, right: left + step, bottom: k.bottom });
                key.class = "android.view.View";
                key.desc = c.to_string();
                key.clickable = true;
                key
            })
            .collect()
    }

    /// A window's root node around `nodes` (what both dumps write for it).
    fn window_root(pkg: &str, bounds: Rect, nodes: &[Node]) -> String {
        let inner: String = nodes.iter().enumerate().map(|(i, n)| n.render(i, pkg)).collect();
        format!(
            "<node index=\"0\" text=\"\" resource-id=\"\" class=\"android.widget.FrameLayout\" package=\"{}\" \
             content-desc=\"\" checkable=\"false\" checked=\"false\" clickable=\"false\" enabled=\"true\" \
             focusable=\"false\" focused=\"false\" scrollable=\"false\" long-clickable=\"false\" password=\"false\" \
             selected=\"false\" bounds=\"{}\">{inner}</node>",
            xml_escape(pkg),
            bounds.bounds()
        )
    }

    /// `uiautomator dump`'s root when a window above the app is the active one (the prompt), else `None`.
    pub(super) fn active_window_root(&self) -> Option<String> {
        let p = self.permission_prompt.as_ref().filter(|_| self.screen_on && !self.keyguard_showing)?;
        Some(Self::window_root(PERMISSION_PACKAGE, self.prompt_layout().window, &self.prompt_nodes(p)))
    }

    /// The helper's `<window>` elements above the app's (top first), and whether the app's window still has the
    /// focus.
    pub(super) fn windows_above(&self) -> (String, bool) {
        let mut out = String::new();
        let mut app_focused = true;
        if self.keyboard_up() {
            let k = self.keyboard_rect();
            out.push_str(&format!(
                "<window id=\"31\" type=\"input_method\" layer=\"3\" active=\"false\" focused=\"false\" \
                 package=\"{KEYBOARD_PACKAGE}\" title=\"\" bounds=\"{}\">{}</window>",
                k.bounds(),
                Self::window_root(KEYBOARD_PACKAGE, k, &self.keyboard_nodes())
            ));
        }
        if let Some(root) = self.active_window_root() {
            out.push_str(&format!(
                "<window id=\"40\" type=\"application\" layer=\"2\" active=\"true\" focused=\"true\" \
                 package=\"{PERMISSION_PACKAGE}\" title=\"\" bounds=\"{}\">{root}</window>",
                self.prompt_layout().window.bounds()
            ));
            app_focused = false;
        }
        (out, app_focused)
    }

    /// A tap on a window above the app: `Some` when one took it (the prompt takes every tap while it shows; a key
    /// of the keyboard types nothing here but keeps the field's focus).
    pub(super) fn tap_windows(&mut self, x: i32, y: i32) -> Option<TapOutcome> {
        if !self.screen_on {
            return None;
        }
        if self.permission_prompt.is_some() {
            let l = self.prompt_layout();
            let hit = if l.allow.contains(x, y) {
                Some("Allow")
            } else if l.deny.contains(x, y) {
                Some("Don\u{2019}t allow")
            } else {
                None
            };
            return Some(match hit {
                Some(label) => {
                    self.permission_prompt = None;
                    self.clicked(Some(label.to_owned()))
                }
                None => TapOutcome::Nothing,
            });
        }
        if self.keyboard_up() && self.keyboard_rect().contains(x, y) {
            return Some(TapOutcome::Nothing);
        }
        None
    }

    /// BACK with the prompt up dismisses it (the app hears "denied"); `false` when no window above the app took it.
    pub(super) fn back_on_windows(&mut self) -> bool {
        if self.permission_prompt.take().is_some() {
            self.clicks.push("Don\u{2019}t allow".to_owned());
            return true;
        }
        false
    }

    /// Draws the windows above the app over its picture.
    pub(super) fn draw_windows(&self, c: &mut Canvas) {
        if self.keyboard_up() {
            c.fill(self.keyboard_rect(), [48, 48, 48, 255]);
            for k in self.keyboard_nodes() {
                c.text(k.bounds, &k.desc, [255, 255, 255, 255], true, false);
            }
        }
        if let Some(p) = self.permission_prompt.as_ref().filter(|_| self.screen_on && !self.keyguard_showing) {
            let l = self.prompt_layout();
            c.fill(l.window, [250, 250, 250, 255]);
            for n in self.prompt_nodes(p) {
                let button = n.class == "android.widget.Button";
                if button {
                    c.fill(n.bounds, [26, 115, 232, 255]);
                }
                c.text(n.bounds, &n.text, if button { [255, 255, 255, 255] } else { [33, 33, 33, 255] }, button, false);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> String {
        let path = format!("{}/tests/fixtures/real/{name}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    /// The prompt is printed in the shape recorded from real phones: the same package, the same resource ids, a
    /// button of the recorded bounds on a 1080 × 2400 screen.
    #[test]
    fn the_prompt_has_the_shape_of_the_recorded_ones() {
        let mut ui = Ui::new(1080, 2400);
        ui.permission_prompt = Some(PermissionPrompt { message: "Allow Sim Home to send you notifications?".into() });
        let dump = ui.dump_xml();
        let node = fixture("ui-permission-prompt-node-pixel.txt");
        for needle in [
            "package=\"com.google.android.permissioncontroller\"",
            "class=\"android.widget.Button\"",
            "[72,1667][1008,1775]",
        ] {
            assert!(node.contains(needle), "the fixture: {needle}");
            assert!(dump.contains(needle), "the sim: {needle} in {dump}");
        }
        let ids = fixture("ui-permission-prompt-structure-samsung-api30.txt");
        for id in ["permission_message", "permission_deny_button"] {
            let full = format!("com.android.permissioncontroller:id/{id}");
            assert!(ids.contains(&full) && dump.contains(&full), "{id}");
        }
        // uiautomator: the prompt alone (the app behind is not in the dump).
        assert!(!dump.contains("com.xagent.sim:id/counter"), "{dump}");
        // The helper: the prompt's window above the app's, which has lost the focus.
        let tree = ui.tree_xml();
        let prompt = tree.find("package=\"com.google.android.permissioncontroller\" title").unwrap();
        let app = tree.find("type=\"application\" layer=\"1\" active=\"false\" focused=\"false\"").unwrap();
        assert!(prompt < app && tree.contains("com.xagent.sim:id/counter"), "{tree}");
    }

    #[test]
    fn the_keyboard_is_a_window_of_its_own_only_in_the_helpers_tree() {
        let mut ui = Ui::new(1080, 2400);
        ui.text_focused = true;
        assert!(ui.keyboard_up());
        assert!(ui.tree_xml().contains("type=\"input_method\""));
        assert!(!ui.dump_xml().contains(KEYBOARD_PACKAGE), "uiautomator gives the focused window only");
        ui.permission_prompt = Some(PermissionPrompt { message: "m".into() });
        assert!(!ui.keyboard_up(), "the prompt took the focus");
    }
}

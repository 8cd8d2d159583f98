//! The simulated phone's UI: a tiny, deterministic model that the view hierarchy dump
//! (`uiautomator dump`) and the screenshot (`screencap`) are both derived from.
//!
//! Why one model for both: an agent looks at the XML and/or the pixels, acts with
//! `input tap`, and must then see the consequence in *both* representations. The home screen
//! therefore has a labelled "Increment" button whose taps increment a visible counter, and a text
//! field that `input text` appends to. Layout is proportional to the configured screen so other
//! resolutions work too.
//!
//! The demo app (`com.xagent.demo`, [`DEMO_PACKAGE`]) is the screen element-targeted tools are tested on: two
//! buttons with the same text ("OK"), and a scrollable list of [`DEMO_ROWS`] rows, longer than the screen, that
//! `input swipe` scrolls (so the screen can change between an observation and an action, as on a real phone).
//! Taps on its elements are recorded in [`Ui::clicks`] by label.
//!
//! The other apps a demo visitor (or an agent) opens show something too: Settings a list of [`SETTINGS_ROWS`]
//! that swipes scroll like the demo list, and the browser stand-in (`com.android.chrome`) a page — a title, three
//! links and a search field — in the shape Chrome's WebView reports it to uiautomator. Every text of the tree is
//! also drawn into the picture with the sim's bitmap font ([`super::font`]), so what the XML says, the
//! screenshot shows; a password field shows one dot per character, never its text.

use std::time::{Duration, Instant};

mod render;
pub mod site;
pub mod web;
pub mod windows;
pub mod world;

/// Package/activity of the home screen (the launcher), what `dumpsys window` reports at boot.
pub const HOME_PACKAGE: &str = "com.android.launcher3";
pub const HOME_ACTIVITY: &str = "com.android.launcher3.uioverrides.QuickstepLauncher";
/// The demo app whose main activity shows the list screen.
pub const DEMO_PACKAGE: &str = "com.xagent.demo";
/// The demo app's sign-in screen (`am start -n com.xagent.demo/.SignInActivity`): a password field (`world.rs`).
/// Kept in the app, not on the home screen: a real launcher (AOSP Launcher3's `res/layout/launcher.xml` — workspace,
/// hotseat, page indicator, drop targets, all apps with its search box) has no credential field.
pub const SIGN_IN_ACTIVITY: &str = "com.xagent.demo.SignInActivity";
/// Rows of the demo list ("Item 1" .. "Item 30"): about 2.5 screens.
pub const DEMO_ROWS: i32 = 30;
/// The package of the keyguard (lock screen) window, as `uiautomator dump` reports it on AOSP builds.
pub const KEYGUARD_PACKAGE: &str = "com.android.systemui";
/// The Settings app and its top-level list (AOSP 14's entries and a few of their sub-pages): about 2 screens, so
/// finding "About phone" takes scrolling, as on a real phone.
pub const SETTINGS_PACKAGE: &str = "com.android.settings";
pub const SETTINGS_ROWS: [&str; 28] = [
    "Network & internet",
    "Internet",
    "SIMs",
    "Airplane mode",
    "Hotspot & tethering",
    "Connected devices",
    "Bluetooth",
    "Apps",
    "Notifications",
    "Battery",
    "Storage",
    "Sound & vibration",
    "Display",
    "Wallpaper & style",
    "Accessibility",
    "Security & privacy",
    "Location",
    "Safety & emergency",
    "Passwords & accounts",
    "Digital Wellbeing",
    "Google",
    "System",
    "Languages",
    "Date & time",
    "Backup",
    "Reset options",
    "Developer options",
    "About phone",
];
/// The messages app (`ui/world.rs`) and its conversation list.
pub const MESSAGES_PACKAGE: &str = "com.google.android.apps.messaging";
pub const MESSAGES_ACTIVITY: &str = "com.google.android.apps.messaging.ui.ConversationListActivity";
/// The browser stand-in and the page it shows: Chrome's package, the page's title and its links.
pub const BROWSER_PACKAGE: &str = "com.android.chrome";
pub const BROWSER_URL: &str = "sim.example/start";
pub const BROWSER_TITLE: &str = "Sim Start Page";
pub const BROWSER_LINKS: [&str; 3] = ["Today's news", "Weather", "About this page"];
/// The text at the bottom of the browser's page, below the screen until the page is scrolled.
pub const BROWSER_FOOTER: &str = "End of page";
/// An app whose screen is a WebView that is not debuggable (no DevTools socket): its content is one node.
pub const WEBVIEW_APP_PACKAGE: &str = "com.xagent.help";
pub const WEBVIEW_APP_TEXT: &str = "Help center";

/// The screen lock the simulated user chose (Settings → Security → Screen lock).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LockMode {
    /// "None": the phone never shows a keyguard.
    #[default]
    None,
    /// "Swipe": a keyguard that a swipe up or `wm dismiss-keyguard` opens.
    Swipe,
    /// PIN, pattern or password: only the credential opens it (the sim never accepts one over adb).
    Secure,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Rect {
    pub left: i32,
    pub top: i32,
    pub right: i32,
    pub bottom: i32,
}

impl Rect {
    /// Inclusive of the top/left edge and exclusive of bottom/right, like Android's `Rect.contains`.
    pub fn contains(&self, x: i32, y: i32) -> bool {
        x >= self.left && x < self.right && y >= self.top && y < self.bottom
    }
    pub fn center(&self) -> (i32, i32) {
        ((self.left + self.right) / 2, (self.top + self.bottom) / 2)
    }
    fn intersect(&self, o: Rect) -> Rect {
        Rect {
            left: self.left.max(o.left),
            top: self.top.max(o.top),
            right: self.right.min(o.right),
            bottom: self.bottom.min(o.bottom),
        }
    }
    fn bounds(&self) -> String {
        format!("[{},{}][{},{}]", self.left, self.top, self.right, self.bottom)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Activity {
    pub package: String,
    pub activity: String,
}

impl Activity {
    pub fn home() -> Self {
        Activity { package: HOME_PACKAGE.into(), activity: HOME_ACTIVITY.into() }
    }
    /// Fully qualified component, `pkg/full.class.Name`.
    pub fn component(&self) -> String {
        format!("{}/{}", self.package, self.activity)
    }
}

/// Geometry of the home screen widgets for a given screen size.
#[derive(Debug, Clone, Copy)]
pub struct Layout {
    pub status_bar: Rect,
    pub title: Rect,
    pub counter: Rect,
    pub button: Rect,
    pub text_field: Rect,
    pub bar_area: Rect,
    /// The demo app's sign-in screen's password field (`password="true"` in the dump; its text is never shown):
    /// below the title, where the home screen has nothing.
    pub password_field: Rect,
    /// The launcher icon of the demo app: a tap opens it (with the screen-change animation).
    pub demo_icon: Rect,
    /// "Reset", beside "Increment": sets the counter back to 0 (so a tour can leave the phone as it found it).
    pub reset: Rect,
}

/// Geometry of the Settings screen: its title and the scrollable list's viewport.
#[derive(Debug, Clone, Copy)]
pub struct SettingsLayout {
    pub title: Rect,
    pub list: Rect,
    pub row_height: i32,
}

/// What a tap hit (so the caller can log it like a real app would).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TapOutcome {
    Incremented,
    FocusedField,
    /// The demo app's launcher icon: the app opened.
    Launched,
    /// An element of the demo app, by label ("OK (left)", "Item 7").
    Clicked(String),
    Nothing,
}

/// Geometry of the demo app's list screen.
#[derive(Debug, Clone, Copy)]
pub struct DemoLayout {
    pub title: Rect,
    pub ok_left: Rect,
    pub ok_right: Rect,
    /// The scrollable list's viewport.
    pub list: Rect,
    pub row_height: i32,
}

/// A runtime-permission prompt over the app: its message, as the permission controller words it (drawn, dumped
/// and tapped by `ui/windows.rs`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PermissionPrompt {
    pub message: String,
}

#[derive(Debug, Clone)]
pub struct Ui {
    /// The panel's physical size (portrait, what `wm size` prints).
    pub width: u32,
    pub height: u32,
    /// The display's rotation in quarter turns (`settings put system user_rotation N`). A real phone lays its
    /// UI out, captures its screen and dumps its tree in the logical, rotated space: everything below goes through
    /// [`Ui::logical_size`], never through `width`/`height` directly.
    pub rotation: u8,
    pub counter: u32,
    pub text: String,
    pub text_focused: bool,
    /// The demo app's sign-in password field and whether it has the focus (typed text then goes there); app state:
    /// `am force-stop com.xagent.demo` drops it, HOME does not.
    pub password: String,
    pub password_focused: bool,
    /// How long a screen change animates (`SimConfig::animation_ms`); zero: changes show at once.
    pub animation: Duration,
    /// The running screen-change animation: (start, end). Until `end` every captured frame differs (the new screen
    /// slides in) and `uiautomator dump` waits, as uiautomator's waitForIdle does.
    pub animating: Option<(Instant, Instant)>,
    pub foreground: Activity,
    /// Activities below the foreground one; `KEYCODE_BACK` pops.
    pub back_stack: Vec<Activity>,
    pub screen_on: bool,
    /// The screen lock method and whether the keyguard is showing now. A phone with a lock method shows its
    /// keyguard when the screen goes off (as with "Lock after screen timeout: immediately").
    pub lock: LockMode,
    pub keyguard_showing: bool,
    /// The foreground window has FLAG_SECURE (banking app, DRM video): captures are black, the tree is there.
    pub secure_window: bool,
    /// The app shows one plain colour (a splash or loading screen): a uniform frame that is not secure.
    pub plain_screen: bool,
    /// Something on screen animates forever (video, spinner): UiAutomation never sees the UI idle.
    pub never_idle: bool,
    /// How far the demo list is scrolled, in pixels (0 = top).
    pub list_offset: i32,
    /// How far the Settings list is scrolled, in pixels (0 = top).
    pub settings_offset: i32,
    /// The browser: the page it shows, its history, its inputs and the site's session (`site.rs`, `web.rs`).
    pub browser: site::Browser,
    /// How far the browser's page is scrolled, in screen pixels (0 = top): its content rectangles move up by it.
    pub web_scroll: i32,
    /// Labels of the apps' elements that taps hit (demo list, Reset, Settings rows, web links), oldest first.
    pub clicks: Vec<String>,
    /// A status-bar indicator that advances one step every period from the given start (a download's progress,
    /// a playing video: the picture changes by itself). For live-view tests; `None` = a still screen.
    pub ticking: Option<(std::time::Instant, std::time::Duration)>,
    /// A runtime-permission prompt floating over the app (`windows.rs`).
    pub permission_prompt: Option<PermissionPrompt>,
    /// The app's window has no views yet (an activity still inflating its layout): its tree is the root alone.
    pub app_loading: bool,
    /// The SMS the phone received or will receive (`arrives` in the future): the messages app and its
    /// notifications (`world.rs`).
    pub sms: Vec<Sms>,
    /// The messages app's open conversation (its sender), `None` for the list.
    pub conversation: Option<String>,
    /// The Settings sub-pages opened, the one in front last (`world.rs`).
    pub settings_pages: Vec<String>,
    /// Settings → Network & internet → Internet → Wi-Fi.
    pub wifi_on: bool,
    /// Settings → About phone's rows (title, value), filled from the phone's configuration.
    pub about: Vec<(String, String)>,
    /// The PIN of a [`LockMode::Secure`] lock (`None`: a credential the sim never accepts), what the PIN pad holds
    /// so far, and its message after a wrong PIN.
    pub pin: Option<String>,
    pub pin_entry: String,
    pub pin_notice: Option<String>,
    /// The notification shade is pulled down over the app (`world.rs`).
    pub shade_open: bool,
}

/// An SMS: who sent it, its text, when it arrives, and whether its notification was posted (`Device::deliver_sms`).
#[derive(Debug, Clone)]
pub struct Sms {
    pub from: String,
    pub body: String,
    pub arrives: Instant,
    pub notified: bool,
    /// Tapped in the shade: its notification is gone from it.
    pub dismissed: bool,
}

impl Ui {
    pub fn new(width: u32, height: u32) -> Self {
        Ui {
            width,
            height,
            rotation: 0,
            counter: 0,
            text: String::new(),
            text_focused: false,
            password: String::new(),
            password_focused: false,
            animation: Duration::ZERO,
            animating: None,
            foreground: Activity::home(),
            back_stack: Vec::new(),
            screen_on: true,
            lock: LockMode::None,
            keyguard_showing: false,
            secure_window: false,
            plain_screen: false,
            never_idle: false,
            list_offset: 0,
            settings_offset: 0,
            browser: site::Browser::new(),
            web_scroll: 0,
            clicks: Vec::new(),
            ticking: None,
            permission_prompt: None,
            app_loading: false,
            sms: Vec::new(),
            conversation: None,
            settings_pages: Vec::new(),
            wifi_on: true,
            about: Vec::new(),
            pin: None,
            pin_entry: String::new(),
            pin_notice: None,
            shade_open: false,
        }
    }

    /// Width and height of the display as apps, `screencap` and `uiautomator` see it: swapped on a quarter turn.
    pub fn logical_size(&self) -> (u32, u32) {
        if self.rotation % 2 == 1 {
            (self.height, self.width)
        } else {
            (self.width, self.height)
        }
    }

    /// The demo app's list screen (its main activity).
    pub fn on_demo(&self) -> bool {
        self.foreground.package == DEMO_PACKAGE && self.foreground.activity != SIGN_IN_ACTIVITY
    }

    pub fn demo_layout(&self) -> DemoLayout {
        let (w, h) = self.logical_size();
        let (w, h) = (w as i32, h as i32);
        let px = |num: i32, den: i32, total: i32| total * num / den;
        DemoLayout {
            title: Rect { left: px(1, 12, w), top: px(60, 1000, h), right: px(11, 12, w), bottom: px(110, 1000, h) },
            ok_left: Rect { left: px(1, 12, w), top: px(150, 1000, h), right: px(5, 12, w), bottom: px(200, 1000, h) },
            ok_right: Rect {
                left: px(7, 12, w),
                top: px(150, 1000, h),
                right: px(11, 12, w),
                bottom: px(200, 1000, h),
            },
            list: Rect { left: 0, top: px(250, 1000, h), right: w, bottom: px(950, 1000, h) },
            row_height: px(60, 1000, h).max(1),
        }
    }

    /// The demo list's largest scroll offset (the last row at the viewport's bottom).
    pub fn max_list_offset(&self) -> i32 {
        let l = self.demo_layout();
        (DEMO_ROWS * l.row_height - (l.list.bottom - l.list.top)).max(0)
    }

    /// Visible rows of the demo list: (1-based number, bounds clipped to the viewport, as uiautomator reports them).
    pub fn visible_rows(&self) -> Vec<(i32, Rect)> {
        let l = self.demo_layout();
        rows_in(l.list, l.row_height, DEMO_ROWS, self.list_offset)
    }

    pub fn on_settings(&self) -> bool {
        self.foreground.package == SETTINGS_PACKAGE
    }

    pub fn on_browser(&self) -> bool {
        self.foreground.package == BROWSER_PACKAGE
    }

    pub fn on_messages(&self) -> bool {
        self.foreground.package == MESSAGES_PACKAGE
    }

    pub fn settings_layout(&self) -> SettingsLayout {
        let d = self.demo_layout();
        let (_, h) = self.logical_size();
        let h = h as i32;
        SettingsLayout {
            title: d.title,
            list: Rect { left: 0, top: h * 150 / 1000, right: d.list.right, bottom: h * 950 / 1000 },
            row_height: d.row_height,
        }
    }

    /// The Settings list's largest scroll offset.
    pub fn max_settings_offset(&self) -> i32 {
        let l = self.settings_layout();
        (SETTINGS_ROWS.len() as i32 * l.row_height - (l.list.bottom - l.list.top)).max(0)
    }

    /// Visible rows of the Settings list: (1-based number, clipped bounds).
    pub fn visible_settings_rows(&self) -> Vec<(i32, Rect)> {
        let l = self.settings_layout();
        rows_in(l.list, l.row_height, SETTINGS_ROWS.len() as i32, self.settings_offset)
    }

    /// `input swipe`: a vertical drag inside the demo list scrolls it (content follows the finger).
    pub fn swipe(&mut self, x1: i32, y1: i32, _x2: i32, y2: i32) {
        if self.keyguard_showing {
            // A swipe up over a quarter of the screen opens a swipe keyguard; a secure one shows its bouncer and
            // stays locked.
            if self.screen_on && self.lock == LockMode::Swipe && y1 - y2 > self.logical_size().1 as i32 / 4 {
                self.keyguard_showing = false;
            }
            return;
        }
        // From the top edge down: the shade comes; up while it shows: it goes.
        let h = self.logical_size().1 as i32;
        if self.screen_on && (y1 < h * 35 / 1000 && y2 - y1 > h / 5 || self.shade_open && y1 - y2 > h / 10) {
            self.shade_open = !self.shade_open;
            return;
        }
        if self.screen_on && self.on_demo() && self.demo_layout().list.contains(x1, y1) {
            self.list_offset = (self.list_offset + (y1 - y2)).clamp(0, self.max_list_offset());
        }
        if self.screen_on && self.on_settings() && self.settings_layout().list.contains(x1, y1) {
            self.settings_offset = (self.settings_offset + (y1 - y2)).clamp(0, self.max_settings_offset());
        }
        if self.screen_on && self.on_browser() && self.web_area().contains(x1, y1) {
            self.web_scroll = (self.web_scroll + (y1 - y2)).clamp(0, self.max_web_scroll());
        }
    }

    pub fn on_home(&self) -> bool {
        self.foreground.package == HOME_PACKAGE
    }

    pub fn layout(&self) -> Layout {
        let (w, h) = self.logical_size();
        let (w, h) = (w as i32, h as i32);
        let px = |num: i32, den: i32, total: i32| total * num / den;
        Layout {
            status_bar: Rect { left: 0, top: 0, right: w, bottom: px(35, 1000, h) },
            title: Rect { left: px(1, 12, w), top: px(60, 1000, h), right: px(11, 12, w), bottom: px(110, 1000, h) },
            counter: Rect { left: px(2, 9, w), top: px(250, 1000, h), right: px(7, 9, w), bottom: px(300, 1000, h) },
            button: Rect { left: px(5, 16, w), top: px(375, 1000, h), right: px(11, 16, w), bottom: px(440, 1000, h) },
            text_field: Rect { left: px(1, 8, w), top: px(500, 1000, h), right: px(7, 8, w), bottom: px(560, 1000, h) },
            bar_area: Rect {
                left: px(1, 12, w),
                top: px(620, 1000, h),
                right: px(11, 12, w),
                bottom: px(660, 1000, h),
            },
            password_field: Rect {
                left: px(1, 8, w),
                top: px(700, 1000, h),
                right: px(7, 8, w),
                bottom: px(760, 1000, h),
            },
            demo_icon: Rect { left: px(3, 8, w), top: px(820, 1000, h), right: px(5, 8, w), bottom: px(900, 1000, h) },
            reset: Rect { left: px(23, 32, w), top: px(375, 1000, h), right: px(15, 16, w), bottom: px(440, 1000, h) },
        }
    }

    pub fn tap(&mut self, x: i32, y: i32) -> TapOutcome {
        if self.pin_pad_up() {
            return self.tap_pin(x, y);
        }
        if self.keyguard_showing {
            return TapOutcome::Nothing;
        }
        if self.shade_open && self.screen_on {
            return self.tap_shade(x, y);
        }
        if let Some(taken) = self.tap_windows(x, y) {
            return taken;
        }
        if self.screen_on && self.on_sign_in() {
            return self.tap_sign_in(x, y);
        }
        if self.screen_on && self.on_demo() {
            let d = self.demo_layout();
            let hit = if d.ok_left.contains(x, y) {
                Some("OK (left)".to_owned())
            } else if d.ok_right.contains(x, y) {
                Some("OK (right)".to_owned())
            } else {
                self.visible_rows().into_iter().find(|(_, r)| r.contains(x, y)).map(|(n, _)| format!("Item {n}"))
            };
            return self.clicked(hit);
        }
        if self.screen_on && self.on_settings() {
            return self.tap_settings(x, y);
        }
        if self.screen_on && self.on_browser() {
            return self.tap_web(x, y);
        }
        if self.screen_on && self.on_messages() {
            return self.tap_messages(x, y);
        }
        if !self.screen_on || !self.on_home() {
            return TapOutcome::Nothing;
        }
        let l = self.layout();
        self.password_focused = false;
        if l.button.contains(x, y) {
            self.counter = self.counter.saturating_add(1);
            self.text_focused = false;
            TapOutcome::Incremented
        } else if l.reset.contains(x, y) {
            self.counter = 0;
            self.text_focused = false;
            self.clicked(Some("Reset".to_owned()))
        } else if l.text_field.contains(x, y) {
            self.text_focused = true;
            TapOutcome::FocusedField
        } else if l.demo_icon.contains(x, y) {
            self.text_focused = false;
            self.launch(Activity { package: DEMO_PACKAGE.into(), activity: format!("{DEMO_PACKAGE}.MainActivity") });
            TapOutcome::Launched
        } else {
            self.text_focused = false;
            TapOutcome::Nothing
        }
    }

    /// Records a tap on a labelled element of an app.
    fn clicked(&mut self, label: Option<String>) -> TapOutcome {
        match label {
            Some(label) => {
                self.clicks.push(label.clone());
                TapOutcome::Clicked(label)
            }
            None => TapOutcome::Nothing,
        }
    }

    /// Starts the screen-change animation (nothing when `animation` is zero).
    pub fn animate(&mut self) {
        if !self.animation.is_zero() {
            let now = Instant::now();
            self.animating = Some((now, now + self.animation));
        }
    }

    /// How long the running animation still takes (`None`: the screen is still).
    pub fn animation_left(&self) -> Option<Duration> {
        let (_, end) = self.animating?;
        let left = end.saturating_duration_since(Instant::now());
        (!left.is_zero()).then_some(left)
    }

    /// ADB Keyboard's `ADB_CLEAR_TEXT`: empties the field that has the focus.
    pub fn clear_focused(&mut self) {
        if let Some(t) = self.focused_text() {
            t.clear();
        }
    }

    /// The field typed text goes to: on the home screen its text field; on the demo app's sign-in screen the
    /// password field once tapped; in the browser its search field once tapped; elsewhere none.
    fn focused_text(&mut self) -> Option<&mut String> {
        if self.keyguard_showing || !self.screen_on || self.permission_prompt.is_some() {
            None
        } else if self.on_browser() {
            let id = self.browser.focus.clone()?;
            Some(self.browser.input_mut(&id))
        } else if self.on_sign_in() {
            self.password_focused.then_some(&mut self.password)
        } else if !self.on_home() {
            None
        } else {
            Some(&mut self.text)
        }
    }

    /// `input text`: appends to the home screen's text field (focused or not: the sim keeps the
    /// field as the single text sink so agents need not tap first), or to the browser's focused search field.
    pub fn type_text(&mut self, s: &str) {
        if self.pin_pad_up() {
            self.pin_digits(s);
            return;
        }
        if let Some(t) = self.focused_text() {
            t.push_str(s);
        }
    }

    /// Applies a key event; returns true if it changed the UI.
    pub fn key(&mut self, name: &str) -> bool {
        let front = self.foreground.clone();
        let changed = self.key_inner(name);
        if self.foreground != front {
            self.animate();
        }
        changed
    }

    fn key_inner(&mut self, name: &str) -> bool {
        match name {
            "KEYCODE_HOME" => {
                self.back_stack.clear();
                self.foreground = Activity::home();
                // The home screen's text field is the launcher's search box, and HOME resets it whether the
                // launcher was in front or not (AOSP Launcher3, as in LawnchairLauncher/lawnchair@1591775
                // src/com/android/launcher3/Launcher.java: `onNewIntent` calls `mAppsView.reset` when HOME
                // arrives from another app, and goes to state NORMAL when the launcher is in front, whose
                // `onStateSetEnd` calls `getAppsView().reset(false)` on leaving ALL_APPS; allapps/
                // ActivityAllAppsContainerView.java `reset` posts `mSearchUiManager::resetSearch`). What an app's
                // fields hold (the demo app's sign-in password) is the app's: HOME leaves it, a force-stop drops it.
                self.text.clear();
                // The launcher's window takes the focus: the input method hides with the field's window
                // (InputMethodManagerService hides the soft input on a window focus change unless the new window
                // asks for it, which a launcher does not).
                self.text_focused = false;
                self.password_focused = false;
                self.browser.focus = None;
                self.settings_pages.clear();
                self.shade_open = false;
                true
            }
            // A window above the app (the permission prompt) takes BACK first.
            "KEYCODE_BACK" if self.back_on_windows() => true,
            "KEYCODE_BACK" if self.keyguard_showing => false,
            "KEYCODE_BACK" if self.shade_open => {
                self.shade_open = false;
                true
            }
            "KEYCODE_BACK" if self.screen_on && self.on_browser() && self.back_in_browser() => true,
            "KEYCODE_BACK" if self.screen_on && self.on_messages() && self.conversation.is_some() => {
                self.conversation = None;
                true
            }
            "KEYCODE_BACK" => {
                if self.settings_page().is_some() {
                    self.settings_pages.pop();
                }
                if self.text_focused || self.password_focused {
                    self.text_focused = false;
                    self.password_focused = false;
                } else if let Some(prev) = self.back_stack.pop() {
                    self.foreground = prev;
                } else if !self.on_home() {
                    self.foreground = Activity::home();
                }
                true
            }
            "KEYCODE_DEL" if self.pin_pad_up() => self.pin_entry.pop().is_some(),
            "KEYCODE_DEL" => self.focused_text().is_some_and(|t| t.pop().is_some()),
            "KEYCODE_POWER" => {
                self.set_screen(!self.screen_on);
                true
            }
            "KEYCODE_WAKEUP" => {
                self.set_screen(true);
                true
            }
            "KEYCODE_SLEEP" => {
                self.set_screen(false);
                true
            }
            "KEYCODE_ENTER" if self.pin_pad_up() => {
                self.check_pin();
                true
            }
            k if self.pin_pad_up() && k.len() == 9 && k.starts_with("KEYCODE_") && k.as_bytes()[8].is_ascii_digit() => {
                self.pin_digits(&k[8..]);
                true
            }
            "KEYCODE_SPACE" => {
                self.type_text(" ");
                true
            }
            _ => false,
        }
    }

    /// Turns the screen on or off; going off locks a phone that has a lock method.
    pub fn set_screen(&mut self, on: bool) {
        if !on && self.lock != LockMode::None {
            self.keyguard_showing = true;
            self.pin_entry.clear();
            self.pin_notice = None;
        }
        self.screen_on = on;
    }

    /// `wm dismiss-keyguard`: opens a swipe keyguard of a lit screen; a secure one asks for its credential (the
    /// bouncer) and stays locked.
    pub fn dismiss_keyguard(&mut self) {
        if self.screen_on && self.lock != LockMode::Secure {
            self.keyguard_showing = false;
        }
    }

    pub fn launch(&mut self, act: Activity) {
        if self.foreground != act {
            let prev = std::mem::replace(&mut self.foreground, act);
            self.back_stack.push(prev);
            if self.back_stack.len() > 16 {
                self.back_stack.remove(0);
            }
            self.animate();
        }
        self.screen_on = true;
    }

    /// The root node of the view hierarchy (with every node below it), its package and the full-screen bounds:
    /// what `uiautomator dump` prints under `<hierarchy>` and the phone helper's `tree` under its `<window>`.
    fn root_node(&self) -> (String, String, Rect) {
        let pkg = self.window_package();
        let (w, h) = self.logical_size();
        let full = Rect { left: 0, top: 0, right: w as i32, bottom: h as i32 };
        let nodes: String = self.nodes().iter().enumerate().map(|(i, n)| n.render(i, pkg)).collect();
        let root = format!(
            "<node index=\"0\" text=\"\" resource-id=\"\" class=\"android.widget.FrameLayout\" package=\"{}\" \
             content-desc=\"\" checkable=\"false\" checked=\"false\" clickable=\"false\" enabled=\"true\" \
             focusable=\"false\" focused=\"false\" scrollable=\"false\" long-clickable=\"false\" password=\"false\" \
             selected=\"false\" bounds=\"{}\">{}</node>",
            xml_escape(pkg),
            full.bounds(),
            nodes
        );
        (root, pkg.to_owned(), full)
    }

    /// The view hierarchy in the exact shape `uiautomator dump` writes (single line, same
    /// attribute order), so parsers written against real devices work unchanged.
    pub fn dump_xml(&self) -> String {
        // uiautomator reads the active window only: a window above the app (the permission prompt) when it has the
        // focus, and nothing of the app behind it.
        let root = self.active_window_root().unwrap_or_else(|| self.root_node().0);
        format!(
            "<?xml version='1.0' encoding='UTF-8' standalone='yes' ?><hierarchy rotation=\"{}\">{root}</hierarchy>",
            self.rotation % 4
        )
    }

    /// The phone helper's `tree`: every window, top first, as the helper's protocol describes it — the keyboard
    /// and the permission prompt when they show (`windows.rs`), then the application window with the same nodes
    /// `uiautomator dump` gives of it (the simulator draws no status bar window).
    pub fn tree_xml(&self) -> String {
        let (root, pkg, full) = self.root_node();
        let (above, app_focused) = self.windows_above();
        format!(
            "<?xml version='1.0' encoding='UTF-8' standalone='yes' ?><hierarchy rotation=\"{}\" source=\"helper\" \
             truncated=\"false\">{above}<window id=\"1\" type=\"application\" layer=\"1\" active=\"{app_focused}\" \
             focused=\"{app_focused}\" package=\"{}\" title=\"\" bounds=\"{}\">{root}</window></hierarchy>",
            self.rotation % 4,
            xml_escape(&pkg),
            full.bounds()
        )
    }

    /// The package of the window in front (the keyguard's while it shows).
    fn window_package(&self) -> &str {
        if self.keyguard_showing || (self.shade_open && self.screen_on) {
            KEYGUARD_PACKAGE
        } else {
            self.foreground.package.as_str()
        }
    }

    /// The elements on screen, below the window's root: what the dump lists and the picture draws the text of.
    fn nodes(&self) -> Vec<Node> {
        let l = self.layout();
        let mut nodes = Vec::new();
        if self.app_loading && !self.keyguard_showing {
            return nodes;
        }
        if self.keyguard_showing {
            // The lock screen: a clock and a hint, nothing an agent can usefully tap.
            nodes.push(Node::text("12:00", "com.android.systemui:id/lockscreen_clock_view", l.counter));
            if self.pin_pad_up() {
                nodes.extend(self.pin_nodes());
                return nodes;
            }
            let hint = if self.lock == LockMode::Secure { "Enter PIN" } else { "Swipe up to open" };
            nodes.push(Node::text(hint, "com.android.systemui:id/keyguard_indication_text", l.bar_area));
        } else if self.shade_open && self.screen_on {
            nodes.extend(self.shade_nodes());
        } else if self.on_home() {
            nodes.push(Node::text("Sim Home", "com.xagent.sim:id/title", l.title));
            nodes.push(Node::text(&format!("Count: {}", self.counter), "com.xagent.sim:id/counter", l.counter));
            let mut b = Node::button("Increment", "com.xagent.sim:id/increment", l.button);
            b.desc = "Increment counter".into();
            nodes.push(b);
            let mut r = Node::button("Reset", "com.xagent.sim:id/reset", l.reset);
            r.desc = "Reset counter".into();
            nodes.push(r);
            let mut t = Node::field(&self.text, "com.xagent.sim:id/input", l.text_field);
            t.focused = self.text_focused;
            nodes.push(t);
            let mut icon = Node::text("Demo", "com.android.launcher3:id/icon", l.demo_icon);
            icon.clickable = true;
            icon.desc = "Demo".into();
            nodes.push(icon);
        } else if self.on_sign_in() {
            nodes.extend(self.sign_in_nodes());
        } else if self.on_demo() {
            let d = self.demo_layout();
            nodes.push(Node::text("Demo list", "com.xagent.demo:id/title", d.title));
            for (id, r) in [("ok_left", d.ok_left), ("ok_right", d.ok_right)] {
                nodes.push(Node::button("OK", &format!("com.xagent.demo:id/{id}"), r));
            }
            nodes.push(Node::list("com.xagent.demo:id/list", d.list));
            for (n, r) in self.visible_rows() {
                let mut row = Node::text(&format!("Item {n}"), "com.xagent.demo:id/row", r);
                row.clickable = true;
                nodes.push(row);
            }
        } else if let Some(page) = self.settings_page() {
            nodes.extend(self.settings_page_nodes(page));
        } else if self.on_messages() {
            nodes.extend(self.messages_nodes());
        } else if self.on_settings() {
            let s = self.settings_layout();
            nodes.push(Node::text("Settings", "com.android.settings:id/homepage_title", s.title));
            nodes.push(Node::list("com.android.settings:id/recycler_view", s.list));
            for (n, r) in self.visible_settings_rows() {
                let mut row = Node::text(SETTINGS_ROWS[n as usize - 1], "android:id/title", r);
                row.clickable = true;
                nodes.push(row);
            }
        } else if self.on_browser() {
            nodes.extend(self.web_nodes());
        } else if self.foreground.package == WEBVIEW_APP_PACKAGE {
            // A WebView that is not debuggable, as uiautomator often reports one: a single node, its content
            // unknown (tools::web reports it opaque).
            let b = self.web_area();
            nodes.push(Node::text("Help", "com.xagent.help:id/toolbar_title", l.title));
            let mut page = Node::text(WEBVIEW_APP_TEXT, "com.xagent.help:id/webview", b);
            page.class = "android.webkit.WebView";
            page.focusable = true;
            nodes.push(page);
        } else {
            nodes.push(Node::text(&self.foreground.package, "android:id/title", l.title));
            nodes.push(Node::text(&self.foreground.activity, "android:id/text1", l.counter));
        }
        nodes
    }
}

/// Rows of a list viewport `list` (`n` rows of `row_height`, scrolled by `offset`) that show: (1-based number,
/// bounds clipped to the viewport, as uiautomator reports them).
fn rows_in(list: Rect, row_height: i32, n: i32, offset: i32) -> Vec<(i32, Rect)> {
    (0..n)
        .filter_map(|i| {
            let top = list.top + i * row_height - offset;
            let r = Rect {
                left: list.left,
                top: top.max(list.top),
                right: list.right,
                bottom: (top + row_height).min(list.bottom),
            };
            (r.bottom > r.top).then_some((i + 1, r))
        })
        .collect()
}

pub fn xml_escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&apos;"),
            // KXmlSerializer writes whitespace controls in attribute values as references (tests/fixtures/real:
            // `Run&#10;adb shell …` in ui-pixel5-oneline-zero-size-talos.xml).
            '\n' => o.push_str("&#10;"),
            '\r' => o.push_str("&#13;"),
            '\t' => o.push_str("&#9;"),
            // uiautomator's dumper replaces characters XML cannot carry with '.'
            // (AccessibilityNodeInfoDumper.stripInvalidXMLChars), so a real dump is always well-formed.
            c if !xml_char(c) => o.push('.'),
            c => o.push(c),
        }
    }
    o
}

/// Characters uiautomator keeps in a dump (XML 1.0 `Char`, minus the C1 controls its dumper also strips).
pub fn xml_char(c: char) -> bool {
    !matches!(c, '\u{0}'..='\u{8}' | '\u{b}' | '\u{c}' | '\u{e}'..='\u{1f}' | '\u{7f}'..='\u{84}' | '\u{86}'..='\u{9f}' | '\u{fdd0}'..='\u{fddf}' | '\u{fffe}' | '\u{ffff}')
}

struct Node {
    text: String,
    id: String,
    class: &'static str,
    desc: String,
    clickable: bool,
    focusable: bool,
    focused: bool,
    long_clickable: bool,
    scrollable: bool,
    password: bool,
    checkable: bool,
    checked: bool,
    bounds: Rect,
    /// Nested elements (a WebView's DOM nodes); the dump writes them inside this node.
    children: Vec<Node>,
    /// A web link: drawn in link blue (render only, not in the dump).
    link: bool,
}

impl Node {
    fn text(text: &str, id: &str, bounds: Rect) -> Self {
        Node {
            text: text.into(),
            id: id.into(),
            class: "android.widget.TextView",
            desc: String::new(),
            clickable: false,
            focusable: false,
            focused: false,
            long_clickable: false,
            scrollable: false,
            password: false,
            checkable: false,
            checked: false,
            bounds,
            children: Vec::new(),
            link: false,
        }
    }
    fn button(text: &str, id: &str, bounds: Rect) -> Self {
        Node { class: "android.widget.Button", clickable: true, focusable: true, ..Node::text(text, id, bounds) }
    }
    fn field(text: &str, id: &str, bounds: Rect) -> Self {
        Node {
            class: "android.widget.EditText",
            clickable: true,
            focusable: true,
            long_clickable: true,
            ..Node::text(text, id, bounds)
        }
    }
    fn list(id: &str, bounds: Rect) -> Self {
        Node {
            class: "androidx.recyclerview.widget.RecyclerView",
            scrollable: true,
            focusable: true,
            ..Node::text("", id, bounds)
        }
    }
    fn render(&self, index: usize, pkg: &str) -> String {
        let children: String = self.children.iter().enumerate().map(|(i, n)| n.render(i, pkg)).collect();
        let close = if children.is_empty() { " />".to_owned() } else { format!(">{children}</node>") };
        format!(
            "<node index=\"{index}\" text=\"{}\" resource-id=\"{}\" class=\"{}\" package=\"{}\" content-desc=\"{}\" \
             checkable=\"{}\" checked=\"{}\" clickable=\"{}\" enabled=\"true\" focusable=\"{}\" focused=\"{}\" \
             scrollable=\"{}\" long-clickable=\"{}\" password=\"{}\" selected=\"false\" bounds=\"{}\"{close}",
            xml_escape(&self.text),
            xml_escape(&self.id),
            self.class,
            xml_escape(pkg),
            xml_escape(&self.desc),
            self.checkable,
            self.checked,
            self.clickable,
            self.focusable,
            self.focused,
            self.scrollable,
            self.long_clickable,
            self.password,
            self.bounds.bounds()
        )
    }
}

#[cfg(test)]
mod tests;

//! The rest of the demo world an agent can finish tasks in (issue 50 item 4), beside the browser (`web.rs`):
//!
//! - **Settings sub-pages**: a row of the Settings list opens its page (`com.android.settings/.SubSettings`, as on
//!   AOSP): Network & internet → Internet (the Wi-Fi switch and the networks), About phone (model, Android version,
//!   build number); rows without a page of their own open an empty one. "Navigate up" and BACK return.
//! - **Messages** (`com.google.android.apps.messaging`): the SMS the phone received (the login form's one-time
//!   code), one conversation per sender; a conversation shows its messages. Each SMS is also posted as the app's
//!   notification once it arrives (`Device::deliver_sms`).
//! - **The notification shade**: a swipe down from the top edge (or `cmd statusbar expand-notifications`) pulls it
//!   over the app, a window of `com.android.systemui` listing the messages app's notifications (app name, title,
//!   text, as AOSP's notification template ids them: `android:id/app_name_text`, `android:id/title`,
//!   `android:id/text`); a tap on one opens its conversation; BACK, HOME or a swipe up closes it. (Notifications
//!   a test posts with `SimPhone::post_notification` are in `dumpsys notification` only.)
//! - **The PIN lock screen**: a phone whose lock is [`LockMode::Secure`] with a PIN shows the bouncer's PIN pad on
//!   its keyguard (AOSP's `KeyguardPINView` ids: `pinEntry`, `key0`…`key9`, `delete_button`, `key_enter`); digits
//!   typed or tapped go into the entry, ENTER (or the pad's enter key) checks it: the right PIN unlocks, a wrong one
//!   says "Wrong PIN" and clears.
//! - **`am force-stop`** ([`Ui::force_stop`]): the app leaves the screen and its next launch starts afresh.
//! - **The demo app's sign-in screen** ([`SIGN_IN_ACTIVITY`]): a title and a password field (one dot per character
//!   in the dump and the picture); its text is the app's, dropped by a force-stop of `com.xagent.demo`.

use super::{
    Activity, LockMode, Node, Rect, TapOutcome, Ui, BROWSER_PACKAGE, DEMO_PACKAGE, HOME_PACKAGE, MESSAGES_ACTIVITY,
    MESSAGES_PACKAGE, SETTINGS_PACKAGE, SETTINGS_ROWS, SIGN_IN_ACTIVITY,
};

/// The resource id of the sign-in screen's password field.
pub const SIGN_IN_PASSWORD: &str = "com.xagent.demo:id/password";
/// The activity every Settings sub-page runs in.
pub const SUB_SETTINGS: &str = "com.android.settings.SubSettings";
/// The Wi-Fi network the phone is connected to, and the others it sees.
pub const WIFI_NETWORK: &str = "SimWifi";
const OTHER_NETWORKS: [(&str, &str); 2] = [("Cafe Guest", "Saved"), ("Neighbor-5G", "")];

/// A row of a Settings page: title, summary (may be empty), and whether it is a switch (and its state).
struct Row {
    title: String,
    summary: String,
    switch: Option<bool>,
}

fn row(title: &str, summary: &str) -> Row {
    Row { title: title.into(), summary: summary.into(), switch: None }
}

impl Ui {
    /// The Settings sub-page in front, if one is.
    pub fn settings_page(&self) -> Option<&str> {
        if self.on_settings() && self.foreground.activity == SUB_SETTINGS {
            self.settings_pages.last().map(String::as_str)
        } else {
            None
        }
    }

    fn page_rows(&self, page: &str) -> Vec<Row> {
        match page {
            "Network & internet" => vec![
                row("Internet", if self.wifi_on { WIFI_NETWORK } else { "Off" }),
                row("Calls & SMS", "Sim Mobile"),
                row("SIMs", "Sim Mobile"),
                Row { switch: Some(false), ..row("Airplane mode", "") },
                row("Hotspot & tethering", "Off"),
                row("Data Saver", "Off"),
                row("VPN", "None"),
                row("Private DNS", "Automatic"),
            ],
            "Internet" => {
                let mut rows = vec![Row { switch: Some(self.wifi_on), ..row("Wi-Fi", "") }];
                if self.wifi_on {
                    rows.push(row(WIFI_NETWORK, "Connected"));
                    rows.extend(OTHER_NETWORKS.iter().map(|(n, s)| row(n, s)));
                }
                rows.push(row("Add network", ""));
                rows.push(row("Saved networks", "2 networks"));
                rows
            }
            "About phone" => self.about.iter().map(|(k, v)| row(k, v)).collect(),
            _ => vec![row("Nothing to set here on the simulated phone", "")],
        }
    }

    /// A sub-page's rows with their rectangles (a row: its title above, its summary below).
    fn page_row_rects(&self, page: &str) -> Vec<(Row, Rect)> {
        let l = self.settings_layout();
        let h = l.row_height * 3 / 2;
        self.page_rows(page)
            .into_iter()
            .enumerate()
            .map(|(i, r)| {
                let top = l.list.top + i as i32 * h;
                (r, Rect { left: l.list.left, top, right: l.list.right, bottom: (top + h).min(l.list.bottom) })
            })
            .filter(|(_, r)| r.bottom > r.top)
            .collect()
    }

    fn up_button(&self) -> Rect {
        let t = self.settings_layout().title;
        Rect { left: 0, right: t.left.max(1), ..t }
    }

    /// The nodes of a Settings sub-page: "Navigate up", its title, and its rows (title, summary, switch).
    pub(super) fn settings_page_nodes(&self, page: &str) -> Vec<Node> {
        let l = self.settings_layout();
        let mut up = Node::text("", "", self.up_button());
        up.class = "android.widget.ImageButton";
        up.desc = "Navigate up".into();
        up.clickable = true;
        up.focusable = true;
        let mut nodes = vec![up, Node::text(page, "com.android.settings:id/collapsing_toolbar", l.title)];
        nodes.push(Node::list("com.android.settings:id/recycler_view", l.list));
        for (r, rect) in self.page_row_rects(page) {
            let mid = rect.top + (rect.bottom - rect.top) * 11 / 20;
            let right = if r.switch.is_some() { rect.right - (rect.right - rect.left) / 5 } else { rect.right };
            let mut t = Node::text(&r.title, "android:id/title", Rect { right, bottom: mid, ..rect });
            t.clickable = true;
            nodes.push(t);
            if !r.summary.is_empty() {
                nodes.push(Node::text(&r.summary, "android:id/summary", Rect { top: mid, right, ..rect }));
            }
            if let Some(on) = r.switch {
                let mut s =
                    Node::text(if on { "ON" } else { "OFF" }, "android:id/switch_widget", Rect { left: right, ..rect });
                s.class = "android.widget.Switch";
                s.clickable = true;
                s.focusable = true;
                s.checkable = true;
                s.checked = on;
                nodes.push(s);
            }
        }
        nodes
    }

    /// A tap on the Settings list's row `title` (the home page's or a sub-page's): opens its page or flips its
    /// switch.
    pub(super) fn open_settings_row(&mut self, title: &str) -> TapOutcome {
        let out = self.clicked(Some(title.to_owned()));
        match title {
            "Wi-Fi" if self.settings_page() == Some("Internet") => self.wifi_on = !self.wifi_on,
            "Airplane mode" => {}
            _ if self.settings_page() == Some("About phone") => {}
            _ if self.settings_page().is_some() && !["Internet", "Network & internet"].contains(&title) => {}
            _ => {
                // Each page is an activity of its own (SubSettings again over SubSettings), so BACK pops one.
                self.settings_pages.push(title.to_owned());
                let sub = Activity { package: SETTINGS_PACKAGE.into(), activity: SUB_SETTINGS.into() };
                let prev = std::mem::replace(&mut self.foreground, sub);
                self.back_stack.push(prev);
                self.animate();
            }
        }
        out
    }

    /// A tap in Settings (home list or sub-page).
    pub(super) fn tap_settings(&mut self, x: i32, y: i32) -> TapOutcome {
        match self.settings_page().map(str::to_owned) {
            None => {
                let hit = self.visible_settings_rows().into_iter().find(|(_, r)| r.contains(x, y));
                match hit {
                    Some((n, _)) => self.open_settings_row(SETTINGS_ROWS[n as usize - 1]),
                    None => TapOutcome::Nothing,
                }
            }
            Some(page) => {
                if self.up_button().contains(x, y) {
                    self.key("KEYCODE_BACK");
                    return self.clicked(Some("Navigate up".into()));
                }
                let hit = self.page_row_rects(&page).into_iter().find(|(_, r)| r.contains(x, y));
                match hit {
                    Some((r, _)) => self.open_settings_row(&r.title),
                    None => TapOutcome::Nothing,
                }
            }
        }
    }

    /// The SMS that arrived by now, oldest first.
    fn arrived(&self) -> impl Iterator<Item = &super::Sms> {
        let now = std::time::Instant::now();
        self.sms.iter().filter(move |m| m.arrives <= now)
    }

    /// The messages app: the conversation list (one row per sender, its latest message under it), or the open
    /// conversation's messages.
    pub(super) fn messages_nodes(&self) -> Vec<Node> {
        let l = self.settings_layout();
        let rows = l.row_height * 3 / 2;
        let mut nodes = Vec::new();
        match &self.conversation {
            None => {
                nodes.push(Node::text("Messages", "com.google.android.apps.messaging:id/toolbar_title", l.title));
                let mut senders: Vec<&super::Sms> = Vec::new();
                for m in self.arrived() {
                    senders.retain(|s| s.from != m.from);
                    senders.push(m);
                }
                senders.reverse();
                if senders.is_empty() {
                    nodes.push(Node::text(
                        "No conversations yet",
                        "com.google.android.apps.messaging:id/empty_text",
                        Rect { bottom: l.list.top + rows, ..l.list },
                    ));
                }
                for (i, m) in senders.iter().enumerate() {
                    let top = l.list.top + i as i32 * rows;
                    let mid = top + rows / 2;
                    let mut name = Node::text(
                        &m.from,
                        "com.google.android.apps.messaging:id/conversation_name",
                        Rect { top, bottom: mid, ..l.list },
                    );
                    name.clickable = true;
                    nodes.push(name);
                    nodes.push(Node::text(
                        &m.body,
                        "com.google.android.apps.messaging:id/conversation_snippet",
                        Rect { top: mid, bottom: top + rows, ..l.list },
                    ));
                }
            }
            Some(from) => {
                let mut up = Node::text("", "", self.up_button());
                up.class = "android.widget.ImageButton";
                up.desc = "Back".into();
                up.clickable = true;
                nodes.push(up);
                nodes.push(Node::text(from, "com.google.android.apps.messaging:id/conversation_title", l.title));
                for (i, m) in self.arrived().filter(|m| &m.from == from).enumerate() {
                    let top = l.list.top + i as i32 * rows;
                    nodes.push(Node::text(
                        &m.body,
                        "com.google.android.apps.messaging:id/message_text",
                        Rect { top, bottom: top + rows - rows / 6, ..l.list },
                    ));
                }
            }
        }
        nodes
    }

    pub(super) fn tap_messages(&mut self, x: i32, y: i32) -> TapOutcome {
        if self.conversation.is_some() {
            if self.up_button().contains(x, y) {
                self.conversation = None;
                return self.clicked(Some("Back".into()));
            }
            return TapOutcome::Nothing;
        }
        let hit = self.messages_nodes().into_iter().find(|n| n.clickable && n.bounds.contains(x, y));
        match hit {
            Some(n) => {
                self.conversation = Some(n.text.clone());
                self.clicked(Some(n.text))
            }
            None => TapOutcome::Nothing,
        }
    }

    /// The PIN pad is up: a lit keyguard whose lock is a PIN.
    pub fn pin_pad_up(&self) -> bool {
        self.keyguard_showing && self.screen_on && self.lock == LockMode::Secure && self.pin.is_some()
    }

    /// The pad's keys: (resource id suffix, label, rectangle), a 3 × 4 grid: 1–9, delete, 0, enter.
    fn pin_keys(&self) -> Vec<(String, String, Rect)> {
        let (w, h) = self.logical_size();
        let (w, h) = (w as i32, h as i32);
        let labels = ["1", "2", "3", "4", "5", "6", "7", "8", "9", "delete_button", "0", "key_enter"];
        labels
            .iter()
            .enumerate()
            .map(|(i, k)| {
                let (col, line) = (i as i32 % 3, i as i32 / 3);
                let (left, top) = (w / 8 + col * w / 4, h * (560 + line * 90) / 1000);
                let r = Rect { left, top, right: left + w / 4 - w / 40, bottom: top + h * 75 / 1000 };
                let id = if k.len() == 1 { format!("key{k}") } else { (*k).to_owned() };
                (id, (*k).to_owned(), r)
            })
            .collect()
    }

    fn pin_entry_rect(&self) -> Rect {
        let (w, h) = self.logical_size();
        let (w, h) = (w as i32, h as i32);
        Rect { left: w / 6, top: h * 440 / 1000, right: w * 5 / 6, bottom: h * 510 / 1000 }
    }

    /// The bouncer's nodes below the clock: its message, the entry (one dot per digit) and the pad.
    pub(super) fn pin_nodes(&self) -> Vec<Node> {
        let (w, h) = self.logical_size();
        let msg = self.pin_notice.clone().unwrap_or_else(|| "Enter PIN".into());
        let mut nodes = vec![Node::text(
            &msg,
            "com.android.systemui:id/bouncer_message_area",
            Rect {
                left: w as i32 / 12,
                top: h as i32 * 360 / 1000,
                right: w as i32 * 11 / 12,
                bottom: h as i32 * 410 / 1000,
            },
        )];
        let mut entry = Node::text(
            &"\u{2022}".repeat(self.pin_entry.len()),
            "com.android.systemui:id/pinEntry",
            self.pin_entry_rect(),
        );
        entry.class = "android.widget.EditText";
        entry.desc = "PIN area".into();
        entry.password = true;
        entry.focused = true;
        nodes.push(entry);
        for (id, label, r) in self.pin_keys() {
            let (text, desc) = match label.as_str() {
                "delete_button" => (String::new(), "Delete".to_owned()),
                "key_enter" => (String::new(), "Enter".to_owned()),
                d => (d.to_owned(), String::new()),
            };
            // A digit key (NumPadKey, a ViewGroup described by its digit) holds its digit as a TextView
            // (`digit_text`); delete and enter are image buttons described by their function.
            let mut k = Node::text("", &format!("com.android.systemui:id/{id}"), r);
            k.clickable = true;
            k.focusable = true;
            if desc.is_empty() {
                k.class = "android.view.ViewGroup";
                k.desc = text.clone();
                k.children.push(Node::text(&text, "com.android.systemui:id/digit_text", r));
            } else {
                k.class = "android.widget.ImageButton";
                k.desc = desc;
            }
            nodes.push(k);
        }
        nodes
    }

    /// A tap on the PIN pad.
    pub(super) fn tap_pin(&mut self, x: i32, y: i32) -> TapOutcome {
        let Some((_, label, _)) = self.pin_keys().into_iter().find(|(_, _, r)| r.contains(x, y)) else {
            return TapOutcome::Nothing;
        };
        match label.as_str() {
            "delete_button" => {
                self.pin_entry.pop();
            }
            "key_enter" => self.check_pin(),
            d => self.pin_digits(d),
        }
        TapOutcome::Nothing
    }

    /// Digits typed into the PIN entry (others are ignored, as the PIN view's filter does).
    pub(super) fn pin_digits(&mut self, s: &str) {
        for c in s.chars().filter(char::is_ascii_digit) {
            if self.pin_entry.len() < 16 {
                self.pin_entry.push(c);
            }
        }
        self.pin_notice = None;
    }

    /// ENTER on the PIN pad: the right PIN opens the keyguard; a wrong one is cleared with "Wrong PIN".
    pub(super) fn check_pin(&mut self) {
        let entered = std::mem::take(&mut self.pin_entry);
        if self.pin.as_deref() == Some(entered.as_str()) && !entered.is_empty() {
            self.keyguard_showing = false;
            self.pin_notice = None;
            self.animate();
        } else {
            self.pin_notice = Some("Wrong PIN".into());
        }
    }

    /// The shade's rows: (sender, text, rectangle), newest first.
    fn shade_rows(&self) -> Vec<(String, String, Rect)> {
        let (w, h) = self.logical_size();
        let (w, h) = (w as i32, h as i32);
        let mut arrived: Vec<&super::Sms> = self.arrived().filter(|m| !m.dismissed).collect();
        arrived.reverse();
        arrived
            .into_iter()
            .take(6)
            .enumerate()
            .map(|(i, m)| {
                let top = h * (120 + i as i32 * 130) / 1000;
                (
                    m.from.clone(),
                    m.body.clone(),
                    Rect { left: w / 30, top, right: w - w / 30, bottom: top + h * 120 / 1000 },
                )
            })
            .collect()
    }

    /// The shade's nodes: a row per notification (the row, its app name, title and text).
    pub(super) fn shade_nodes(&self) -> Vec<Node> {
        let (w, h) = self.logical_size();
        let mut nodes = vec![Node::text(
            "12:00",
            "com.android.systemui:id/clock",
            Rect { left: w as i32 / 30, top: h as i32 * 40 / 1000, right: w as i32 / 3, bottom: h as i32 * 100 / 1000 },
        )];
        let rows = self.shade_rows();
        if rows.is_empty() {
            nodes.push(Node::text(
                "No notifications",
                "com.android.systemui:id/no_notifications",
                Rect { left: 0, top: h as i32 * 200 / 1000, right: w as i32, bottom: h as i32 * 260 / 1000 },
            ));
        }
        for (from, body, r) in rows {
            let third = (r.bottom - r.top) / 3;
            let mut row = Node::text("", "com.android.systemui:id/expandableNotificationRow", r);
            row.class = "android.widget.FrameLayout";
            row.clickable = true;
            row.desc = format!("Messages notification: {from}");
            let line = |k: i32| Rect { top: r.top + k * third, bottom: r.top + (k + 1) * third, ..r };
            row.children = vec![
                Node::text("Messages", "android:id/app_name_text", line(0)),
                Node::text(&from, "android:id/title", line(1)),
                Node::text(&body, "android:id/text", line(2)),
            ];
            nodes.push(row);
        }
        nodes
    }

    /// A tap in the shade: a notification opens its conversation (and goes, as an auto-cancel one does);
    /// elsewhere closes the shade.
    pub(super) fn tap_shade(&mut self, x: i32, y: i32) -> TapOutcome {
        self.shade_open = false;
        let Some((from, _, _)) = self.shade_rows().into_iter().find(|(_, _, r)| r.contains(x, y)) else {
            return TapOutcome::Nothing;
        };
        let now = std::time::Instant::now();
        for m in self.sms.iter_mut().filter(|m| m.from == from && m.arrives <= now) {
            m.dismissed = true;
        }
        self.conversation = Some(from.clone());
        self.launch(Activity { package: MESSAGES_PACKAGE.into(), activity: MESSAGES_ACTIVITY.into() });
        self.clicked(Some(from))
    }
}

impl Ui {
    /// The demo app's sign-in screen is in front.
    pub fn on_sign_in(&self) -> bool {
        self.foreground.package == DEMO_PACKAGE && self.foreground.activity == SIGN_IN_ACTIVITY
    }

    /// The sign-in screen: its title and the password field (uiautomator reports a password field's text as the
    /// dots it shows, one per character).
    pub(super) fn sign_in_nodes(&self) -> Vec<Node> {
        let l = self.layout();
        let mut p = Node::field(&"\u{2022}".repeat(self.password.chars().count()), SIGN_IN_PASSWORD, l.password_field);
        p.long_clickable = false;
        p.focused = self.password_focused;
        p.password = true;
        vec![Node::text("Sign in", "com.xagent.demo:id/title", l.title), p]
    }

    /// A tap on the sign-in screen: the password field takes the focus; elsewhere it loses it.
    pub(super) fn tap_sign_in(&mut self, x: i32, y: i32) -> TapOutcome {
        self.password_focused = self.layout().password_field.contains(x, y);
        if self.password_focused {
            TapOutcome::FocusedField
        } else {
            TapOutcome::Nothing
        }
    }

    /// `am force-stop`: removes the package from the foreground and the back stack, and drops its activities'
    /// UI state: a force-stopped app's activities are destroyed with their saved instance state, so its next launch
    /// starts with empty fields, unscrolled lists and its first screen ("User-initiated UI state dismissal",
    /// developer.android.com/topic/libraries/architecture/saving-states: force-quitting an app from Settings
    /// destroys the activity instance "along with any state stored in it and any saved instance state record").
    /// What an app keeps on disk stays: the browser's tab (its page and history, which Chrome restores) and the
    /// site's session (a cookie); the page's inputs and focus, which lived in the killed renderer, go.
    pub fn force_stop(&mut self, package: &str) {
        match package {
            BROWSER_PACKAGE => {
                self.browser.inputs.clear();
                self.browser.focus = None;
                self.browser.notice = None;
                self.web_scroll = 0;
            }
            DEMO_PACKAGE => {
                self.list_offset = 0;
                self.password.clear();
                self.password_focused = false;
            }
            SETTINGS_PACKAGE => {
                self.settings_offset = 0;
                self.settings_pages.clear();
            }
            MESSAGES_PACKAGE => self.conversation = None,
            _ => {}
        }
        self.back_stack.retain(|a| a.package != package);
        if self.foreground.package == package && package != HOME_PACKAGE {
            self.foreground = self.back_stack.pop().unwrap_or_else(Activity::home);
            self.animate();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::Sms;
    use super::*;

    /// A section of tests/fixtures/real/ui-world-ids.txt, its comment lines left out.
    fn sample(section: &str) -> Vec<String> {
        let path = format!("{}/tests/fixtures/real/ui-world-ids.txt", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let start = text.find(&format!("[{section}]")).unwrap_or_else(|| panic!("no [{section}]"));
        text[start..]
            .lines()
            .skip(1)
            .take_while(|l| !l.starts_with('['))
            .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
            .map(|l| l.trim().to_owned())
            .collect()
    }

    fn ids_in_order(dump: &str, prefix: &str) -> Vec<String> {
        dump.match_indices(&format!("resource-id=\"{prefix}"))
            .map(|(i, m)| dump[i + m.len()..].split('"').next().unwrap_or("").to_owned())
            .collect()
    }

    /// The PIN bouncer dumps the real layout's ids: the entry, then the twelve keys in the Flow's order, each digit
    /// in a `digit_text`.
    #[test]
    fn the_pin_pad_has_the_ids_of_aosps_bouncer() {
        let real = sample("keyguard-pin");
        let flow = real.iter().find_map(|l| l.split("constraint_referenced_ids=\"").nth(1)).expect("the flow");
        let keys: Vec<&str> = flow.trim_end_matches('"').split(',').collect();
        assert_eq!(keys.len(), 12);
        assert!(real.iter().any(|l| l.contains("@+id/pinEntry")) && real.iter().any(|l| l.contains("id/digit_text")));
        let mut ui = Ui::new(1080, 2400);
        ui.lock = LockMode::Secure;
        ui.pin = Some("1234".into());
        ui.set_screen(false);
        ui.set_screen(true);
        let dump = ui.dump_xml();
        let ids = ids_in_order(&dump, "com.android.systemui:id/");
        let pad: Vec<&str> = ids.iter().map(String::as_str).filter(|i| keys.contains(i)).collect();
        assert_eq!(pad, keys, "{dump}");
        assert!(ids.iter().any(|i| i == "pinEntry") && ids.iter().filter(|i| *i == "digit_text").count() == 10);
        // Typed digits show as dots in the entry; ENTER with the right PIN opens the keyguard.
        ui.type_text("12");
        assert!(ui.dump_xml().contains("text=\"\u{2022}\u{2022}\" resource-id=\"com.android.systemui:id/pinEntry\""));
        ui.type_text("34");
        ui.key("KEYCODE_ENTER");
        assert!(!ui.keyguard_showing);
    }

    /// The Internet page's Wi-Fi row: a title and, in the same row, an android.widget.Switch `switch_widget` with
    /// its state in `checked`, as on a real Settings page.
    #[test]
    fn a_settings_switch_row_is_shaped_as_a_real_one() {
        let real = sample("settings-switch-row");
        for needle in [
            "resource-id=\"android:id/title\"",
            "resource-id=\"android:id/switch_widget\"",
            "class=\"android.widget.Switch\"",
        ] {
            assert!(real.iter().any(|l| l == needle), "{needle}");
        }
        let mut ui = Ui::new(1080, 2400);
        ui.launch(Activity { package: SETTINGS_PACKAGE.into(), activity: "com.android.settings.Settings".into() });
        ui.open_settings_row("Network & internet");
        ui.open_settings_row("Internet");
        let dump = ui.dump_xml();
        let title = dump.find("text=\"Wi-Fi\" resource-id=\"android:id/title\"").unwrap_or_else(|| panic!("{dump}"));
        let switch = dump.find("resource-id=\"android:id/switch_widget\" class=\"android.widget.Switch\"").unwrap();
        assert!(title < switch && dump[switch..].contains("checkable=\"true\" checked=\"true\""), "{dump}");
        ui.open_settings_row("Wi-Fi");
        assert!(!ui.wifi_on && ui.dump_xml().contains("checked=\"false\""));
        assert_eq!(ui.settings_page(), Some("Internet"));
        ui.key("KEYCODE_BACK");
        assert_eq!(ui.settings_page(), Some("Network & internet"));
        ui.key("KEYCODE_BACK");
        assert_eq!(ui.settings_page(), None);
        assert!(ui.on_settings());
    }

    /// The shade lists an arrived SMS with the notification template's ids (app name, title, text).
    #[test]
    fn the_shade_shows_a_notification_row_as_a_real_one() {
        let real = sample("shade-notification");
        assert!(real.iter().any(|l| l.contains("resource-id=\"android:id/app_name_text\"")));
        let mut ui = Ui::new(1080, 2400);
        ui.sms.push(Sms {
            from: "Sim Example".into(),
            body: "123456 is your code".into(),
            arrives: std::time::Instant::now(),
            notified: false,
            dismissed: false,
        });
        ui.swipe(540, 10, 540, 1500);
        assert!(ui.shade_open);
        let dump = ui.dump_xml();
        for id in [
            "com.android.systemui:id/expandableNotificationRow",
            "android:id/app_name_text",
            "android:id/title",
            "android:id/text",
        ] {
            assert!(dump.contains(&format!("resource-id=\"{id}\"")), "{id}: {dump}");
        }
        assert!(dump.contains("text=\"Messages\" resource-id=\"android:id/app_name_text\""), "{dump}");
        // A tap on it opens the conversation in Messages.
        let (x, y) = ui.shade_rows()[0].2.center();
        ui.tap(x, y);
        assert!(ui.on_messages() && !ui.shade_open);
        assert!(ui.dump_xml().contains("text=\"123456 is your code\""));
    }
}

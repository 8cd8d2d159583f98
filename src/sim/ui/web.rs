//! The browser stand-in (`com.android.chrome`) on the site of `site.rs` (issue 50 item 4): the page's blocks laid
//! out on screen (scrolled by [`Ui::web_scroll`]), the nodes Chrome's WebView gives uiautomator, taps that follow a
//! link, focus an input or press a button, BACK through the browser's history, `am start -d URL` opening a URL,
//! and the login form: "Send code" texts a one-time code to the phone a few seconds later (an SMS of the messages
//! app, posted as its notification), "Sign in" with it opens the account page.
//!
//! The start page keeps the geometry the tests of issue 44 measured ([`BrowserLayout`]).

use std::time::{Duration, Instant};

use super::site::{resolve, Block, Page, SITE};
use super::{Activity, Node, Rect, Sms, TapOutcome, Ui, BROWSER_PACKAGE};

/// How long the one-time code's SMS takes to arrive after "Send code" (a real one: seconds).
pub const OTP_DELAY: Duration = Duration::from_secs(3);
/// Who texts the code (an alphanumeric sender id, as banks and sites use).
pub const OTP_SENDER: &str = "Sim Example";

/// Geometry of the browser: the URL bar, the web page's area and, on the start page, its elements (for the tests
/// that measure them; other pages leave what they lack empty).
#[derive(Debug, Clone, Copy, Default)]
pub struct BrowserLayout {
    pub url_bar: Rect,
    pub page: Rect,
    pub heading: Rect,
    pub links: [Rect; 3],
    pub search: Rect,
    /// The page's last paragraph (the start page's "End of page").
    pub footer: Rect,
}

/// A block's height and the space after it, in thousandths of the screen's height.
fn extent(b: &Block) -> (i32, i32) {
    match b {
        Block::Heading(_) => (60, 30),
        Block::Text(_) | Block::Link { .. } => (50, 20),
        Block::Input { .. } | Block::Button { .. } => (60, 20),
        Block::Gap(n) => (0, *n),
    }
}

impl Ui {
    /// The page shown now.
    pub fn web_page(&self) -> Page {
        self.browser.page()
    }

    fn url_bar(&self) -> Rect {
        let (w, h) = self.logical_size();
        let (w, h) = (w as i32, h as i32);
        Rect { left: w / 24, top: h * 45 / 1000, right: w * 23 / 24, bottom: h * 95 / 1000 }
    }

    /// The web content's area on screen (below the toolbar).
    pub fn web_area(&self) -> Rect {
        let (w, h) = self.logical_size();
        Rect { left: 0, top: h as i32 * 110 / 1000, right: w as i32, bottom: h as i32 }
    }

    /// Each block of the page with its rectangle on screen, moved up by the scroll (not clipped); gaps left out.
    pub fn web_blocks(&self) -> Vec<(Block, Rect)> {
        let (w, h) = self.logical_size();
        let (w, h) = (w as i32, h as i32);
        let (left, right) = (w / 12, w * 11 / 12);
        let mut y = 140;
        let mut out = Vec::new();
        for b in self.web_page().blocks {
            let (tall, after) = extent(&b);
            if tall > 0 {
                let r = Rect {
                    left,
                    top: h * y / 1000 - self.web_scroll,
                    right,
                    bottom: h * (y + tall) / 1000 - self.web_scroll,
                };
                out.push((b, r));
            }
            y += tall + after;
        }
        out
    }

    /// The bottom of the document on screen (scrolled), a margin below its last block.
    pub fn web_doc_bottom(&self) -> i32 {
        let h = self.logical_size().1 as i32;
        self.web_blocks().last().map_or(self.web_area().top, |(_, r)| r.bottom) + h * 40 / 1000
    }

    /// The browser's geometry ([`BrowserLayout`]).
    pub fn browser_layout(&self) -> BrowserLayout {
        let mut l = BrowserLayout { url_bar: self.url_bar(), page: self.web_area(), ..BrowserLayout::default() };
        let mut links = 0;
        for (b, r) in self.web_blocks() {
            match b {
                Block::Heading(_) if l.heading == Rect::default() => l.heading = r,
                Block::Link { .. } if links < 3 => {
                    l.links[links] = r;
                    links += 1;
                }
                Block::Input { .. } if l.search == Rect::default() => l.search = r,
                Block::Text(_) => l.footer = r,
                _ => {}
            }
        }
        l
    }

    /// The page's largest scroll offset (its last block just above the screen's bottom).
    pub fn max_web_scroll(&self) -> i32 {
        let h = self.logical_size().1 as i32;
        (self.web_doc_bottom() + self.web_scroll - h).max(0)
    }

    /// The browser's nodes: the URL bar, and the page as one android.webkit.WebView (its text: the page title)
    /// holding the DOM's accessibility nodes — android.view.View for text and links, android.widget.EditText for
    /// inputs, android.widget.Button for buttons, the element's HTML id as resource-id — clipped to the page.
    pub(super) fn web_nodes(&self) -> Vec<Node> {
        let area = self.web_area();
        let page_doc = self.web_page();
        let mut url = Node::field(&self.browser.at, "com.android.chrome:id/url_bar", self.url_bar());
        url.long_clickable = true;
        let mut page = Node::text(&page_doc.title, "", area);
        page.class = "android.webkit.WebView";
        page.focusable = true;
        page.scrollable = true;
        for (b, r) in self.web_blocks() {
            let n = match b {
                Block::Heading(t) | Block::Text(t) => {
                    let mut n = Node::text(&t, "", r);
                    n.class = "android.view.View";
                    n
                }
                Block::Link { text, .. } => {
                    let mut a = Node::text(&text, "", r);
                    a.class = "android.view.View";
                    a.clickable = true;
                    a.focusable = true;
                    a.link = true;
                    a
                }
                Block::Input { id, password, .. } => {
                    let value = self.browser.input(id);
                    let shown = if password { "\u{2022}".repeat(value.chars().count()) } else { value.to_owned() };
                    let mut f = Node::field(&shown, id, r);
                    f.password = password;
                    f.focused = self.browser.focus.as_deref() == Some(id);
                    f
                }
                Block::Button { id, text } => Node::button(text, id, r),
                Block::Gap(_) => continue,
            };
            page.children.push(n);
        }
        // What scrolled off the page is not on screen: uiautomator reports the rest clipped to the view.
        page.children.retain(|n| {
            let r = n.bounds.intersect(area);
            r.right > r.left && r.bottom > r.top
        });
        for n in &mut page.children {
            n.bounds = n.bounds.intersect(area);
        }
        vec![url, page]
    }

    /// A tap in the browser: an input takes the focus, a link opens its page, a button does its job.
    pub(super) fn tap_web(&mut self, x: i32, y: i32) -> TapOutcome {
        let area = self.web_area();
        self.browser.focus = None;
        if !area.contains(x, y) {
            return TapOutcome::Nothing;
        }
        let hit = self.web_blocks().into_iter().find(|(_, r)| r.intersect(area).contains(x, y)).map(|(b, _)| b);
        match hit {
            Some(Block::Input { id, .. }) => {
                self.browser.focus = Some(id.to_owned());
                TapOutcome::FocusedField
            }
            Some(Block::Link { text, href }) => {
                let out = self.clicked(Some(text));
                self.navigate(&resolve(&href));
                out
            }
            Some(Block::Button { id, text }) => {
                let out = self.clicked(Some(text.to_owned()));
                self.press_web_button(id);
                out
            }
            _ => TapOutcome::Nothing,
        }
    }

    /// Opens `at` (address-bar form) in the browser: the page before goes on the history.
    pub fn navigate(&mut self, at: &str) {
        let mut at = at.to_owned();
        if at == format!("{SITE}/logout") {
            self.browser.user = None;
            at = format!("{SITE}/login");
        }
        let before = std::mem::replace(&mut self.browser.at, at);
        self.browser.history.push(before);
        if self.browser.history.len() > 32 {
            self.browser.history.remove(0);
        }
        self.web_scroll = 0;
        self.browser.focus = None;
        self.browser.notice = None;
        self.animate();
    }

    /// `am start -a VIEW -d URL` for an http(s) URL: Chrome comes to the front showing it.
    pub fn open_url(&mut self, url: &str) {
        self.launch(Activity {
            package: BROWSER_PACKAGE.into(),
            activity: "com.google.android.apps.chrome.Main".into(),
        });
        self.navigate(&super::site::bar_form(url));
    }

    /// BACK in the browser: a focused input lets go first, then the history goes one page back; `false` when
    /// there is nothing to go back to (the activity goes).
    pub(super) fn back_in_browser(&mut self) -> bool {
        if self.browser.focus.take().is_some() {
            return true;
        }
        match self.browser.history.pop() {
            Some(prev) => {
                self.browser.at = prev;
                self.web_scroll = 0;
                self.browser.notice = None;
                true
            }
            None => false,
        }
    }

    fn press_web_button(&mut self, id: &str) {
        match id {
            "send_code" => {
                let user = self.browser.input("username").trim().to_owned();
                if user.is_empty() {
                    self.browser.notice = Some("Enter your username first.".into());
                    return;
                }
                let code = one_time_code(self.sms.len());
                self.sms.push(Sms {
                    from: OTP_SENDER.into(),
                    body: format!("{code} is your Sim Example sign-in code. Don't share it."),
                    arrives: Instant::now() + OTP_DELAY,
                    notified: false,
                    dismissed: false,
                });
                self.browser.code = Some((user, code));
                self.browser.notice = Some("We texted a code to your phone.".into());
            }
            "sign_in" => {
                let typed = self.browser.input("code").trim().to_owned();
                let user = self.browser.input("username").trim().to_owned();
                match self.browser.code.clone() {
                    None => self.browser.notice = Some("Tap Send code first.".into()),
                    Some((u, c)) if u == user && c == typed => {
                        self.browser.user = Some(u);
                        self.browser.code = None;
                        self.browser.inputs.clear();
                        self.navigate(&format!("{SITE}/account"));
                    }
                    Some(_) => self.browser.notice = Some("That code is not right. Check the SMS.".into()),
                }
            }
            _ => {}
        }
    }
}

/// Six digits, different each time (the clock's nanoseconds and a counter, mixed).
fn one_time_code(n: usize) -> String {
    let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
    let mut h = 0xcbf2_9ce4_8422_2325u64 ^ (n as u64);
    for b in t.to_le_bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    format!("{:06}", h % 1_000_000)
}

//! The small web site the browser stand-in shows (issue 50 item 4), as data: each page a title and a column of
//! blocks (heading, text, link, input, button), from which `web.rs` lays out the screen, the uiautomator nodes and
//! the DevTools snapshot alike. `sim.example` has a start page, news with two articles, weather, an about page, a
//! login form whose "Send code" texts a one-time code to the phone (`messages.rs`) and the signed-in page; an
//! unknown path of it is the site's 404 page, any other host Chrome's own "This site can’t be reached"
//! (`net::ERR_NAME_NOT_RESOLVED`, shown as `DNS_PROBE_FINISHED_NXDOMAIN`, as Chrome words it).
//!
//! Nothing here names the rest of the UI: `ui.rs` keeps a [`Browser`] and `web.rs` works on it.

/// The site's host.
pub const SITE: &str = "sim.example";

/// One block of a page, top to bottom.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Block {
    /// The page's `<h1>`.
    Heading(String),
    /// A paragraph (`<p>`).
    Text(String),
    /// `<a href>`: a tap opens `href` (a path of the site, or a full URL).
    Link { text: String, href: String },
    /// `<input>`: its HTML id, placeholder and whether it is a password field.
    Input { id: &'static str, hint: &'static str, password: bool },
    /// `<button>`: its HTML id and label.
    Button { id: &'static str, text: &'static str },
    /// Empty space, in thousandths of the screen's height.
    Gap(i32),
}

/// A page as the browser shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    /// The document's URL (`https://sim.example/news`; Chrome's error page keeps the URL that failed).
    pub url: String,
    pub title: String,
    pub blocks: Vec<Block>,
}

/// The browser's own state: where it is, where it was, what the page's inputs hold, and the site's session.
#[derive(Debug, Clone, Default)]
pub struct Browser {
    /// The page shown: its URL as the address bar shows it (`sim.example/news`, no `https://`).
    pub at: String,
    /// Pages BACK returns to (newest last).
    pub history: Vec<String>,
    /// What the page's inputs hold, by HTML id (the start page's search field is `q`).
    pub inputs: Vec<(String, String)>,
    /// The input that has the focus (typed text goes there).
    pub focus: Option<String>,
    /// The login form's one-time code, once "Send code" was tapped, and for whom.
    pub code: Option<(String, String)>,
    /// The login form's line under its buttons ("We texted a code…", "That code is not right…").
    pub notice: Option<String>,
    /// Signed in as this user (the account page greets them).
    pub user: Option<String>,
}

impl Browser {
    pub fn new() -> Self {
        Browser { at: format!("{SITE}/start"), ..Browser::default() }
    }

    /// What input `id` holds.
    pub fn input(&self, id: &str) -> &str {
        self.inputs.iter().find(|(k, _)| k == id).map_or("", |(_, v)| v.as_str())
    }

    /// The text of input `id`, to change.
    pub fn input_mut(&mut self, id: &str) -> &mut String {
        if let Some(i) = self.inputs.iter().position(|(k, _)| k == id) {
            return &mut self.inputs[i].1;
        }
        self.inputs.push((id.to_owned(), String::new()));
        &mut self.inputs.last_mut().expect("just pushed").1
    }

    /// The page shown now.
    pub fn page(&self) -> Page {
        page_at(&self.at, self)
    }
}

/// `https://sim.example/a?b#c`, `http://…` or `sim.example/a` → (host, path) in lower-case host, path without its
/// query or fragment, `/` when empty.
pub fn split_url(url: &str) -> (String, String) {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let (host, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let path = path.split(['?', '#']).next().unwrap_or("/");
    let host = host.split(['?', '#']).next().unwrap_or("").to_ascii_lowercase();
    (host, if path.is_empty() { "/".to_owned() } else { path.to_owned() })
}

/// The address bar's form of a URL: host and path, no scheme (Chrome hides `https://`).
pub fn bar_form(url: &str) -> String {
    let (host, path) = split_url(url);
    if path == "/" {
        host
    } else {
        format!("{host}{path}")
    }
}

fn link(text: &str, href: &str) -> Block {
    Block::Link { text: text.into(), href: href.into() }
}

fn text(s: &str) -> Block {
    Block::Text(s.into())
}

/// The articles of the news page: (path, title, paragraphs).
pub const ARTICLES: [(&str, &str, [&str; 3]); 2] = [
    (
        "/article/1",
        "Library opens late on Fridays",
        ["From next week the city library", "stays open until 22:00 on Fridays.", "Reading rooms and the cafe too."],
    ),
    (
        "/article/2",
        "New bike lanes downtown",
        ["Two new bike lanes open on Main St", "and River Rd this weekend.", "Parking moves to side streets."],
    ),
];

/// The page at `at` (address-bar form), given the browser's state (the login form and account page read it).
fn page_at(at: &str, b: &Browser) -> Page {
    let (host, path) = split_url(at);
    let url = format!("https://{host}{path}");
    let page = |title: &str, blocks: Vec<Block>| Page { url: url.clone(), title: title.to_owned(), blocks };
    if host != SITE && host != format!("www.{SITE}") {
        // Chrome's net error page (neterror.html): the title is the host, the code under the explanation.
        return page(
            &host,
            vec![
                Block::Heading("This site can\u{2019}t be reached".into()),
                Block::Text(format!("Check if there is a typo in {host}.")),
                text("DNS_PROBE_FINISHED_NXDOMAIN"),
                Block::Button { id: "reload-button", text: "Reload" },
            ],
        );
    }
    match path.as_str() {
        "/" | "/start" => page(
            "Sim Start Page",
            vec![
                Block::Heading("Sim Start Page".into()),
                link("Today's news", "/news"),
                link("Weather", "/weather"),
                link("About this page", "/about"),
                Block::Gap(30),
                Block::Input { id: "q", hint: "Search", password: false },
                Block::Gap(950),
                text("End of page"),
            ],
        ),
        "/news" => page(
            "Today's news",
            vec![
                Block::Heading("Today's news".into()),
                link(ARTICLES[0].1, ARTICLES[0].0),
                link(ARTICLES[1].1, ARTICLES[1].0),
                Block::Gap(30),
                link("Back to start", "/start"),
            ],
        ),
        "/weather" => page(
            "Weather",
            vec![Block::Heading("Weather".into()), text("Sunny, 21 C, light wind."), link("Back to start", "/start")],
        ),
        "/about" => page(
            "About this page",
            vec![
                Block::Heading("About this page".into()),
                text("A small site of the simulated phone."),
                link("Sign in", "/login"),
                link("Back to start", "/start"),
            ],
        ),
        "/login" => {
            let mut blocks = vec![
                Block::Heading("Sign in".into()),
                Block::Input { id: "username", hint: "Username", password: false },
                Block::Input { id: "password", hint: "Password", password: true },
                Block::Button { id: "send_code", text: "Send code" },
                Block::Input { id: "code", hint: "Code from SMS", password: false },
                Block::Button { id: "sign_in", text: "Sign in" },
            ];
            if let Some(n) = &b.notice {
                blocks.push(Block::Text(n.clone()));
            }
            page("Sign in", blocks)
        }
        "/account" => match &b.user {
            Some(u) => page(
                "Your account",
                vec![Block::Heading(format!("Welcome, {u}")), text("You are signed in."), link("Sign out", "/logout")],
            ),
            None => page(
                "Sign in",
                vec![Block::Heading("Sign in".into()), text("Please sign in first."), link("Sign in", "/login")],
            ),
        },
        p => match ARTICLES.iter().find(|a| a.0 == p) {
            Some((_, title, lines)) => {
                let mut blocks = vec![Block::Heading((*title).into())];
                blocks.extend(lines.iter().map(|l| text(l)));
                blocks.push(link("Back to news", "/news"));
                page(title, blocks)
            }
            // The site's own 404, as a plain server words it.
            None => page(
                "404 Not Found",
                vec![
                    Block::Heading("Not Found".into()),
                    Block::Text(format!("The requested URL {p} was not found on this server.")),
                    link("Back to start", "/start"),
                ],
            ),
        },
    }
}

/// Where a link goes, in address-bar form: a path of the site, or a full URL.
pub fn resolve(href: &str) -> String {
    if href.starts_with('/') {
        format!("{SITE}{href}")
    } else {
        bar_form(href)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_split_and_pages_resolve() {
        assert_eq!(split_url("https://Sim.Example/news?x=1#top"), ("sim.example".into(), "/news".into()));
        assert_eq!(split_url("sim.example"), ("sim.example".into(), "/".into()));
        assert_eq!(bar_form("https://sim.example/article/1"), "sim.example/article/1");
        let b = Browser::new();
        assert_eq!(b.page().title, "Sim Start Page");
        assert_eq!(page_at("sim.example/article/2", &b).title, "New bike lanes downtown");
        assert_eq!(page_at("sim.example/nope", &b).title, "404 Not Found");
        let err = page_at("nowhere.invalid/x", &b);
        assert_eq!(err.title, "nowhere.invalid");
        assert!(err.blocks.contains(&text("DNS_PROBE_FINISHED_NXDOMAIN")));
    }
}

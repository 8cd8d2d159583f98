//! The element model every tree reader and tool shares: one view of the UI tree (from `uiautomator dump`, the
//! phone helper's tree or a web page's snapshot), its JSON form and the schema results describe it with.

use serde_json::{json, Value};

#[derive(Clone, Debug, PartialEq)]
pub struct Element {
    /// Position in document order (stable for one dump; use it to refer to an element in the same dump).
    pub index: usize,
    pub text: String,
    pub resource_id: String,
    pub class: String,
    pub package: String,
    pub content_desc: String,
    pub clickable: bool,
    pub enabled: bool,
    pub focused: bool,
    pub checked: bool,
    /// A selected tab, list row or chip (`selected="true"`).
    pub selected: bool,
    pub scrollable: bool,
    pub focusable: bool,
    /// A password field: its text is never returned (defence in depth; Android usually masks it already).
    pub password: bool,
    pub bounds: [i32; 4],
    /// Read from the page through the DevTools protocol (`tools::web`), not from the UI dump: `source: "web"`.
    pub web: bool,
    /// A web link's target (`href`, made absolute against the page's URL when it is a path).
    pub href: Option<String>,
    /// The window it is in: an index into the tree's `windows` (the helper's tree when it has more than one
    /// window; `None` otherwise).
    pub window: Option<usize>,
}

impl Element {
    /// An element with nothing set but its class, package and bounds: enabled, no text, no flags (a web page's
    /// element starts from it; tests build theirs with it).
    pub fn new(class: impl Into<String>, package: impl Into<String>, bounds: [i32; 4]) -> Element {
        Element {
            index: 0,
            text: String::new(),
            resource_id: String::new(),
            class: class.into(),
            package: package.into(),
            content_desc: String::new(),
            clickable: false,
            enabled: true,
            focused: false,
            checked: false,
            selected: false,
            scrollable: false,
            focusable: false,
            password: false,
            bounds,
            web: false,
            href: None,
            window: None,
        }
    }

    pub fn center(&self) -> [i32; 2] {
        [(self.bounds[0] + self.bounds[2]) / 2, (self.bounds[1] + self.bounds[3]) / 2]
    }

    pub fn is_interactive(&self) -> bool {
        self.enabled && (self.clickable || self.scrollable || self.focusable)
    }

    pub fn is_interesting(&self) -> bool {
        !self.text.is_empty() || !self.content_desc.is_empty() || !self.resource_id.is_empty() || self.is_interactive()
    }

    pub fn to_json(&self) -> Value {
        let mut v = json!({
            "index": self.index,
            "class": self.class.rsplit('.').next().unwrap_or(&self.class),
            "package": self.package,
            "bounds": self.bounds,
            "center": self.center(),
        });
        let text = if self.password { &String::new() } else { &self.text };
        if self.password {
            v["password"] = json!(true);
        }
        for (k, s) in [("text", text), ("resource_id", &self.resource_id), ("content_desc", &self.content_desc)] {
            if !s.is_empty() {
                v[k] = json!(s);
            }
        }
        for (k, b) in [
            ("clickable", self.clickable),
            ("focused", self.focused),
            ("checked", self.checked),
            ("selected", self.selected),
            ("scrollable", self.scrollable),
        ] {
            if b {
                v[k] = json!(true);
            }
        }
        if !self.enabled {
            v["enabled"] = json!(false);
        }
        if self.web {
            v["source"] = json!("web");
        }
        if let Some(h) = &self.href {
            v["href"] = json!(h);
        }
        if let Some(w) = self.window {
            v["window"] = json!(w);
        }
        v
    }
}

/// The schema of one element as results give it: `listed` is the full form of a list (package and the flags,
/// present only when true — `enabled` only when false); otherwise the element an action was done on.
///
/// Described in prose rather than as nested properties: the shape is the same in every result, and the card pays
/// for each copy of a nested schema in tokens (the token budget of issue 19).
pub fn element_schema(listed: bool) -> Value {
    let fields = if listed {
        "index, class, package, text, resource_id, content_desc, bounds [l,t,r,b], center [x,y] (device px); \
         clickable, focused, checked, selected, scrollable, password when true; enabled when false; a web \
         link's href"
    } else {
        "The element acted on, as observed before"
    };
    json!({"type": "object", "description": fields})
}

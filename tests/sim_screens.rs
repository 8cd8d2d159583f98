//! What the simulated phone's screens show, through the real `adb` binary and a private adb server: the text of
//! the UI tree drawn into `screencap` pictures (so a vision model reads what the tree says, and never a
//! password, on the demo app's sign-in screen), the counter app's Reset, a Settings list that takes scrolling, and
//! the browser stand-in's page.

mod common;

use std::sync::Arc;

use common::adb::*;
use xagent_adb_connector::sim::ui::{Rect, Ui, BROWSER_LINKS, SETTINGS_ROWS};
use xagent_adb_connector::sim::{SimConfig, SimPhone};

macro_rules! bounded {
    ($body:expr) => {
        tokio::time::timeout(TEST_TIMEOUT, $body).await.expect("test timed out")
    };
}

/// A small screen keeps the PNGs (and the debug-build sim's encoding) small; the layout is proportional.
const W: u32 = 540;
const H: u32 = 1200;

async fn phone() -> Option<(Arc<AdbServer>, SimPhone, String)> {
    setup_with(SimConfig { screen_width: W, screen_height: H, ..SimConfig::default() }).await
}

/// Runs `adb -s SERIAL shell CMD` and returns stdout, failing the test on a non-zero exit.
fn sh(adb: &AdbServer, serial: &str, cmd: &str) -> String {
    let out = adb.adb(&["-s", serial, "shell", cmd]);
    assert_eq!(out.status, Some(0), "{cmd}: {}", out.stderr);
    out.text()
}

/// `adb exec-out screencap -p`, decoded.
fn screenshot(adb: &AdbServer, serial: &str) -> image::RgbaImage {
    let png = adb.adb(&["-s", serial, "exec-out", "screencap", "-p"]);
    assert_eq!(png.status, Some(0), "{}", png.stderr);
    let img = image::load_from_memory_with_format(&png.stdout, image::ImageFormat::Png).expect("a PNG");
    assert_eq!((img.width(), img.height()), (W, H));
    img.to_rgba8()
}

/// The pixels inside `r`, row by row.
fn region(img: &image::RgbaImage, r: Rect) -> Vec<[u8; 4]> {
    let mut px = Vec::new();
    for y in r.top..r.bottom {
        for x in r.left..r.right {
            px.push(img.get_pixel(x as u32, y as u32).0);
        }
    }
    px
}

fn colours(px: &[[u8; 4]]) -> usize {
    px.iter().collect::<std::collections::HashSet<_>>().len()
}

/// The bounds the dump gives the element with text `text`.
fn bounds_of(xml: &str, text: &str) -> Rect {
    let at = xml.find(&format!("text=\"{text}\"")).unwrap_or_else(|| panic!("no {text:?} in {xml}"));
    let b = &xml[at..];
    let b = &b[b.find("bounds=\"[").unwrap() + 9..];
    let b = &b[..b.find("]\"").unwrap()];
    let n: Vec<i32> = b.split([',', ']', '[']).filter(|p| !p.is_empty()).map(|p| p.parse().unwrap()).collect();
    Rect { left: n[0], top: n[1], right: n[2], bottom: n[3] }
}

fn tap(adb: &AdbServer, serial: &str, r: Rect) {
    let (x, y) = r.center();
    sh(adb, serial, &format!("input tap {x} {y}"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn screenshots_show_the_trees_text_and_never_a_password() {
    bounded!(async {
        let Some((adb, sim, serial)) = phone().await else {
            return;
        };
        let l = Ui::new(W, H).layout();
        let (a, s) = (adb.clone(), serial.clone());
        blocking(move || {
            let shot = screenshot(&a, &s);
            // A label is drawn on each button: its pixels are not one colour.
            for (name, r) in [("Increment", l.button), ("Reset", l.reset), ("title", l.title)] {
                assert!(colours(&region(&shot, r)) > 1, "no text drawn on {name}");
            }
            tap(&a, &s, l.button);
            let one = region(&screenshot(&a, &s), l.counter);
            tap(&a, &s, l.button);
            let two = region(&screenshot(&a, &s), l.counter);
            assert_ne!(one, two, "\"Count: 1\" and \"Count: 2\" look the same");

            // The text field shows its content, not one block per character: same length, other letters, other
            // pixels.
            let field = |a: &AdbServer| region(&screenshot(a, &s), l.text_field);
            sh(&a, &s, "input text hello");
            let hello = field(&a);
            sh(&a, &s, "input keyevent 67 67 67 67 67");
            let empty = field(&a);
            sh(&a, &s, "input text world");
            let world = field(&a);
            assert_ne!(hello, world, "\"hello\" and \"world\" look the same");
            assert!(colours(&empty) == 1 && colours(&hello) > 1, "the emptied field still shows text");

            // A password field (the demo app's sign-in screen) shows one dot per character: two secrets of one
            // length look the same, and unlike an empty field.
            sh(&a, &s, "am start -n com.xagent.demo/.SignInActivity");
            tap(&a, &s, l.password_field);
            let pw = |a: &AdbServer| region(&screenshot(a, &s), l.password_field);
            let none = pw(&a);
            sh(&a, &s, "input text abc");
            let abc = pw(&a);
            sh(&a, &s, "input keyevent 67 67 67");
            sh(&a, &s, "input text xyz");
            let xyz = pw(&a);
            assert_ne!(abc, none, "no dots drawn for the password");
            assert_eq!(abc, xyz, "the password's characters can be told apart in the picture");
        })
        .await;
        assert_eq!(sim.counter(), 2);
        assert_eq!(sim.fields(), ("world".to_owned(), "xyz".to_owned()));
        sim.shutdown().await;
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn counter_resets_settings_scrolls_and_the_browser_shows_a_page() {
    bounded!(async {
        let Some((adb, sim, serial)) = phone().await else {
            return;
        };
        let ui = Ui::new(W, H);
        let l = ui.layout();
        let (a, s) = (adb.clone(), serial.clone());
        let dump = move |a: &AdbServer| sh(a, &s, "uiautomator dump /dev/tty");
        let s = serial.clone();
        blocking(move || {
            tap(&a, &s, l.button);
            tap(&a, &s, l.button);
            assert!(dump(&a).contains("text=\"Count: 2\""));
            let xml = dump(&a);
            assert!(
                xml.contains("text=\"Reset\" resource-id=\"com.xagent.sim:id/reset\" class=\"android.widget.Button\"")
            );
            tap(&a, &s, l.reset);
            assert!(dump(&a).contains("text=\"Count: 0\""), "{}", dump(&a));

            // Settings: a list longer than the screen; its last entry is found by swiping, as on a phone.
            sh(&a, &s, "am start -n com.android.settings/.Settings");
            let xml = dump(&a);
            assert!(xml.contains("text=\"Settings\""), "{xml}");
            assert!(
                xml.contains("class=\"androidx.recyclerview.widget.RecyclerView\"")
                    && xml.contains("scrollable=\"true\"")
            );
            assert!(xml.contains("text=\"Network &amp; internet\""), "{xml}");
            let last = SETTINGS_ROWS[SETTINGS_ROWS.len() - 1];
            assert!(!xml.contains(last), "the whole list fits on one screen:\n{xml}");
            let (x, h) = (W / 2, H as i32);
            let mut swipes = 0;
            while !dump(&a).contains(&format!("text=\"{last}\"")) {
                swipes += 1;
                assert!(swipes <= 10, "{last:?} never scrolled into view");
                sh(&a, &s, &format!("input swipe {x} {} {x} {} 200", h * 8 / 10, h * 3 / 10));
            }
            assert!(swipes >= 1 && !dump(&a).contains("text=\"Network &amp; internet\""));
            // Its row, where the tree says it is now.
            tap(&a, &s, bounds_of(&dump(&a), last));

            // The browser stand-in: a page as Chrome's WebView reports it — the WebView holding the DOM's nodes.
            sh(&a, &s, "am start -a android.intent.action.VIEW -d https://sim.example/start");
            let xml = dump(&a);
            let web = xml.find("class=\"android.webkit.WebView\"").unwrap_or_else(|| panic!("no WebView:\n{xml}"));
            let inside = &xml[web..];
            for link in BROWSER_LINKS {
                let link = link.replace('\'', "&apos;");
                assert!(
                    inside.contains(&format!("text=\"{link}\" resource-id=\"\" class=\"android.view.View\"")),
                    "{link}: {xml}"
                );
            }
            assert!(inside.contains("class=\"android.widget.EditText\""), "{xml}");
            let xml = xml.split("UI hierchary dumped").next().unwrap().trim_end();
            assert!(xml.ends_with("</node></node></hierarchy>"), "the page's nodes are the WebView's children:\n{xml}");
            let b = ui.browser_layout();
            tap(&a, &s, b.search);
            sh(&a, &s, "input text cats");
            assert!(dump(&a).contains("text=\"cats\" resource-id=\"q\" class=\"android.widget.EditText\""));
            tap(&a, &s, b.links[1]);
        })
        .await;
        assert_eq!(
            sim.clicks(),
            vec!["Reset".to_owned(), SETTINGS_ROWS[SETTINGS_ROWS.len() - 1].to_owned(), BROWSER_LINKS[1].to_owned()]
        );
        assert_eq!(sim.counter(), 0);
        sim.shutdown().await;
    });
}

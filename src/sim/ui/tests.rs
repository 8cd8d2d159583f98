//! Unit tests of the simulated UI (moved out of `ui.rs` to keep it under 1,000 lines).

use super::*;

#[test]
fn tap_inside_button_increments_outside_does_not() {
    let mut ui = Ui::new(1080, 2400);
    let b = ui.layout().button;
    assert_eq!(ui.tap(b.right + 5, b.bottom + 5), TapOutcome::Nothing);
    assert_eq!(ui.counter, 0);
    let (x, y) = b.center();
    assert_eq!(ui.tap(x, y), TapOutcome::Incremented);
    assert_eq!(ui.counter, 1);
    // Edges: left/top inclusive, right/bottom exclusive.
    assert_eq!(ui.tap(b.left, b.top), TapOutcome::Incremented);
    assert_eq!(ui.tap(b.right, b.bottom), TapOutcome::Nothing);
    assert_eq!(ui.counter, 2);
    assert!(ui.dump_xml().contains("text=\"Count: 2\""));
}

#[test]
fn taps_do_nothing_when_other_app_in_front() {
    let mut ui = Ui::new(1080, 2400);
    // Not Settings or the browser: their own elements answer taps.
    ui.launch(Activity {
        package: "com.android.vending".into(),
        activity: "com.android.vending.AssetBrowserActivity".into(),
    });
    let (x, y) = ui.layout().button.center();
    assert_eq!(ui.tap(x, y), TapOutcome::Nothing);
    assert!(ui.key("KEYCODE_BACK"));
    assert!(ui.on_home());
}

#[test]
fn xml_has_bounds_and_escapes_text() {
    let mut ui = Ui::new(1080, 2400);
    ui.type_text("a<b&\"c\"");
    let xml = ui.dump_xml();
    assert!(xml.contains("bounds=\"[337,900][742,1056]\""), "{xml}");
    assert!(xml.contains("text=\"a&lt;b&amp;&quot;c&quot;\""));
    assert!(xml.starts_with("<?xml"));
    assert!(xml.ends_with("</hierarchy>"));
}

#[test]
fn pixels_depend_on_counter() {
    let mut ui = Ui::new(108, 240);
    let a = ui.render_rgba();
    ui.counter = 7;
    let b = ui.render_rgba();
    assert_eq!(a.len(), 108 * 240 * 4);
    assert_ne!(a, b);
    let png = ui.render_png();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
}

#[test]
fn a_quarter_turn_lays_out_captures_and_dumps_in_the_rotated_space() {
    let mut ui = Ui::new(108, 240);
    ui.rotation = 1;
    assert_eq!(ui.logical_size(), (240, 108));
    assert_eq!(ui.render_rgba().len(), 240 * 108 * 4);
    let xml = ui.dump_xml();
    // As real landscape dumps print it (tests/fixtures/real/ui-*-rotation-1-*).
    assert!(xml.contains("<hierarchy rotation=\"1\">"), "{xml}");
    assert!(xml.contains("bounds=\"[0,0][240,108]\""), "{xml}");
    let b = ui.layout().button;
    assert!(b.right <= 240 && b.bottom <= 108, "{b:?}");
    let (x, y) = b.center();
    assert_eq!(ui.tap(x, y), TapOutcome::Incremented);
}

/// The start page of the site (`site.rs`) is the one the constants name (what the tests of issue 44 look for).
#[test]
fn the_start_page_is_the_one_the_constants_name() {
    let ui = Ui::new(1080, 2400);
    let page = ui.web_page();
    assert_eq!((page.title.as_str(), page.url.as_str()), (BROWSER_TITLE, format!("https://{BROWSER_URL}").as_str()));
    let links: Vec<String> = page
        .blocks
        .iter()
        .filter_map(|b| if let site::Block::Link { text, .. } = b { Some(text.clone()) } else { None })
        .collect();
    assert_eq!(links, BROWSER_LINKS);
    assert_eq!(page.blocks.last(), Some(&site::Block::Text(BROWSER_FOOTER.into())));
}

#[test]
fn a_force_stopped_app_starts_afresh_and_home_resets_the_launchers_search_box() {
    let mut ui = Ui::new(720, 1600);
    ui.open_url("https://sim.example/start");
    let (x, y) = ui.browser_layout().search.center();
    assert_eq!(ui.tap(x, y), TapOutcome::FocusedField);
    ui.type_text("secret query");
    assert!(ui.dump_xml().contains("text=\"secret query\""));
    ui.force_stop(BROWSER_PACKAGE);
    assert!(ui.on_home());
    ui.open_url("https://sim.example/start");
    assert!(!ui.dump_xml().contains("secret query"), "the field survived the force-stop");
    assert_eq!(ui.browser.at, "sim.example/start", "the tab Chrome restores stays");

    // The home screen's field is the launcher's search box: HOME resets it, in front or not.
    ui.key("KEYCODE_HOME");
    ui.type_text("typed at home");
    assert!(ui.dump_xml().contains("text=\"typed at home\""));
    ui.key("KEYCODE_HOME");
    assert_eq!(ui.text, "");
    assert!(!ui.dump_xml().contains("typed at home"));
}

#[test]
fn the_home_screen_has_no_password_field_and_the_sign_in_screens_goes_with_a_force_stop() {
    let mut ui = Ui::new(720, 1600);
    // Launcher3's home screen holds no credential field (res/layout/launcher.xml): the one the sim has is the demo
    // app's sign-in screen's.
    assert!(!ui.dump_xml().contains("password=\"true\""), "a password field on the home screen");
    ui.launch(Activity { package: DEMO_PACKAGE.into(), activity: SIGN_IN_ACTIVITY.into() });
    assert!(ui.on_sign_in() && !ui.on_demo());
    let (x, y) = ui.layout().password_field.center();
    assert_eq!(ui.tap(x, y), TapOutcome::FocusedField);
    assert!(ui.keyboard_up(), "the keyboard comes up for the password field");
    ui.type_text("hunter2");
    assert_eq!(ui.password, "hunter2");
    let dump = ui.dump_xml();
    assert!(dump.contains("com.xagent.demo:id/password") && dump.contains("password=\"true\""), "{dump}");
    assert!(!dump.contains("hunter2"), "the dump shows dots, never the password");
    // HOME leaves the app's field as it is (the app is only in the background); a force-stop drops it.
    ui.key("KEYCODE_HOME");
    ui.type_text("at home");
    assert_eq!((ui.text.as_str(), ui.password.as_str()), ("at home", "hunter2"));
    ui.force_stop(DEMO_PACKAGE);
    assert_eq!(ui.password, "");
    ui.launch(Activity { package: DEMO_PACKAGE.into(), activity: SIGN_IN_ACTIVITY.into() });
    ui.type_text("typed unfocused");
    assert_eq!(ui.password, "", "nothing typed into a field without the focus");
}

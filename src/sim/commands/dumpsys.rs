//! `dumpsys battery|input|window|activity|input_method|power|notification|package|display`, each in the form of
//! the phone's SDK level, copied from real phones: tests/fixtures/real/ `battery-*`, `input-*`, `focus-*`,
//! `window-windows-*`, `activity-*`, `ime-*`, `state-power-*`, `state-window-policy-*`, `notification-*` (INDEX.md
//! says which phone and release each came from). `dumpsys package` is `packages.rs`.

use crate::sim::cmdio::CmdIo;
use crate::sim::device::Device;

pub(super) fn dumpsys(dev: &Device, args: &[&str], io: &mut CmdIo) -> i32 {
    match args.first().copied() {
        Some("battery") => io.out(&battery_dump(dev)),
        Some("input") => io.out(&dumpsys_input(dev)),
        Some("window") => match args.get(1).copied() {
            Some("windows" | "w") => io.out(&dumpsys_window_windows(dev)),
            Some("displays" | "d") => io.out(&dumpsys_window_displays(dev)),
            Some("policy" | "p") => io.out(&window_policy_dump(dev)),
            // Anything else prints every section, as `dumpsys window` without arguments does.
            _ => io.out(&format!(
                "{}\n{}\n{}",
                window_policy_dump(dev),
                dumpsys_window_displays(dev),
                dumpsys_window_windows(dev)
            )),
        },
        Some("activity") => io.out(&dumpsys_activities(dev)),
        Some("input_method") => io.out(&dumpsys_input_method(dev)),
        Some("power") => io.out(&power_dump(dev)),
        Some("notification") => io.out(&notification_dump(dev, args.contains(&"--noredact"))),
        Some("package") => return crate::sim::packages::dumpsys_package(dev, args, io),
        Some("display") => io.out(&format!("DISPLAY MANAGER (dumpsys display)\n  mDefaultDisplay: DisplayDeviceInfo{{\"Built-in Screen\": {} x {}, {} fps, density {}}}\n", dev.cfg.screen_width, dev.cfg.screen_height, 60, dev.cfg.density)),
        Some(other) => io.out(&format!("Can't find service: {other}\n")),
        None => io.out("Currently running services:\n  activity\n  battery\n  display\n  input_method\n  notification\n  package\n  power\n  window\n"),
    }
    0
}

/// `dumpsys notification [--noredact]` in the form of the SDK level (tests/fixtures/real/notification-*): hex
/// `flags=0x62` and one `when=N` up to 15, symbolic `flags=ONGOING_EVENT|…` and `when=N/N` from 16 (API 36); the
/// titles and texts redacted as `String [length=N]` (Java's UTF-16 length) unless `--noredact` (from 8.0, where
/// redaction came; before, always as written). The app's text is printed as it is, newlines included, as real
/// phones do.
fn notification_dump(dev: &Device, noredact: bool) -> String {
    let sdk = dev.cfg.sdk;
    let redact = !noredact && sdk >= 26;
    let mut out = String::from("Current Notification Manager state:\n  Notification List:\n");
    for n in dev.notifications.iter().rev() {
        let uid = 10_100 + n.id;
        let key = format!("0|{}|{}|null|{uid}", n.package, n.id);
        let flags = match (sdk >= 36, n.ongoing) {
            (true, true) => "ONGOING_EVENT|NO_CLEAR|FOREGROUND_SERVICE".to_owned(),
            (true, false) => "AUTO_CANCEL".to_owned(),
            (false, true) => "0x62".to_owned(),
            (false, false) => "0x10".to_owned(),
        };
        let when = if sdk >= 36 { format!("{0}/{0}", n.posted_ms) } else { n.posted_ms.to_string() };
        let value = |v: &Option<String>| match v {
            None => "null".to_owned(),
            Some(s) if redact => format!("String [length={}]", s.encode_utf16().count()),
            Some(s) => format!("String ({s})"),
        };
        out.push_str(&format!(
            "    NotificationRecord(0x{:08x}: pkg={} user=UserHandle{{0}} id={} tag=null importance=3 key={key}: \
             Notification(channel=default shortcut=null contentView=null vibrate=null sound=null defaults=0x0 \
             flags={flags} color=0x00000000 vis=PRIVATE))\n      uid={uid} userId=0\n      opPkg={}\n      \
             flags={flags}\n      pri=0\n      key={key}\n      seen=false\n      notification=\n            \
             when={when}\n            tickerText=null\n            extras={{\n                \
             android.title={}\n                android.reduced.images=Boolean (true)\n                \
             android.text={}\n                android.showWhen=Boolean (true)\n            }}\n      stats=\
             SingleNotificationStats{{posttimeElapsedMs=1000, airtimeMs={}}}\n      mCreationTimeMs={}\n      \
             mUpdateTimeMs={}\n",
            0x1a2b_0000u32 + n.id,
            n.package,
            n.id,
            n.package,
            value(&n.title),
            value(&n.text),
            // Changes between two reads, as on a real phone (the merge must not need it equal).
            std::time::Instant::now().duration_since(dev.booted).as_millis(),
            n.posted_ms,
            n.posted_ms,
        ));
    }
    out.push_str("  Snoozed notifications:\n");
    out
}

/// The simulated display's rotation (quarter turns): `settings put system user_rotation N` (auto-rotate is off).
/// The UI model holds it, so the dumpsys lines, the captures and the UI tree always agree.
fn sim_rotation(dev: &Device) -> u8 {
    dev.ui.rotation % 4
}

/// `pkg/pkg.Act` → `pkg/.Act`, as ActivityRecord prints a component inside its own package.
fn short_component(package: &str, activity: &str) -> String {
    match activity.strip_prefix(package) {
        Some(rest) if rest.starts_with('.') => format!("{package}/{rest}"),
        _ => format!("{package}/{activity}"),
    }
}

/// ` u0` from 4.2 (API 17, multi-user); absent before (tests/fixtures/real: `focus-4.1-*`).
fn user_tag(dev: &Device) -> &'static str {
    if dev.cfg.sdk >= 17 {
        " u0"
    } else {
        ""
    }
}

/// The foreground activity's record as `toString` prints it: `ActivityRecord{7c8d9e0 u0 pkg/.Act t12}` up to 12,
/// `ActivityRecord{7c8d9e0 u0 pkg/.Act} t12}` from 13 (the name is cached with its brace, the task appended after:
/// INDEX.md `activity-13-*`, a TQ3A build; Android 12's `focus-12-*` still has the old form).
fn activity_record(dev: &Device) -> String {
    let fg = &dev.ui.foreground;
    let (u, c) = (user_tag(dev), short_component(&fg.package, &fg.activity));
    if dev.cfg.sdk >= 33 {
        format!("ActivityRecord{{7c8d9e0{u} {c}}} t12}}")
    } else {
        format!("ActivityRecord{{7c8d9e0{u} {c} t12}}")
    }
}

/// The focus pair in the form of the SDK level: `mFocusedApp=AppWindowToken{… ActivityRecord{… t12}}}` up to 9
/// (API 28), `mFocusedApp=ActivityRecord{… t12}` from 10 ([`activity_record`]; tests/fixtures/real/INDEX.md).
fn focus_lines(dev: &Device, indent: &str) -> String {
    let fg = &dev.ui.foreground;
    let u = user_tag(dev);
    let record = activity_record(dev);
    let app =
        if dev.cfg.sdk >= 29 { record } else { format!("AppWindowToken{{3e1f2a7 token=Token{{91b5c04 {record}}}}}") };
    format!("{indent}mCurrentFocus=Window{{5f3a2b1{u} {}}}\n{indent}mFocusedApp={app}\n", fg.component())
}

/// `dumpsys window windows`: the window list. Up to Android 10 (API 29 already moved them, see appium-adb
/// `dumpWindows`) the focus lines follow it; from then on they are only in the display section. The screen and
/// keyguard lines stay here.
fn dumpsys_window_windows(dev: &Device) -> String {
    let on = dev.ui.screen_on;
    let u = user_tag(dev);
    let focus = if dev.cfg.sdk <= 28 { focus_lines(dev, "  ") } else { String::new() };
    // The app window's attributes as `LayoutParams.toString` prints them (flag names in bit order, so SECURE,
    // 0x2000, sits between LAYOUT_IN_SCREEN and LAYOUT_INSET_DECOR: INDEX.md `window-windows-9-secure-*`).
    let secure = if dev.ui.secure_window { " SECURE" } else { "" };
    format!(
        "WINDOW MANAGER WINDOWS (dumpsys window windows)\n  Window #0 Window{{5f3a2b1{u} {fg}}}:\n    mDisplayId=0 rootTaskId=12 mSession=Session{{a1b2c3 4242:u0a10123}}\n    mAttrs={{(0,0)(fillxfill) sim={{adjust=resize}} ty=BASE_APPLICATION fmt=TRANSLUCENT wanim=0x10302fe\n      fl=LAYOUT_IN_SCREEN{secure} LAYOUT_INSET_DECOR SPLIT_TOUCH HARDWARE_ACCELERATED DRAWS_SYSTEM_BAR_BACKGROUNDS\n      pfl=FORCE_DRAW_STATUS_BAR_BACKGROUND\n      vsysui=LAYOUT_STABLE LAYOUT_FULLSCREEN}}\n    mHasSurface=true isReadyForDisplay()=true\n\n  mGlobalConfiguration={{1.0 ?mcc?mnc [en_US] ldltr sw411dp w411dp h914dp {dpi}dpi nrml long port finger -keyb/v/h -nav/h winConfig={{ mBounds=Rect(0, 0 - {w}, {h}) }}}}\n  mHasPermanentDpad=false\n  mTopFocusedDisplayId=0\n{focus}  mScreenOn={on}\n  mAwake={on}\n  mScreenOnEarly={on} mScreenOnFully={on}\n  mKeyguardDrawComplete=true mWindowManagerDrawComplete=true\n  mDreamingLockscreen=false\n  mShowingDream=false mDreamingLockscreen=false\n  isKeyguardShowing=false\n",
        fg = dev.ui.foreground.component(),
        dpi = dev.cfg.density,
        w = dev.cfg.screen_width,
        h = dev.cfg.screen_height,
    )
}

/// `dumpsys window displays`: one section per display (`Display: mDisplayId=0 …`); from Android 10 each holds
/// its `mCurrentFocus`/`mFocusedApp` pair (uiautomator2 issue #816, Android 12: INDEX.md `focus-12-*`).
fn dumpsys_window_displays(dev: &Device) -> String {
    let (w, h) = (dev.cfg.screen_width, dev.cfg.screen_height);
    let rot = sim_rotation(dev);
    let (cw, ch) = if rot % 2 == 1 { (h, w) } else { (w, h) };
    let focus =
        if dev.cfg.sdk >= 29 { format!("\n  mLayoutSeq=105\n{}", focus_lines(dev, "  ")) } else { String::new() };
    format!(
        "WINDOW MANAGER DISPLAY CONTENTS (dumpsys window displays)\n  Display: mDisplayId=0 rootTasks=2\n    init={w}x{h} {dpi}dpi cur={cw}x{ch} app={cw}x{ch} rng={w}x{w}-{h}x{h}\n    deferred=false mLayoutNeeded=false\n{focus}\n  DisplayRotation\n    mRotation={rot} mDeferredRotationPauseCount=0\n",
        dpi = dev.cfg.density
    )
}

/// `dumpsys activity activities`: `mResumedActivity:` and, from Android 10, `topResumedActivity=`.
fn dumpsys_activities(dev: &Device) -> String {
    let fg = &dev.ui.foreground;
    let rec = activity_record(dev);
    let top = if dev.cfg.sdk >= 29 { format!("  topResumedActivity={rec}\n") } else { String::new() };
    format!(
        "ACTIVITY MANAGER ACTIVITIES (dumpsys activity activities)\nDisplay #0 (activities from top to bottom):\n  * Task{{9a8b7c6 #12 type=standard A=10123:{} U=0 visible=true mode=fullscreen translucent=false sz=1}}\n    * {rec}\n\n    mResumedActivity: {rec}\n{top}",
        fg.package
    )
}

/// `dumpsys input`: the touchscreen's orientation as the SDK level prints it — `SurfaceOrientation: N` up to 12,
/// `InputDeviceOrientation: N` on 13–14, `InputDeviceOrientation: RotationN` (degrees) from 15 — and the
/// built-in viewport's `orientation=N` (INDEX.md `input-*`).
fn dumpsys_input(dev: &Device) -> String {
    let rot = sim_rotation(dev);
    let (w, h) = (dev.cfg.screen_width, dev.cfg.screen_height);
    let (lw, lh) = if rot % 2 == 1 { (h, w) } else { (w, h) };
    let orientation = match dev.cfg.sdk {
        0..=32 => format!("SurfaceOrientation: {rot}"),
        33..=34 => format!("InputDeviceOrientation: {rot}"),
        _ => format!("InputDeviceOrientation: Rotation{}", u32::from(rot) * 90),
    };
    format!(
        "INPUT MANAGER (dumpsys input)\n\nInput Reader State (Nums of device: 1):\n  Device 4: sec_touchscreen\n    Generation: 12\n    IsExternal: false\n    Sources: TOUCHSCREEN\n    Touch Input Mapper (mode - DIRECT):\n      Parameters:\n        GestureMode: MULTI_TOUCH\n        DeviceType: TOUCH_SCREEN\n        OrientationAware: true\n        Orientation: 0\n      Viewport INTERNAL: displayId=0, uniqueId=local:0, port=0, orientation={rot}, logicalFrame=[0, 0, {lw}, {lh}], physicalFrame=[0, 0, {lw}, {lh}], deviceSize=[{w}, {h}], isActive=[1]\n      {orientation}\n      Translation and Scaling Factors:\n        XScale: 1.000\n        YScale: 1.000\n"
    )
}

/// `dumpsys input_method`: up to 13 one line `mShowRequested=… mShowExplicitlyRequested=… mShowForced=…
/// mInputShown=…`; from 14 `mInputShown=` alone on its line (INDEX.md `ime-*`). The soft keyboard is up while
/// a text field has focus.
fn dumpsys_input_method(dev: &Device) -> String {
    let shown = dev.ui.keyboard_up();
    let ime =
        dev.settings.get(&("secure".to_string(), "default_input_method".to_string())).map_or("null", String::as_str);
    let state = if dev.cfg.sdk >= 34 {
        format!("  mInputShown={shown}\n")
    } else {
        format!("  mShowRequested={shown} mShowExplicitlyRequested=false mShowForced=false mInputShown={shown}\n")
    };
    format!("Input Method Manager Service state:\n  mCurMethodId={ime}\n  mServedView=null\n{state}")
}

/// `dumpsys battery` as AOSP's BatteryService prints it (tests/fixtures/real/battery-*.txt: the same keys in the
/// same order on a Nexus 5 (6.x) and a Redmi (15); `temperature:` in tenths of a degree).
fn battery_dump(dev: &Device) -> String {
    let (usb, status) = if dev.battery_plugged { (true, 2) } else { (false, 3) };
    format!(
        "Current Battery Service state:\n  AC powered: false\n  USB powered: {usb}\n  Wireless powered: false\n  \
         Dock powered: false\n  Max charging current: 500000\n  Max charging voltage: 5000000\n  \
         Charge counter: 3100000\n  status: {status}\n  health: 2\n  present: true\n  level: {}\n  scale: 100\n  \
         voltage: 4210\n  temperature: {}\n  technology: Li-ion\n",
        dev.battery_level, dev.battery_temperature_tenths
    )
}

/// `dumpsys power` (the lines that tell the screen state; a real dump has ~200 more): `mWakefulness=` in the
/// "Power Manager State" block and `Display Power: state=` further down, as printed from Android 4.2 to 15
/// (samples: tests/fixtures/real/state-power-*.txt).
fn power_dump(dev: &Device) -> String {
    let on = dev.ui.screen_on;
    let (wake, state) = if on { ("Awake", "ON") } else { ("Asleep", "OFF") };
    format!(
        "POWER MANAGER (dumpsys power)\n\nPower Manager State:\n  mDirty=0x0\n  mWakefulness={wake}\n  \
         mWakefulnessChanging=false\n  mIsPowered=true\n  mPlugType=2\n  mBatteryLevel={}\n  mDockState=0\n  \
         mStayOn=false\n  mProximityPositive=false\n  mBootCompleted=true\n  mSystemReady=true\n  \
         mHalAutoSuspendModeEnabled=false\n  mHalInteractiveModeEnabled={on}\n  mWakeLockSummary=0x0\n\n\
         Wake Locks: size=0\n\nSuspend Blockers: size=4\n  PowerManagerService.WakeLocks: ref count=0\n  \
         PowerManagerService.Display: ref count={}\n\nDisplay Power: state={state}\n",
        dev.battery_level,
        u8::from(on)
    )
}

/// `dumpsys window policy`: the keyguard lines. From Android 8 (API 26) the KeyguardServiceDelegate block with
/// its KeyguardStateMonitor (appium-adb fixtures, Android 11 emulator in appium-adb#566); before that the one
/// `mShowingLockscreen=… mDreamingLockscreen=…` line (appium-adb fixtures). Samples:
/// tests/fixtures/real/state-window-policy-*.txt.
fn window_policy_dump(dev: &Device) -> String {
    let ui = &dev.ui;
    let shown = ui.keyguard_showing;
    let secure = ui.lock == crate::sim::ui::LockMode::Secure;
    let mut o = String::from(
        "WINDOW MANAGER POLICY STATE (dumpsys window policy)\n    mSafeMode=false mSystemReady=true \
         mSystemBooted=true\n    mLidState=LID_ABSENT mLidOpenRotation=-1 mCameraLensCoverState=LENS_COVER_ABSENT \
         mHdmiPlugged=false\n    mShortPressOnPowerBehavior=SHORT_PRESS_POWER_GO_TO_SLEEP\n",
    );
    if dev.cfg.sdk >= 26 {
        let (screen, interactive) = if ui.screen_on {
            ("SCREEN_STATE_ON", "INTERACTIVE_STATE_AWAKE")
        } else {
            ("SCREEN_STATE_OFF", "INTERACTIVE_STATE_SLEEP")
        };
        o.push_str(&format!(
            "    KeyguardServiceDelegate\n      showing={shown}\n      showingAndNotOccluded={shown}\n      \
             inputRestricted={shown}\n      occluded=false\n      secure={secure}\n      dreaming=false\n      \
             systemIsReady=true\n      deviceHasKeyguard=true\n      enabled=true\n      \
             offReason=OFF_BECAUSE_OF_USER\n      currentUser=0\n      bootCompleted=true\n      \
             screenState={screen}\n      interactiveState={interactive}\n      KeyguardStateMonitor\n        \
             mIsShowing={shown}\n        mSimSecure=false\n        mInputRestricted={shown}\n        \
             mTrusted=false\n        mCurrentUserId=0\n"
        ));
    } else {
        o.push_str(&format!(
            "    mShowingLockscreen={shown} mShowingDream=false mDreamingLockscreen={} mTopIsFullscreen=false\n",
            shown && !ui.screen_on
        ));
    }
    o
}

//! The keyboard the connector types non-ASCII text with: `android_input_text` switches to it, `android_status`
//! reports whether the phone has it.

/// The ADB Keyboard IME (<https://github.com/senzhk/ADBKeyBoard>): the standard way to type non-ASCII over adb.
pub const ADB_KEYBOARD: &str = "com.android.adbkeyboard/.AdbIME";

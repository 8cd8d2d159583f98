package android.view;

import android.os.SystemClock;

/**
 * The virtual keyboard's map (KeyCharacterMap.VIRTUAL_KEYBOARD), as AOSP's data/keyboards/Virtual.kcm defines it:
 * every printable ASCII character is on a key, alone or with SHIFT (letters, digits and `!@#$%^&*()`, and the keys
 * GRAVE MINUS EQUALS LEFT_BRACKET RIGHT_BRACKET BACKSLASH SEMICOLON APOSTROPHE COMMA PERIOD SLASH SPACE; AT STAR
 * POUND PLUS too, which come later in key-code order). getEvents takes the first key in key-code order that makes
 * the character (KeyCharacterMap.cpp findKey), so '@' is SHIFT+2, '+' SHIFT+EQUALS. Anything else (non-ASCII)
 * answers null, as Android does for an unmappable char, and the helper pastes it.
 */
public final class KeyCharacterMap {
    public static final int VIRTUAL_KEYBOARD = -1;

    /** Key code, base char, shift char (0: none), in key-code order (Virtual.kcm). */
    private static final Object[][] KEYS = {
        {7, '0', ')'}, {8, '1', '!'}, {9, '2', '@'}, {10, '3', '#'}, {11, '4', '$'}, {12, '5', '%'},
        {13, '6', '^'}, {14, '7', '&'}, {15, '8', '*'}, {16, '9', '('}, {17, '*', (char) 0}, {18, '#', (char) 0},
        {55, ',', '<'}, {56, '.', '>'}, {62, ' ', (char) 0}, {68, '`', '~'}, {69, '-', '_'}, {70, '=', '+'},
        {71, '[', '{'}, {72, ']', '}'}, {73, '\\', '|'}, {74, ';', ':'}, {75, '\'', '"'}, {76, '/', '?'},
        {77, '@', (char) 0}, {81, '+', (char) 0},
    };

    public static KeyCharacterMap load(int deviceId) {
        xagentstub.Rec.log("keymap load(" + deviceId + ")");
        if (xagentstub.Rec.on("no_keymap")) throw new RuntimeException("UnavailableException");
        return new KeyCharacterMap();
    }

    public KeyEvent[] getEvents(char[] chars) {
        java.util.List<KeyEvent> out = new java.util.ArrayList<>();
        for (char c : chars) {
            int code = -1;
            boolean shift = false;
            if (c >= 'a' && c <= 'z') code = 29 + (c - 'a');
            else if (c >= 'A' && c <= 'Z') {
                code = 29 + (c - 'A');
                shift = true;
            } else {
                for (Object[] k : KEYS) {
                    if ((char) k[1] == c || (char) k[2] == c) {
                        code = (int) k[0];
                        shift = (char) k[1] != c;
                        break;
                    }
                }
            }
            if (code < 0) return null;
            long now = SystemClock.uptimeMillis();
            if (shift) out.add(new KeyEvent(now, now, 0, 59, 0, 0x41, -1, 0, 0, 0x101));
            out.add(new KeyEvent(now, now, 0, code, 0, shift ? 0x41 : 0, -1, 0, 0, 0x101));
            out.add(new KeyEvent(now, now, 1, code, 0, shift ? 0x41 : 0, -1, 0, 0, 0x101));
            if (shift) out.add(new KeyEvent(now, now, 1, 59, 0, 0, -1, 0, 0, 0x101));
        }
        return out.toArray(new KeyEvent[0]);
    }
}

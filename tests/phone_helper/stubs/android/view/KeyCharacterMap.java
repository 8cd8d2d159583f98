package android.view;

import android.os.SystemClock;

/**
 * The virtual keyboard's map, smaller than Android's on purpose: letters, digits, space, ',' and '.'; getEvents
 * answers null (as Android does for an unmappable char) for anything else, so the helper's fallback runs.
 */
public final class KeyCharacterMap {
    public static final int VIRTUAL_KEYBOARD = -1;

    public static KeyCharacterMap load(int deviceId) {
        xagentstub.Rec.log("keymap load(" + deviceId + ")");
        if (xagentstub.Rec.on("no_keymap")) throw new RuntimeException("UnavailableException");
        return new KeyCharacterMap();
    }

    public KeyEvent[] getEvents(char[] chars) {
        java.util.List<KeyEvent> out = new java.util.ArrayList<>();
        for (char c : chars) {
            int code;
            boolean shift = false;
            if (c >= 'a' && c <= 'z') code = 29 + (c - 'a');
            else if (c >= 'A' && c <= 'Z') {
                code = 29 + (c - 'A');
                shift = true;
            } else if (c >= '0' && c <= '9') code = 7 + (c - '0');
            else if (c == ' ') code = 62;
            else if (c == ',') code = 55;
            else if (c == '.') code = 56;
            else return null;
            long now = SystemClock.uptimeMillis();
            if (shift) out.add(new KeyEvent(now, now, 0, 59, 0, 0x41, -1, 0, 0, 0x101));
            out.add(new KeyEvent(now, now, 0, code, 0, shift ? 0x41 : 0, -1, 0, 0, 0x101));
            out.add(new KeyEvent(now, now, 1, code, 0, shift ? 0x41 : 0, -1, 0, 0, 0x101));
            if (shift) out.add(new KeyEvent(now, now, 1, 59, 0, 0, -1, 0, 0, 0x101));
        }
        return out.toArray(new KeyEvent[0]);
    }
}

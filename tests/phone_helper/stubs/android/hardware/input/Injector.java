package android.hardware.input;

import android.os.SystemClock;
import android.view.InputEvent;
import android.view.KeyEvent;
import android.view.MotionEvent;
import xagentstub.Rec;

/** What both InputManager stubs do: record the event, the injection mode and whether it came early. */
final class Injector {
    private static long gestureDown = -1;

    static boolean inject(String via, InputEvent ev, int mode) {
        if (Rec.on("deny")) throw new SecurityException("Injecting input events requires INJECT_EVENTS");
        long now = SystemClock.uptimeMillis();
        StringBuilder b = new StringBuilder("inject via=").append(via).append(" mode=").append(mode).append(' ')
                .append(ev.describe());
        // the helper must sleep until an event is due, not stamp future times and send them at once
        if (now + 1 < ev.eventTime()) b.append(" EARLY");
        if (ev instanceof MotionEvent) {
            MotionEvent m = (MotionEvent) ev;
            if (b.indexOf("motion DOWN") >= 0) gestureDown = m.getDownTime();
            else if (m.getDownTime() != gestureDown) b.append(" DOWN_TIME_CHANGED");
        }
        // what an app handling KEYCODE_PASTE would read from the clipboard at that moment
        if (ev instanceof KeyEvent && ((KeyEvent) ev).getKeyCode() == 279) {
            b.append(" clip=").append(xagentstub.Clipboard.text());
        }
        Rec.log(b.toString());
        return !Rec.on("inject_false");
    }
}

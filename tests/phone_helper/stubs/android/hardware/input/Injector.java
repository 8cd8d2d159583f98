package android.hardware.input;

import android.os.SystemClock;
import android.view.InputEvent;
import android.view.KeyEvent;
import android.view.MotionEvent;
import xagentstub.Rec;

/** What both InputManager stubs do: record the event, the injection mode and whether it came early. */
final class Injector {
    private static long gestureDown = -1;

    /**
     * -Dstub.deny=1: the shell user lacks INJECT_EVENTS (Xiaomi's "USB debugging (Security settings)" off). From
     * Android 13 every mode throws at once (android-33 com/android/server/input/InputManagerService.java:869-874
     * checks the permission first). Before, an ASYNC (mode 0) injection is accepted — the native dispatcher answers
     * SUCCEEDED before its permission check and drops the event later (frameworks/native
     * services/inputflinger/dispatcher/InputDispatcher.cpp, "Asynchronous input event injection permission
     * denied.") — and only a synchronous mode gets PERMISSION_DENIED, thrown as a SecurityException
     * (android-32 InputManagerService.java:885-888).
     */
    static boolean inject(String via, InputEvent ev, int mode) {
        long now = SystemClock.uptimeMillis();
        StringBuilder b = new StringBuilder("inject via=").append(via).append(" mode=").append(mode).append(' ')
                .append(ev.describe());
        if (Rec.on("deny")) {
            if (android.os.Build.VERSION.SDK_INT >= 33 || mode != 0) {
                throw new SecurityException("Injecting input events requires INJECT_EVENTS");
            }
            Rec.log(b.append(" DROPPED (permission denied at dispatch)").toString());
            return true;
        }
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

package xagentstub;

import android.app.UiAutomation;
import android.view.accessibility.AccessibilityEvent;

/**
 * The scripted screen behind the UiAutomation stub, from the case's settings:
 * <ul>
 * <li>{@code win.K=id,type,layer,active,focused,title,l,t,r,b}: getWindows() answers windows K = 0, 1, … in that
 * order (the system's: top of the z-order first);
 * <li>{@code n.K=class,text,resid,desc,pkg,flags,l,t,r,b}: window K's root node ({@code n.a}: the root in the
 * active window); {@code n.K.i} its child i, {@code n.K.i.j} a grandchild…; children are numbered from 0 without
 * gaps; the value {@code null} is a child the system answers null for; no {@code n.K} is a window without root;
 * flags letters: c checkable, C checked, k clickable, e enabled, f focusable, F focused, s scrollable,
 * l long-clickable, p password, S selected, h not visible to the user;
 * <li>{@code gen.K=N}: window K's root is a generated tree of N nodes (node j's children are 10j+1 … 10j+10; {@code gen_fan=F}: Fj+1 … Fj+F, 1 is a chain),
 * each a TextView with the text "t<j>" ({@code gen_text=L}: L times the char {@code gen_char}, hex, 'x' by default);
 * <li>strings: {@code -} is null, {@code \\uXXXX} any UTF-16 unit (lone surrogates too; {@code \\u002c} a comma,
 * {@code \\u0020} a space);
 * <li>{@code events_every=P} (and {@code events_until=U}): with the virtual clock, an accessibility event every
 * P ms from clock time 1000 (until 1000 + U).
 * </ul>
 * It counts the nodes, windows and events handed out and recycled; the stub reports them at disconnect.
 */
public final class Ui {
    private Ui() {}

    public static int nodesOut, nodesBack, windowsOut, windowsBack, eventsOut, eventsBack;
    public static volatile UiAutomation.OnAccessibilityEventListener listener;

    public static String counts() {
        return "nodes " + nodesOut + "/" + nodesBack + " windows " + windowsOut + "/" + windowsBack
                + (eventsOut == 0 ? "" : " events " + eventsOut + "/" + eventsBack);
    }

    /** A scripted string: "-" is null, \\uXXXX one UTF-16 unit. */
    public static String unq(String s) {
        if (s.equals("-")) return null;
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '\\' && i + 5 < s.length() && s.charAt(i + 1) == 'u') {
                b.append((char) Integer.parseInt(s.substring(i + 2, i + 6), 16));
                i += 5;
            } else {
                b.append(c);
            }
        }
        return b.toString();
    }

    public static String[] fields(String key, int n) {
        String v = Rec.prop(key, null);
        if (v == null) return null;
        String[] f = v.split(",", -1);
        if (f.length != n) throw new IllegalArgumentException("stub." + key + " needs " + n + " fields: " + v);
        return f;
    }

    /** The next scripted event time after t, or -1. */
    public static long nextEvent(long t) {
        int every = Rec.num("events_every", 0);
        if (every <= 0) return -1;
        long until = 1000L + Rec.num("events_until", Integer.MAX_VALUE / 2);
        long k = (t - 1000L) / every + 1;
        long next = 1000L + k * every;
        return next <= until ? next : -1;
    }

    /** The looper the UiAutomation was made with (its constructor's). */
    public static volatile android.os.Looper looper;

    /**
     * One accessibility event, as the system delivers it: on the UiAutomation's looper thread, never on the
     * caller's. API 26-27 run the whole client on the constructor's Looper (AOSP api26 android/app/UiAutomation.java:193
     * `mClient = new IAccessibilityServiceClientImpl(looper)`); 28+ post the listener call to a Handler on it
     * (api28 :200 `mLocalCallbackHandler = new Handler(looper)`, :1167 `mLocalCallbackHandler.post(...)`; android-36
     * :314, :1980). A looper thread that is blocked delivers nothing until it is free.
     */
    public static void deliver() {
        android.os.Looper l = looper;
        if (l == null || listener == null) return;
        new android.os.Handler(l).post(() -> {
            UiAutomation.OnAccessibilityEventListener now = listener;
            if (now != null) now.onAccessibilityEvent(AccessibilityEvent.obtain());
        });
    }
}

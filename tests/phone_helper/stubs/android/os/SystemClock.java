package android.os;

/**
 * Real time by default. With -Dstub.virtual_clock=1 the clock only moves when the helper sleeps through
 * {@link #sleep}: uptimeMillis starts at 1000 and each sleep advances it exactly, stopping at every scripted
 * accessibility event (xagentstub.Ui) and every looper message due on the way, and letting the looper threads run
 * what is due at that instant before going on (as a phone's would run meanwhile: the events reach the listener on
 * the UiAutomation's looper thread, not on the sleeping one). So an idle wait's waited_ms is exact in the case file.
 */
public final class SystemClock {
    private static final long T0 = System.nanoTime();
    private static final boolean VIRTUAL = xagentstub.Rec.on("virtual_clock");
    private static long now = 1000L;

    static boolean virtual() {
        return VIRTUAL;
    }

    public static synchronized long uptimeMillis() {
        if (VIRTUAL) return now;
        return (System.nanoTime() - T0) / 1_000_000L + 1000L;
    }

    public static void sleep(long ms) {
        if (!VIRTUAL) {
            try {
                Thread.sleep(ms);
            } catch (InterruptedException e) {
                // Android's SystemClock.sleep ignores interrupts too
            }
            return;
        }
        long end;
        synchronized (SystemClock.class) {
            end = now + ms;
        }
        while (true) {
            long t = uptimeMillis();
            long event = xagentstub.Ui.nextEvent(t);
            long next = Math.min(event > 0 ? event : Long.MAX_VALUE, Looper.nextDue());
            if (next <= t) next = t + 1;
            if (next > end) break;
            synchronized (SystemClock.class) {
                now = next;
            }
            if (next == event) xagentstub.Ui.deliver();
            Looper.settleAll(next);
        }
        synchronized (SystemClock.class) {
            now = end;
        }
        Looper.settleAll(end);
    }
}

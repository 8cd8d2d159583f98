package android.os;

/**
 * Real time by default. With -Dstub.virtual_clock=1 the clock only moves when the helper sleeps through
 * {@link #sleep}: uptimeMillis starts at 1000 and each sleep advances it exactly, delivering the accessibility
 * events the case scripted on the way (xagentstub.Ui), so an idle wait's waited_ms is exact in the case file.
 */
public final class SystemClock {
    private static final long T0 = System.nanoTime();
    private static final boolean VIRTUAL = xagentstub.Rec.on("virtual_clock");
    private static long now = 1000L;

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
        // each scripted event on the way: the clock stands at its time while the listener runs
        for (long t = xagentstub.Ui.nextEvent(uptimeMillis()); t > 0 && t <= end; t = xagentstub.Ui.nextEvent(t)) {
            synchronized (SystemClock.class) {
                now = t;
            }
            xagentstub.Ui.deliver();
        }
        synchronized (SystemClock.class) {
            now = end;
        }
    }
}

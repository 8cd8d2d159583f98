package android.os;

import java.util.ArrayList;
import java.util.List;

/**
 * A message queue run by one thread (HandlerThread): runnables due at an uptimeMillis(), in time order — the
 * framework's clock (AOSP core/java/android/os/MessageQueue.java compares `SystemClock.uptimeMillis()` with each
 * message's `when`). With the stub's virtual clock the loop waits until SystemClock moves the time and asks every
 * looper to run what is due ({@link #settleAll}), so a case sees exactly what a phone's looper thread would do
 * meanwhile — including a looper thread that blocks on a lock the sleeping helper holds (helper D2).
 */
public final class Looper {
    static final class Msg {
        final Runnable r;
        final long due;

        Msg(Runnable r, long due) {
            this.r = r;
            this.due = due;
        }
    }

    private static final List<Looper> ALL = new ArrayList<>();
    private static Looper main;

    private final List<Msg> queue = new ArrayList<>();
    private boolean quit;
    private boolean running;
    private Thread thread;

    Looper() {
        synchronized (ALL) {
            ALL.add(this);
        }
    }

    /**
     * Public since API 1, deprecated in 30 (AOSP core/java/android/os/Looper.java: "The main looper for your
     * application is created by the Android environment"); an app_process program must call it itself.
     */
    public static void prepareMainLooper() {
        xagentstub.Rec.log("Looper prepareMainLooper");
        synchronized (ALL) {
            if (main != null) throw new IllegalStateException("The main Looper has already been prepared.");
            main = new Looper();
        }
    }

    public static Looper getMainLooper() {
        synchronized (ALL) {
            return main;
        }
    }

    synchronized void post(Runnable r, long delay) {
        Msg m = new Msg(r, SystemClock.uptimeMillis() + delay);
        int i = 0;
        while (i < queue.size() && queue.get(i).due <= m.due) i++;
        queue.add(i, m);
        notifyAll();
    }

    synchronized void remove(Runnable r) {
        queue.removeIf(m -> m.r == r);
    }

    synchronized void quit() {
        quit = true;
        notifyAll();
    }

    void loop() {
        synchronized (this) {
            thread = Thread.currentThread();
        }
        // -Dstub.main_looper_hook=1: a vendor hook run at the start of every loop builds a Handler on the main
        // Looper (OnePlus/OPPO ColorOS 14: Looper.loop -> LooperExtImpl.initLoop -> TheiaSigprotector
        // .initSigprotector -> new Handler(null looper): DroidCast #19, Shizuku #347). Without one the thread throws,
        // and an uncaught exception ends an app_process program (RuntimeInit's KillApplicationHandler).
        if (xagentstub.Rec.on("main_looper_hook") && getMainLooper() == null) {
            xagentstub.Rec.log("Looper.loop: vendor hook: new Handler(null looper): NullPointerException; killed");
            Runtime.getRuntime().halt(1);
        }
        while (true) {
            Runnable r;
            synchronized (this) {
                running = false;
                notifyAll();
                while (true) {
                    if (quit) return;
                    long wait = queue.isEmpty() ? 0 : queue.get(0).due - SystemClock.uptimeMillis();
                    if (!queue.isEmpty() && wait <= 0) break;
                    try {
                        // virtual time moves only by SystemClock.sleep, which wakes us (settleAll)
                        wait(queue.isEmpty() || SystemClock.virtual() ? 0 : wait);
                    } catch (InterruptedException e) {
                        return;
                    }
                }
                r = queue.remove(0).r;
                running = true;
            }
            r.run();
        }
    }

    /** The earliest message due in any looper, or Long.MAX_VALUE. */
    static long nextDue() {
        long next = Long.MAX_VALUE;
        for (Looper l : snapshot()) {
            synchronized (l) {
                if (!l.quit && !l.queue.isEmpty()) next = Math.min(next, l.queue.get(0).due);
            }
        }
        return next;
    }

    /**
     * Virtual clock: wakes every looper and waits until each has run what is due now — or its thread is blocked
     * on a monitor other than the looper's own (it cannot run anything until that monitor's holder lets go) or gone.
     */
    static void settleAll(long now) {
        java.lang.management.ThreadMXBean mx = java.lang.management.ManagementFactory.getThreadMXBean();
        for (Looper l : snapshot()) {
            while (true) {
                Thread t;
                synchronized (l) {
                    l.notifyAll();
                    boolean due = !l.quit && !l.queue.isEmpty() && l.queue.get(0).due <= now;
                    t = l.thread;
                    if (t == null || !(due || l.running)) break;
                }
                Thread.State st = t.getState();
                if (st == Thread.State.TERMINATED) break;
                if (st == Thread.State.BLOCKED) {
                    java.lang.management.ThreadInfo info = mx.getThreadInfo(t.getId());
                    java.lang.management.LockInfo lock = info == null ? null : info.getLockInfo();
                    if (lock != null && lock.getIdentityHashCode() != System.identityHashCode(l)) break;
                }
                try {
                    Thread.sleep(1);
                } catch (InterruptedException e) {
                    return;
                }
            }
        }
    }

    private static List<Looper> snapshot() {
        synchronized (ALL) {
            return new ArrayList<>(ALL);
        }
    }
}

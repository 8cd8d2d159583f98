package android.os;

import java.util.ArrayList;
import java.util.List;

/** A message queue run by one thread (HandlerThread): runnables due at a real time, in time order. */
public final class Looper {
    static final class Msg {
        final Runnable r;
        final long due;

        Msg(Runnable r, long due) {
            this.r = r;
            this.due = due;
        }
    }

    private final List<Msg> queue = new ArrayList<>();
    private boolean quit;

    static long nowMs() {
        return System.nanoTime() / 1_000_000L;
    }

    synchronized void post(Runnable r, long delay) {
        Msg m = new Msg(r, nowMs() + delay);
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
        while (true) {
            Runnable r;
            synchronized (this) {
                while (true) {
                    if (quit) return;
                    long wait = queue.isEmpty() ? 0 : queue.get(0).due - nowMs();
                    if (!queue.isEmpty() && wait <= 0) break;
                    try {
                        wait(queue.isEmpty() ? 0 : wait);
                    } catch (InterruptedException e) {
                        return;
                    }
                }
                r = queue.remove(0).r;
            }
            r.run();
        }
    }
}

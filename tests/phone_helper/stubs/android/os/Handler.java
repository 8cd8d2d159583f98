package android.os;

public class Handler {
    private final Looper looper;

    public Handler(Looper looper) {
        this.looper = looper;
    }

    /** Public API 1: runs r on this handler's looper thread as soon as it is free. */
    public final boolean post(Runnable r) {
        looper.post(r, 0);
        return true;
    }

    public final boolean postDelayed(Runnable r, long delayMillis) {
        xagentstub.Rec.log("handler postDelayed " + delayMillis);
        looper.post(r, delayMillis);
        return true;
    }

    public final void removeCallbacks(Runnable r) {
        looper.remove(r);
    }
}

package android.os;

public class Handler {
    private final Looper looper;

    public Handler(Looper looper) {
        this.looper = looper;
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

package android.os;

/** A thread running a Looper, as Android's: getLooper() waits until the thread has made it. */
public class HandlerThread extends Thread {
    private Looper looper;

    public HandlerThread(String name) {
        super(name);
    }

    @Override
    public synchronized void start() {
        xagentstub.Rec.log("HandlerThread start " + getName());
        super.start();
    }

    @Override
    public void run() {
        Looper l = new Looper();
        synchronized (this) {
            looper = l;
            notifyAll();
        }
        l.loop();
    }

    public synchronized Looper getLooper() {
        while (looper == null) {
            try {
                wait();
            } catch (InterruptedException e) {
                return null;
            }
        }
        return looper;
    }

    public boolean quit() {
        xagentstub.Rec.log("HandlerThread quit " + getName() + (currentThread() == this ? " (on itself)" : ""));
        Looper l = getLooper();
        l.quit();
        return true;
    }
}

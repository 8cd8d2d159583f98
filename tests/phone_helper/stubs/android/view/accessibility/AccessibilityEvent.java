package android.view.accessibility;

public final class AccessibilityEvent {
    private boolean recycled;

    public static AccessibilityEvent obtain() {
        xagentstub.Ui.eventsOut++;
        return new AccessibilityEvent();
    }

    public void recycle() {
        if (recycled) throw new IllegalStateException("Event already recycled!");
        recycled = true;
        xagentstub.Ui.eventsBack++;
    }
}

package android.view.accessibility;

/** The hidden cache holder: clearCache() until Android 12L, clearCache(int connectionId) on 13. */
public final class AccessibilityInteractionClient {
    public static AccessibilityInteractionClient getInstance() {
        return new AccessibilityInteractionClient();
    }

    public void clearCache() {
        xagentstub.Rec.log("a11y client clearCache()");
    }

    public void clearCache(int connectionId) {
        xagentstub.Rec.log("a11y client clearCache(" + connectionId + ")");
    }
}

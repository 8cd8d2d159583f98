package android.view.accessibility;

/** The hidden cache holder: clearCache() until Android 12L, clearCache(int connectionId) on 13. */
public final class AccessibilityInteractionClient {
    public static AccessibilityInteractionClient getInstance() {
        return new AccessibilityInteractionClient();
    }

    /** tests/fixtures/android-api/signatures.tsv: clearCache() 26..32 (api32 AccessibilityInteractionClient.java:903). */
    @xagentstub.Api(to = 32)
    public void clearCache() {
        xagentstub.Rec.log("a11y client clearCache()");
    }

    /** tests/fixtures/android-api/signatures.tsv: clearCache(int) 33..36 (android-33 AccessibilityInteractionClient.java:1008). */
    @xagentstub.Api(from = 33)
    public void clearCache(int connectionId) {
        xagentstub.Rec.log("a11y client clearCache(" + connectionId + ")");
    }
}

package android.view;

public final class DisplayInfo {
    /** Display address, or null if none (API 29+; a physical display's is a DisplayAddress.Physical). */
    public DisplayAddress address;
    public int logicalWidth;
    public int logicalHeight;
    public int rotation;
}

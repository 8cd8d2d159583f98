package android.view;

public final class DisplayInfo {
    /**
     * Display address, or null if none; a physical display's is a DisplayAddress.Physical. The table: a String on
     * api26-28, a DisplayAddress from api29 (the helper reads it on 34+ only).
     */
    @xagentstub.Api(from = 29)
    public DisplayAddress address;
    public int logicalWidth;
    public int logicalHeight;
    public int rotation;
}

package android.view;

public final class DisplayInfo {
    public int logicalWidth;
    public int logicalHeight;
    public int rotation;
}

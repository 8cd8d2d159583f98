package android.accessibilityservice;

public class AccessibilityServiceInfo {
    public static final int FLAG_RETRIEVE_INTERACTIVE_WINDOWS = 0x40;
    public int flags;
}

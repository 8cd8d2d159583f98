package android.app;

import android.accessibilityservice.AccessibilityServiceInfo;
import android.os.Looper;
import android.view.accessibility.AccessibilityNodeInfo;
import android.view.accessibility.AccessibilityWindowInfo;
import java.util.ArrayList;
import java.util.List;
import xagentstub.Rec;
import xagentstub.Ui;

/**
 * UiAutomation as app_process sees it: the hidden (Looper, IUiAutomationConnection) constructor (still there,
 * deprecated, on 34+), connect(flags) / disconnect(), and the public reads, answered from xagentstub.Ui's script.
 * -Dstub.ui_busy=N: the first N connects throw the system's "already registered" IllegalStateException (another
 * UiAutomation, e.g. uiautomator dump, holds the service); -Dstub.ui_connect_throws=1: connect fails otherwise;
 * -Dstub.ui_no_windows=1: getWindows() is empty (the service info flag did not take).
 */
public final class UiAutomation {
    public static final int FLAG_DONT_SUPPRESS_ACCESSIBILITY_SERVICES = 1;

    public interface OnAccessibilityEventListener {
        void onAccessibilityEvent(android.view.accessibility.AccessibilityEvent event);
    }

    private static int connects;
    private boolean connected;
    private int serviceFlags = 0x12;

    public UiAutomation(Looper looper, IUiAutomationConnection connection) {
        if (looper == null || connection == null) throw new IllegalArgumentException("Looper cannot be null!");
        Rec.log("ui new UiAutomation(Looper, connection)");
        Ui.looper = looper;
    }

    public void connect() {
        connect(0);
    }

    /** From API 28 connect() starts its own callback thread before it asks the system (see connect). */
    private android.os.HandlerThread mRemoteCallbackThread;
    private boolean mIsConnecting;

    /**
     * As AOSP's from API 28 (api28 android/app/UiAutomation.java:227-229; android-36 connectWithTimeout): a
     * HandlerThread "UiAutomation" is started and mIsConnecting set before the system is asked; when the system
     * refuses ("already registered"), the exception leaves both as they are (only the wait that follows a
     * successful registration resets mIsConnecting in a finally), so that thread runs on until something quits it.
     */
    public void connect(int flags) {
        connects++;
        Rec.log("ui connect(" + flags + ")");
        if (android.os.Build.VERSION.SDK_INT >= 28) {
            mIsConnecting = true;
            mRemoteCallbackThread = new android.os.HandlerThread("UiAutomation");
            mRemoteCallbackThread.start();
        }
        if (connects <= Rec.num("ui_busy", 0)) {
            throw new IllegalStateException(
                    "UiAutomationService android.accessibilityservice.IAccessibilityServiceClient$Stub$Proxy@5c4b1a"
                            + "already registered!");
        }
        if (Rec.on("ui_connect_throws")) throw new RuntimeException("Error while connecting UiAutomation");
        mIsConnecting = false;
        connected = true;
    }

    private void check() {
        if (!connected) throw new IllegalStateException("Not connected!");
    }

    /**
     * AOSP: "Cannot call disconnect() while connecting!" while mIsConnecting (a refused connect leaves it set), then
     * not-connected, then the system call, and the callback thread quit in a finally.
     */
    public void disconnect() {
        if (mIsConnecting) throw new IllegalStateException("Cannot call disconnect() while connecting!");
        check();
        connected = false;
        Ui.listener = null;
        Rec.log("ui disconnect (" + Ui.counts() + ")");
        if (mRemoteCallbackThread != null) {
            mRemoteCallbackThread.quit();
            mRemoteCallbackThread = null;
        }
    }

    public int getConnectionId() {
        check();
        return 7;
    }

    public final AccessibilityServiceInfo getServiceInfo() {
        check();
        AccessibilityServiceInfo i = new AccessibilityServiceInfo();
        i.flags = serviceFlags;
        return i;
    }

    public final void setServiceInfo(AccessibilityServiceInfo info) {
        check();
        serviceFlags = info.flags;
        Rec.log("ui setServiceInfo flags=0x" + Integer.toHexString(info.flags));
    }

    public void setOnAccessibilityEventListener(OnAccessibilityEventListener l) {
        Rec.log("ui listener " + (l == null ? "null" : "set"));
        Ui.listener = l;
    }

    /** Public on 34+ (hidden before); the helper uses it only there. UiAutomation#clearCache()boolean: 34..36 in
     * tests/fixtures/android-api/signatures.tsv. */
    @xagentstub.Api(from = 34)
    public boolean clearCache() {
        check();
        Rec.log("ui clearCache()");
        return true;
    }

    public List<AccessibilityWindowInfo> getWindows() {
        check();
        List<AccessibilityWindowInfo> l = new ArrayList<>();
        boolean interactive = (serviceFlags & AccessibilityServiceInfo.FLAG_RETRIEVE_INTERACTIVE_WINDOWS) != 0;
        if (interactive && !Rec.on("ui_no_windows")) {
            for (int k = 0; Rec.prop("win." + k, null) != null; k++) l.add(new AccessibilityWindowInfo(k));
        }
        Rec.log("ui getWindows -> " + l.size());
        return l;
    }

    public AccessibilityNodeInfo getRootInActiveWindow() {
        check();
        AccessibilityNodeInfo n = AccessibilityNodeInfo.scripted("a");
        Rec.log("ui getRootInActiveWindow -> " + (n == null ? "null" : "node"));
        return n;
    }
}

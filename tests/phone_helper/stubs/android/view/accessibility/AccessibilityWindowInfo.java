package android.view.accessibility;

import android.graphics.Rect;
import xagentstub.Ui;

public final class AccessibilityWindowInfo {
    private final int k;
    private final String[] f;
    private boolean recycled;

    public AccessibilityWindowInfo(int k) {
        this.k = k;
        this.f = Ui.fields("win." + k, 10);
        Ui.windowsOut++;
    }

    private void check() {
        if (recycled) throw new IllegalStateException("window used after recycle");
    }

    public int getId() {
        check();
        return Integer.parseInt(f[0]);
    }

    public int getType() {
        check();
        return Integer.parseInt(f[1]);
    }

    public int getLayer() {
        check();
        return Integer.parseInt(f[2]);
    }

    public boolean isActive() {
        check();
        return f[3].equals("1");
    }

    public boolean isFocused() {
        check();
        return f[4].equals("1");
    }

    public CharSequence getTitle() {
        check();
        return Ui.unq(f[5]);
    }

    public void getBoundsInScreen(Rect r) {
        check();
        r.set(Integer.parseInt(f[6]), Integer.parseInt(f[7]), Integer.parseInt(f[8]), Integer.parseInt(f[9]));
    }

    public AccessibilityNodeInfo getRoot() {
        check();
        return AccessibilityNodeInfo.scripted(Integer.toString(k));
    }

    public void recycle() {
        if (recycled) throw new IllegalStateException("Info already recycled!");
        recycled = true;
        Ui.windowsBack++;
    }
}

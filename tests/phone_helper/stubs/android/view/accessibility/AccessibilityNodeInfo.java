package android.view.accessibility;

import android.graphics.Rect;
import xagentstub.Rec;
import xagentstub.Ui;

/** A node of xagentstub.Ui's script (n.PATH) or of a generated tree (gen.K); each getChild is a new instance. */
public final class AccessibilityNodeInfo {
    private static final int LONG = Rec.num("gen_text", 0);
    private static final int FAN = Rec.num("gen_fan", 10);
    private static final char CHAR = (char) Integer.parseInt(Rec.prop("gen_char", "78"), 16);
    private final String path;
    private final String[] f;
    private final int gen, genN;
    private boolean recycled;

    private AccessibilityNodeInfo(String path, String[] f, int gen, int genN) {
        this.path = path;
        this.f = f;
        this.gen = gen;
        this.genN = genN;
        Ui.nodesOut++;
    }

    /** The root of window K (or "a"), or null when the script has none. */
    public static AccessibilityNodeInfo scripted(String k) {
        String n = Rec.prop("gen." + k, null);
        if (n != null) return new AccessibilityNodeInfo(k, null, 0, Integer.parseInt(n));
        String[] f = Ui.fields("n." + k, 10);
        return f == null ? null : new AccessibilityNodeInfo(k, f, -1, 0);
    }

    private void check() {
        if (recycled) throw new IllegalStateException("node used after recycle");
    }

    public int getChildCount() {
        check();
        if (gen >= 0) {
            int first = FAN * gen + 1;
            return Math.max(0, Math.min(FAN, genN - first));
        }
        int i = 0;
        while (Rec.prop("n." + path + "." + i, null) != null) i++;
        return i;
    }

    public AccessibilityNodeInfo getChild(int i) {
        check();
        if (i < 0 || i >= getChildCount()) throw new IndexOutOfBoundsException("child " + i);
        if (gen >= 0) return new AccessibilityNodeInfo(path, null, FAN * gen + 1 + i, genN);
        String key = path + "." + i;
        if ("null".equals(Rec.prop("n." + key, null))) return null;
        return new AccessibilityNodeInfo(key, Ui.fields("n." + key, 10), -1, 0);
    }

    private String s(int i) {
        check();
        if (gen >= 0) {
            switch (i) {
                case 0: return "android.widget.TextView";
                case 1: return LONG > 0 ? String.valueOf(CHAR).repeat(LONG) : "t" + gen;
                case 4: return "com.example.big";
                default: return "";
            }
        }
        return Ui.unq(f[i]);
    }

    private boolean flag(char c) {
        check();
        if (gen >= 0) return c == 'e';
        return f[5].indexOf(c) >= 0;
    }

    public CharSequence getClassName() { return s(0); }
    public CharSequence getText() { return s(1); }
    public String getViewIdResourceName() { return s(2); }
    public CharSequence getContentDescription() { return s(3); }
    public CharSequence getPackageName() { return s(4); }
    public boolean isCheckable() { return flag('c'); }
    public boolean isChecked() { return flag('C'); }
    public boolean isClickable() { return flag('k'); }
    public boolean isEnabled() { return flag('e'); }
    public boolean isFocusable() { return flag('f'); }
    public boolean isFocused() { return flag('F'); }
    public boolean isScrollable() { return flag('s'); }
    public boolean isLongClickable() { return flag('l'); }
    public boolean isPassword() { return flag('p'); }
    public boolean isSelected() { return flag('S'); }
    public boolean isVisibleToUser() { return !flag('h'); }

    public void getBoundsInScreen(Rect r) {
        check();
        if (gen >= 0) {
            r.set(0, gen, 1080, gen + 1);
            return;
        }
        r.set(Integer.parseInt(f[6]), Integer.parseInt(f[7]), Integer.parseInt(f[8]), Integer.parseInt(f[9]));
    }

    public void recycle() {
        if (recycled) throw new IllegalStateException("Info already recycled!");
        recycled = true;
        Ui.nodesBack++;
    }
}

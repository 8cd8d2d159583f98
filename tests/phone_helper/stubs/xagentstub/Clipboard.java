package xagentstub;

import android.content.ClipData;

/**
 * The phone's clipboard: -Dstub.clip=TEXT starts with a text clip (\\uXXXX escapes allowed, repeated
 * -Dstub.clip_repeat=N times), none when unset; -Dstub.clip_nontext=1 starts with a clip whose item has no text.
 */
public final class Clipboard {
    private static ClipData current = initial();

    private static ClipData initial() {
        if (Rec.on("clip_nontext")) return ClipData.newWithoutText("user");
        String raw = Rec.prop("clip", null);
        if (raw == null) return null;
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < raw.length(); i++) {
            if (raw.startsWith("\\u", i) && i + 6 <= raw.length()) {
                b.append((char) Integer.parseInt(raw.substring(i + 2, i + 6), 16));
                i += 5;
            } else {
                b.append(raw.charAt(i));
            }
        }
        return ClipData.newPlainText("user", b.toString().repeat(Rec.num("clip_repeat", 1)));
    }

    public static String text() {
        if (current != null && current.text() != null && current.text().length() > 64) {
            return "(" + current.text().length() + " chars)";
        }
        return current == null ? "none" : Rec.q(current.text());
    }

    static String who(String pkg, String tag, Integer user, Integer device) {
        StringBuilder b = new StringBuilder("pkg=").append(pkg);
        if (tag != null || user != null) b.append(" tag=").append(tag);
        if (user != null) b.append(" user=").append(user);
        if (device != null) b.append(" device=").append(device);
        return b.toString();
    }

    /**
     * -Dstub.clip_set_denied=1: the system does not let the shell user write; it returns without a word, as AOSP's
     * ClipboardService.setPrimaryClip does (`if (!clipboardAccessAllowed(OP_WRITE_CLIPBOARD, ...)) { return; }`).
     */
    public static void set(ClipData clip, String pkg, String tag, Integer user, Integer device) {
        boolean refused = Rec.on("clip_set_denied");
        Rec.log("clip set " + (clip == null ? "null" : Rec.q(clip.label()) + " " + Rec.q(clip.text())) + " "
                + who(pkg, tag, user, device) + (refused ? " (refused)" : ""));
        if (!refused) current = clip;
    }

    /**
     * -Dstub.clip_read_denied=1: the system does not let the shell user read (a vendor's background-read rule;
     * AOSP lets the shell read, api29 ClipboardService.java:271): it answers null, as for an empty clipboard
     * (ClipboardService.getPrimaryClip: `if (!clipboardAccessAllowed(OP_READ_CLIPBOARD, ...)) { return null; }`),
     * never an exception.
     */
    public static ClipData get(String pkg, String tag, Integer user, Integer device) {
        boolean refused = Rec.on("clip_read_denied");
        Rec.log("clip get " + who(pkg, tag, user, device) + " -> " + (refused ? "null (refused)" : text()));
        return refused ? null : current;
    }

    public static void clear(String pkg, String tag, Integer user, Integer device) {
        Rec.log("clip clear " + who(pkg, tag, user, device));
        current = null;
    }
}

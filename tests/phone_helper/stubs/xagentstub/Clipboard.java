package xagentstub;

import android.content.ClipData;

/** The phone's clipboard: -Dstub.clip=TEXT starts with a text clip, none when unset. */
public final class Clipboard {
    private static ClipData current = Rec.prop("clip", null) == null
            ? null : ClipData.newPlainText("user", Rec.prop("clip", null));

    public static String text() {
        return current == null ? "none" : Rec.q(current.text());
    }

    static String who(String pkg, String tag, Integer user, Integer device) {
        StringBuilder b = new StringBuilder("pkg=").append(pkg);
        if (tag != null || user != null) b.append(" tag=").append(tag);
        if (user != null) b.append(" user=").append(user);
        if (device != null) b.append(" device=").append(device);
        return b.toString();
    }

    public static void set(ClipData clip, String pkg, String tag, Integer user, Integer device) {
        Rec.log("clip set " + (clip == null ? "null" : Rec.q(clip.label()) + " " + Rec.q(clip.text())) + " "
                + who(pkg, tag, user, device));
        if (Rec.on("clip_set_denied")) throw new SecurityException("not allowed");
        current = clip;
    }

    public static ClipData get(String pkg, String tag, Integer user, Integer device) {
        Rec.log("clip get " + who(pkg, tag, user, device) + " -> " + text());
        // Android 10+ refuses background clipboard reads to apps that are not the IME or focused
        if (Rec.on("clip_read_denied")) throw new SecurityException("background read");
        return current;
    }

    public static void clear(String pkg, String tag, Integer user, Integer device) {
        Rec.log("clip clear " + who(pkg, tag, user, device));
        current = null;
    }
}

package android.graphics;

/**
 * A picture in memory: W x H pixels of a pattern the case picks (-Dstub.frame_w, frame_h, frame_pattern), or a
 * "hardware" bitmap that, as on Android 8+, cannot be read pixel by pixel until copied (getPixels throws).
 */
public final class Bitmap {
    public enum Config { ALPHA_8, RGB_565, ARGB_4444, ARGB_8888, HARDWARE }

    final int w;
    final int h;
    final Config config;

    Bitmap(int w, int h, Config config) {
        this.w = w;
        this.h = h;
        this.config = config;
    }

    /** The display's picture as a screenshot call returns it (hardware on 12+, as ScreenshotHardwareBuffer's). */
    public static Bitmap display(boolean hardware) {
        return new Bitmap(xagentstub.Rec.num("frame_w", 16), xagentstub.Rec.num("frame_h", 32),
                hardware ? Config.HARDWARE : Config.ARGB_8888);
    }

    public int getWidth() {
        return w;
    }

    public int getHeight() {
        return h;
    }

    public Bitmap copy(Config c, boolean mutable) {
        xagentstub.Rec.log("Bitmap.copy(" + config + " -> " + c + ", " + mutable + ")");
        return new Bitmap(w, h, c);
    }

    public void recycle() {
        xagentstub.Rec.log("Bitmap.recycle(" + config + ")");
    }

    /** ARGB of pixel (x, y): "plain" = a flat grey; otherwise a pattern whose cell means are not all alike. */
    static int pixel(int x, int y) {
        if ("plain".equals(xagentstub.Rec.prop("frame_pattern", "ramp"))) return 0xff808080;
        int r = (x * 16) & 0xff;
        int g = (y * 8) & 0xff;
        int b = ((x + y) * 7) & 0xff;
        return 0xff000000 | (r << 16) | (g << 8) | b;
    }

    public void getPixels(int[] out, int offset, int stride, int x, int y, int width, int height) {
        if (config == Config.HARDWARE) {
            throw new IllegalStateException("unable to getPixels(), pixel access is not supported on Config#HARDWARE bitmaps");
        }
        if (x < 0 || y < 0 || x + width > w || y + height > h) throw new IllegalArgumentException("out of bounds");
        for (int j = 0; j < height; j++) {
            for (int i = 0; i < width; i++) out[offset + j * stride + i] = pixel(x + i, y + j);
        }
    }
}

package android.graphics;

/**
 * A picture in memory, or a "hardware" bitmap that, as on Android 8+, cannot be read pixel by pixel until copied
 * (getPixels throws). The display it shows: a panel of frame_w x frame_h pixels in its natural orientation
 * (-Dstub.frame_w, frame_h; 1080 x 2400 when not given, the display service's size), turned by the display's
 * rotation (-Dstub.rotation, 0-3), showing a pattern the case picks (-Dstub.frame_pattern) upright on the W x H of
 * `screen` (the natural size, its sides swapped for 90 and 270).
 *
 * <p>Helper D11: what each screenshot call gives is modelled on the sources. A capture at Surface.ROTATION_0 is the
 * natural-orientation picture (api26 android/view/SurfaceControl.java:901-906; "Surfaceflinger will always take
 * screenshots in its native portrait orientation by default", api28 SurfaceControl.java:1264-1269), scaled to the
 * size asked for; AOSP's UiAutomation on 8.x turns it upright by drawing it rotated by 360 - 90 * rotation degrees
 * (api26 android/app/UiAutomation.java:737-750, :1015-1029), so natural pixel (x, y) of a w x h picture is upright
 * (y, w-1-x) at rotation 1, (w-1-x, h-1-y) at 2, (h-1-y, x) at 3; a capture asked for rotation r is the natural
 * picture turned that way (9-11: UiAutomation passes the display's rotation and uses the picture as it comes, api28
 * UiAutomation.java:707-735). 12+'s captureDisplay gives the display upright.
 */
public final class Bitmap {
    public enum Config { ALPHA_8, RGB_565, ARGB_4444, ARGB_8888, HARDWARE }

    /** ARGB of a pixel (x, y) of this picture. */
    interface Pixels {
        int at(int x, int y);
    }

    final int w;
    final int h;
    final Config config;
    final Pixels px;

    Bitmap(int w, int h, Config config, Pixels px) {
        this.w = w;
        this.h = h;
        this.config = config;
        this.px = px;
    }

    /** The panel's natural width and height (stub plumbing, not a framework member). */
    @xagentstub.Api(plumbing = "the simulated panel's natural size, read by the display service stub")
    public static int naturalWidth() {
        return xagentstub.Rec.num("frame_w", 1080);
    }

    @xagentstub.Api(plumbing = "the simulated panel's natural size, read by the display service stub")
    public static int naturalHeight() {
        return xagentstub.Rec.num("frame_h", 2400);
    }

    @xagentstub.Api(plumbing = "the display's rotation (0-3), read by the screenshot stubs")
    public static int rotationOf() {
        return xagentstub.Rec.num("rotation", 0) & 3;
    }

    /** Where natural pixel (x, y) of a w x h picture is once the picture is turned as for rotation r (see above). */
    static int[] turn(int r, int x, int y, int w, int h) {
        switch (r) {
            case 1: return new int[] {y, w - 1 - x};
            case 2: return new int[] {w - 1 - x, h - 1 - y};
            case 3: return new int[] {h - 1 - y, x};
            default: return new int[] {x, y};
        }
    }

    /** The natural pixel that turning a w x h picture as for rotation r puts at (X, Y): turn's inverse. */
    static int[] unturn(int r, int X, int Y, int w, int h) {
        switch (r) {
            case 1: return new int[] {w - 1 - Y, X};
            case 2: return new int[] {w - 1 - X, h - 1 - Y};
            case 3: return new int[] {Y, h - 1 - X};
            default: return new int[] {X, Y};
        }
    }

    /** The natural-orientation pixel (x, y) of the panel: what is shown upright, seen through the rotation. */
    static int natural(int x, int y) {
        int[] up = turn(rotationOf(), x, y, naturalWidth(), naturalHeight());
        return pixel(up[0], up[1]);
    }

    /** The display upright, as 12+'s captureDisplay returns it (hardware on 12+, as ScreenshotHardwareBuffer's). */
    public static Bitmap display(boolean hardware) {
        boolean sideways = (rotationOf() & 1) == 1;
        int w = sideways ? naturalHeight() : naturalWidth();
        int h = sideways ? naturalWidth() : naturalHeight();
        return new Bitmap(w, h, hardware ? Config.HARDWARE : Config.ARGB_8888, Bitmap::pixel);
    }

    /**
     * The natural-orientation picture turned as for rotation r (0 = Surface.ROTATION_0, the natural one), scaled to
     * width x height (0 x 0: its own size). Turned as for the display's rotation it is the display upright.
     */
    @xagentstub.Api(plumbing = "the picture SurfaceControl's screenshot stubs return")
    public static Bitmap captured(int r, int width, int height) {
        int nw = naturalWidth(), nh = naturalHeight();
        int tw = (r & 1) == 1 ? nh : nw;
        int th = (r & 1) == 1 ? nw : nh;
        int w = width > 0 ? width : tw;
        int h = height > 0 ? height : th;
        return new Bitmap(w, h, Config.ARGB_8888, (x, y) -> {
            int[] n = unturn(r & 3, (int) ((long) x * tw / w), (int) ((long) y * th / h), nw, nh);
            return natural(n[0], n[1]);
        });
    }

    public int getWidth() {
        return w;
    }

    public int getHeight() {
        return h;
    }

    public Bitmap copy(Config c, boolean mutable) {
        xagentstub.Rec.log("Bitmap.copy(" + config + " -> " + c + ", " + mutable + ")");
        return new Bitmap(w, h, c, px);
    }

    public void recycle() {
        xagentstub.Rec.log("Bitmap.recycle(" + config + ")");
    }

    /** ARGB of pixel (x, y) of the display upright: "plain" = a flat grey; otherwise a pattern whose cell means are not all alike. */
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
            for (int i = 0; i < width; i++) out[offset + j * stride + i] = px.at(x + i, y + j);
        }
    }
}

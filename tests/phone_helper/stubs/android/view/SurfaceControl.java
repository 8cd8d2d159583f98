package android.view;

import android.graphics.Bitmap;
import android.graphics.Rect;
import android.os.IBinder;

/**
 * The screenshot calls of every Android version at once (the helper picks by SDK_INT, as on a phone only one of
 * them exists); -Dstub.no_screenshot=1 makes the class fail to load (a ROM without it: `no_screenshot_api`),
 * -Dstub.no_picture=1 makes each call answer null.
 */
public final class SurfaceControl {
    static {
        if (xagentstub.Rec.on("no_screenshot")) throw new IllegalStateException("no SurfaceControl here");
    }

    /**
     * Android 8.x (tests/fixtures/android-api/signatures.tsv: screenshot(int,int) 26..27): the whole display at
     * Surface.ROTATION_0, its natural orientation, scaled to width x height (api26 SurfaceControl.java:901-906
     * `nativeScreenshot(displayToken, new Rect(), width, height, 0, 0, true, false, Surface.ROTATION_0)`): in
     * landscape, asked for the logical size, the natural picture squeezed into it (helper D11).
     */
    @xagentstub.Api(to = 27)
    public static Bitmap screenshot(int width, int height) {
        xagentstub.Rec.log("SurfaceControl.screenshot(" + width + ", " + height + ")");
        return xagentstub.Rec.on("no_picture") ? null : Bitmap.captured(0, width, height);
    }

    /**
     * Android 9-11 (tests/fixtures/android-api/signatures.tsv: screenshot(Rect,int,int,int) 28..30): the natural
     * picture turned as for `rotation` ("Surfaceflinger will always take screenshots in its native portrait
     * orientation by default", api28 SurfaceControl.java:1264-1269; the call swaps 90/270 into SurfaceFlinger's
     * sense and turns the crop with it, :1275-1286, api29 :1898-1913, api30 :2016-2031), so the display's own
     * rotation gives it upright (AOSP's UiAutomation relies on that: api28 UiAutomation.java:707-735); scaled to
     * width x height, 0 x 0 meaning its own size. The crop is the whole display (an empty Rect, or AOSP's
     * Rect(0, 0, W, H) of the logical size); another is not modelled and fails.
     */
    @xagentstub.Api(from = 28, to = 30)
    public static Bitmap screenshot(Rect sourceCrop, int width, int height, int rotation) {
        xagentstub.Rec.log("SurfaceControl.screenshot(Rect(" + sourceCrop.left + "," + sourceCrop.top + ","
                + sourceCrop.right + "," + sourceCrop.bottom + "), " + width + ", " + height + ", " + rotation + ")");
        boolean empty = sourceCrop.left >= sourceCrop.right || sourceCrop.top >= sourceCrop.bottom;
        boolean sideways = (Bitmap.rotationOf() & 1) == 1;
        int lw = sideways ? Bitmap.naturalHeight() : Bitmap.naturalWidth();
        int lh = sideways ? Bitmap.naturalWidth() : Bitmap.naturalHeight();
        boolean whole = sourceCrop.left == 0 && sourceCrop.top == 0 && sourceCrop.right == lw && sourceCrop.bottom == lh;
        if (!empty && !whole) throw new UnsupportedOperationException("stub: only whole-display crops are modelled");
        return xagentstub.Rec.on("no_picture") ? null : Bitmap.captured(rotation, width, height);
    }

    /** Android 10-13 (tests/fixtures/android-api/signatures.tsv: getInternalDisplayToken() 29..33). */
    @xagentstub.Api(from = 29, to = 33)
    public static IBinder getInternalDisplayToken() {
        xagentstub.Rec.log("SurfaceControl.getInternalDisplayToken()");
        return new IBinder() {};
    }

    /**
     * Android 10-13's physical displays (tests/fixtures/android-api/signatures.tsv: getPhysicalDisplayIds() and
     * getPhysicalDisplayToken(long) 31..33 as the helper uses them), in SurfaceFlinger's order: -Dstub.phys_ids=A,B
     * as DisplayControl's on 14+ (getInternalDisplayToken is the token of the first of them: android-33
     * SurfaceControl.java:2453-2458).
     */
    @xagentstub.Api(from = 31, to = 33)
    public static long[] getPhysicalDisplayIds() {
        xagentstub.Rec.log("SurfaceControl.getPhysicalDisplayIds()");
        String ids = xagentstub.Rec.prop("phys_ids", "");
        if (ids.isEmpty()) return new long[] {4619827259835644672L, 7L};
        return java.util.Arrays.stream(ids.split(",")).mapToLong(Long::parseLong).toArray();
    }

    @xagentstub.Api(from = 31, to = 33)
    public static IBinder getPhysicalDisplayToken(long id) {
        xagentstub.Rec.log("SurfaceControl.getPhysicalDisplayToken(" + id + ")");
        return new IBinder() {};
    }

    /** Android 12-13 (tests/fixtures/android-api/signatures.tsv: captureDisplay(SurfaceControl$DisplayCaptureArgs) 31..33). */
    @xagentstub.Api(from = 31, to = 33)
    public static ScreenshotHardwareBuffer captureDisplay(DisplayCaptureArgs args) {
        xagentstub.Rec.log("SurfaceControl.captureDisplay(" + args + ")");
        return xagentstub.Rec.on("no_picture") ? null : new ScreenshotHardwareBuffer();
    }

    @xagentstub.Api(from = 31, to = 33)
    public static class ScreenshotHardwareBuffer {
        public Bitmap asBitmap() {
            xagentstub.Rec.log("ScreenshotHardwareBuffer.asBitmap()");
            return Bitmap.display(true);
        }

        /** The buffer asBitmap() wraps (android-31 SurfaceControl.java ScreenshotHardwareBuffer; android-34 ScreenCapture). */
        public android.hardware.HardwareBuffer getHardwareBuffer() {
            return new android.hardware.HardwareBuffer();
        }
    }

    @xagentstub.Api(from = 31, to = 33)
    public static class DisplayCaptureArgs {
        final IBinder token;

        DisplayCaptureArgs(IBinder token) {
            this.token = token;
        }

        @Override
        public String toString() {
            return "DisplayCaptureArgs(" + (token == null ? "null" : "token") + ")";
        }

        @xagentstub.Api(from = 31, to = 33)
        public static class Builder {
            final IBinder token;

            public Builder(IBinder token) {
                this.token = token;
            }

            public DisplayCaptureArgs build() {
                return new DisplayCaptureArgs(token);
            }
        }
    }
}

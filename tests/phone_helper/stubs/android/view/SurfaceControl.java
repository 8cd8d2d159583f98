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

    static Bitmap picture(boolean hardware) {
        return xagentstub.Rec.on("no_picture") ? null : Bitmap.display(hardware);
    }

    /** Android 8.x (tests/fixtures/android-api/signatures.tsv: screenshot(int,int) 26..27). */
    @xagentstub.Api(to = 27)
    public static Bitmap screenshot(int width, int height) {
        xagentstub.Rec.log("SurfaceControl.screenshot(" + width + ", " + height + ")");
        return picture(false);
    }

    /** Android 9-11 (tests/fixtures/android-api/signatures.tsv: screenshot(Rect,int,int,int) 28..30). */
    @xagentstub.Api(from = 28, to = 30)
    public static Bitmap screenshot(Rect sourceCrop, int width, int height, int rotation) {
        xagentstub.Rec.log("SurfaceControl.screenshot(Rect(" + sourceCrop.left + "," + sourceCrop.top + ","
                + sourceCrop.right + "," + sourceCrop.bottom + "), " + width + ", " + height + ", " + rotation + ")");
        return picture(false);
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

package android.window;

import android.graphics.Bitmap;
import android.os.IBinder;

/** Android 14+'s home of the display capture (frameworks/base core/java/android/window/ScreenCapture.java). */
@xagentstub.Api(from = 34) // tests/fixtures/android-api/signatures.tsv: android.window.ScreenCapture from android-34
public final class ScreenCapture {
    public static ScreenshotHardwareBuffer captureDisplay(DisplayCaptureArgs args) {
        xagentstub.Rec.log("ScreenCapture.captureDisplay(" + args + ")");
        return xagentstub.Rec.on("no_picture") ? null : new ScreenshotHardwareBuffer();
    }

    @xagentstub.Api(from = 34)
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

    @xagentstub.Api(from = 34)
    public static class DisplayCaptureArgs {
        final IBinder token;

        DisplayCaptureArgs(IBinder token) {
            this.token = token;
        }

        @Override
        public String toString() {
            return "DisplayCaptureArgs(" + (token == null ? "null" : "token") + ")";
        }

        @xagentstub.Api(from = 34)
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

package android.hardware;

/** A graphics buffer (public API 26); the screenshot's, handed out by ScreenshotHardwareBuffer on 12+. */
public final class HardwareBuffer implements AutoCloseable {
    @Override
    public void close() {
        xagentstub.Rec.log("HardwareBuffer.close()");
    }
}

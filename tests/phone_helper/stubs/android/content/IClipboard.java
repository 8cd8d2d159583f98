package android.content;

import android.os.IBinder;
import xagentstub.Clipboard;

/**
 * IClipboard's parameter lists by Android version (AOSP core/java/android/content/IClipboard.aidl): 8-9 take the
 * calling package (9 adds clearPrimaryClip), 10-11 add the userId, 12-13 an attributionTag, 14+ a deviceId.
 */
public interface IClipboard {
    /** AIDL's Stub.Proxy is a private class: the helper must reach its public methods all the same. */
    class Stub {
        public static Object asInterface(IBinder b) {
            int sdk = android.os.Build.VERSION.SDK_INT;
            if (sdk >= 34 && "vivo".equals(xagentstub.Rec.prop("clip_shape", ""))) return new Vivo34();
            if (sdk >= 34) return new V34();
            if (sdk >= 31) return new V31();
            if (sdk >= 29) return new V29();
            if (sdk >= 28) return new V28();
            return new V26();
        }

        private static class V26 implements IClipboard {
            public void setPrimaryClip(ClipData c, String pkg) {
                Clipboard.set(c, pkg, null, null, null);
            }

            public ClipData getPrimaryClip(String pkg) {
                return Clipboard.get(pkg, null, null, null);
            }
        }

        private static class V28 extends V26 {
            public void clearPrimaryClip(String pkg) {
                Clipboard.clear(pkg, null, null, null);
            }
        }

        private static class V29 implements IClipboard {
            public void setPrimaryClip(ClipData c, String pkg, int user) {
                Clipboard.set(c, pkg, null, user, null);
            }

            public ClipData getPrimaryClip(String pkg, int user) {
                return Clipboard.get(pkg, null, user, null);
            }

            public void clearPrimaryClip(String pkg, int user) {
                Clipboard.clear(pkg, null, user, null);
            }
        }

        private static class V31 implements IClipboard {
            public void setPrimaryClip(ClipData c, String pkg, String tag, int user) {
                Clipboard.set(c, pkg, tag, user, null);
            }

            public ClipData getPrimaryClip(String pkg, String tag, int user) {
                return Clipboard.get(pkg, tag, user, null);
            }

            public void clearPrimaryClip(String pkg, String tag, int user) {
                Clipboard.clear(pkg, tag, user, null);
            }
        }

        private static class V34 implements IClipboard {
            public void setPrimaryClip(ClipData c, String pkg, String tag, int user, int device) {
                Clipboard.set(c, pkg, tag, user, device);
            }

            public ClipData getPrimaryClip(String pkg, String tag, int user, int device) {
                return Clipboard.get(pkg, tag, user, device);
            }

            public void clearPrimaryClip(String pkg, String tag, int user, int device) {
                Clipboard.clear(pkg, tag, user, device);
            }
        }

        /**
         * -Dstub.clip_shape=vivo: vivo/iQOO Android 14 builds add a `boolean userOperate` last (scrcpy 5ce8672e,
         * issue #4492: getPrimaryClip(String, String, int, int, boolean); 746eaea5, issue #4703 "IQOO Neo 8":
         * setPrimaryClip(ClipData, String, String, int, int, boolean)); clearPrimaryClip keeps AOSP 14's shape.
         */
        private static class Vivo34 implements IClipboard {
            public void setPrimaryClip(ClipData c, String pkg, String tag, int user, int device, boolean op) {
                xagentstub.Rec.log("clip vivo userOperate=" + op);
                Clipboard.set(c, pkg, tag, user, device);
            }

            public ClipData getPrimaryClip(String pkg, String tag, int user, int device, boolean op) {
                xagentstub.Rec.log("clip vivo userOperate=" + op);
                return Clipboard.get(pkg, tag, user, device);
            }

            public void clearPrimaryClip(String pkg, String tag, int user, int device) {
                Clipboard.clear(pkg, tag, user, device);
            }
        }
    }
}

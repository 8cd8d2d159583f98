package android.content;

import android.os.IBinder;
import xagentstub.Clipboard;

/**
 * IClipboard's parameter lists by Android version, as tests/fixtures/android-api/signatures.tsv has them (read from ClipboardService's
 * IClipboard.Stub of each level): 8-9 take the calling package (9 adds clearPrimaryClip), 10-13.0 add the userId,
 * 14+ an attributionTag and a deviceId. (This stub gave 12-13 an attributionTag, which AOSP's 12, 12L and 13.0
 * do not have: android-31/32 ClipboardService.java:373, android-33 :427 getPrimaryClip(String pkg, int userId);
 * 13 QPR1 builds added it, scrcpy 82cb8ab8 / #3497: that shape is -Dstub.clip_shape=tag at 33.)
 */
public interface IClipboard {
    /** AIDL's Stub.Proxy is a private class: the helper must reach its public methods all the same. */
    class Stub {
        public static IClipboard asInterface(IBinder b) {
            int sdk = android.os.Build.VERSION.SDK_INT;
            String shape = xagentstub.Rec.prop("clip_shape", "");
            if (sdk >= 34 && "vivo".equals(shape)) return new Vivo34();
            if (sdk >= 34 && "honor".equals(shape)) return new Honor34();
            if (sdk == 33 && "honor".equals(shape)) return new Honor33();
            if (sdk >= 34) return new V34();
            if (sdk == 33 && "tag".equals(shape)) return new Tag33();
            if (sdk >= 29) return new V29();
            if (sdk >= 28) return new V28();
            return new V26();
        }

        /** Why each extends IClipboard: asInterface returns the interface, as AIDL's generated one does. */
        @xagentstub.Api(to = 28, of = "android.content.IClipboard")
        private static class V26 implements IClipboard {
            public void setPrimaryClip(ClipData c, String pkg) {
                Clipboard.set(c, pkg, null, null, null);
            }

            public ClipData getPrimaryClip(String pkg) {
                return Clipboard.get(pkg, null, null, null);
            }
        }

        @xagentstub.Api(from = 28, to = 28, of = "android.content.IClipboard")
        private static class V28 extends V26 {
            public void clearPrimaryClip(String pkg) {
                Clipboard.clear(pkg, null, null, null);
            }
        }

        @xagentstub.Api(from = 29, to = 33, of = "android.content.IClipboard")
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

        /** 13 QPR1 (not in the AOSP 13.0.0_r3 tree the table reads): scrcpy 82cb8ab8, issue #3497. */
        @xagentstub.Api(from = 33, to = 33, vendor = "13 QPR1: scrcpy 82cb8ab8, #3497")
        private static class Tag33 implements IClipboard {
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

        /**
         * -Dstub.clip_shape=honor at 33: HONOR PGT-AN10 (Magic5 Pro), Android 13, reads the clip with
         * getPrimaryClip(String, int, String) (scrcpy issue #3885: "NoSuchMethodException: …getPrimaryClip [class
         * java.lang.String, class java.lang.String, int]", fixed by f77e1c47 "On Honor Magic 5 Pro, the method to get
         * the clipboard content has been modified", which calls it (pkg, uid, null)). The issue reports no other
         * method changed: set and clear keep AOSP 13.0's shape.
         */
        @xagentstub.Api(from = 33, to = 33, vendor = "Honor Magic5 Pro 13: scrcpy f77e1c47 #3885")
        private static class Honor33 implements IClipboard {
            public void setPrimaryClip(ClipData c, String pkg, int user) {
                Clipboard.set(c, pkg, null, user, null);
            }

            public ClipData getPrimaryClip(String pkg, int user, String extra) {
                xagentstub.Rec.log("clip honor extra=" + extra);
                return Clipboard.get(pkg, null, user, null);
            }

            public void clearPrimaryClip(String pkg, int user) {
                Clipboard.clear(pkg, null, user, null);
            }
        }

        /**
         * -Dstub.clip_shape=honor at 34+: HONOR PGT-AN00 (Magic5), Android 14, getPrimaryClip(String, String, int,
         * int, String) (scrcpy issue #5073, fixed by 79242957 "Add clipboard workaround for Honor device", called
         * (pkg, null, uid, 0, null)); set and clear keep AOSP 14's shape. Huawei's own builds: no source or field
         * report of a changed IClipboard was found (scrcpy's history names none), so none is modelled.
         */
        @xagentstub.Api(from = 34, vendor = "Honor Magic5 14: scrcpy 79242957 #5073")
        private static class Honor34 implements IClipboard {
            public void setPrimaryClip(ClipData c, String pkg, String tag, int user, int device) {
                Clipboard.set(c, pkg, tag, user, device);
            }

            public ClipData getPrimaryClip(String pkg, String tag, int user, int device, String extra) {
                xagentstub.Rec.log("clip honor extra=" + extra);
                return Clipboard.get(pkg, tag, user, device);
            }

            public void clearPrimaryClip(String pkg, String tag, int user, int device) {
                Clipboard.clear(pkg, tag, user, device);
            }
        }

        @xagentstub.Api(from = 34, of = "android.content.IClipboard")
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
        @xagentstub.Api(from = 34, vendor = "vivo/iQOO 14: scrcpy 5ce8672e #4492, 746eaea5 #4703")
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

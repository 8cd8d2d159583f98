package android.view;

import android.os.IBinder;
import xagentstub.Rec;

/** isKeyguardSecure() took no user before Android 10 and a userId from 10 on. */
public interface IWindowManager {
    class Stub {
        /** AIDL's generated asInterface returns the interface (tests/fixtures/android-api/signatures.tsv: IWindowManager$Stub#asInterface). */
        public static IWindowManager asInterface(IBinder b) {
            return android.os.Build.VERSION.SDK_INT < 29 ? new Old() : new New();
        }

        /** tests/fixtures/android-api/signatures.tsv: isKeyguardSecure() 26..28 (api26 WindowManagerService.java:3075). */
        @xagentstub.Api(to = 28, of = "android.view.IWindowManager")
        private static class Old implements IWindowManager {
            public boolean isKeyguardLocked() {
                return Rec.on("locked");
            }

            public boolean isKeyguardSecure() {
                Rec.log("window isKeyguardSecure()");
                return Rec.on("secure");
            }
        }

        /** tests/fixtures/android-api/signatures.tsv: isKeyguardSecure(int) 29..36 (api29 WindowManagerService.java:2905). */
        @xagentstub.Api(from = 29, of = "android.view.IWindowManager")
        private static class New implements IWindowManager {
            public boolean isKeyguardLocked() {
                return Rec.on("locked");
            }

            public boolean isKeyguardSecure(int userId) {
                Rec.log("window isKeyguardSecure(user=" + userId + ")");
                return Rec.on("secure");
            }
        }
    }
}

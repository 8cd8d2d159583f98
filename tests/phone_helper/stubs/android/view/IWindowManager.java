package android.view;

import android.os.IBinder;
import xagentstub.Rec;

/** isKeyguardSecure() took no user before Android 10 and a userId from 10 on. */
public interface IWindowManager {
    class Stub {
        public static Object asInterface(IBinder b) {
            return android.os.Build.VERSION.SDK_INT < 29 ? new Old() : new New();
        }

        private static class Old implements IWindowManager {
            public boolean isKeyguardLocked() {
                return Rec.on("locked");
            }

            public boolean isKeyguardSecure() {
                Rec.log("window isKeyguardSecure()");
                return Rec.on("secure");
            }
        }

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

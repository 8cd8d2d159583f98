package android.os;

public interface IPowerManager {
    boolean isInteractive();

    class Stub {
        public static IPowerManager asInterface(IBinder b) {
            if (!"power".equals(((ServiceManager.Binder) b).name)) throw new IllegalStateException("wrong binder");
            return new Impl();
        }

        @xagentstub.Api(of = "android.os.IPowerManager")
        private static class Impl implements IPowerManager {
            public boolean isInteractive() {
                if (xagentstub.Rec.on("power_throws")) throw new IllegalStateException("dead binder");
                return xagentstub.Rec.on("interactive");
            }
        }
    }
}

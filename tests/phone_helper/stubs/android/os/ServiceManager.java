package android.os;

/** getService answers a named binder unless -Dstub.no_<name>=1 (the service is missing on this phone). */
public final class ServiceManager {
    public static final class Binder implements IBinder {
        public final String name;

        Binder(String name) {
            this.name = name;
        }
    }

    public static IBinder getService(String name) {
        xagentstub.Rec.log("service " + name);
        if (xagentstub.Rec.on("no_" + name)) return null;
        return new Binder(name);
    }
}

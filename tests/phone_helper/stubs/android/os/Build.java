package android.os;

public class Build {
    public static class VERSION {
        /** Not final, as on Android (read at run time): the driver sets it per case with -Dstub.sdk. */
        public static int SDK_INT = xagentstub.Rec.num("sdk", 34);
    }
}

package com.android.server.display;

import android.os.IBinder;

/** services.jar's display tokens on Android 14+ (-Dstub.no_displays=1: a phone reporting none). */
public final class DisplayControl {
    public static long[] getPhysicalDisplayIds() {
        xagentstub.Rec.log("DisplayControl.getPhysicalDisplayIds()");
        return xagentstub.Rec.on("no_displays") ? new long[0] : new long[] {4619827259835644672L, 7L};
    }

    public static IBinder getPhysicalDisplayToken(long id) {
        xagentstub.Rec.log("DisplayControl.getPhysicalDisplayToken(" + id + ")");
        return new IBinder() {};
    }
}

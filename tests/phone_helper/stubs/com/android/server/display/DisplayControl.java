package com.android.server.display;

import android.os.IBinder;

/**
 * services.jar's display tokens on Android 14+ (-Dstub.no_displays=1: a phone reporting none; -Dstub.phys_ids=A,B:
 * the physical displays, in SurfaceFlinger's order).
 */
@xagentstub.Api(from = 34) // tests/fixtures/android-api/signatures.tsv: the class from android-34
public final class DisplayControl {
    public static long[] getPhysicalDisplayIds() {
        xagentstub.Rec.log("DisplayControl.getPhysicalDisplayIds()");
        if (xagentstub.Rec.on("no_displays")) return new long[0];
        String ids = xagentstub.Rec.prop("phys_ids", "");
        if (ids.isEmpty()) return new long[] {4619827259835644672L, 7L};
        return java.util.Arrays.stream(ids.split(",")).mapToLong(Long::parseLong).toArray();
    }

    public static IBinder getPhysicalDisplayToken(long id) {
        xagentstub.Rec.log("DisplayControl.getPhysicalDisplayToken(" + id + ")");
        return new IBinder() {};
    }
}

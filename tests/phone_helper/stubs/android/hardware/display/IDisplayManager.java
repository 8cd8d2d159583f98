package android.hardware.display;

import android.os.IBinder;
import android.view.DisplayInfo;
import xagentstub.Rec;

public interface IDisplayManager {
    DisplayInfo getDisplayInfo(int displayId);

    class Stub {
        public static IDisplayManager asInterface(IBinder b) {
            return new Impl();
        }

        @xagentstub.Api(of = "android.hardware.display.IDisplayManager")
        private static class Impl implements IDisplayManager {
            public DisplayInfo getDisplayInfo(int displayId) {
                Rec.log("display getDisplayInfo(" + displayId + ")");
                DisplayInfo d = new DisplayInfo();
                // the logical size: the panel's natural size (android.graphics.Bitmap), sides swapped for 90/270
                d.rotation = Rec.num("rotation", 0);
                boolean turned = (d.rotation & 1) == 1;
                int nw = android.graphics.Bitmap.naturalWidth(), nh = android.graphics.Bitmap.naturalHeight();
                d.logicalWidth = turned ? nh : nw;
                d.logicalHeight = turned ? nw : nh;
                // -Dstub.display0_phys=ID: the physical display behind display 0 (a foldable's active panel).
                String phys = Rec.prop("display0_phys", "");
                if (!phys.isEmpty()) d.address = android.view.DisplayAddress.fromPhysicalDisplayId(Long.parseLong(phys));
                return d;
            }
        }
    }
}

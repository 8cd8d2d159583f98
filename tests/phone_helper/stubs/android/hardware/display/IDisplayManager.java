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
                d.rotation = Rec.num("rotation", 0);
                boolean turned = (d.rotation & 1) == 1;
                d.logicalWidth = turned ? 2400 : 1080;
                d.logicalHeight = turned ? 1080 : 2400;
                // -Dstub.display0_phys=ID: the physical display behind display 0 (a foldable's active panel).
                String phys = Rec.prop("display0_phys", "");
                if (!phys.isEmpty()) d.address = android.view.DisplayAddress.fromPhysicalDisplayId(Long.parseLong(phys));
                return d;
            }
        }
    }
}

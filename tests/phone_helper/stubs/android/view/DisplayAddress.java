package android.view;

/**
 * A display's address (hidden; AOSP core/java/android/view/DisplayAddress.java, API 29+). Only what the helper
 * reads: a physical display's id (helper D10). The real class is Parcelable; the stub leaves that out.
 */
@xagentstub.Api(from = 29) // tests/fixtures/android-api/signatures.tsv: DisplayAddress$Physical from api29
public abstract class DisplayAddress {
    public static Physical fromPhysicalDisplayId(long physicalDisplayId) {
        return new Physical(physicalDisplayId);
    }

    @xagentstub.Api(from = 29)
    public static final class Physical extends DisplayAddress {
        private final long mPhysicalDisplayId;

        private Physical(long physicalDisplayId) {
            mPhysicalDisplayId = physicalDisplayId;
        }

        @xagentstub.Api(from = 30) // the table: getPhysicalDisplayId() long from api30
        public long getPhysicalDisplayId() {
            return mPhysicalDisplayId;
        }
    }
}

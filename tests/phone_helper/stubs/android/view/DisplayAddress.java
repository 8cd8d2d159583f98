package android.view;

/**
 * A display's address (hidden; AOSP core/java/android/view/DisplayAddress.java, API 29+). Only what the helper
 * reads: a physical display's id (helper D10). The real class is Parcelable; the stub leaves that out.
 */
public abstract class DisplayAddress {
    public static Physical fromPhysicalDisplayId(long physicalDisplayId) {
        return new Physical(physicalDisplayId);
    }

    public static final class Physical extends DisplayAddress {
        private final long mPhysicalDisplayId;

        private Physical(long physicalDisplayId) {
            mPhysicalDisplayId = physicalDisplayId;
        }

        public long getPhysicalDisplayId() {
            return mPhysicalDisplayId;
        }
    }
}

package android.app;

/** The hidden class; -Dstub.no_uiautomation=1 makes it fail to load, as on a phone where it moved. */
public final class UiAutomationConnection implements IUiAutomationConnection {
    static {
        if (xagentstub.Rec.on("no_uiautomation")) throw new RuntimeException("no UiAutomationConnection here");
    }

    public UiAutomationConnection() {
        xagentstub.Rec.log("ui new UiAutomationConnection");
    }
}

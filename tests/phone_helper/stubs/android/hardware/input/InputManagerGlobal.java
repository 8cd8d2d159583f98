package android.hardware.input;

import android.view.InputEvent;

/** Android 14+ (InputManager.getInstance() there needs an Application). */
@xagentstub.Api(from = 34) // tests/fixtures/android-api/signatures.tsv: the class from android-34
public final class InputManagerGlobal {
    public static InputManagerGlobal getInstance() {
        xagentstub.Rec.log("InputManagerGlobal.getInstance");
        if (xagentstub.Rec.on("no_input_manager")) return null;
        return new InputManagerGlobal();
    }

    public boolean injectInputEvent(InputEvent ev, int mode) {
        return Injector.inject("InputManagerGlobal", ev, mode);
    }
}

package android.hardware.input;

import android.view.InputEvent;

/** Before Android 14 the helper's way in; -Dstub.no_input_manager=1 makes getInstance() answer null. */
public final class InputManager {
    public static InputManager getInstance() {
        xagentstub.Rec.log("InputManager.getInstance");
        if (xagentstub.Rec.on("no_input_manager")) return null;
        return new InputManager();
    }

    public boolean injectInputEvent(InputEvent ev, int mode) {
        return Injector.inject("InputManager", ev, mode);
    }
}

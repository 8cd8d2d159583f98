package android.view;

public abstract class InputEvent {
    /** One line describing the event for the record. */
    public abstract String describe();

    public abstract long eventTime();
}

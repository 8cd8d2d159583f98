package android.content;

public final class ClipData {
    private final CharSequence label;
    private final CharSequence text;

    private ClipData(CharSequence label, CharSequence text) {
        this.label = label;
        this.text = text;
    }

    public static ClipData newPlainText(CharSequence label, CharSequence text) {
        return new ClipData(label, text);
    }

    public CharSequence label() {
        return label;
    }

    public CharSequence text() {
        return text;
    }
}

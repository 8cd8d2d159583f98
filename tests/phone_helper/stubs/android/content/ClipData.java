package android.content;

/** The public ClipData API the helper uses: newPlainText, getItemCount, getItemAt(i).getText(). */
public final class ClipData {
    /** One item of a clip (public android.content.ClipData.Item): text, or null for a URI/intent item. */
    public static final class Item {
        private final CharSequence text;

        public Item(CharSequence text) {
            this.text = text;
        }

        public CharSequence getText() {
            return text;
        }
    }

    private final CharSequence label;
    private final Item[] items;

    private ClipData(CharSequence label, Item[] items) {
        this.label = label;
        this.items = items;
    }

    public static ClipData newPlainText(CharSequence label, CharSequence text) {
        return new ClipData(label, new Item[] {new Item(text)});
    }

    /** A clip whose one item has no text (a copied URI or intent). */
    public static ClipData newWithoutText(CharSequence label) {
        return new ClipData(label, new Item[] {new Item(null)});
    }

    public int getItemCount() {
        return items.length;
    }

    public Item getItemAt(int i) {
        return items[i];
    }

    public CharSequence label() {
        return label;
    }

    public CharSequence text() {
        return items[0].getText();
    }
}

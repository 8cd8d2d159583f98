package xagentstub;

/**
 * What the stub framework saw, one line per call on stderr (the helper's stdout is its protocol), and how it was
 * told to behave: system properties {@code -Dstub.<key>=<value>} set by the test driver per case file.
 */
public final class Rec {
    private Rec() {}

    public static synchronized void log(String line) {
        System.err.println(line);
        System.err.flush();
    }

    public static String prop(String key, String dflt) {
        return System.getProperty("stub." + key, dflt);
    }

    public static boolean on(String key) {
        return "1".equals(prop(key, "0"));
    }

    public static int num(String key, int dflt) {
        return Integer.parseInt(prop(key, Integer.toString(dflt)));
    }

    /** A recorded string: quoted, with anything outside printable ASCII as \\uXXXX, so records stay one line. */
    public static String q(CharSequence s) {
        if (s == null) return "null";
        StringBuilder b = new StringBuilder("\"");
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') b.append(c);
            else b.append(String.format("\\u%04x", (int) c));
        }
        return b.append('"').toString();
    }
}

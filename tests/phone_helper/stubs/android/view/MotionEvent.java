package android.view;

import java.util.Locale;

/** Only the public API the helper uses; obtain() copies its arguments as Android's does. */
public final class MotionEvent extends InputEvent {
    public static final class PointerProperties {
        public int id;
        public int toolType;
    }

    public static final class PointerCoords {
        public float x;
        public float y;
        public float pressure;
        public float size;
    }

    private long downTime;
    private long eventTime;
    private int action;
    private int[] ids;
    private int[] tools;
    private float[] xs;
    private float[] ys;
    private float[] pressures;
    private float[] sizes;
    private String rest;
    private boolean recycled;

    public static MotionEvent obtain(long downTime, long eventTime, int action, int pointerCount,
            PointerProperties[] props, PointerCoords[] coords, int metaState, int buttonState, float xPrecision,
            float yPrecision, int deviceId, int edgeFlags, int source, int flags) {
        MotionEvent e = new MotionEvent();
        e.downTime = downTime;
        e.eventTime = eventTime;
        e.action = action;
        e.ids = new int[pointerCount];
        e.tools = new int[pointerCount];
        e.xs = new float[pointerCount];
        e.ys = new float[pointerCount];
        e.pressures = new float[pointerCount];
        e.sizes = new float[pointerCount];
        for (int i = 0; i < pointerCount; i++) {
            e.ids[i] = props[i].id;
            e.tools[i] = props[i].toolType;
            e.xs[i] = coords[i].x;
            e.ys[i] = coords[i].y;
            e.pressures[i] = coords[i].pressure;
            e.sizes[i] = coords[i].size;
        }
        e.rest = String.format(Locale.ROOT, "meta=%d buttons=%d prec=%s,%s dev=%d edge=%d src=0x%x flags=%d",
                metaState, buttonState, xPrecision, yPrecision, deviceId, edgeFlags, source, flags);
        return e;
    }

    public void recycle() {
        if (recycled) throw new IllegalStateException("recycled twice");
        recycled = true;
    }

    public long getDownTime() {
        return downTime;
    }

    @Override
    public long eventTime() {
        return eventTime;
    }

    private static final String[] NAMES = {"DOWN", "UP", "MOVE", "CANCEL", "OUTSIDE", "POINTER_DOWN", "POINTER_UP"};

    @Override
    public String describe() {
        if (recycled) throw new IllegalStateException("injected after recycle");
        int masked = action & 0xff;
        String name = masked < NAMES.length ? NAMES[masked] : "ACTION_" + masked;
        if (masked == 5 || masked == 6) name += "(" + (action >> 8) + ")";
        StringBuilder b = new StringBuilder("motion ").append(name).append(" t=").append(eventTime - downTime);
        for (int i = 0; i < ids.length; i++) {
            b.append(" p").append(ids[i]).append('=').append(xs[i]).append(',').append(ys[i]);
            if (pressures[i] != 1.0f) b.append(" pressure=").append(pressures[i]);
            if (tools[i] != 1) b.append(" tool=").append(tools[i]);
            if (sizes[i] != 1.0f) b.append(" size=").append(sizes[i]);
        }
        String expected = "meta=0 buttons=0 prec=1.0,1.0 dev=0 edge=0 src=0x1002 flags=0";
        if (!rest.equals(expected)) b.append(' ').append(rest);
        return b.toString();
    }
}

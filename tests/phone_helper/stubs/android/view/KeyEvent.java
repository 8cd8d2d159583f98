package android.view;

public final class KeyEvent extends InputEvent {
    private final long downTime;
    private final long eventTime;
    private final int action;
    private final int code;
    private final int repeat;
    private final int meta;
    private final int deviceId;
    private final int scancode;
    private final int flags;
    private final int source;

    public KeyEvent(long downTime, long eventTime, int action, int code, int repeat, int metaState, int deviceId,
            int scancode, int flags, int source) {
        this.downTime = downTime;
        this.eventTime = eventTime;
        this.action = action;
        this.code = code;
        this.repeat = repeat;
        this.meta = metaState;
        this.deviceId = deviceId;
        this.scancode = scancode;
        this.flags = flags;
        this.source = source;
    }

    public int getKeyCode() {
        return code;
    }

    public long getDownTime() {
        return downTime;
    }

    @Override
    public long eventTime() {
        return eventTime;
    }

    @Override
    public String describe() {
        StringBuilder b = new StringBuilder("key ").append(action == 0 ? "DOWN" : action == 1 ? "UP" : "A" + action)
                .append(" code=").append(code).append(" t=").append(eventTime - downTime);
        if (repeat != 0) b.append(" repeat=").append(repeat);
        if (meta != 0) b.append(" meta=").append(meta);
        if (flags != 0) b.append(" flags=0x").append(Integer.toHexString(flags));
        if (deviceId != -1 || scancode != 0 || source != 0x101) {
            b.append(" dev=").append(deviceId).append(" scan=").append(scancode).append(" src=0x")
                    .append(Integer.toHexString(source));
        }
        return b.toString();
    }
}

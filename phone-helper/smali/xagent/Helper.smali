# xagent phone helper: started by the connector as
#   CLASSPATH=/data/local/tmp/xagent-helper-<hash>.dex app_process / xagent.Helper
# on one adb shell stream. It speaks the line protocol of device-profile/phone-helper.md on stdin/stdout only
# (no socket another app could reach) and exits when stdin closes. Everything it reads is hostile: lines are
# bounded, only printable ASCII is accepted, every failure is a one-line error and the loop goes on.
# Hidden APIs are reached by reflection so one dex runs on every Android version from 8 (API 26).
.class public final Lxagent/Helper;
.super Ljava/lang/Object;

.field static out:Ljava/io/PrintStream;
.field static sdk:I

# injection: InputManagerGlobal (14+) or InputManager instance, its injectInputEvent, and why it is missing
.field static im:Ljava/lang/Object;
.field static inject:Ljava/lang/reflect/Method;
.field static touch:Ljava/lang/String;

# ASCII text: the virtual keyboard's key map
.field static kcm:Landroid/view/KeyCharacterMap;
.field static keys:Ljava/lang/String;

# system services (binder interfaces), null when missing
.field static clip:Ljava/lang/Object;
.field static clipState:Ljava/lang/String;
.field static power:Ljava/lang/Object;
.field static window:Ljava/lang/Object;
.field static display:Ljava/lang/Object;
.field static screenState:Ljava/lang/String;

# the UI tree and idle wait (Ui.smali): "ok" or why not, kept here so a Ui class that cannot load is a reason too
.field static uiState:Ljava/lang/String;

# true until the request being handled has injected its first event (see inject: Android 8-12)
.field static first:Z

# the gesture being played (single-threaded: one request at a time)
.field static gDown:J
.field static gN:I
.field static gNp:I
.field static gDur:I
.field static gXs:[I
.field static gYs:[I
.field static gFx:[F
.field static gFy:[F

.method public static main([Ljava/lang/String;)V
    .locals 3
    sget-object v0, Ljava/lang/System;->out:Ljava/io/PrintStream;
    sput-object v0, Lxagent/Helper;->out:Ljava/io/PrintStream;
    sget v0, Landroid/os/Build$VERSION;->SDK_INT:I
    sput v0, Lxagent/Helper;->sdk:I
    # Helper D12: a main Looper, as every app process has one. Vendor hooks build Handlers on
    # Looper.getMainLooper() and crash on null (OnePlus/OPPO ColorOS 14's TheiaSigprotector: DroidCast #19,
    # Shizuku #347); scrcpy prepares it for the same reason (e282100d). Prepared only: nothing loops on it.
    :try_looper
    invoke-static {}, Landroid/os/Looper;->prepareMainLooper()V
    :try_looper_end
    .catch Ljava/lang/Throwable; {:try_looper .. :try_looper_end} :probe
    :probe
    invoke-static {}, Lxagent/Helper;->probe()V
    const-string v0, "* hello "
    invoke-static {}, Lxagent/Helper;->helloPayload()Ljava/lang/String;
    move-result-object v1
    invoke-static {v0, v1}, Lxagent/Helper;->cat(Ljava/lang/String;Ljava/lang/String;)Ljava/lang/String;
    move-result-object v0
    invoke-static {v0}, Lxagent/Helper;->emit(Ljava/lang/String;)V
    new-instance v1, Ljava/io/BufferedInputStream;
    sget-object v0, Ljava/lang/System;->in:Ljava/io/InputStream;
    invoke-direct {v1, v0}, Ljava/io/BufferedInputStream;-><init>(Ljava/io/InputStream;)V
    :loop
    invoke-static {v1}, Lxagent/Helper;->readLine(Ljava/io/InputStream;)Ljava/lang/String;
    move-result-object v0
    if-eqz v0, :eof
    invoke-static {v0}, Lxagent/Helper;->handle(Ljava/lang/String;)V
    goto :loop
    :eof
    # stdin closed: the session is over. The UiAutomation is let go first (a held one would outlive us in the
    # system until it noticed the death); exit() also ends any framework threads.
    :try_end_ui
    invoke-static {}, Lxagent/Ui;->end()V
    :try_end_ui_end
    .catch Ljava/lang/Throwable; {:try_end_ui .. :try_end_ui_end} :exit
    :exit
    const/4 v0, 0
    invoke-static {v0}, Ljava/lang/System;->exit(I)V
    return-void
.end method

# ---------------------------------------------------------------- framing

# One request line without its "\n"; null at end of input (a last line without "\n" is dropped). A line longer
# than 16384 bytes is read to its end and returned as "\n", which no real line can be.
.method static readLine(Ljava/io/InputStream;)Ljava/lang/String;
    .locals 5
    new-instance v0, Ljava/lang/StringBuilder;
    invoke-direct {v0}, Ljava/lang/StringBuilder;-><init>()V
    const/4 v3, 0
    const/16 v4, 0x4000
    :next
    invoke-virtual {p0}, Ljava/io/InputStream;->read()I
    move-result v1
    if-ltz v1, :eof
    const/16 v2, 0xa
    if-eq v1, v2, :nl
    if-nez v3, :next
    invoke-virtual {v0}, Ljava/lang/StringBuilder;->length()I
    move-result v2
    if-lt v2, v4, :append
    const/4 v3, 1
    goto :next
    :append
    int-to-char v1, v1
    invoke-virtual {v0, v1}, Ljava/lang/StringBuilder;->append(C)Ljava/lang/StringBuilder;
    goto :next
    :nl
    if-eqz v3, :line
    const-string v0, "\n"
    return-object v0
    :line
    invoke-virtual {v0}, Ljava/lang/StringBuilder;->toString()Ljava/lang/String;
    move-result-object v0
    return-object v0
    :eof
    const/4 v0, 0
    return-object v0
.end method

.method static emit(Ljava/lang/String;)V
    .locals 2
    sget-object v0, Lxagent/Helper;->out:Ljava/io/PrintStream;
    invoke-virtual {v0, p0}, Ljava/io/PrintStream;->print(Ljava/lang/String;)V
    const/16 v1, 0xa
    invoke-virtual {v0, v1}, Ljava/io/PrintStream;->print(C)V
    invoke-virtual {v0}, Ljava/io/PrintStream;->flush()V
    return-void
.end method

.method static cat(Ljava/lang/String;Ljava/lang/String;)Ljava/lang/String;
    .locals 1
    new-instance v0, Ljava/lang/StringBuilder;
    invoke-direct {v0}, Ljava/lang/StringBuilder;-><init>()V
    invoke-virtual {v0, p0}, Ljava/lang/StringBuilder;->append(Ljava/lang/String;)Ljava/lang/StringBuilder;
    invoke-virtual {v0, p1}, Ljava/lang/StringBuilder;->append(Ljava/lang/String;)Ljava/lang/StringBuilder;
    invoke-virtual {v0}, Ljava/lang/StringBuilder;->toString()Ljava/lang/String;
    move-result-object v0
    return-object v0
.end method

# true when every char is printable ASCII (0x20..0x7e)
.method static printable(Ljava/lang/String;)Z
    .locals 4
    const/4 v0, 0
    invoke-virtual {p0}, Ljava/lang/String;->length()I
    move-result v1
    :loop
    if-ge v0, v1, :yes
    invoke-virtual {p0, v0}, Ljava/lang/String;->charAt(I)C
    move-result v2
    const/16 v3, 0x20
    if-lt v2, v3, :no
    const/16 v3, 0x7e
    if-gt v2, v3, :no
    add-int/lit8 v0, v0, 0x1
    goto :loop
    :yes
    const/4 v0, 1
    return v0
    :no
    const/4 v0, 0
    return v0
.end method

# a message safe for the line: anything but printable ASCII becomes '?', at most 200 chars
.method static clean(Ljava/lang/String;)Ljava/lang/String;
    .locals 6
    if-nez p0, :some
    const-string p0, "null"
    :some
    new-instance v0, Ljava/lang/StringBuilder;
    invoke-direct {v0}, Ljava/lang/StringBuilder;-><init>()V
    invoke-virtual {p0}, Ljava/lang/String;->length()I
    move-result v1
    const/16 v2, 0xc8
    if-le v1, v2, :short
    move v1, v2
    :short
    const/4 v2, 0
    :loop
    if-ge v2, v1, :done
    invoke-virtual {p0, v2}, Ljava/lang/String;->charAt(I)C
    move-result v3
    const/16 v4, 0x20
    if-lt v3, v4, :bad
    const/16 v4, 0x7e
    if-le v3, v4, :put
    :bad
    const/16 v3, 0x3f
    :put
    invoke-virtual {v0, v3}, Ljava/lang/StringBuilder;->append(C)Ljava/lang/StringBuilder;
    add-int/lit8 v2, v2, 0x1
    goto :loop
    :done
    invoke-virtual {v0}, Ljava/lang/StringBuilder;->toString()Ljava/lang/String;
    move-result-object v0
    return-object v0
.end method

# ids: 1 to 16 of [A-Za-z0-9_-]
.method static validId(Ljava/lang/String;)Z
    .locals 4
    invoke-virtual {p0}, Ljava/lang/String;->length()I
    move-result v0
    if-eqz v0, :no
    const/16 v1, 0x10
    if-gt v0, v1, :no
    const/4 v1, 0
    :loop
    if-ge v1, v0, :yes
    invoke-virtual {p0, v1}, Ljava/lang/String;->charAt(I)C
    move-result v2
    const/16 v3, 0x2d
    if-eq v2, v3, :ok
    const/16 v3, 0x5f
    if-eq v2, v3, :ok
    const/16 v3, 0x30
    if-lt v2, v3, :no
    const/16 v3, 0x39
    if-le v2, v3, :ok
    const/16 v3, 0x41
    if-lt v2, v3, :no
    const/16 v3, 0x5a
    if-le v2, v3, :ok
    const/16 v3, 0x61
    if-lt v2, v3, :no
    const/16 v3, 0x7a
    if-gt v2, v3, :no
    :ok
    add-int/lit8 v1, v1, 0x1
    goto :loop
    :yes
    const/4 v0, 1
    return v0
    :no
    const/4 v0, 0
    return v0
.end method

.method static fail(Ljava/lang/String;Ljava/lang/String;Ljava/lang/String;)V
    .locals 1
    const-string v0, " err "
    invoke-static {p0, v0}, Lxagent/Helper;->cat(Ljava/lang/String;Ljava/lang/String;)Ljava/lang/String;
    move-result-object v0
    invoke-static {v0, p1}, Lxagent/Helper;->cat(Ljava/lang/String;Ljava/lang/String;)Ljava/lang/String;
    move-result-object v0
    const-string p0, " "
    invoke-static {v0, p0}, Lxagent/Helper;->cat(Ljava/lang/String;Ljava/lang/String;)Ljava/lang/String;
    move-result-object v0
    invoke-static {p2}, Lxagent/Helper;->clean(Ljava/lang/String;)Ljava/lang/String;
    move-result-object p0
    invoke-static {v0, p0}, Lxagent/Helper;->cat(Ljava/lang/String;Ljava/lang/String;)Ljava/lang/String;
    move-result-object v0
    invoke-static {v0}, Lxagent/Helper;->emit(Ljava/lang/String;)V
    return-void
.end method

# The answer for a failed request: our own Err keeps its code; a SecurityException (e.g. INJECT_EVENTS refused,
# Xiaomi's "USB debugging (Security settings)" off) is "denied"; anything else is "failed" with the class name.
.method static failWith(Ljava/lang/String;Ljava/lang/Throwable;)V
    .locals 3
    :unwrap
    instance-of v0, p1, Ljava/lang/reflect/InvocationTargetException;
    if-eqz v0, :plain
    invoke-virtual {p1}, Ljava/lang/Throwable;->getCause()Ljava/lang/Throwable;
    move-result-object v0
    if-eqz v0, :plain
    move-object p1, v0
    goto :unwrap
    :plain
    instance-of v0, p1, Lxagent/Err;
    if-eqz v0, :notErr
    move-object v0, p1
    check-cast v0, Lxagent/Err;
    iget-object v1, v0, Lxagent/Err;->code:Ljava/lang/String;
    invoke-virtual {v0}, Ljava/lang/Throwable;->getMessage()Ljava/lang/String;
    move-result-object v2
    invoke-static {p0, v1, v2}, Lxagent/Helper;->fail(Ljava/lang/String;Ljava/lang/String;Ljava/lang/String;)V
    return-void
    :notErr
    instance-of v0, p1, Ljava/lang/SecurityException;
    if-eqz v0, :other
    const-string v1, "denied"
    const-string v2, "SecurityException: the system refused the shell user"
    invoke-static {p0, v1, v2}, Lxagent/Helper;->fail(Ljava/lang/String;Ljava/lang/String;Ljava/lang/String;)V
    return-void
    :other
    const-string v1, "failed"
    invoke-virtual {p1}, Ljava/lang/Object;->getClass()Ljava/lang/Class;
    move-result-object v2
    invoke-virtual {v2}, Ljava/lang/Class;->getName()Ljava/lang/String;
    move-result-object v2
    invoke-static {p0, v1, v2}, Lxagent/Helper;->fail(Ljava/lang/String;Ljava/lang/String;Ljava/lang/String;)V
    return-void
.end method

.method static handle(Ljava/lang/String;)V
    .locals 5
    const-string v0, "-"
    const-string v1, "\n"
    invoke-virtual {p0, v1}, Ljava/lang/String;->equals(Ljava/lang/Object;)Z
    move-result v1
    if-eqz v1, :bounded
    const-string v1, "too_long"
    const-string v2, "request line longer than 16384 bytes"
    invoke-static {v0, v1, v2}, Lxagent/Helper;->fail(Ljava/lang/String;Ljava/lang/String;Ljava/lang/String;)V
    return-void
    :bounded
    invoke-static {p0}, Lxagent/Helper;->printable(Ljava/lang/String;)Z
    move-result v1
    if-nez v1, :ascii
    const-string v1, "bad_request"
    const-string v2, "a request is printable ASCII only"
    invoke-static {v0, v1, v2}, Lxagent/Helper;->fail(Ljava/lang/String;Ljava/lang/String;Ljava/lang/String;)V
    return-void
    :ascii
    const-string v1, " "
    const/4 v2, -1
    invoke-virtual {p0, v1, v2}, Ljava/lang/String;->split(Ljava/lang/String;I)[Ljava/lang/String;
    move-result-object v1
    const/4 v2, 0
    aget-object v3, v1, v2
    invoke-static {v3}, Lxagent/Helper;->validId(Ljava/lang/String;)Z
    move-result v2
    if-nez v2, :idok
    const-string v1, "bad_id"
    const-string v2, "an id is 1 to 16 of A-Z a-z 0-9 _ -"
    invoke-static {v0, v1, v2}, Lxagent/Helper;->fail(Ljava/lang/String;Ljava/lang/String;Ljava/lang/String;)V
    return-void
    :idok
    move-object v0, v3
    array-length v2, v1
    const/4 v3, 2
    if-ge v2, v3, :hasverb
    const-string v1, "bad_request"
    const-string v2, "missing verb"
    invoke-static {v0, v1, v2}, Lxagent/Helper;->fail(Ljava/lang/String;Ljava/lang/String;Ljava/lang/String;)V
    return-void
    :hasverb
    const/4 v2, 1
    sput-boolean v2, Lxagent/Helper;->first:Z
    :try_start
    invoke-static {v1}, Lxagent/Helper;->dispatch([Ljava/lang/String;)Ljava/lang/String;
    move-result-object v2
    const-string v3, " ok"
    invoke-static {v0, v3}, Lxagent/Helper;->cat(Ljava/lang/String;Ljava/lang/String;)Ljava/lang/String;
    move-result-object v3
    invoke-virtual {v2}, Ljava/lang/String;->length()I
    move-result v4
    if-eqz v4, :send
    const-string v4, " "
    invoke-static {v3, v4}, Lxagent/Helper;->cat(Ljava/lang/String;Ljava/lang/String;)Ljava/lang/String;
    move-result-object v3
    invoke-static {v3, v2}, Lxagent/Helper;->cat(Ljava/lang/String;Ljava/lang/String;)Ljava/lang/String;
    move-result-object v3
    :send
    invoke-static {v3}, Lxagent/Helper;->emit(Ljava/lang/String;)V
    :try_end
    .catch Ljava/lang/Throwable; {:try_start .. :try_end} :caught
    return-void
    :caught
    move-exception v2
    invoke-static {v0, v2}, Lxagent/Helper;->failWith(Ljava/lang/String;Ljava/lang/Throwable;)V
    return-void
.end method

.method static err(Ljava/lang/String;Ljava/lang/String;)Lxagent/Err;
    .locals 1
    new-instance v0, Lxagent/Err;
    invoke-direct {v0, p0, p1}, Lxagent/Err;-><init>(Ljava/lang/String;Ljava/lang/String;)V
    return-object v0
.end method

.method static arity([Ljava/lang/String;I)V
    .locals 2
    array-length v0, p0
    add-int/lit8 v1, p1, 0x2
    if-ne v0, v1, :bad
    return-void
    :bad
    const-string v0, "bad_request"
    const-string v1, "wrong number of arguments"
    invoke-static {v0, v1}, Lxagent/Helper;->err(Ljava/lang/String;Ljava/lang/String;)Lxagent/Err;
    move-result-object v0
    throw v0
.end method

# p[i] as a decimal integer in [min, max], else bad_request
.method static argInt([Ljava/lang/String;III)I
    .locals 2
    aget-object v0, p0, p1
    :try_start
    invoke-static {v0}, Ljava/lang/Integer;->parseInt(Ljava/lang/String;)I
    move-result v1
    :try_end
    .catch Ljava/lang/NumberFormatException; {:try_start .. :try_end} :bad
    if-lt v1, p2, :bad
    if-gt v1, p3, :bad
    return v1
    :bad
    const-string v0, "bad_request"
    const-string v1, "an argument is not a number in its range"
    invoke-static {v0, v1}, Lxagent/Helper;->err(Ljava/lang/String;Ljava/lang/String;)Lxagent/Err;
    move-result-object v0
    throw v0
.end method

.method static coord([Ljava/lang/String;I)I
    .locals 2
    const/4 v0, 0
    const/16 v1, 0x7fff
    invoke-static {p0, p1, v0, v1}, Lxagent/Helper;->argInt([Ljava/lang/String;III)I
    move-result v0
    return v0
.end method

.method static dispatch([Ljava/lang/String;)Ljava/lang/String;
    .locals 2
    const/4 v0, 1
    aget-object v0, p0, v0
    const-string v1, "tap"
    invoke-virtual {v0, v1}, Ljava/lang/String;->equals(Ljava/lang/Object;)Z
    move-result v1
    if-nez v1, :tap
    const-string v1, "swipe"
    invoke-virtual {v0, v1}, Ljava/lang/String;->equals(Ljava/lang/Object;)Z
    move-result v1
    if-nez v1, :swipe
    const-string v1, "press"
    invoke-virtual {v0, v1}, Ljava/lang/String;->equals(Ljava/lang/Object;)Z
    move-result v1
    if-nez v1, :press
    const-string v1, "gesture"
    invoke-virtual {v0, v1}, Ljava/lang/String;->equals(Ljava/lang/Object;)Z
    move-result v1
    if-nez v1, :gesture
    const-string v1, "key"
    invoke-virtual {v0, v1}, Ljava/lang/String;->equals(Ljava/lang/Object;)Z
    move-result v1
    if-nez v1, :key
    const-string v1, "text"
    invoke-virtual {v0, v1}, Ljava/lang/String;->equals(Ljava/lang/Object;)Z
    move-result v1
    if-nez v1, :text
    const-string v1, "screen"
    invoke-virtual {v0, v1}, Ljava/lang/String;->equals(Ljava/lang/Object;)Z
    move-result v1
    if-nez v1, :screen
    const-string v1, "ping"
    invoke-virtual {v0, v1}, Ljava/lang/String;->equals(Ljava/lang/Object;)Z
    move-result v1
    if-nez v1, :ping
    const-string v1, "hello"
    invoke-virtual {v0, v1}, Ljava/lang/String;->equals(Ljava/lang/Object;)Z
    move-result v1
    if-nez v1, :hello
    const-string v1, "tree"
    invoke-virtual {v0, v1}, Ljava/lang/String;->equals(Ljava/lang/Object;)Z
    move-result v1
    if-nez v1, :tree
    const-string v1, "idle"
    invoke-virtual {v0, v1}, Ljava/lang/String;->equals(Ljava/lang/Object;)Z
    move-result v1
    if-nez v1, :idle
    const-string v1, "clip"
    invoke-virtual {v0, v1}, Ljava/lang/String;->equals(Ljava/lang/Object;)Z
    move-result v1
    if-nez v1, :clip
    const-string v1, "setclip"
    invoke-virtual {v0, v1}, Ljava/lang/String;->equals(Ljava/lang/Object;)Z
    move-result v1
    if-nez v1, :setclip
    const-string v1, "clearclip"
    invoke-virtual {v0, v1}, Ljava/lang/String;->equals(Ljava/lang/Object;)Z
    move-result v1
    if-nez v1, :clearclip
    const-string v1, "frame"
    invoke-virtual {v0, v1}, Ljava/lang/String;->equals(Ljava/lang/Object;)Z
    move-result v1
    if-nez v1, :frame
    const-string v0, "unknown_verb"
    const-string v1, "unknown verb"
    invoke-static {v0, v1}, Lxagent/Helper;->err(Ljava/lang/String;Ljava/lang/String;)Lxagent/Err;
    move-result-object v0
    throw v0
    :tap
    invoke-static {p0}, Lxagent/Helper;->opTap([Ljava/lang/String;)Ljava/lang/String;
    move-result-object v0
    return-object v0
    :swipe
    invoke-static {p0}, Lxagent/Helper;->opSwipe([Ljava/lang/String;)Ljava/lang/String;
    move-result-object v0
    return-object v0
    :press
    invoke-static {p0}, Lxagent/Helper;->opPress([Ljava/lang/String;)Ljava/lang/String;
    move-result-object v0
    return-object v0
    :gesture
    invoke-static {p0}, Lxagent/Helper;->opGesture([Ljava/lang/String;)Ljava/lang/String;
    move-result-object v0
    return-object v0
    :key
    invoke-static {p0}, Lxagent/Helper;->opKey([Ljava/lang/String;)Ljava/lang/String;
    move-result-object v0
    return-object v0
    :text
    invoke-static {p0}, Lxagent/Helper;->opText([Ljava/lang/String;)Ljava/lang/String;
    move-result-object v0
    return-object v0
    :screen
    invoke-static {p0}, Lxagent/Helper;->opScreen([Ljava/lang/String;)Ljava/lang/String;
    move-result-object v0
    return-object v0
    :ping
    const/4 v0, 0
    invoke-static {p0, v0}, Lxagent/Helper;->arity([Ljava/lang/String;I)V
    const-string v0, "pong"
    return-object v0
    :hello
    const/4 v0, 0
    invoke-static {p0, v0}, Lxagent/Helper;->arity([Ljava/lang/String;I)V
    invoke-static {}, Lxagent/Helper;->helloPayload()Ljava/lang/String;
    move-result-object v0
    return-object v0
    :tree
    invoke-static {p0}, Lxagent/Ui;->opTree([Ljava/lang/String;)Ljava/lang/String;
    move-result-object v0
    return-object v0
    :idle
    invoke-static {p0}, Lxagent/Ui;->opIdle([Ljava/lang/String;)Ljava/lang/String;
    move-result-object v0
    return-object v0
    :clip
    invoke-static {p0}, Lxagent/Clip;->opClip([Ljava/lang/String;)Ljava/lang/String;
    move-result-object v0
    return-object v0
    :setclip
    invoke-static {p0}, Lxagent/Clip;->opSetClip([Ljava/lang/String;)Ljava/lang/String;
    move-result-object v0
    return-object v0
    :clearclip
    invoke-static {p0}, Lxagent/Clip;->opClearClip([Ljava/lang/String;)Ljava/lang/String;
    move-result-object v0
    return-object v0
    :frame
    invoke-static {p0}, Lxagent/Frame;->opFrame([Ljava/lang/String;)Ljava/lang/String;
    move-result-object v0
    return-object v0
.end method

# ---------------------------------------------------------------- probing

# "<protocol> <helper version> <SDK_INT> <op>=<ok|reason> ..."
.method static helloPayload()Ljava/lang/String;
    .locals 4
    sget-object v3, Lxagent/Helper;->touch:Ljava/lang/String;
    const-string v0, "1 4 "
    sget v1, Lxagent/Helper;->sdk:I
    invoke-static {v1}, Ljava/lang/String;->valueOf(I)Ljava/lang/String;
    move-result-object v1
    invoke-static {v0, v1}, Lxagent/Helper;->cat(Ljava/lang/String;Ljava/lang/String;)Ljava/lang/String;
    move-result-object v0
    const-string v1, " touch="
    invoke-static {v0, v1}, Lxagent/Helper;->cat(Ljava/lang/String;Ljava/lang/String;)Ljava/lang/String;
    move-result-object v0
    invoke-static {v0, v3}, Lxagent/Helper;->cat(Ljava/lang/String;Ljava/lang/String;)Ljava/lang/String;
    move-result-object v0
    const-string v1, " key="
    invoke-static {v0, v1}, Lxagent/Helper;->cat(Ljava/lang/String;Ljava/lang/String;)Ljava/lang/String;
    move-result-object v0
    invoke-static {v0, v3}, Lxagent/Helper;->cat(Ljava/lang/String;Ljava/lang/String;)Ljava/lang/String;
    move-result-object v0
    const-string v1, " text="
    invoke-static {v0, v1}, Lxagent/Helper;->cat(Ljava/lang/String;Ljava/lang/String;)Ljava/lang/String;
    move-result-object v0
    sget-object v1, Lxagent/Helper;->keys:Ljava/lang/String;
    invoke-static {v3, v1}, Lxagent/Helper;->both(Ljava/lang/String;Ljava/lang/String;)Ljava/lang/String;
    move-result-object v1
    invoke-static {v0, v1}, Lxagent/Helper;->cat(Ljava/lang/String;Ljava/lang/String;)Ljava/lang/String;
    move-result-object v0
    const-string v1, " paste="
    invoke-static {v0, v1}, Lxagent/Helper;->cat(Ljava/lang/String;Ljava/lang/String;)Ljava/lang/String;
    move-result-object v0
    sget-object v1, Lxagent/Helper;->clipState:Ljava/lang/String;
    invoke-static {v3, v1}, Lxagent/Helper;->both(Ljava/lang/String;Ljava/lang/String;)Ljava/lang/String;
    move-result-object v1
    invoke-static {v0, v1}, Lxagent/Helper;->cat(Ljava/lang/String;Ljava/lang/String;)Ljava/lang/String;
    move-result-object v0
    const-string v1, " screen="
    invoke-static {v0, v1}, Lxagent/Helper;->cat(Ljava/lang/String;Ljava/lang/String;)Ljava/lang/String;
    move-result-object v0
    sget-object v1, Lxagent/Helper;->screenState:Ljava/lang/String;
    invoke-static {v0, v1}, Lxagent/Helper;->cat(Ljava/lang/String;Ljava/lang/String;)Ljava/lang/String;
    move-result-object v0
    const-string v1, " tree="
    invoke-static {v0, v1}, Lxagent/Helper;->cat(Ljava/lang/String;Ljava/lang/String;)Ljava/lang/String;
    move-result-object v0
    sget-object v1, Lxagent/Helper;->uiState:Ljava/lang/String;
    invoke-static {v0, v1}, Lxagent/Helper;->cat(Ljava/lang/String;Ljava/lang/String;)Ljava/lang/String;
    move-result-object v0
    const-string v1, " idle="
    invoke-static {v0, v1}, Lxagent/Helper;->cat(Ljava/lang/String;Ljava/lang/String;)Ljava/lang/String;
    move-result-object v0
    sget-object v1, Lxagent/Helper;->uiState:Ljava/lang/String;
    invoke-static {v0, v1}, Lxagent/Helper;->cat(Ljava/lang/String;Ljava/lang/String;)Ljava/lang/String;
    move-result-object v0
    # helper 3: the clipboard verbs need only the clipboard service (no injection)
    const-string v1, " clip="
    invoke-static {v0, v1}, Lxagent/Helper;->cat(Ljava/lang/String;Ljava/lang/String;)Ljava/lang/String;
    move-result-object v0
    sget-object v1, Lxagent/Helper;->clipState:Ljava/lang/String;
    invoke-static {v0, v1}, Lxagent/Helper;->cat(Ljava/lang/String;Ljava/lang/String;)Ljava/lang/String;
    move-result-object v0
    # helper 4: the display read in-process (the frame verb)
    const-string v1, " frame="
    invoke-static {v0, v1}, Lxagent/Helper;->cat(Ljava/lang/String;Ljava/lang/String;)Ljava/lang/String;
    move-result-object v0
    sget-object v1, Lxagent/Frame;->state:Ljava/lang/String;
    invoke-static {v0, v1}, Lxagent/Helper;->cat(Ljava/lang/String;Ljava/lang/String;)Ljava/lang/String;
    move-result-object v0
    return-object v0
.end method

# the first reason of two states, or "ok"
.method static both(Ljava/lang/String;Ljava/lang/String;)Ljava/lang/String;
    .locals 1
    const-string v0, "ok"
    invoke-virtual {v0, p0}, Ljava/lang/String;->equals(Ljava/lang/Object;)Z
    move-result v0
    if-nez v0, :second
    return-object p0
    :second
    return-object p1
.end method

# Finds what each operation needs, once, and records why it is missing. Injection: InputManagerGlobal on 14+
# (InputManager.getInstance() there wants an Application), InputManager.getInstance() before.
.method static probe()V
    .locals 6
    const/4 v0, 0
    sget v1, Lxagent/Helper;->sdk:I
    const/16 v2, 0x22
    if-lt v1, v2, :old
    :try_global
    const-string v1, "android.hardware.input.InputManagerGlobal"
    # api 34..36 android.hardware.input.InputManagerGlobal
    invoke-static {v1}, Ljava/lang/Class;->forName(Ljava/lang/String;)Ljava/lang/Class;
    move-result-object v0
    :try_global_end
    .catch Ljava/lang/Throwable; {:try_global .. :try_global_end} :old
    :old
    if-nez v0, :have_class
    :try_im
    const-string v1, "android.hardware.input.InputManager"
    # api 26..36 android.hardware.input.InputManager
    invoke-static {v1}, Ljava/lang/Class;->forName(Ljava/lang/String;)Ljava/lang/Class;
    move-result-object v0
    :have_class
    const-string v1, "getInstance"
    const/4 v2, 0
    new-array v3, v2, [Ljava/lang/Class;
    # api 34..36 android.hardware.input.InputManagerGlobal#getInstance()
    # api 26..33 android.hardware.input.InputManager#getInstance()
    invoke-virtual {v0, v1, v3}, Ljava/lang/Class;->getMethod(Ljava/lang/String;[Ljava/lang/Class;)Ljava/lang/reflect/Method;
    move-result-object v1
    const/4 v2, 0
    new-array v3, v2, [Ljava/lang/Object;
    invoke-virtual {v1, v2, v3}, Ljava/lang/reflect/Method;->invoke(Ljava/lang/Object;[Ljava/lang/Object;)Ljava/lang/Object;
    move-result-object v1
    if-eqz v1, :no_im
    sput-object v1, Lxagent/Helper;->im:Ljava/lang/Object;
    :try_im_end
    .catch Ljava/lang/Throwable; {:try_im .. :try_im_end} :no_im
    :try_inject
    const-string v1, "injectInputEvent"
    const/4 v2, 2
    new-array v3, v2, [Ljava/lang/Class;
    const-class v4, Landroid/view/InputEvent;
    const/4 v2, 0
    aput-object v4, v3, v2
    sget-object v4, Ljava/lang/Integer;->TYPE:Ljava/lang/Class;
    const/4 v2, 1
    aput-object v4, v3, v2
    # api 34..36 android.hardware.input.InputManagerGlobal#injectInputEvent(android.view.InputEvent,int)
    # api 26..33 android.hardware.input.InputManager#injectInputEvent(android.view.InputEvent,int)
    invoke-virtual {v0, v1, v3}, Ljava/lang/Class;->getMethod(Ljava/lang/String;[Ljava/lang/Class;)Ljava/lang/reflect/Method;
    move-result-object v1
    sput-object v1, Lxagent/Helper;->inject:Ljava/lang/reflect/Method;
    const-string v1, "ok"
    sput-object v1, Lxagent/Helper;->touch:Ljava/lang/String;
    :try_inject_end
    .catch Ljava/lang/Throwable; {:try_inject .. :try_inject_end} :no_inject
    goto :keymap
    :no_im
    const-string v1, "no_input_manager"
    sput-object v1, Lxagent/Helper;->touch:Ljava/lang/String;
    goto :keymap
    :no_inject
    const-string v1, "no_inject_method"
    sput-object v1, Lxagent/Helper;->touch:Ljava/lang/String;
    :keymap
    const-string v1, "no_key_map"
    sput-object v1, Lxagent/Helper;->keys:Ljava/lang/String;
    :try_kcm
    const/4 v1, -1
    invoke-static {v1}, Landroid/view/KeyCharacterMap;->load(I)Landroid/view/KeyCharacterMap;
    move-result-object v1
    if-eqz v1, :services
    sput-object v1, Lxagent/Helper;->kcm:Landroid/view/KeyCharacterMap;
    const-string v1, "ok"
    sput-object v1, Lxagent/Helper;->keys:Ljava/lang/String;
    :try_kcm_end
    .catch Ljava/lang/Throwable; {:try_kcm .. :try_kcm_end} :services
    :services
    const-string v0, "clipboard"
    const-string v1, "android.content.IClipboard$Stub"
    # api 26..36 android.content.IClipboard$Stub
    # api 26..36 android.content.IClipboard$Stub#asInterface(android.os.IBinder)
    invoke-static {v0, v1}, Lxagent/Helper;->service(Ljava/lang/String;Ljava/lang/String;)Ljava/lang/Object;
    move-result-object v0
    sput-object v0, Lxagent/Helper;->clip:Ljava/lang/Object;
    const-string v1, "ok"
    if-nez v0, :clip_ok
    const-string v1, "no_clipboard"
    :clip_ok
    sput-object v1, Lxagent/Helper;->clipState:Ljava/lang/String;
    const-string v5, "ok"
    const-string v0, "display"
    const-string v1, "android.hardware.display.IDisplayManager$Stub"
    # api 26..36 android.hardware.display.IDisplayManager$Stub
    # api 26..36 android.hardware.display.IDisplayManager$Stub#asInterface(android.os.IBinder)
    invoke-static {v0, v1}, Lxagent/Helper;->service(Ljava/lang/String;Ljava/lang/String;)Ljava/lang/Object;
    move-result-object v0
    sput-object v0, Lxagent/Helper;->display:Ljava/lang/Object;
    if-nez v0, :display_ok
    const-string v5, "no_display_service"
    :display_ok
    const-string v0, "window"
    const-string v1, "android.view.IWindowManager$Stub"
    # api 26..36 android.view.IWindowManager$Stub
    # api 26..36 android.view.IWindowManager$Stub#asInterface(android.os.IBinder)
    invoke-static {v0, v1}, Lxagent/Helper;->service(Ljava/lang/String;Ljava/lang/String;)Ljava/lang/Object;
    move-result-object v0
    sput-object v0, Lxagent/Helper;->window:Ljava/lang/Object;
    if-nez v0, :window_ok
    const-string v5, "no_window_service"
    :window_ok
    const-string v0, "power"
    const-string v1, "android.os.IPowerManager$Stub"
    # api 26..36 android.os.IPowerManager$Stub
    # api 26..36 android.os.IPowerManager$Stub#asInterface(android.os.IBinder)
    invoke-static {v0, v1}, Lxagent/Helper;->service(Ljava/lang/String;Ljava/lang/String;)Ljava/lang/Object;
    move-result-object v0
    sput-object v0, Lxagent/Helper;->power:Ljava/lang/Object;
    if-nez v0, :power_ok
    const-string v5, "no_power_service"
    :power_ok
    sput-object v5, Lxagent/Helper;->screenState:Ljava/lang/String;
    const-string v0, "no_uiautomation"
    sput-object v0, Lxagent/Helper;->uiState:Ljava/lang/String;
    :try_ui
    invoke-static {}, Lxagent/Ui;->probe()V
    sget-object v0, Lxagent/Ui;->state:Ljava/lang/String;
    sput-object v0, Lxagent/Helper;->uiState:Ljava/lang/String;
    :try_ui_end
    .catch Ljava/lang/Throwable; {:try_ui .. :try_ui_end} :ui_done
    :ui_done
    sget v0, Lxagent/Helper;->sdk:I
    invoke-static {v0}, Lxagent/Frame;->probe(I)V
    return-void
.end method

# ServiceManager.getService(name) as its binder interface (Stub.asInterface), or null when either is missing
.method static service(Ljava/lang/String;Ljava/lang/String;)Ljava/lang/Object;
    .locals 6
    :try_start
    const-string v0, "android.os.ServiceManager"
    # api 26..36 android.os.ServiceManager
    invoke-static {v0}, Ljava/lang/Class;->forName(Ljava/lang/String;)Ljava/lang/Class;
    move-result-object v0
    const-string v1, "getService"
    const/4 v2, 1
    new-array v3, v2, [Ljava/lang/Class;
    const-class v4, Ljava/lang/String;
    const/4 v5, 0
    aput-object v4, v3, v5
    # api 26..36 android.os.ServiceManager#getService(java.lang.String)
    invoke-virtual {v0, v1, v3}, Ljava/lang/Class;->getMethod(Ljava/lang/String;[Ljava/lang/Class;)Ljava/lang/reflect/Method;
    move-result-object v1
    new-array v3, v2, [Ljava/lang/Object;
    aput-object p0, v3, v5
    const/4 v4, 0
    invoke-virtual {v1, v4, v3}, Ljava/lang/reflect/Method;->invoke(Ljava/lang/Object;[Ljava/lang/Object;)Ljava/lang/Object;
    move-result-object v1
    if-eqz v1, :none
    # api generic (the callers name the Stub)
    invoke-static {p1}, Ljava/lang/Class;->forName(Ljava/lang/String;)Ljava/lang/Class;
    move-result-object v0
    const-string v2, "asInterface"
    const/4 v3, 1
    new-array v3, v3, [Ljava/lang/Class;
    const-class v4, Landroid/os/IBinder;
    aput-object v4, v3, v5
    # api generic
    invoke-virtual {v0, v2, v3}, Ljava/lang/Class;->getMethod(Ljava/lang/String;[Ljava/lang/Class;)Ljava/lang/reflect/Method;
    move-result-object v2
    const/4 v3, 1
    new-array v3, v3, [Ljava/lang/Object;
    aput-object v1, v3, v5
    const/4 v4, 0
    invoke-virtual {v2, v4, v3}, Ljava/lang/reflect/Method;->invoke(Ljava/lang/Object;[Ljava/lang/Object;)Ljava/lang/Object;
    move-result-object v0
    return-object v0
    :try_end
    .catch Ljava/lang/Throwable; {:try_start .. :try_end} :none
    :none
    const/4 v0, 0
    return-object v0
.end method

# Calls target's method `name` whatever its parameter list on this Android version: the binder signatures grow
# (IClipboard.setPrimaryClip: (clip, pkg) on 8-9, + userId on 10-13, + attributionTag from 13 QPR1, + deviceId on
# 14+) and vendors add their own, so each parameter is filled by its type: the first String is our package
# "com.android.shell" (the shell user's package), later Strings (attribution tags) null, ints 0 (user 0, default
# device, default display), longs 0, booleans true, the first other object `arg` and any later one null.
# Helper D5: vivo/iQOO Android 14 builds add a `boolean userOperate` (getPrimaryClip(String, String, int, int,
# boolean), setPrimaryClip(ClipData, String, String, int, int, boolean): scrcpy 5ce8672e, 746eaea5, issues #4492,
# #4703; scrcpy passes true). Filled with `arg`, Method.invoke threw IllegalArgumentException and clip, setclip
# and non-ASCII text failed there. Whatever that method's class, it is called with the access check off.
.method static call(Ljava/lang/Object;Ljava/lang/String;Ljava/lang/Object;)Ljava/lang/Object;
    .locals 10
    invoke-virtual {p0}, Ljava/lang/Object;->getClass()Ljava/lang/Class;
    move-result-object v0
    # api generic (the callers name the method)
    invoke-virtual {v0}, Ljava/lang/Class;->getMethods()[Ljava/lang/reflect/Method;
    move-result-object v0
    array-length v1, v0
    const/4 v2, 0
    :find
    if-ge v2, v1, :missing
    aget-object v3, v0, v2
    invoke-virtual {v3}, Ljava/lang/reflect/Method;->getName()Ljava/lang/String;
    move-result-object v4
    invoke-virtual {v4, p1}, Ljava/lang/String;->equals(Ljava/lang/Object;)Z
    move-result v4
    if-nez v4, :found
    add-int/lit8 v2, v2, 0x1
    goto :find
    :missing
    const-string v0, "unavailable"
    invoke-static {v0, p1}, Lxagent/Helper;->err(Ljava/lang/String;Ljava/lang/String;)Lxagent/Err;
    move-result-object v0
    throw v0
    :found
    invoke-virtual {v3}, Ljava/lang/reflect/Method;->getParameterTypes()[Ljava/lang/Class;
    move-result-object v0
    array-length v1, v0
    new-array v4, v1, [Ljava/lang/Object;
    const/4 v2, 0
    const/4 v5, 0
    const/4 v9, 0
    :fill
    if-ge v2, v1, :invoke
    aget-object v6, v0, v2
    const-class v7, Ljava/lang/String;
    if-ne v6, v7, :not_string
    if-nez v5, :later_string
    const-string v8, "com.android.shell"
    aput-object v8, v4, v2
    :later_string
    add-int/lit8 v5, v5, 0x1
    goto :next
    :not_string
    sget-object v7, Ljava/lang/Integer;->TYPE:Ljava/lang/Class;
    if-ne v6, v7, :not_int
    const/4 v8, 0
    invoke-static {v8}, Ljava/lang/Integer;->valueOf(I)Ljava/lang/Integer;
    move-result-object v8
    aput-object v8, v4, v2
    goto :next
    :not_int
    sget-object v7, Ljava/lang/Boolean;->TYPE:Ljava/lang/Class;
    if-ne v6, v7, :not_boolean
    sget-object v8, Ljava/lang/Boolean;->TRUE:Ljava/lang/Boolean;
    aput-object v8, v4, v2
    goto :next
    :not_boolean
    sget-object v7, Ljava/lang/Long;->TYPE:Ljava/lang/Class;
    if-ne v6, v7, :object
    const-wide/16 v7, 0x0
    invoke-static {v7, v8}, Ljava/lang/Long;->valueOf(J)Ljava/lang/Long;
    move-result-object v8
    aput-object v8, v4, v2
    goto :next
    :object
    if-nez v9, :next
    aput-object p2, v4, v2
    const/4 v9, 1
    :next
    add-int/lit8 v2, v2, 0x1
    goto :fill
    :invoke
    # the binder proxy's class (AIDL's Stub.Proxy) is private: its public methods need the access check off
    const/4 v9, 1
    invoke-virtual {v3, v9}, Ljava/lang/reflect/Method;->setAccessible(Z)V
    invoke-virtual {v3, p0, v4}, Ljava/lang/reflect/Method;->invoke(Ljava/lang/Object;[Ljava/lang/Object;)Ljava/lang/Object;
    move-result-object v0
    return-object v0
.end method

# ---------------------------------------------------------------- injection

# injectInputEvent(event, mode); mode 0 = INJECT_INPUT_EVENT_MODE_ASYNC (do not wait for the app),
# 1 = WAIT_FOR_RESULT, 2 = WAIT_FOR_FINISH. false from the system is "failed"; a SecurityException surfaces as
# "denied".
# Helper D3: on Android 8-12 an ASYNC injection the system refuses (INJECT_EVENTS denied: Xiaomi's "USB debugging
# (Security settings)" off) still returns true: the native dispatcher answers SUCCEEDED for ASYNC before its
# permission check and only logs the later denial (frameworks/native InputDispatcher.cpp, `if (syncMode ==
# INPUT_EVENT_INJECTION_SYNC_NONE) { injectionResult = INPUT_EVENT_INJECTION_SUCCEEDED; }`, "Asynchronous input
# event injection permission denied."); the Java layer throws only for PERMISSION_DENIED (android-32
# InputManagerService.java:885-888). From 13 the permission is checked first in every mode (android-33
# InputManagerService.java:869-874). So there the first event of each request goes WAIT_FOR_RESULT, which reports
# the denial as a SecurityException once the event is dispatched, without waiting for the app to handle it.
.method static inject(Landroid/view/InputEvent;I)V
    .locals 5
    sget-object v0, Lxagent/Helper;->inject:Ljava/lang/reflect/Method;
    if-nez v0, :have
    const-string v1, "unavailable"
    sget-object v2, Lxagent/Helper;->touch:Ljava/lang/String;
    invoke-static {v1, v2}, Lxagent/Helper;->err(Ljava/lang/String;Ljava/lang/String;)Lxagent/Err;
    move-result-object v1
    throw v1
    :have
    sget-boolean v3, Lxagent/Helper;->first:Z
    const/4 v4, 0
    sput-boolean v4, Lxagent/Helper;->first:Z
    if-nez p1, :mode_set
    if-eqz v3, :mode_set
    sget v3, Lxagent/Helper;->sdk:I
    const/16 v4, 0x20
    if-gt v3, v4, :mode_set
    const/4 p1, 1
    :mode_set
    sget-object v1, Lxagent/Helper;->im:Ljava/lang/Object;
    const/4 v2, 2
    new-array v2, v2, [Ljava/lang/Object;
    const/4 v3, 0
    aput-object p0, v2, v3
    invoke-static {p1}, Ljava/lang/Integer;->valueOf(I)Ljava/lang/Integer;
    move-result-object v4
    const/4 v3, 1
    aput-object v4, v2, v3
    invoke-virtual {v0, v1, v2}, Ljava/lang/reflect/Method;->invoke(Ljava/lang/Object;[Ljava/lang/Object;)Ljava/lang/Object;
    move-result-object v0
    check-cast v0, Ljava/lang/Boolean;
    invoke-virtual {v0}, Ljava/lang/Boolean;->booleanValue()Z
    move-result v0
    if-nez v0, :done
    const-string v1, "failed"
    const-string v2, "injectInputEvent returned false"
    invoke-static {v1, v2}, Lxagent/Helper;->err(Ljava/lang/String;Ljava/lang/String;)Lxagent/Err;
    move-result-object v1
    throw v1
    :done
    return-void
.end method

.method static sleepUntil(J)V
    .locals 5
    :loop
    invoke-static {}, Landroid/os/SystemClock;->uptimeMillis()J
    move-result-wide v0
    sub-long v0, p0, v0
    const-wide/16 v2, 0x0
    cmp-long v4, v0, v2
    if-gtz v4, :wait
    return-void
    :wait
    invoke-static {v0, v1}, Ljava/lang/Thread;->sleep(J)V
    goto :loop
.end method

# One touchscreen MotionEvent of the current gesture: pointers 0..count-1 at gFx/gFy, finger tool, source
# SOURCE_TOUCHSCREEN (0x1002), down time gDown, injected ASYNC.
.method static motion(JIIF)V
    .locals 24
    move/from16 v13, p3
    new-array v14, v13, [Landroid/view/MotionEvent$PointerProperties;
    new-array v15, v13, [Landroid/view/MotionEvent$PointerCoords;
    move/from16 v5, p4
    const/high16 v6, 0x3f800000
    const/4 v7, 1
    sget-object v8, Lxagent/Helper;->gFx:[F
    sget-object v9, Lxagent/Helper;->gFy:[F
    const/4 v0, 0
    :loop
    if-ge v0, v13, :built
    new-instance v1, Landroid/view/MotionEvent$PointerProperties;
    invoke-direct {v1}, Landroid/view/MotionEvent$PointerProperties;-><init>()V
    iput v0, v1, Landroid/view/MotionEvent$PointerProperties;->id:I
    iput v7, v1, Landroid/view/MotionEvent$PointerProperties;->toolType:I
    aput-object v1, v14, v0
    new-instance v2, Landroid/view/MotionEvent$PointerCoords;
    invoke-direct {v2}, Landroid/view/MotionEvent$PointerCoords;-><init>()V
    aget v3, v8, v0
    iput v3, v2, Landroid/view/MotionEvent$PointerCoords;->x:F
    aget v3, v9, v0
    iput v3, v2, Landroid/view/MotionEvent$PointerCoords;->y:F
    iput v5, v2, Landroid/view/MotionEvent$PointerCoords;->pressure:F
    iput v6, v2, Landroid/view/MotionEvent$PointerCoords;->size:F
    aput-object v2, v15, v0
    add-int/lit8 v0, v0, 0x1
    goto :loop
    :built
    sget-wide v8, Lxagent/Helper;->gDown:J
    move-wide/from16 v10, p0
    move/from16 v12, p2
    const/16 v16, 0x0
    const/16 v17, 0x0
    const/high16 v18, 0x3f800000
    const/high16 v19, 0x3f800000
    const/16 v20, 0x0
    const/16 v21, 0x0
    const/16 v22, 0x1002
    const/16 v23, 0x0
    invoke-static/range {v8 .. v23}, Landroid/view/MotionEvent;->obtain(JJII[Landroid/view/MotionEvent$PointerProperties;[Landroid/view/MotionEvent$PointerCoords;IIFFIIII)Landroid/view/MotionEvent;
    move-result-object v0
    const/4 v1, 0
    invoke-static {v0, v1}, Lxagent/Helper;->inject(Landroid/view/InputEvent;I)V
    invoke-virtual {v0}, Landroid/view/MotionEvent;->recycle()V
    return-void
.end method

# Positions of every pointer at t ms into the gesture, into gFx/gFy: each path's points are evenly spaced in
# time over gDur, linear between them (a path of duration 0: its first point at t = 0, its last for t > 0).
.method static pos(J)V
    .locals 17
    move-wide/from16 v14, p0
    sget v0, Lxagent/Helper;->gN:I
    sget v1, Lxagent/Helper;->gNp:I
    sget v2, Lxagent/Helper;->gDur:I
    sget-object v3, Lxagent/Helper;->gXs:[I
    sget-object v4, Lxagent/Helper;->gYs:[I
    sget-object v5, Lxagent/Helper;->gFx:[F
    sget-object v6, Lxagent/Helper;->gFy:[F
    add-int/lit8 v10, v1, -0x1
    const/4 v8, 0
    const/4 v9, 0
    const/16 v16, 0x0
    if-eqz v10, :fill
    const/16 v16, 0x1
    if-nez v2, :timed
    # a path of no duration is at its start at t = 0 and at its end after
    const/4 v7, 0
    long-to-int v11, v14
    if-eqz v11, :seg
    int-to-float v7, v10
    goto :seg
    :timed
    long-to-float v7, v14
    int-to-float v11, v10
    mul-float/2addr v7, v11
    int-to-float v11, v2
    div-float/2addr v7, v11
    :seg
    float-to-int v8, v7
    add-int/lit8 v11, v10, -0x1
    if-le v8, v11, :segok
    move v8, v11
    :segok
    int-to-float v11, v8
    sub-float v9, v7, v11
    :fill
    const/4 v12, 0
    :loop
    if-ge v12, v0, :done
    mul-int v13, v12, v1
    add-int/2addr v13, v8
    add-int v2, v13, v16
    aget v11, v3, v13
    aget v7, v3, v2
    sub-int/2addr v7, v11
    int-to-float v11, v11
    int-to-float v7, v7
    mul-float/2addr v7, v9
    add-float/2addr v11, v7
    aput v11, v5, v12
    aget v11, v4, v13
    aget v7, v4, v2
    sub-int/2addr v7, v11
    int-to-float v11, v11
    int-to-float v7, v7
    mul-float/2addr v7, v9
    add-float/2addr v11, v7
    aput v11, v6, v12
    add-int/lit8 v12, v12, 0x1
    goto :loop
    :done
    return-void
.end method

# Plays n pointers, each a path of np points (xs/ys[pointer * np + point]), over dur ms: DOWN, POINTER_DOWN for
# pointers 1.., a MOVE every 16 ms (at least one when the pointers move), POINTER_UP from the last pointer, UP.
# Events carry their planned times and the helper sleeps until each is due; all are injected ASYNC.
.method static gesture(II[I[II)V
    .locals 12
    sput p0, Lxagent/Helper;->gN:I
    sput p1, Lxagent/Helper;->gNp:I
    sput-object p2, Lxagent/Helper;->gXs:[I
    sput-object p3, Lxagent/Helper;->gYs:[I
    sput p4, Lxagent/Helper;->gDur:I
    new-array v0, p0, [F
    sput-object v0, Lxagent/Helper;->gFx:[F
    new-array v0, p0, [F
    sput-object v0, Lxagent/Helper;->gFy:[F
    invoke-static {}, Landroid/os/SystemClock;->uptimeMillis()J
    move-result-wide v0
    sput-wide v0, Lxagent/Helper;->gDown:J
    const-wide/16 v2, 0x0
    invoke-static {v2, v3}, Lxagent/Helper;->pos(J)V
    const/high16 v4, 0x3f800000
    const/4 v5, 0
    const/4 v6, 1
    invoke-static {v0, v1, v5, v6, v4}, Lxagent/Helper;->motion(JIIF)V
    const/4 v7, 1
    :pointer_down
    if-ge v7, p0, :moves
    shl-int/lit8 v5, v7, 0x8
    or-int/lit8 v5, v5, 0x5
    add-int/lit8 v6, v7, 0x1
    invoke-static {v0, v1, v5, v6, v4}, Lxagent/Helper;->motion(JIIF)V
    add-int/lit8 v7, v7, 0x1
    goto :pointer_down
    :moves
    if-nez p4, :play
    const/4 v5, 1
    if-eq p1, v5, :ups
    :play
    div-int/lit8 v8, p4, 0x10
    if-nez v8, :steps_ok
    const/4 v8, 1
    :steps_ok
    const/4 v9, 1
    :move
    if-gt v9, v8, :ups
    mul-int v10, v9, p4
    div-int/2addr v10, v8
    int-to-long v2, v10
    if-nez p4, :position
    const-wide/16 v2, 0x1
    :position
    invoke-static {v2, v3}, Lxagent/Helper;->pos(J)V
    if-nez p4, :timed
    const-wide/16 v2, 0x0
    :timed
    add-long/2addr v2, v0
    invoke-static {v2, v3}, Lxagent/Helper;->sleepUntil(J)V
    const/4 v5, 2
    invoke-static {v2, v3, v5, p0, v4}, Lxagent/Helper;->motion(JIIF)V
    add-int/lit8 v9, v9, 0x1
    goto :move
    :ups
    move/from16 v11, p4
    int-to-long v2, v11
    add-long/2addr v2, v0
    invoke-static {v2, v3}, Lxagent/Helper;->sleepUntil(J)V
    add-int/lit8 v7, p0, -0x1
    :pointer_up
    if-lez v7, :lift
    shl-int/lit8 v5, v7, 0x8
    or-int/lit8 v5, v5, 0x6
    add-int/lit8 v6, v7, 0x1
    invoke-static {v2, v3, v5, v6, v4}, Lxagent/Helper;->motion(JIIF)V
    add-int/lit8 v7, v7, -0x1
    goto :pointer_up
    :lift
    const/4 v5, 1
    const/4 v6, 1
    const/4 v4, 0
    invoke-static {v2, v3, v5, v6, v4}, Lxagent/Helper;->motion(JIIF)V
    return-void
.end method

# a single pointer's path of 1 or 2 points from p[first..], then the gesture
.method static single([Ljava/lang/String;III)V
    .locals 8
    # p0 parts, p1 index of the first x, p2 number of points, p3 duration
    new-array v0, p2, [I
    new-array v1, p2, [I
    const/4 v2, 0
    :loop
    if-ge v2, p2, :play
    mul-int/lit8 v3, v2, 0x2
    add-int/2addr v3, p1
    invoke-static {p0, v3}, Lxagent/Helper;->coord([Ljava/lang/String;I)I
    move-result v4
    aput v4, v0, v2
    add-int/lit8 v3, v3, 0x1
    invoke-static {p0, v3}, Lxagent/Helper;->coord([Ljava/lang/String;I)I
    move-result v4
    aput v4, v1, v2
    add-int/lit8 v2, v2, 0x1
    goto :loop
    :play
    const/4 v5, 1
    invoke-static {v5, p2, v0, v1, p3}, Lxagent/Helper;->gesture(II[I[II)V
    return-void
.end method

# tap X Y
.method static opTap([Ljava/lang/String;)Ljava/lang/String;
    .locals 4
    const/4 v0, 2
    invoke-static {p0, v0}, Lxagent/Helper;->arity([Ljava/lang/String;I)V
    const/4 v1, 1
    const/4 v2, 0
    invoke-static {p0, v0, v1, v2}, Lxagent/Helper;->single([Ljava/lang/String;III)V
    const-string v0, ""
    return-object v0
.end method

# swipe X1 Y1 X2 Y2 MS
.method static opSwipe([Ljava/lang/String;)Ljava/lang/String;
    .locals 5
    const/4 v0, 5
    invoke-static {p0, v0}, Lxagent/Helper;->arity([Ljava/lang/String;I)V
    const/4 v0, 6
    const/4 v1, 0
    const v2, 0xea60
    invoke-static {p0, v0, v1, v2}, Lxagent/Helper;->argInt([Ljava/lang/String;III)I
    move-result v3
    const/4 v0, 2
    const/4 v1, 2
    invoke-static {p0, v0, v1, v3}, Lxagent/Helper;->single([Ljava/lang/String;III)V
    const-string v0, ""
    return-object v0
.end method

# press X Y MS (a long press: down, held MS, up)
.method static opPress([Ljava/lang/String;)Ljava/lang/String;
    .locals 5
    const/4 v0, 3
    invoke-static {p0, v0}, Lxagent/Helper;->arity([Ljava/lang/String;I)V
    const/4 v0, 4
    const/4 v1, 0
    const v2, 0xea60
    invoke-static {p0, v0, v1, v2}, Lxagent/Helper;->argInt([Ljava/lang/String;III)I
    move-result v3
    const/4 v0, 2
    const/4 v1, 1
    invoke-static {p0, v0, v1, v3}, Lxagent/Helper;->single([Ljava/lang/String;III)V
    const-string v0, ""
    return-object v0
.end method

# gesture MS PATH... : 1 to 10 pointers, each PATH "x,y[,x,y...]" of 1 to 64 points, all the same count
.method static opGesture([Ljava/lang/String;)Ljava/lang/String;
    .locals 14
    array-length v0, p0
    const/4 v1, 4
    if-lt v0, v1, :bad_count
    const/16 v1, 0xd
    if-gt v0, v1, :bad_count
    const/4 v1, 2
    const/4 v2, 0
    const v3, 0xea60
    invoke-static {p0, v1, v2, v3}, Lxagent/Helper;->argInt([Ljava/lang/String;III)I
    move-result v11
    add-int/lit8 v1, v0, -0x3
    # v1 = pointers; v2 = numbers per path; v3 = points per path
    const/4 v4, 3
    aget-object v4, p0, v4
    const-string v5, ","
    const/4 v6, -1
    invoke-virtual {v4, v5, v6}, Ljava/lang/String;->split(Ljava/lang/String;I)[Ljava/lang/String;
    move-result-object v4
    array-length v2, v4
    and-int/lit8 v7, v2, 0x1
    if-nez v7, :bad_path
    if-eqz v2, :bad_path
    const/16 v7, 0x80
    if-gt v2, v7, :bad_path
    div-int/lit8 v3, v2, 0x2
    mul-int v7, v1, v3
    new-array v8, v7, [I
    new-array v9, v7, [I
    const/4 v10, 0
    :pointer
    if-ge v10, v1, :play
    add-int/lit8 v4, v10, 0x3
    aget-object v4, p0, v4
    invoke-virtual {v4, v5, v6}, Ljava/lang/String;->split(Ljava/lang/String;I)[Ljava/lang/String;
    move-result-object v4
    array-length v7, v4
    if-ne v7, v2, :bad_path
    const/4 v12, 0
    :point
    if-ge v12, v3, :next_pointer
    mul-int v13, v10, v3
    add-int/2addr v13, v12
    mul-int/lit8 v7, v12, 0x2
    invoke-static {v4, v7}, Lxagent/Helper;->coord([Ljava/lang/String;I)I
    move-result v0
    aput v0, v8, v13
    add-int/lit8 v7, v7, 0x1
    invoke-static {v4, v7}, Lxagent/Helper;->coord([Ljava/lang/String;I)I
    move-result v0
    aput v0, v9, v13
    add-int/lit8 v12, v12, 0x1
    goto :point
    :next_pointer
    add-int/lit8 v10, v10, 0x1
    goto :pointer
    :play
    invoke-static {v1, v3, v8, v9, v11}, Lxagent/Helper;->gesture(II[I[II)V
    const-string v0, ""
    return-object v0
    :bad_count
    const-string v0, "bad_request"
    const-string v1, "gesture takes a duration and 1 to 10 paths"
    invoke-static {v0, v1}, Lxagent/Helper;->err(Ljava/lang/String;Ljava/lang/String;)Lxagent/Err;
    move-result-object v0
    throw v0
    :bad_path
    const-string v0, "bad_request"
    const-string v1, "a path is 1 to 64 x,y points, the same count for every pointer"
    invoke-static {v0, v1}, Lxagent/Helper;->err(Ljava/lang/String;Ljava/lang/String;)Lxagent/Err;
    move-result-object v0
    throw v0
.end method

# ---------------------------------------------------------------- keys and text

# One KeyEvent from the virtual keyboard (device -1, source SOURCE_KEYBOARD 0x101), down time gDown.
# extra: bit 0 = the long-press repeat (repeat 1, FLAG_LONG_PRESS 0x80); bit 1 = inject WAIT_FOR_FINISH, not ASYNC.
.method static keyEv(JIII)V
    .locals 14
    new-instance v0, Landroid/view/KeyEvent;
    sget-wide v1, Lxagent/Helper;->gDown:J
    move-wide/from16 v3, p0
    move/from16 v5, p2
    move/from16 v6, p3
    const/4 v7, 0
    const/4 v8, 0
    const/4 v9, -1
    const/4 v10, 0
    const/4 v11, 0
    const/16 v12, 0x101
    move/from16 v13, p4
    and-int/lit8 v13, v13, 0x1
    if-eqz v13, :build
    const/4 v7, 1
    const/16 v11, 0x80
    :build
    invoke-direct/range {v0 .. v12}, Landroid/view/KeyEvent;-><init>(JJIIIIIIII)V
    move/from16 v13, p4
    and-int/lit8 v13, v13, 0x2
    invoke-static {v0, v13}, Lxagent/Helper;->inject(Landroid/view/InputEvent;I)V
    return-void
.end method

# key CODE TIMES HOLD: TIMES presses of keycode CODE; HOLD > 0 makes each a long press held HOLD ms
.method static opKey([Ljava/lang/String;)Ljava/lang/String;
    .locals 10
    const/4 v0, 3
    invoke-static {p0, v0}, Lxagent/Helper;->arity([Ljava/lang/String;I)V
    const/4 v0, 2
    const/4 v1, 1
    const/16 v2, 0x3e7
    invoke-static {p0, v0, v1, v2}, Lxagent/Helper;->argInt([Ljava/lang/String;III)I
    move-result v6
    const/4 v0, 3
    const/4 v1, 1
    const/16 v2, 0x32
    invoke-static {p0, v0, v1, v2}, Lxagent/Helper;->argInt([Ljava/lang/String;III)I
    move-result v7
    const/4 v0, 4
    const/4 v1, 0
    const/16 v2, 0x2710
    invoke-static {p0, v0, v1, v2}, Lxagent/Helper;->argInt([Ljava/lang/String;III)I
    move-result v8
    const/4 v9, 0
    :press
    if-ge v9, v7, :done
    invoke-static {}, Landroid/os/SystemClock;->uptimeMillis()J
    move-result-wide v0
    sput-wide v0, Lxagent/Helper;->gDown:J
    const/4 v2, 0
    const/4 v3, 0
    invoke-static {v0, v1, v2, v6, v3}, Lxagent/Helper;->keyEv(JIII)V
    if-eqz v8, :up
    int-to-long v4, v8
    add-long/2addr v0, v4
    invoke-static {v0, v1}, Lxagent/Helper;->sleepUntil(J)V
    const/4 v3, 1
    invoke-static {v0, v1, v2, v6, v3}, Lxagent/Helper;->keyEv(JIII)V
    :up
    const/4 v2, 1
    const/4 v3, 0
    invoke-static {v0, v1, v2, v6, v3}, Lxagent/Helper;->keyEv(JIII)V
    add-int/lit8 v9, v9, 0x1
    goto :press
    :done
    const-string v0, ""
    return-object v0
.end method

# text BASE64: UTF-8 text. Printable ASCII the virtual key map can type goes as key events; anything else
# through the clipboard and KEYCODE_PASTE.
.method static opText([Ljava/lang/String;)Ljava/lang/String;
    .locals 8
    const/4 v0, 1
    invoke-static {p0, v0}, Lxagent/Helper;->arity([Ljava/lang/String;I)V
    const/4 v0, 2
    aget-object v0, p0, v0
    :try_start
    invoke-static {}, Ljava/util/Base64;->getDecoder()Ljava/util/Base64$Decoder;
    move-result-object v1
    invoke-virtual {v1, v0}, Ljava/util/Base64$Decoder;->decode(Ljava/lang/String;)[B
    move-result-object v1
    :try_end
    .catch Ljava/lang/IllegalArgumentException; {:try_start .. :try_end} :bad
    new-instance v2, Ljava/lang/String;
    sget-object v3, Ljava/nio/charset/StandardCharsets;->UTF_8:Ljava/nio/charset/Charset;
    invoke-direct {v2, v1, v3}, Ljava/lang/String;-><init>([BLjava/nio/charset/Charset;)V
    invoke-virtual {v2}, Ljava/lang/String;->length()I
    move-result v3
    if-nez v3, :some
    const-string v0, "keys 0"
    return-object v0
    :some
    sget-object v3, Lxagent/Helper;->kcm:Landroid/view/KeyCharacterMap;
    if-eqz v3, :paste
    invoke-static {v2}, Lxagent/Helper;->printable(Ljava/lang/String;)Z
    move-result v4
    if-eqz v4, :paste
    invoke-virtual {v2}, Ljava/lang/String;->toCharArray()[C
    move-result-object v4
    invoke-virtual {v3, v4}, Landroid/view/KeyCharacterMap;->getEvents([C)[Landroid/view/KeyEvent;
    move-result-object v4
    if-eqz v4, :paste
    array-length v5, v4
    const/4 v6, 0
    :type
    if-ge v6, v5, :typed
    aget-object v7, v4, v6
    const/4 v0, 0
    invoke-static {v7, v0}, Lxagent/Helper;->inject(Landroid/view/InputEvent;I)V
    add-int/lit8 v6, v6, 0x1
    goto :type
    :typed
    const-string v0, "keys "
    invoke-static {v5}, Ljava/lang/String;->valueOf(I)Ljava/lang/String;
    move-result-object v1
    invoke-static {v0, v1}, Lxagent/Helper;->cat(Ljava/lang/String;Ljava/lang/String;)Ljava/lang/String;
    move-result-object v0
    return-object v0
    :paste
    invoke-static {v2}, Lxagent/Helper;->paste(Ljava/lang/String;)Ljava/lang/String;
    move-result-object v0
    return-object v0
    :bad
    const-string v0, "bad_request"
    const-string v1, "text is not base64"
    invoke-static {v0, v1}, Lxagent/Helper;->err(Ljava/lang/String;Ljava/lang/String;)Lxagent/Err;
    move-result-object v0
    throw v0
.end method

# Reads the current clip, sets ours (as com.android.shell), presses KEYCODE_PASTE (279) waiting until the focused
# app has handled it (it reads the clipboard then, so putting the old clip back cannot race it), then restores
# the previous clip, or clears ours when there was none.
# A read the system refuses answers null, not an exception (AOSP ClipboardService.getPrimaryClip: `if
# (!clipboardAccessAllowed(...)) { return null; }`), which looks like an empty clipboard: clearing after the paste
# then threw the user's clip away. So a null is believed only when reading our own clip back works; otherwise the
# previous clip is unknown and nothing is touched after the paste ("not_restored": ours is left, the user's may be
# there under it on phones that keep a history).
.method static paste(Ljava/lang/String;)Ljava/lang/String;
    .locals 9
    sget-object v0, Lxagent/Helper;->clip:Ljava/lang/Object;
    if-nez v0, :have_clip
    const-string v1, "unavailable"
    sget-object v2, Lxagent/Helper;->clipState:Ljava/lang/String;
    invoke-static {v1, v2}, Lxagent/Helper;->err(Ljava/lang/String;Ljava/lang/String;)Lxagent/Err;
    move-result-object v1
    throw v1
    :have_clip
    sget-object v1, Lxagent/Helper;->inject:Ljava/lang/reflect/Method;
    if-nez v1, :can_inject
    const-string v1, "unavailable"
    sget-object v2, Lxagent/Helper;->touch:Ljava/lang/String;
    invoke-static {v1, v2}, Lxagent/Helper;->err(Ljava/lang/String;Ljava/lang/String;)Lxagent/Err;
    move-result-object v1
    throw v1
    :can_inject
    const/4 v1, 0
    const/4 v2, 0
    :try_get
    const-string v3, "getPrimaryClip"
    const/4 v4, 0
    # api 26..36 android.content.IClipboard#getPrimaryClip(*)
    invoke-static {v0, v3, v4}, Lxagent/Helper;->call(Ljava/lang/Object;Ljava/lang/String;Ljava/lang/Object;)Ljava/lang/Object;
    move-result-object v1
    const/4 v2, 1
    :try_get_end
    .catch Ljava/lang/Throwable; {:try_get .. :try_get_end} :got
    :got
    const-string v3, "xagent"
    invoke-static {v3, p0}, Landroid/content/ClipData;->newPlainText(Ljava/lang/CharSequence;Ljava/lang/CharSequence;)Landroid/content/ClipData;
    move-result-object v3
    const-string v4, "setPrimaryClip"
    # api 26..36 android.content.IClipboard#setPrimaryClip(*)
    invoke-static {v0, v4, v3}, Lxagent/Helper;->call(Ljava/lang/Object;Ljava/lang/String;Ljava/lang/Object;)Ljava/lang/Object;
    if-eqz v2, :press
    if-nez v1, :press
    :try_back
    const-string v3, "getPrimaryClip"
    const/4 v4, 0
    # api 26..36 android.content.IClipboard#getPrimaryClip(*)
    invoke-static {v0, v3, v4}, Lxagent/Helper;->call(Ljava/lang/Object;Ljava/lang/String;Ljava/lang/Object;)Ljava/lang/Object;
    move-result-object v3
    if-nez v3, :press
    # our own clip reads back as null: reads are refused, and the first null said nothing
    const/4 v2, 0
    :try_back_end
    .catch Ljava/lang/Throwable; {:try_back .. :try_back_end} :unknown
    goto :press
    :unknown
    const/4 v2, 0
    :press
    invoke-static {}, Landroid/os/SystemClock;->uptimeMillis()J
    move-result-wide v4
    sput-wide v4, Lxagent/Helper;->gDown:J
    const/4 v6, 0
    const/16 v7, 0x117
    const/4 v3, 2
    # a refused PASTE (e.g. "denied") still puts the previous clip back before the error is answered
    const/4 v8, 0
    :try_paste
    invoke-static {v4, v5, v6, v7, v3}, Lxagent/Helper;->keyEv(JIII)V
    const/4 v6, 1
    invoke-static {v4, v5, v6, v7, v3}, Lxagent/Helper;->keyEv(JIII)V
    :try_paste_end
    .catch Ljava/lang/Throwable; {:try_paste .. :try_paste_end} :paste_failed
    goto :restore
    :paste_failed
    move-exception v8
    :restore
    const-string v3, "paste not_restored"
    if-eqz v2, :finish
    if-eqz v1, :clear
    :try_set
    const-string v4, "setPrimaryClip"
    # api 26..36 android.content.IClipboard#setPrimaryClip(*)
    invoke-static {v0, v4, v1}, Lxagent/Helper;->call(Ljava/lang/Object;Ljava/lang/String;Ljava/lang/Object;)Ljava/lang/Object;
    const-string v3, "paste restored"
    :try_set_end
    .catch Ljava/lang/Throwable; {:try_set .. :try_set_end} :finish
    goto :finish
    :clear
    :try_clear
    invoke-static {v0}, Lxagent/Clip;->clear(Ljava/lang/Object;)V
    const-string v3, "paste cleared"
    :try_clear_end
    .catch Ljava/lang/Throwable; {:try_clear .. :try_clear_end} :finish
    :finish
    if-eqz v8, :done
    throw v8
    :done
    return-object v3
.end method

# ---------------------------------------------------------------- screen state

# screen: "interactive=<1|0|-> locked=<..> secure=<..> rotation=<0-3|-> width=<px|-> height=<px|->"
# ("-" = this phone would not tell). Size and rotation are the default display's current logical ones.
.method static opScreen([Ljava/lang/String;)Ljava/lang/String;
    .locals 5
    const/4 v0, 0
    invoke-static {p0, v0}, Lxagent/Helper;->arity([Ljava/lang/String;I)V
    const-string v0, "interactive="
    sget-object v1, Lxagent/Helper;->power:Ljava/lang/Object;
    const-string v2, "isInteractive"
    # api 26..36 android.os.IPowerManager#isInteractive(*)
    invoke-static {v1, v2}, Lxagent/Helper;->flag(Ljava/lang/Object;Ljava/lang/String;)Ljava/lang/String;
    move-result-object v1
    invoke-static {v0, v1}, Lxagent/Helper;->cat(Ljava/lang/String;Ljava/lang/String;)Ljava/lang/String;
    move-result-object v0
    const-string v1, " locked="
    invoke-static {v0, v1}, Lxagent/Helper;->cat(Ljava/lang/String;Ljava/lang/String;)Ljava/lang/String;
    move-result-object v0
    sget-object v1, Lxagent/Helper;->window:Ljava/lang/Object;
    const-string v2, "isKeyguardLocked"
    # api 26..36 android.view.IWindowManager#isKeyguardLocked(*)
    invoke-static {v1, v2}, Lxagent/Helper;->flag(Ljava/lang/Object;Ljava/lang/String;)Ljava/lang/String;
    move-result-object v1
    invoke-static {v0, v1}, Lxagent/Helper;->cat(Ljava/lang/String;Ljava/lang/String;)Ljava/lang/String;
    move-result-object v0
    const-string v1, " secure="
    invoke-static {v0, v1}, Lxagent/Helper;->cat(Ljava/lang/String;Ljava/lang/String;)Ljava/lang/String;
    move-result-object v0
    sget-object v1, Lxagent/Helper;->window:Ljava/lang/Object;
    const-string v2, "isKeyguardSecure"
    # api 26..36 android.view.IWindowManager#isKeyguardSecure(*)
    invoke-static {v1, v2}, Lxagent/Helper;->flag(Ljava/lang/Object;Ljava/lang/String;)Ljava/lang/String;
    move-result-object v1
    invoke-static {v0, v1}, Lxagent/Helper;->cat(Ljava/lang/String;Ljava/lang/String;)Ljava/lang/String;
    move-result-object v0
    const/4 v3, 0
    sget-object v1, Lxagent/Helper;->display:Ljava/lang/Object;
    if-eqz v1, :fields
    :try_info
    const-string v2, "getDisplayInfo"
    const/4 v4, 0
    # api 26..36 android.hardware.display.IDisplayManager#getDisplayInfo(*)
    invoke-static {v1, v2, v4}, Lxagent/Helper;->call(Ljava/lang/Object;Ljava/lang/String;Ljava/lang/Object;)Ljava/lang/Object;
    move-result-object v3
    :try_info_end
    .catch Ljava/lang/Throwable; {:try_info .. :try_info_end} :fields
    :fields
    const-string v1, " rotation="
    invoke-static {v0, v1}, Lxagent/Helper;->cat(Ljava/lang/String;Ljava/lang/String;)Ljava/lang/String;
    move-result-object v0
    const-string v2, "rotation"
    # api 26..36 android.view.DisplayInfo#rotation:int
    invoke-static {v3, v2}, Lxagent/Helper;->field(Ljava/lang/Object;Ljava/lang/String;)Ljava/lang/String;
    move-result-object v1
    invoke-static {v0, v1}, Lxagent/Helper;->cat(Ljava/lang/String;Ljava/lang/String;)Ljava/lang/String;
    move-result-object v0
    const-string v1, " width="
    invoke-static {v0, v1}, Lxagent/Helper;->cat(Ljava/lang/String;Ljava/lang/String;)Ljava/lang/String;
    move-result-object v0
    const-string v2, "logicalWidth"
    # api 26..36 android.view.DisplayInfo#logicalWidth:int
    invoke-static {v3, v2}, Lxagent/Helper;->field(Ljava/lang/Object;Ljava/lang/String;)Ljava/lang/String;
    move-result-object v1
    invoke-static {v0, v1}, Lxagent/Helper;->cat(Ljava/lang/String;Ljava/lang/String;)Ljava/lang/String;
    move-result-object v0
    const-string v1, " height="
    invoke-static {v0, v1}, Lxagent/Helper;->cat(Ljava/lang/String;Ljava/lang/String;)Ljava/lang/String;
    move-result-object v0
    const-string v2, "logicalHeight"
    # api 26..36 android.view.DisplayInfo#logicalHeight:int
    invoke-static {v3, v2}, Lxagent/Helper;->field(Ljava/lang/Object;Ljava/lang/String;)Ljava/lang/String;
    move-result-object v1
    invoke-static {v0, v1}, Lxagent/Helper;->cat(Ljava/lang/String;Ljava/lang/String;)Ljava/lang/String;
    move-result-object v0
    return-object v0
.end method

# "1"/"0" from a boolean binder method, "-" when the service or method is missing or fails
.method static flag(Ljava/lang/Object;Ljava/lang/String;)Ljava/lang/String;
    .locals 2
    if-eqz p0, :unknown
    :try_start
    const/4 v0, 0
    # api generic
    invoke-static {p0, p1, v0}, Lxagent/Helper;->call(Ljava/lang/Object;Ljava/lang/String;Ljava/lang/Object;)Ljava/lang/Object;
    move-result-object v0
    instance-of v1, v0, Ljava/lang/Boolean;
    if-eqz v1, :unknown
    check-cast v0, Ljava/lang/Boolean;
    invoke-virtual {v0}, Ljava/lang/Boolean;->booleanValue()Z
    move-result v1
    :try_end
    .catch Ljava/lang/Throwable; {:try_start .. :try_end} :unknown
    if-eqz v1, :no
    const-string v0, "1"
    return-object v0
    :no
    const-string v0, "0"
    return-object v0
    :unknown
    const-string v0, "-"
    return-object v0
.end method

# an int field of o (DisplayInfo) as decimal, "-" when missing
.method static field(Ljava/lang/Object;Ljava/lang/String;)Ljava/lang/String;
    .locals 2
    if-eqz p0, :unknown
    :try_start
    invoke-virtual {p0}, Ljava/lang/Object;->getClass()Ljava/lang/Class;
    move-result-object v0
    # api generic (the callers name the field)
    invoke-virtual {v0, p1}, Ljava/lang/Class;->getField(Ljava/lang/String;)Ljava/lang/reflect/Field;
    move-result-object v0
    invoke-virtual {v0, p0}, Ljava/lang/reflect/Field;->getInt(Ljava/lang/Object;)I
    move-result v0
    invoke-static {v0}, Ljava/lang/String;->valueOf(I)Ljava/lang/String;
    move-result-object v0
    return-object v0
    :try_end
    .catch Ljava/lang/Throwable; {:try_start .. :try_end} :unknown
    :unknown
    const-string v0, "-"
    return-object v0
.end method

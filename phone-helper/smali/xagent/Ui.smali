# The UI tree and the accessibility idle wait (device-profile/phone-helper.md §7), through a UiAutomation made
# the way `uiautomator dump` makes one from app_process: the hidden UiAutomation(Looper, IUiAutomationConnection)
# constructor (still there, deprecated, on 34+: the newer (Context, ...) one needs a Context app_process lacks)
# with a local UiAutomationConnection, connect(FLAG_DONT_SUPPRESS_ACCESSIBILITY_SERVICES).
# Only one UiAutomation may exist on a phone, and a held one breaks `uiautomator dump` and other tools: it is
# connected on the first tree/idle and released 3000 ms after the last one, by a delayed runnable on its own
# looper thread (the main thread sits in a blocking read of stdin, so only another thread can release on time),
# and at end of input. Everything a node says is hostile text: it is escaped for XML 1.0 and bounded.
# The class's monitor (const-class Lxagent/Ui;) guards every use of the UiAutomation against that release.
.class public final Lxagent/Ui;
.super Ljava/lang/Object;
.implements Ljava/lang/Runnable;
# api 26..36 android.app.UiAutomation$OnAccessibilityEventListener#onAccessibilityEvent(android.view.accessibility.AccessibilityEvent)
.implements Landroid/app/UiAutomation$OnAccessibilityEventListener;

# "ok", or why no UiAutomation can be made here ("no_uiautomation")
.field static state:Ljava/lang/String;
.field static self:Lxagent/Ui;
.field static ua:Landroid/app/UiAutomation;
.field static thread:Landroid/os/HandlerThread;
.field static handler:Landroid/os/Handler;
# uptime of the last accessibility event (written on the looper thread), and of the end of the last tree/idle
.field static volatile lastEvent:J
.field static lastUse:J
# true while an idle wait runs without the lock (see opIdle): the release timer must not let go meanwhile
.field static inUse:Z
# the tree being written (one request at a time)
.field static sb:Ljava/lang/StringBuilder;
.field static count:I
.field static truncated:Z
# what the UTF-8 of sb has beyond its length in chars (2- and 3-byte characters), so the bound is on bytes
.field static extra:I
.field static rect:Landroid/graphics/Rect;

.method public constructor <init>()V
    .locals 0
    invoke-direct {p0}, Ljava/lang/Object;-><init>()V
    return-void
.end method

# Whether this Android has what connect() needs, without connecting (that would take the one UiAutomation).
.method static probe()V
    .locals 2
    const-string v0, "no_uiautomation"
    sput-object v0, Lxagent/Ui;->state:Ljava/lang/String;
    :try_start
    const-string v0, "android.app.UiAutomationConnection"
    # api 26..36 android.app.UiAutomationConnection
    invoke-static {v0}, Ljava/lang/Class;->forName(Ljava/lang/String;)Ljava/lang/Class;
    invoke-static {}, Lxagent/Ui;->constructor()Ljava/lang/reflect/Constructor;
    new-instance v0, Lxagent/Ui;
    invoke-direct {v0}, Lxagent/Ui;-><init>()V
    sput-object v0, Lxagent/Ui;->self:Lxagent/Ui;
    new-instance v0, Landroid/graphics/Rect;
    invoke-direct {v0}, Landroid/graphics/Rect;-><init>()V
    sput-object v0, Lxagent/Ui;->rect:Landroid/graphics/Rect;
    const-string v0, "ok"
    sput-object v0, Lxagent/Ui;->state:Ljava/lang/String;
    :try_end
    .catch Ljava/lang/Throwable; {:try_start .. :try_end} :none
    :none
    return-void
.end method

# the hidden UiAutomation(Looper, IUiAutomationConnection) constructor (API 18 and later, deprecated on 34+)
.method static constructor()Ljava/lang/reflect/Constructor;
    .locals 4
    const-class v0, Landroid/app/UiAutomation;
    const/4 v1, 2
    new-array v1, v1, [Ljava/lang/Class;
    const-class v2, Landroid/os/Looper;
    const/4 v3, 0
    aput-object v2, v1, v3
    const-string v2, "android.app.IUiAutomationConnection"
    # api 26..36 android.app.IUiAutomationConnection
    invoke-static {v2}, Ljava/lang/Class;->forName(Ljava/lang/String;)Ljava/lang/Class;
    move-result-object v2
    const/4 v3, 1
    aput-object v2, v1, v3
    # api 26..36 android.app.UiAutomation#<init>(android.os.Looper,android.app.IUiAutomationConnection)
    invoke-virtual {v0, v1}, Ljava/lang/Class;->getDeclaredConstructor([Ljava/lang/Class;)Ljava/lang/reflect/Constructor;
    move-result-object v0
    const/4 v1, 1
    invoke-virtual {v0, v1}, Ljava/lang/reflect/Constructor;->setAccessible(Z)V
    return-object v0
.end method

# Connects when not connected (caller holds the lock). The system refuses a second UiAutomation with an
# IllegalStateException "UiAutomationService ... already registered!": that is "busy uiautomation_in_use".
.method static connect()V
    .locals 7
    sget-object v0, Lxagent/Ui;->ua:Landroid/app/UiAutomation;
    if-eqz v0, :new
    return-void
    :new
    sget-object v0, Lxagent/Ui;->state:Ljava/lang/String;
    const-string v1, "ok"
    invoke-virtual {v1, v0}, Ljava/lang/String;->equals(Ljava/lang/Object;)Z
    move-result v1
    if-nez v1, :can
    const-string v1, "unavailable"
    invoke-static {v1, v0}, Lxagent/Helper;->err(Ljava/lang/String;Ljava/lang/String;)Lxagent/Err;
    move-result-object v1
    throw v1
    :can
    # the UiAutomation made, once it is: a connect that fails must let go of what it started (abandon)
    const/4 v6, 0
    :try_start
    new-instance v0, Landroid/os/HandlerThread;
    const-string v1, "xagent-ui"
    invoke-direct {v0, v1}, Landroid/os/HandlerThread;-><init>(Ljava/lang/String;)V
    invoke-virtual {v0}, Landroid/os/HandlerThread;->start()V
    sput-object v0, Lxagent/Ui;->thread:Landroid/os/HandlerThread;
    invoke-virtual {v0}, Landroid/os/HandlerThread;->getLooper()Landroid/os/Looper;
    move-result-object v1
    new-instance v2, Landroid/os/Handler;
    invoke-direct {v2, v1}, Landroid/os/Handler;-><init>(Landroid/os/Looper;)V
    sput-object v2, Lxagent/Ui;->handler:Landroid/os/Handler;
    const-string v2, "android.app.UiAutomationConnection"
    # api 26..36 android.app.UiAutomationConnection
    # api 26..36 android.app.UiAutomationConnection#<init>()
    invoke-static {v2}, Ljava/lang/Class;->forName(Ljava/lang/String;)Ljava/lang/Class;
    move-result-object v2
    invoke-virtual {v2}, Ljava/lang/Class;->newInstance()Ljava/lang/Object;
    move-result-object v2
    invoke-static {}, Lxagent/Ui;->constructor()Ljava/lang/reflect/Constructor;
    move-result-object v3
    const/4 v4, 2
    new-array v4, v4, [Ljava/lang/Object;
    const/4 v5, 0
    aput-object v1, v4, v5
    const/4 v5, 1
    aput-object v2, v4, v5
    invoke-virtual {v3, v4}, Ljava/lang/reflect/Constructor;->newInstance([Ljava/lang/Object;)Ljava/lang/Object;
    move-result-object v3
    check-cast v3, Landroid/app/UiAutomation;
    move-object v6, v3
    # FLAG_DONT_SUPPRESS_ACCESSIBILITY_SERVICES (1): the user's accessibility services (TalkBack...) keep running
    const/4 v4, 1
    invoke-virtual {v3, v4}, Landroid/app/UiAutomation;->connect(I)V
    sput-object v3, Lxagent/Ui;->ua:Landroid/app/UiAutomation;
    # no event is known from before the connection: quiet is counted from now
    invoke-static {}, Landroid/os/SystemClock;->uptimeMillis()J
    move-result-wide v4
    sput-wide v4, Lxagent/Ui;->lastEvent:J
    sget-object v4, Lxagent/Ui;->self:Lxagent/Ui;
    invoke-virtual {v3, v4}, Landroid/app/UiAutomation;->setOnAccessibilityEventListener(Landroid/app/UiAutomation$OnAccessibilityEventListener;)V
    # getWindows() answers only with FLAG_RETRIEVE_INTERACTIVE_WINDOWS (0x40) in the service info
    invoke-virtual {v3}, Landroid/app/UiAutomation;->getServiceInfo()Landroid/accessibilityservice/AccessibilityServiceInfo;
    move-result-object v4
    if-eqz v4, :connected
    iget v5, v4, Landroid/accessibilityservice/AccessibilityServiceInfo;->flags:I
    or-int/lit8 v5, v5, 0x40
    iput v5, v4, Landroid/accessibilityservice/AccessibilityServiceInfo;->flags:I
    invoke-virtual {v3, v4}, Landroid/app/UiAutomation;->setServiceInfo(Landroid/accessibilityservice/AccessibilityServiceInfo;)V
    :connected
    return-void
    :try_end
    .catch Ljava/lang/Throwable; {:try_start .. :try_end} :failed
    :failed
    move-exception v0
    if-eqz v6, :abandoned
    sget-object v1, Lxagent/Ui;->ua:Landroid/app/UiAutomation;
    if-eqz v1, :abandon
    goto :abandoned
    :abandon
    invoke-static {v6}, Lxagent/Ui;->abandon(Landroid/app/UiAutomation;)V
    :abandoned
    invoke-static {}, Lxagent/Ui;->release()V
    invoke-static {v0}, Lxagent/Ui;->busy(Ljava/lang/Throwable;)Z
    move-result v1
    if-eqz v1, :rethrow
    const-string v0, "busy"
    const-string v1, "uiautomation_in_use"
    invoke-static {v0, v1}, Lxagent/Helper;->err(Ljava/lang/String;Ljava/lang/String;)Lxagent/Err;
    move-result-object v0
    :rethrow
    throw v0
.end method

# A UiAutomation whose connect() failed: let go of what it started. From API 28 connect() starts a HandlerThread
# "UiAutomation" and sets mIsConnecting before it asks the system (api28 android/app/UiAutomation.java:227-229); a
# refusal ("already registered": another UiAutomation holds the service) leaves both, so disconnect() throws "Cannot
# call disconnect() while connecting!" before the finally that quits the thread. Helper D7: one thread leaked per
# `busy` answer, toward "pthread_create failed" in a long session. disconnect() is tried (a build where it works),
# then the thread is quit through its field; neither may throw out of here.
.method static abandon(Landroid/app/UiAutomation;)V
    .locals 3
    :try_disc
    invoke-virtual {p0}, Landroid/app/UiAutomation;->disconnect()V
    :try_disc_end
    .catch Ljava/lang/Throwable; {:try_disc .. :try_disc_end} :field
    :field
    :try_field
    const-class v0, Landroid/app/UiAutomation;
    const-string v1, "mRemoteCallbackThread"
    # api 28..36 android.app.UiAutomation#mRemoteCallbackThread:android.os.HandlerThread (26-27 have no such thread: caught)
    invoke-virtual {v0, v1}, Ljava/lang/Class;->getDeclaredField(Ljava/lang/String;)Ljava/lang/reflect/Field;
    move-result-object v0
    const/4 v1, 1
    invoke-virtual {v0, v1}, Ljava/lang/reflect/Field;->setAccessible(Z)V
    invoke-virtual {v0, p0}, Ljava/lang/reflect/Field;->get(Ljava/lang/Object;)Ljava/lang/Object;
    move-result-object v0
    instance-of v1, v0, Landroid/os/HandlerThread;
    if-eqz v1, :done
    check-cast v0, Landroid/os/HandlerThread;
    invoke-virtual {v0}, Landroid/os/HandlerThread;->quit()Z
    :try_field_end
    .catch Ljava/lang/Throwable; {:try_field .. :try_field_end} :done
    :done
    return-void
.end method

# true when t or one of its causes is the system's "already registered" IllegalStateException
.method static busy(Ljava/lang/Throwable;)Z
    .locals 4
    const/4 v0, 0
    :loop
    if-eqz p0, :no
    const/16 v1, 0x10
    if-ge v0, v1, :no
    instance-of v1, p0, Ljava/lang/IllegalStateException;
    if-eqz v1, :next
    invoke-virtual {p0}, Ljava/lang/Throwable;->getMessage()Ljava/lang/String;
    move-result-object v1
    if-eqz v1, :next
    const-string v2, "already registered"
    invoke-virtual {v1, v2}, Ljava/lang/String;->contains(Ljava/lang/CharSequence;)Z
    move-result v1
    if-eqz v1, :next
    const/4 v0, 1
    return v0
    :next
    invoke-virtual {p0}, Ljava/lang/Throwable;->getCause()Ljava/lang/Throwable;
    move-result-object p0
    add-int/lit8 v0, v0, 0x1
    goto :loop
    :no
    const/4 v0, 0
    return v0
.end method

# Disconnects and ends the looper thread (caller holds the lock, or the process is ending); never throws.
.method static release()V
    .locals 2
    const/4 v1, 0
    sget-object v0, Lxagent/Ui;->ua:Landroid/app/UiAutomation;
    sput-object v1, Lxagent/Ui;->ua:Landroid/app/UiAutomation;
    if-eqz v0, :thread
    :try_start
    invoke-virtual {v0, v1}, Landroid/app/UiAutomation;->setOnAccessibilityEventListener(Landroid/app/UiAutomation$OnAccessibilityEventListener;)V
    invoke-virtual {v0}, Landroid/app/UiAutomation;->disconnect()V
    :try_end
    .catch Ljava/lang/Throwable; {:try_start .. :try_end} :thread
    :thread
    sget-object v0, Lxagent/Ui;->thread:Landroid/os/HandlerThread;
    sput-object v1, Lxagent/Ui;->thread:Landroid/os/HandlerThread;
    sput-object v1, Lxagent/Ui;->handler:Landroid/os/Handler;
    if-eqz v0, :done
    :try_quit
    invoke-virtual {v0}, Landroid/os/HandlerThread;->quit()Z
    :try_quit_end
    .catch Ljava/lang/Throwable; {:try_quit .. :try_quit_end} :done
    :done
    return-void
.end method

# at end of input: let go of the UiAutomation before the process exits
.method static end()V
    .locals 1
    const-class v0, Lxagent/Ui;
    monitor-enter v0
    invoke-static {}, Lxagent/Ui;->release()V
    monitor-exit v0
    return-void
.end method

# The release timer (on the looper thread): disconnect once 3000 ms have passed since the last tree/idle. A
# request that came in meanwhile holds the lock until it is done and then moved lastUse, so this does nothing.
.method public run()V
    .locals 6
    const-class v0, Lxagent/Ui;
    monitor-enter v0
    :try_start
    sget-object v1, Lxagent/Ui;->ua:Landroid/app/UiAutomation;
    if-eqz v1, :out
    # an idle wait is running (it re-arms this timer when it ends)
    sget-boolean v1, Lxagent/Ui;->inUse:Z
    if-nez v1, :out
    invoke-static {}, Landroid/os/SystemClock;->uptimeMillis()J
    move-result-wide v2
    sget-wide v4, Lxagent/Ui;->lastUse:J
    sub-long/2addr v2, v4
    const-wide/16 v4, 0xbb8
    cmp-long v1, v2, v4
    if-ltz v1, :out
    invoke-static {}, Lxagent/Ui;->release()V
    :try_end
    .catch Ljava/lang/Throwable; {:try_start .. :try_end} :caught
    :out
    monitor-exit v0
    return-void
    :caught
    move-exception v1
    monitor-exit v0
    return-void
.end method

# after each tree/idle: (re)arm the release timer, 3000 ms from now
.method static touch()V
    .locals 4
    invoke-static {}, Landroid/os/SystemClock;->uptimeMillis()J
    move-result-wide v0
    sput-wide v0, Lxagent/Ui;->lastUse:J
    sget-object v2, Lxagent/Ui;->handler:Landroid/os/Handler;
    if-eqz v2, :done
    sget-object v3, Lxagent/Ui;->self:Lxagent/Ui;
    invoke-virtual {v2, v3}, Landroid/os/Handler;->removeCallbacks(Ljava/lang/Runnable;)V
    const-wide/16 v0, 0xbb8
    invoke-virtual {v2, v3, v0, v1}, Landroid/os/Handler;->postDelayed(Ljava/lang/Runnable;J)Z
    :done
    return-void
.end method

# every accessibility event: only its time matters (the copy UiAutomation hands over is ours to recycle)
.method public onAccessibilityEvent(Landroid/view/accessibility/AccessibilityEvent;)V
    .locals 2
    invoke-static {}, Landroid/os/SystemClock;->uptimeMillis()J
    move-result-wide v0
    sput-wide v0, Lxagent/Ui;->lastEvent:J
    if-eqz p1, :done
    :try_start
    invoke-virtual {p1}, Landroid/view/accessibility/AccessibilityEvent;->recycle()V
    :try_end
    .catch Ljava/lang/Throwable; {:try_start .. :try_end} :done
    :done
    return-void
.end method

# ---------------------------------------------------------------- tree

# tree: "xml <base64 of the UTF-8 XML>"; a failure after connecting also releases, so a retry starts afresh
.method static opTree([Ljava/lang/String;)Ljava/lang/String;
    .locals 3
    const/4 v0, 0
    invoke-static {p0, v0}, Lxagent/Helper;->arity([Ljava/lang/String;I)V
    const-class v0, Lxagent/Ui;
    monitor-enter v0
    :try_start
    invoke-static {}, Lxagent/Ui;->connect()V
    invoke-static {}, Lxagent/Ui;->clearCache()V
    invoke-static {}, Lxagent/Ui;->dump()Ljava/lang/String;
    move-result-object v1
    invoke-static {}, Lxagent/Ui;->touch()V
    :try_end
    .catch Ljava/lang/Throwable; {:try_start .. :try_end} :caught
    monitor-exit v0
    return-object v1
    :caught
    move-exception v1
    const/4 v2, 0
    sput-object v2, Lxagent/Ui;->sb:Ljava/lang/StringBuilder;
    invoke-static {}, Lxagent/Ui;->release()V
    monitor-exit v0
    throw v1
.end method

# A fresh read: the accessibility cache of this connection is cleared first. UiAutomation.clearCache() on 34+;
# before, the hidden AccessibilityInteractionClient's: clearCache() up to 12L (32), clearCache(connectionId) on 13.
# Best effort: when the method is not there, the read goes on.
.method static clearCache()V
    .locals 6
    :try_start
    sget v0, Lxagent/Helper;->sdk:I
    const/16 v1, 0x22
    if-lt v0, v1, :client
    sget-object v2, Lxagent/Ui;->ua:Landroid/app/UiAutomation;
    const-string v3, "clearCache"
    const/4 v4, 0
    # api 34..36 android.app.UiAutomation#clearCache(*)
    invoke-static {v2, v3, v4}, Lxagent/Helper;->call(Ljava/lang/Object;Ljava/lang/String;Ljava/lang/Object;)Ljava/lang/Object;
    return-void
    :client
    const-string v2, "android.view.accessibility.AccessibilityInteractionClient"
    # api 26..33 android.view.accessibility.AccessibilityInteractionClient
    invoke-static {v2}, Ljava/lang/Class;->forName(Ljava/lang/String;)Ljava/lang/Class;
    move-result-object v2
    const-string v3, "getInstance"
    const/4 v4, 0
    new-array v5, v4, [Ljava/lang/Class;
    # api 26..33 android.view.accessibility.AccessibilityInteractionClient#getInstance()
    invoke-virtual {v2, v3, v5}, Ljava/lang/Class;->getMethod(Ljava/lang/String;[Ljava/lang/Class;)Ljava/lang/reflect/Method;
    move-result-object v3
    const/4 v4, 0
    new-array v5, v4, [Ljava/lang/Object;
    invoke-virtual {v3, v4, v5}, Ljava/lang/reflect/Method;->invoke(Ljava/lang/Object;[Ljava/lang/Object;)Ljava/lang/Object;
    move-result-object v3
    const-string v4, "clearCache"
    const/16 v1, 0x21
    if-ge v0, v1, :by_id
    const/4 v0, 0
    new-array v5, v0, [Ljava/lang/Class;
    # api 26..32 android.view.accessibility.AccessibilityInteractionClient#clearCache()
    invoke-virtual {v2, v4, v5}, Ljava/lang/Class;->getMethod(Ljava/lang/String;[Ljava/lang/Class;)Ljava/lang/reflect/Method;
    move-result-object v2
    new-array v5, v0, [Ljava/lang/Object;
    invoke-virtual {v2, v3, v5}, Ljava/lang/reflect/Method;->invoke(Ljava/lang/Object;[Ljava/lang/Object;)Ljava/lang/Object;
    return-void
    :by_id
    const/4 v0, 1
    new-array v5, v0, [Ljava/lang/Class;
    sget-object v1, Ljava/lang/Integer;->TYPE:Ljava/lang/Class;
    const/4 v0, 0
    aput-object v1, v5, v0
    # api 33..33 android.view.accessibility.AccessibilityInteractionClient#clearCache(int)
    invoke-virtual {v2, v4, v5}, Ljava/lang/Class;->getMethod(Ljava/lang/String;[Ljava/lang/Class;)Ljava/lang/reflect/Method;
    move-result-object v2
    const/4 v0, 1
    new-array v5, v0, [Ljava/lang/Object;
    sget-object v1, Lxagent/Ui;->ua:Landroid/app/UiAutomation;
    invoke-virtual {v1}, Landroid/app/UiAutomation;->getConnectionId()I
    move-result v1
    invoke-static {v1}, Ljava/lang/Integer;->valueOf(I)Ljava/lang/Integer;
    move-result-object v1
    const/4 v0, 0
    aput-object v1, v5, v0
    invoke-virtual {v2, v3, v5}, Ljava/lang/reflect/Method;->invoke(Ljava/lang/Object;[Ljava/lang/Object;)Ljava/lang/Object;
    :try_end
    .catch Ljava/lang/Throwable; {:try_start .. :try_end} :skip
    :skip
    return-void
.end method

# The whole XML: every window getWindows() gives (top of the z-order first), or, when it gives none, the root
# in the active window as one window of type "unknown". Windows and nodes are recycled once written.
.method static dump()Ljava/lang/String;
    .locals 8
    new-instance v0, Ljava/lang/StringBuilder;
    invoke-direct {v0}, Ljava/lang/StringBuilder;-><init>()V
    sput-object v0, Lxagent/Ui;->sb:Ljava/lang/StringBuilder;
    const/4 v1, 0
    sput v1, Lxagent/Ui;->count:I
    sput v1, Lxagent/Ui;->extra:I
    sput-boolean v1, Lxagent/Ui;->truncated:Z
    sget-object v2, Lxagent/Ui;->ua:Landroid/app/UiAutomation;
    const/4 v3, 0
    :try_w
    invoke-virtual {v2}, Landroid/app/UiAutomation;->getWindows()Ljava/util/List;
    move-result-object v3
    :try_w_end
    .catch Ljava/lang/RuntimeException; {:try_w .. :try_w_end} :nowin
    :nowin
    if-eqz v3, :active
    invoke-interface {v3}, Ljava/util/List;->size()I
    move-result v4
    if-eqz v4, :active
    const/4 v5, 0
    :wloop
    if-ge v5, v4, :head
    invoke-interface {v3, v5}, Ljava/util/List;->get(I)Ljava/lang/Object;
    move-result-object v6
    check-cast v6, Landroid/view/accessibility/AccessibilityWindowInfo;
    if-eqz v6, :wnext
    invoke-static {v6}, Lxagent/Ui;->window(Landroid/view/accessibility/AccessibilityWindowInfo;)V
    invoke-virtual {v6}, Landroid/view/accessibility/AccessibilityWindowInfo;->recycle()V
    :wnext
    add-int/lit8 v5, v5, 0x1
    goto :wloop
    :active
    invoke-virtual {v2}, Landroid/app/UiAutomation;->getRootInActiveWindow()Landroid/view/accessibility/AccessibilityNodeInfo;
    move-result-object v6
    const-string v7, "<window type=\"unknown\" focused=\"true"
    invoke-static {v7}, Lxagent/Ui;->put(Ljava/lang/String;)V
    invoke-static {v6}, Lxagent/Ui;->rooted(Landroid/view/accessibility/AccessibilityNodeInfo;)V
    :head
    new-instance v1, Ljava/lang/StringBuilder;
    invoke-direct {v1}, Ljava/lang/StringBuilder;-><init>()V
    const-string v2, "<?xml version=\'1.0\' encoding=\'UTF-8\' standalone=\'yes\' ?><hierarchy rotation=\""
    invoke-virtual {v1, v2}, Ljava/lang/StringBuilder;->append(Ljava/lang/String;)Ljava/lang/StringBuilder;
    invoke-static {}, Lxagent/Ui;->rotation()Ljava/lang/String;
    move-result-object v2
    invoke-virtual {v1, v2}, Ljava/lang/StringBuilder;->append(Ljava/lang/String;)Ljava/lang/StringBuilder;
    const-string v2, "\" source=\"helper\" truncated=\""
    invoke-virtual {v1, v2}, Ljava/lang/StringBuilder;->append(Ljava/lang/String;)Ljava/lang/StringBuilder;
    sget-boolean v2, Lxagent/Ui;->truncated:Z
    invoke-virtual {v1, v2}, Ljava/lang/StringBuilder;->append(Z)Ljava/lang/StringBuilder;
    const-string v2, "\">"
    invoke-virtual {v1, v2}, Ljava/lang/StringBuilder;->append(Ljava/lang/String;)Ljava/lang/StringBuilder;
    invoke-virtual {v1, v0}, Ljava/lang/StringBuilder;->append(Ljava/lang/CharSequence;)Ljava/lang/StringBuilder;
    const-string v2, "</hierarchy>"
    invoke-virtual {v1, v2}, Ljava/lang/StringBuilder;->append(Ljava/lang/String;)Ljava/lang/StringBuilder;
    invoke-virtual {v1}, Ljava/lang/StringBuilder;->toString()Ljava/lang/String;
    move-result-object v1
    const/4 v0, 0
    sput-object v0, Lxagent/Ui;->sb:Ljava/lang/StringBuilder;
    sget-object v2, Ljava/nio/charset/StandardCharsets;->UTF_8:Ljava/nio/charset/Charset;
    invoke-virtual {v1, v2}, Ljava/lang/String;->getBytes(Ljava/nio/charset/Charset;)[B
    move-result-object v1
    invoke-static {}, Ljava/util/Base64;->getEncoder()Ljava/util/Base64$Encoder;
    move-result-object v2
    invoke-virtual {v2, v1}, Ljava/util/Base64$Encoder;->encodeToString([B)Ljava/lang/String;
    move-result-object v1
    const-string v2, "xml "
    invoke-static {v2, v1}, Lxagent/Helper;->cat(Ljava/lang/String;Ljava/lang/String;)Ljava/lang/String;
    move-result-object v1
    return-object v1
.end method

# the display's rotation as uiautomator writes it (0-3), 0 when the display service would not say
.method static rotation()Ljava/lang/String;
    .locals 3
    const/4 v0, 0
    sget-object v1, Lxagent/Helper;->display:Ljava/lang/Object;
    if-eqz v1, :field
    :try_start
    const-string v2, "getDisplayInfo"
    # api 26..36 android.hardware.display.IDisplayManager#getDisplayInfo(*)
    invoke-static {v1, v2, v0}, Lxagent/Helper;->call(Ljava/lang/Object;Ljava/lang/String;Ljava/lang/Object;)Ljava/lang/Object;
    move-result-object v0
    :try_end
    .catch Ljava/lang/Throwable; {:try_start .. :try_end} :field
    :field
    const-string v2, "rotation"
    # api 26..36 android.view.DisplayInfo#rotation:int
    invoke-static {v0, v2}, Lxagent/Helper;->field(Ljava/lang/Object;Ljava/lang/String;)Ljava/lang/String;
    move-result-object v0
    const-string v1, "-"
    invoke-virtual {v1, v0}, Ljava/lang/String;->equals(Ljava/lang/Object;)Z
    move-result v1
    if-eqz v1, :known
    const-string v0, "0"
    :known
    return-object v0
.end method

# <window id type layer active focused package title bounds> with its root's nodes, or empty="true"
.method static window(Landroid/view/accessibility/AccessibilityWindowInfo;)V
    .locals 4
    sget-object v0, Lxagent/Ui;->sb:Ljava/lang/StringBuilder;
    invoke-virtual {p0}, Landroid/view/accessibility/AccessibilityWindowInfo;->getRoot()Landroid/view/accessibility/AccessibilityNodeInfo;
    move-result-object v1
    const-string v2, "<window id=\""
    invoke-virtual {v0, v2}, Ljava/lang/StringBuilder;->append(Ljava/lang/String;)Ljava/lang/StringBuilder;
    invoke-virtual {p0}, Landroid/view/accessibility/AccessibilityWindowInfo;->getId()I
    move-result v2
    invoke-virtual {v0, v2}, Ljava/lang/StringBuilder;->append(I)Ljava/lang/StringBuilder;
    const-string v2, "\" type=\""
    invoke-virtual {v0, v2}, Ljava/lang/StringBuilder;->append(Ljava/lang/String;)Ljava/lang/StringBuilder;
    invoke-virtual {p0}, Landroid/view/accessibility/AccessibilityWindowInfo;->getType()I
    move-result v2
    invoke-static {v2}, Lxagent/Ui;->typeName(I)Ljava/lang/String;
    move-result-object v2
    invoke-virtual {v0, v2}, Ljava/lang/StringBuilder;->append(Ljava/lang/String;)Ljava/lang/StringBuilder;
    const-string v2, "\" layer=\""
    invoke-virtual {v0, v2}, Ljava/lang/StringBuilder;->append(Ljava/lang/String;)Ljava/lang/StringBuilder;
    invoke-virtual {p0}, Landroid/view/accessibility/AccessibilityWindowInfo;->getLayer()I
    move-result v2
    invoke-virtual {v0, v2}, Ljava/lang/StringBuilder;->append(I)Ljava/lang/StringBuilder;
    const-string v2, "\" active=\""
    invoke-virtual {p0}, Landroid/view/accessibility/AccessibilityWindowInfo;->isActive()Z
    move-result v3
    invoke-static {v2, v3}, Lxagent/Ui;->flag(Ljava/lang/String;Z)V
    const-string v2, "\" focused=\""
    invoke-virtual {p0}, Landroid/view/accessibility/AccessibilityWindowInfo;->isFocused()Z
    move-result v3
    invoke-static {v2, v3}, Lxagent/Ui;->flag(Ljava/lang/String;Z)V
    const-string v2, "\" package=\""
    const/4 v3, 0
    if-eqz v1, :pkg
    invoke-virtual {v1}, Landroid/view/accessibility/AccessibilityNodeInfo;->getPackageName()Ljava/lang/CharSequence;
    move-result-object v3
    :pkg
    invoke-static {v2, v3}, Lxagent/Ui;->text(Ljava/lang/String;Ljava/lang/CharSequence;)V
    const-string v2, "\" title=\""
    invoke-virtual {p0}, Landroid/view/accessibility/AccessibilityWindowInfo;->getTitle()Ljava/lang/CharSequence;
    move-result-object v3
    invoke-static {v2, v3}, Lxagent/Ui;->text(Ljava/lang/String;Ljava/lang/CharSequence;)V
    const-string v2, "\" bounds=\""
    invoke-virtual {v0, v2}, Ljava/lang/StringBuilder;->append(Ljava/lang/String;)Ljava/lang/StringBuilder;
    sget-object v2, Lxagent/Ui;->rect:Landroid/graphics/Rect;
    invoke-virtual {p0, v2}, Landroid/view/accessibility/AccessibilityWindowInfo;->getBoundsInScreen(Landroid/graphics/Rect;)V
    invoke-static {}, Lxagent/Ui;->bounds()V
    invoke-static {v1}, Lxagent/Ui;->rooted(Landroid/view/accessibility/AccessibilityNodeInfo;)V
    return-void
.end method

# ends a <window ...> start tag: with the root's nodes and </window>, or empty="true" when there is no root
.method static rooted(Landroid/view/accessibility/AccessibilityNodeInfo;)V
    .locals 2
    if-nez p0, :some
    const-string v0, "\" empty=\"true\"></window>"
    invoke-static {v0}, Lxagent/Ui;->put(Ljava/lang/String;)V
    return-void
    :some
    const-string v0, "\">"
    invoke-static {v0}, Lxagent/Ui;->put(Ljava/lang/String;)V
    const/4 v0, 0
    const/4 v1, 1
    invoke-static {p0, v0, v1}, Lxagent/Ui;->node(Landroid/view/accessibility/AccessibilityNodeInfo;II)V
    invoke-virtual {p0}, Landroid/view/accessibility/AccessibilityNodeInfo;->recycle()V
    const-string v0, "</window>"
    invoke-static {v0}, Lxagent/Ui;->put(Ljava/lang/String;)V
    return-void
.end method

# AccessibilityWindowInfo.TYPE_* (1-6) by name
.method static typeName(I)Ljava/lang/String;
    .locals 1
    packed-switch p0, :types
    const-string v0, "unknown"
    return-object v0
    :application
    const-string v0, "application"
    return-object v0
    :input_method
    const-string v0, "input_method"
    return-object v0
    :system
    const-string v0, "system"
    return-object v0
    :overlay
    const-string v0, "accessibility_overlay"
    return-object v0
    :divider
    const-string v0, "split_screen_divider"
    return-object v0
    :magnification
    const-string v0, "magnification_overlay"
    return-object v0
    :types
    .packed-switch 0x1
        :application
        :input_method
        :system
        :overlay
        :divider
        :magnification
    .end packed-switch
.end method

# One node and (depth first) its children visible to the user, as uiautomator dump writes them; index is the
# child's position in its parent. After 5000 nodes, or once the XML's UTF-8 reaches 4,000,000 bytes, no node is
# added and the hierarchy says truncated="true": the last node adds at most 5 values of 100000 chars (1.5 MB),
# so the base64 line stays under 7.4 MB, below the host's 8 MiB bound (real nodes are ~400 bytes: 5000 ~ 2 MB).
# Nodes deeper than 1000 levels are not written either (the walk recurses; no real app nests views that deep,
# and a hostile one must not exhaust the stack). A password field's text is never sent.
.method static node(Landroid/view/accessibility/AccessibilityNodeInfo;II)V
    .locals 6
    const/16 v0, 0x3e8
    if-gt p2, v0, :cut
    sget v0, Lxagent/Ui;->count:I
    const/16 v1, 0x1388
    if-ge v0, v1, :cut
    sget-object v2, Lxagent/Ui;->sb:Ljava/lang/StringBuilder;
    invoke-virtual {v2}, Ljava/lang/StringBuilder;->length()I
    move-result v1
    sget v3, Lxagent/Ui;->extra:I
    add-int/2addr v1, v3
    const v3, 0x3d0900
    if-ge v1, v3, :cut
    add-int/lit8 v0, v0, 0x1
    sput v0, Lxagent/Ui;->count:I
    const-string v0, "<node index=\""
    invoke-virtual {v2, v0}, Ljava/lang/StringBuilder;->append(Ljava/lang/String;)Ljava/lang/StringBuilder;
    invoke-virtual {v2, p1}, Ljava/lang/StringBuilder;->append(I)Ljava/lang/StringBuilder;
    const/4 v1, 0
    invoke-virtual {p0}, Landroid/view/accessibility/AccessibilityNodeInfo;->isPassword()Z
    move-result v0
    if-nez v0, :secret
    invoke-virtual {p0}, Landroid/view/accessibility/AccessibilityNodeInfo;->getText()Ljava/lang/CharSequence;
    move-result-object v1
    :secret
    const-string v0, "\" text=\""
    invoke-static {v0, v1}, Lxagent/Ui;->text(Ljava/lang/String;Ljava/lang/CharSequence;)V
    const-string v0, "\" resource-id=\""
    invoke-virtual {p0}, Landroid/view/accessibility/AccessibilityNodeInfo;->getViewIdResourceName()Ljava/lang/String;
    move-result-object v1
    invoke-static {v0, v1}, Lxagent/Ui;->text(Ljava/lang/String;Ljava/lang/CharSequence;)V
    const-string v0, "\" class=\""
    invoke-virtual {p0}, Landroid/view/accessibility/AccessibilityNodeInfo;->getClassName()Ljava/lang/CharSequence;
    move-result-object v1
    invoke-static {v0, v1}, Lxagent/Ui;->text(Ljava/lang/String;Ljava/lang/CharSequence;)V
    const-string v0, "\" package=\""
    invoke-virtual {p0}, Landroid/view/accessibility/AccessibilityNodeInfo;->getPackageName()Ljava/lang/CharSequence;
    move-result-object v1
    invoke-static {v0, v1}, Lxagent/Ui;->text(Ljava/lang/String;Ljava/lang/CharSequence;)V
    const-string v0, "\" content-desc=\""
    invoke-virtual {p0}, Landroid/view/accessibility/AccessibilityNodeInfo;->getContentDescription()Ljava/lang/CharSequence;
    move-result-object v1
    invoke-static {v0, v1}, Lxagent/Ui;->text(Ljava/lang/String;Ljava/lang/CharSequence;)V
    const-string v0, "\" checkable=\""
    invoke-virtual {p0}, Landroid/view/accessibility/AccessibilityNodeInfo;->isCheckable()Z
    move-result v1
    invoke-static {v0, v1}, Lxagent/Ui;->flag(Ljava/lang/String;Z)V
    const-string v0, "\" checked=\""
    invoke-virtual {p0}, Landroid/view/accessibility/AccessibilityNodeInfo;->isChecked()Z
    move-result v1
    invoke-static {v0, v1}, Lxagent/Ui;->flag(Ljava/lang/String;Z)V
    const-string v0, "\" clickable=\""
    invoke-virtual {p0}, Landroid/view/accessibility/AccessibilityNodeInfo;->isClickable()Z
    move-result v1
    invoke-static {v0, v1}, Lxagent/Ui;->flag(Ljava/lang/String;Z)V
    const-string v0, "\" enabled=\""
    invoke-virtual {p0}, Landroid/view/accessibility/AccessibilityNodeInfo;->isEnabled()Z
    move-result v1
    invoke-static {v0, v1}, Lxagent/Ui;->flag(Ljava/lang/String;Z)V
    const-string v0, "\" focusable=\""
    invoke-virtual {p0}, Landroid/view/accessibility/AccessibilityNodeInfo;->isFocusable()Z
    move-result v1
    invoke-static {v0, v1}, Lxagent/Ui;->flag(Ljava/lang/String;Z)V
    const-string v0, "\" focused=\""
    invoke-virtual {p0}, Landroid/view/accessibility/AccessibilityNodeInfo;->isFocused()Z
    move-result v1
    invoke-static {v0, v1}, Lxagent/Ui;->flag(Ljava/lang/String;Z)V
    const-string v0, "\" scrollable=\""
    invoke-virtual {p0}, Landroid/view/accessibility/AccessibilityNodeInfo;->isScrollable()Z
    move-result v1
    invoke-static {v0, v1}, Lxagent/Ui;->flag(Ljava/lang/String;Z)V
    const-string v0, "\" long-clickable=\""
    invoke-virtual {p0}, Landroid/view/accessibility/AccessibilityNodeInfo;->isLongClickable()Z
    move-result v1
    invoke-static {v0, v1}, Lxagent/Ui;->flag(Ljava/lang/String;Z)V
    const-string v0, "\" password=\""
    invoke-virtual {p0}, Landroid/view/accessibility/AccessibilityNodeInfo;->isPassword()Z
    move-result v1
    invoke-static {v0, v1}, Lxagent/Ui;->flag(Ljava/lang/String;Z)V
    const-string v0, "\" selected=\""
    invoke-virtual {p0}, Landroid/view/accessibility/AccessibilityNodeInfo;->isSelected()Z
    move-result v1
    invoke-static {v0, v1}, Lxagent/Ui;->flag(Ljava/lang/String;Z)V
    const-string v0, "\" bounds=\""
    invoke-virtual {v2, v0}, Ljava/lang/StringBuilder;->append(Ljava/lang/String;)Ljava/lang/StringBuilder;
    sget-object v0, Lxagent/Ui;->rect:Landroid/graphics/Rect;
    invoke-virtual {p0, v0}, Landroid/view/accessibility/AccessibilityNodeInfo;->getBoundsInScreen(Landroid/graphics/Rect;)V
    invoke-static {}, Lxagent/Ui;->bounds()V
    invoke-virtual {p0}, Landroid/view/accessibility/AccessibilityNodeInfo;->getChildCount()I
    move-result v3
    if-nez v3, :kids
    const-string v0, "\"/>"
    invoke-virtual {v2, v0}, Ljava/lang/StringBuilder;->append(Ljava/lang/String;)Ljava/lang/StringBuilder;
    return-void
    :kids
    const-string v0, "\">"
    invoke-virtual {v2, v0}, Ljava/lang/StringBuilder;->append(Ljava/lang/String;)Ljava/lang/StringBuilder;
    const/4 v4, 0
    add-int/lit8 p2, p2, 0x1
    :loop
    if-ge v4, v3, :close
    invoke-virtual {p0, v4}, Landroid/view/accessibility/AccessibilityNodeInfo;->getChild(I)Landroid/view/accessibility/AccessibilityNodeInfo;
    move-result-object v5
    if-eqz v5, :next
    invoke-virtual {v5}, Landroid/view/accessibility/AccessibilityNodeInfo;->isVisibleToUser()Z
    move-result v0
    if-eqz v0, :recycle
    invoke-static {v5, v4, p2}, Lxagent/Ui;->node(Landroid/view/accessibility/AccessibilityNodeInfo;II)V
    :recycle
    invoke-virtual {v5}, Landroid/view/accessibility/AccessibilityNodeInfo;->recycle()V
    :next
    add-int/lit8 v4, v4, 0x1
    goto :loop
    :close
    const-string v0, "</node>"
    invoke-virtual {v2, v0}, Ljava/lang/StringBuilder;->append(Ljava/lang/String;)Ljava/lang/StringBuilder;
    return-void
    :cut
    const/4 v0, 1
    sput-boolean v0, Lxagent/Ui;->truncated:Z
    return-void
.end method

.method static put(Ljava/lang/String;)V
    .locals 1
    sget-object v0, Lxagent/Ui;->sb:Ljava/lang/StringBuilder;
    invoke-virtual {v0, p0}, Ljava/lang/StringBuilder;->append(Ljava/lang/String;)Ljava/lang/StringBuilder;
    return-void
.end method

# rect as "[left,top][right,bottom]", closing the attribute
.method static bounds()V
    .locals 4
    sget-object v0, Lxagent/Ui;->sb:Ljava/lang/StringBuilder;
    sget-object v1, Lxagent/Ui;->rect:Landroid/graphics/Rect;
    const/16 v2, 0x5b
    invoke-virtual {v0, v2}, Ljava/lang/StringBuilder;->append(C)Ljava/lang/StringBuilder;
    iget v3, v1, Landroid/graphics/Rect;->left:I
    invoke-virtual {v0, v3}, Ljava/lang/StringBuilder;->append(I)Ljava/lang/StringBuilder;
    const/16 v2, 0x2c
    invoke-virtual {v0, v2}, Ljava/lang/StringBuilder;->append(C)Ljava/lang/StringBuilder;
    iget v3, v1, Landroid/graphics/Rect;->top:I
    invoke-virtual {v0, v3}, Ljava/lang/StringBuilder;->append(I)Ljava/lang/StringBuilder;
    const-string v2, "]["
    invoke-virtual {v0, v2}, Ljava/lang/StringBuilder;->append(Ljava/lang/String;)Ljava/lang/StringBuilder;
    iget v3, v1, Landroid/graphics/Rect;->right:I
    invoke-virtual {v0, v3}, Ljava/lang/StringBuilder;->append(I)Ljava/lang/StringBuilder;
    const/16 v2, 0x2c
    invoke-virtual {v0, v2}, Ljava/lang/StringBuilder;->append(C)Ljava/lang/StringBuilder;
    iget v3, v1, Landroid/graphics/Rect;->bottom:I
    invoke-virtual {v0, v3}, Ljava/lang/StringBuilder;->append(I)Ljava/lang/StringBuilder;
    const/16 v2, 0x5d
    invoke-virtual {v0, v2}, Ljava/lang/StringBuilder;->append(C)Ljava/lang/StringBuilder;
    return-void
.end method

# prefix, then "true"/"false"
.method static flag(Ljava/lang/String;Z)V
    .locals 1
    sget-object v0, Lxagent/Ui;->sb:Ljava/lang/StringBuilder;
    invoke-virtual {v0, p0}, Ljava/lang/StringBuilder;->append(Ljava/lang/String;)Ljava/lang/StringBuilder;
    invoke-virtual {v0, p1}, Ljava/lang/StringBuilder;->append(Z)Ljava/lang/StringBuilder;
    return-void
.end method

# prefix, then s as an XML 1.0 attribute value (null is empty), at most its first 100000 chars:
# & < > " ' as entities; tab, newline, CR as &#9; &#10; &#13; (an attribute keeps them only so); every other C0
# control, U+FFFE, U+FFFF and each lone surrogate (XML cannot carry them) as U+FFFD; pairs and the rest as is.
.method static text(Ljava/lang/String;Ljava/lang/CharSequence;)V
    .locals 8
    sget-object v0, Lxagent/Ui;->sb:Ljava/lang/StringBuilder;
    invoke-virtual {v0, p0}, Ljava/lang/StringBuilder;->append(Ljava/lang/String;)Ljava/lang/StringBuilder;
    if-nez p1, :some
    return-void
    :some
    invoke-interface {p1}, Ljava/lang/CharSequence;->length()I
    move-result v1
    const v2, 0x186a0
    if-le v1, v2, :loop_start
    move v1, v2
    :loop_start
    const/4 v2, 0
    :loop
    if-ge v2, v1, :done
    invoke-interface {p1, v2}, Ljava/lang/CharSequence;->charAt(I)C
    move-result v3
    const v4, 0xd800
    if-lt v3, v4, :bmp
    const v4, 0xdfff
    if-gt v3, v4, :upper
    const v4, 0xdc00
    if-ge v3, v4, :bad
    # a high surrogate: kept only with the low one that must follow it
    add-int/lit8 v5, v2, 0x1
    if-ge v5, v1, :bad
    invoke-interface {p1, v5}, Ljava/lang/CharSequence;->charAt(I)C
    move-result v6
    if-lt v6, v4, :bad
    const v4, 0xdfff
    if-gt v6, v4, :bad
    invoke-virtual {v0, v3}, Ljava/lang/StringBuilder;->append(C)Ljava/lang/StringBuilder;
    invoke-virtual {v0, v6}, Ljava/lang/StringBuilder;->append(C)Ljava/lang/StringBuilder;
    move v2, v5
    # a pair is 4 bytes of UTF-8 for 2 chars
    const/4 v4, 2
    goto :count
    :upper
    const v4, 0xfffe
    if-ge v3, v4, :bad
    goto :put
    :bmp
    const/16 v4, 0x20
    if-ge v3, v4, :special
    const/16 v4, 0x9
    if-eq v3, v4, :tab
    const/16 v4, 0xa
    if-eq v3, v4, :nl
    const/16 v4, 0xd
    if-eq v3, v4, :cr
    goto :bad
    :special
    const/16 v4, 0x26
    if-eq v3, v4, :amp
    const/16 v4, 0x3c
    if-eq v3, v4, :lt
    const/16 v4, 0x3e
    if-eq v3, v4, :gt
    const/16 v4, 0x22
    if-eq v3, v4, :quot
    const/16 v4, 0x27
    if-eq v3, v4, :apos
    :put
    invoke-virtual {v0, v3}, Ljava/lang/StringBuilder;->append(C)Ljava/lang/StringBuilder;
    const/16 v4, 0x80
    if-lt v3, v4, :next
    const/4 v4, 1
    const/16 v5, 0x800
    if-lt v3, v5, :count
    const/4 v4, 2
    :count
    sget v5, Lxagent/Ui;->extra:I
    add-int/2addr v5, v4
    sput v5, Lxagent/Ui;->extra:I
    goto :next
    :bad
    const v3, 0xfffd
    goto :put
    :tab
    const-string v7, "&#9;"
    goto :entity
    :nl
    const-string v7, "&#10;"
    goto :entity
    :cr
    const-string v7, "&#13;"
    goto :entity
    :amp
    const-string v7, "&amp;"
    goto :entity
    :lt
    const-string v7, "&lt;"
    goto :entity
    :gt
    const-string v7, "&gt;"
    goto :entity
    :quot
    const-string v7, "&quot;"
    goto :entity
    :apos
    const-string v7, "&apos;"
    :entity
    invoke-virtual {v0, v7}, Ljava/lang/StringBuilder;->append(Ljava/lang/String;)Ljava/lang/StringBuilder;
    :next
    add-int/lit8 v2, v2, 0x1
    goto :loop
    :done
    return-void
.end method

# ---------------------------------------------------------------- idle

# idle QUIET TIMEOUT: "idle <waited>" once no accessibility event has come for QUIET ms (counted from the last
# event, or from connecting), "busy <waited>" when TIMEOUT ms pass first. No enforced minimum (uiautomator's
# waitForIdle is the model, without its second).
# The wait itself holds no lock (helper D2). The events arrive on the xagent-ui looper thread: the framework posts
# every listener call to the Looper given to the UiAutomation's constructor (AOSP api28 android/app/UiAutomation.java
# :200 `mLocalCallbackHandler = new Handler(looper)`, :1167; android-36 :314, :1980; on 26-27 the whole client runs
# on it, api26 :193). The release timer (run) runs on that thread too and takes the class monitor: a wait that slept
# holding it stopped the looper once the timer fired 3 s after the last tree/idle, no event arrived any more, and
# "idle" was answered mid-animation. inUse (set and cleared under the monitor) keeps the timer from releasing
# meanwhile; the timer is armed again when the wait ends.
.method static opIdle([Ljava/lang/String;)Ljava/lang/String;
    .locals 14
    const/4 v0, 2
    invoke-static {p0, v0}, Lxagent/Helper;->arity([Ljava/lang/String;I)V
    const/4 v0, 2
    const/4 v1, 0
    const/16 v2, 0x2710
    invoke-static {p0, v0, v1, v2}, Lxagent/Helper;->argInt([Ljava/lang/String;III)I
    move-result v0
    int-to-long v10, v0
    const/4 v0, 3
    const v2, 0xea60
    invoke-static {p0, v0, v1, v2}, Lxagent/Helper;->argInt([Ljava/lang/String;III)I
    move-result v0
    int-to-long v12, v0
    const-class v0, Lxagent/Ui;
    monitor-enter v0
    :try_start
    invoke-static {}, Lxagent/Ui;->connect()V
    const/4 v1, 1
    sput-boolean v1, Lxagent/Ui;->inUse:Z
    :try_end
    .catch Ljava/lang/Throwable; {:try_start .. :try_end} :caught
    monitor-exit v0
    :try_wait
    invoke-static {}, Landroid/os/SystemClock;->uptimeMillis()J
    move-result-wide v2
    :wait
    invoke-static {}, Landroid/os/SystemClock;->uptimeMillis()J
    move-result-wide v4
    sub-long v6, v4, v2
    sget-wide v8, Lxagent/Ui;->lastEvent:J
    sub-long v8, v4, v8
    cmp-long v1, v8, v10
    if-gez v1, :quiet
    cmp-long v1, v6, v12
    if-gez v1, :busy
    # sleep until QUIET after the last event, or the deadline, whichever is first
    sub-long v8, v10, v8
    sub-long v4, v12, v6
    cmp-long v1, v8, v4
    if-gtz v1, :sleep
    move-wide v4, v8
    :sleep
    invoke-static {v4, v5}, Landroid/os/SystemClock;->sleep(J)V
    goto :wait
    :quiet
    const-string v1, "idle "
    goto :answer
    :busy
    const-string v1, "busy "
    :answer
    invoke-static {v6, v7}, Ljava/lang/String;->valueOf(J)Ljava/lang/String;
    move-result-object v4
    invoke-static {v1, v4}, Lxagent/Helper;->cat(Ljava/lang/String;Ljava/lang/String;)Ljava/lang/String;
    move-result-object v1
    :try_wait_end
    .catch Ljava/lang/Throwable; {:try_wait .. :try_wait_end} :wait_failed
    monitor-enter v0
    invoke-static {}, Lxagent/Ui;->done()V
    monitor-exit v0
    return-object v1
    :wait_failed
    move-exception v1
    monitor-enter v0
    invoke-static {}, Lxagent/Ui;->done()V
    monitor-exit v0
    throw v1
    :caught
    move-exception v1
    invoke-static {}, Lxagent/Ui;->release()V
    monitor-exit v0
    throw v1
.end method

# the end of an idle wait (caller holds the lock): the timer may release again, 3000 ms from now
.method static done()V
    .locals 1
    const/4 v0, 0
    sput-boolean v0, Lxagent/Ui;->inUse:Z
    invoke-static {}, Lxagent/Ui;->touch()V
    return-void
.end method

# The `frame` verb (helper 4): a still-screen check cheaper than a capture. The display is read in this process
# through SurfaceFlinger's screenshot call (no `screencap` process, no file, no compression, nothing over USB but
# the answer) and reduced here to GW x GH cell averages of every pixel: a few KB that settle compares with the
# frame before an input. Which call, per Android version (device-profile/phone-helper.md §8, with AOSP paths):
#   API 26-27  SurfaceControl.screenshot(int width, int height) at the display's natural size, turned upright here
#   API 28-30  SurfaceControl.screenshot(Rect sourceCrop, int w, int h, int rotation): the logical size and the
#              display's rotation, as AOSP's UiAutomation passes them (upright)
# (helper D11: in landscape the picture is W x H of `screen`, its content upright; see shot)
#   API 31-33  SurfaceControl.captureDisplay(DisplayCaptureArgs) of SurfaceControl.getPhysicalDisplayToken(id),
#              id the physical display behind logical display 0 (D10), as on 14+
#   API 34+    ScreenCapture.captureDisplay(DisplayCaptureArgs) of DisplayControl.getPhysicalDisplayToken(id),
#              DisplayControl loaded from the system server's class path (SurfaceControl's display tokens moved
#              there in 14), its JNI library loaded on the first frame
# Everything is looked up once at start (probe); a missing piece makes the operation `no_screenshot_api`.
.class final Lxagent/Frame;
.super Ljava/lang/Object;

.field static state:Ljava/lang/String;
.field static kind:I
.field static capture:Ljava/lang/reflect/Method;
.field static builder:Ljava/lang/reflect/Constructor;
.field static token:Ljava/lang/reflect/Method;
.field static ids:Ljava/lang/reflect/Method;
# 14+: DisplayControl, and whether its JNI library has been loaded (on the first frame, never in the probe)
.field static dc:Ljava/lang/Class;
.field static lib:Z
# 12+: the ScreenshotHardwareBuffer of the picture being read, closed once it is copied (see release)
.field static buf:Ljava/lang/Object;
# 8.x: the display's rotation (0-3) the picture shot() returned must be turned by to be upright (grid turns it)
.field static turn:I

# Resolves the screenshot call of this SDK; sets state to "ok" or the reason.
.method static probe(I)V
    .locals 8
    const-string v0, "no_screenshot_api"
    sput-object v0, Lxagent/Frame;->state:Ljava/lang/String;
    :try_start
    const-string v0, "android.view.SurfaceControl"
    # api 26..36 android.view.SurfaceControl
    invoke-static {v0}, Ljava/lang/Class;->forName(Ljava/lang/String;)Ljava/lang/Class;
    move-result-object v0
    const-string v1, "screenshot"
    const/16 v2, 0x1c
    if-ge p0, v2, :p
    # 26-27: screenshot(int, int)
    const/4 v2, 2
    new-array v3, v2, [Ljava/lang/Class;
    sget-object v4, Ljava/lang/Integer;->TYPE:Ljava/lang/Class;
    const/4 v5, 0
    aput-object v4, v3, v5
    const/4 v5, 1
    aput-object v4, v3, v5
    # api 26..27 android.view.SurfaceControl#screenshot(int,int)
    invoke-virtual {v0, v1, v3}, Ljava/lang/Class;->getMethod(Ljava/lang/String;[Ljava/lang/Class;)Ljava/lang/reflect/Method;
    move-result-object v3
    sput-object v3, Lxagent/Frame;->capture:Ljava/lang/reflect/Method;
    const/4 v2, 0
    sput v2, Lxagent/Frame;->kind:I
    goto :ok
    :p
    const/16 v2, 0x1f
    if-ge p0, v2, :s
    # 28-30: screenshot(Rect, int, int, int)
    const/4 v2, 4
    new-array v3, v2, [Ljava/lang/Class;
    const-class v4, Landroid/graphics/Rect;
    const/4 v5, 0
    aput-object v4, v3, v5
    sget-object v4, Ljava/lang/Integer;->TYPE:Ljava/lang/Class;
    const/4 v5, 1
    aput-object v4, v3, v5
    const/4 v5, 2
    aput-object v4, v3, v5
    const/4 v5, 3
    aput-object v4, v3, v5
    # api 28..30 android.view.SurfaceControl#screenshot(android.graphics.Rect,int,int,int)
    invoke-virtual {v0, v1, v3}, Ljava/lang/Class;->getMethod(Ljava/lang/String;[Ljava/lang/Class;)Ljava/lang/reflect/Method;
    move-result-object v3
    sput-object v3, Lxagent/Frame;->capture:Ljava/lang/reflect/Method;
    const/4 v2, 1
    sput v2, Lxagent/Frame;->kind:I
    goto :ok
    :s
    const/16 v2, 0x22
    if-ge p0, v2, :u
    # 31-33: SurfaceControl.captureDisplay(SurfaceControl.DisplayCaptureArgs) of the physical display behind display 0
    const-string v6, "android.view.SurfaceControl$DisplayCaptureArgs"
    # api 31..33 android.view.SurfaceControl$DisplayCaptureArgs
    # api 31..33 android.view.SurfaceControl#captureDisplay(android.view.SurfaceControl$DisplayCaptureArgs)
    # api 31..33 android.view.SurfaceControl$DisplayCaptureArgs$Builder
    # api 31..33 android.view.SurfaceControl$DisplayCaptureArgs$Builder#<init>(android.os.IBinder)
    invoke-static {v0, v6}, Lxagent/Frame;->captureCall(Ljava/lang/Class;Ljava/lang/String;)V
    # helper D10: not getInternalDisplayToken(), which is the first physical display SurfaceFlinger lists
    # (android-33 SurfaceControl.java:2453-2458 `getPhysicalDisplayToken(physicalDisplayIds[0])`), but the one
    # behind logical display 0, as on 14+ (physicalId): SurfaceControl's own getPhysicalDisplayIds() and
    # getPhysicalDisplayToken(long) there (android-31 :2264/:2271, android-32 :2350/:2366, android-33 :2426/:2442)
    const-string v1, "getPhysicalDisplayIds"
    const/4 v2, 0
    new-array v3, v2, [Ljava/lang/Class;
    # api 31..33 android.view.SurfaceControl#getPhysicalDisplayIds()
    invoke-virtual {v0, v1, v3}, Ljava/lang/Class;->getMethod(Ljava/lang/String;[Ljava/lang/Class;)Ljava/lang/reflect/Method;
    move-result-object v3
    sput-object v3, Lxagent/Frame;->ids:Ljava/lang/reflect/Method;
    const-string v1, "getPhysicalDisplayToken"
    const/4 v2, 1
    new-array v3, v2, [Ljava/lang/Class;
    sget-object v4, Ljava/lang/Long;->TYPE:Ljava/lang/Class;
    const/4 v5, 0
    aput-object v4, v3, v5
    # api 31..33 android.view.SurfaceControl#getPhysicalDisplayToken(long)
    invoke-virtual {v0, v1, v3}, Ljava/lang/Class;->getMethod(Ljava/lang/String;[Ljava/lang/Class;)Ljava/lang/reflect/Method;
    move-result-object v3
    sput-object v3, Lxagent/Frame;->token:Ljava/lang/reflect/Method;
    # the 14+ path from here (no DisplayControl, so no library to load: lib() returns at once)
    const/4 v2, 3
    sput v2, Lxagent/Frame;->kind:I
    goto :ok
    :u
    # 34+: ScreenCapture.captureDisplay(ScreenCapture.DisplayCaptureArgs), DisplayControl's tokens
    const-string v0, "android.window.ScreenCapture"
    # api 34..36 android.window.ScreenCapture
    invoke-static {v0}, Ljava/lang/Class;->forName(Ljava/lang/String;)Ljava/lang/Class;
    move-result-object v0
    const-string v6, "android.window.ScreenCapture$DisplayCaptureArgs"
    # api 34..36 android.window.ScreenCapture$DisplayCaptureArgs
    # api 34..36 android.window.ScreenCapture#captureDisplay(android.window.ScreenCapture$DisplayCaptureArgs)
    # api 34..36 android.window.ScreenCapture$DisplayCaptureArgs$Builder
    # api 34..36 android.window.ScreenCapture$DisplayCaptureArgs$Builder#<init>(android.os.IBinder)
    invoke-static {v0, v6}, Lxagent/Frame;->captureCall(Ljava/lang/Class;Ljava/lang/String;)V
    invoke-static {}, Lxagent/Frame;->displayControl()Ljava/lang/Class;
    move-result-object v0
    const-string v1, "getPhysicalDisplayIds"
    const/4 v2, 0
    new-array v3, v2, [Ljava/lang/Class;
    # api 34..36 com.android.server.display.DisplayControl#getPhysicalDisplayIds()
    invoke-virtual {v0, v1, v3}, Ljava/lang/Class;->getMethod(Ljava/lang/String;[Ljava/lang/Class;)Ljava/lang/reflect/Method;
    move-result-object v3
    sput-object v3, Lxagent/Frame;->ids:Ljava/lang/reflect/Method;
    const-string v1, "getPhysicalDisplayToken"
    const/4 v2, 1
    new-array v3, v2, [Ljava/lang/Class;
    sget-object v4, Ljava/lang/Long;->TYPE:Ljava/lang/Class;
    const/4 v5, 0
    aput-object v4, v3, v5
    # api 34..36 com.android.server.display.DisplayControl#getPhysicalDisplayToken(long)
    invoke-virtual {v0, v1, v3}, Ljava/lang/Class;->getMethod(Ljava/lang/String;[Ljava/lang/Class;)Ljava/lang/reflect/Method;
    move-result-object v3
    sput-object v3, Lxagent/Frame;->token:Ljava/lang/reflect/Method;
    const/4 v2, 3
    sput v2, Lxagent/Frame;->kind:I
    :ok
    const-string v0, "ok"
    sput-object v0, Lxagent/Frame;->state:Ljava/lang/String;
    :try_end
    .catch Ljava/lang/Throwable; {:try_start .. :try_end} :missing
    :missing
    return-void
.end method

# owner.captureDisplay(ARGS) and ARGS$Builder(IBinder), both kept
.method static captureCall(Ljava/lang/Class;Ljava/lang/String;)V
    .locals 5
    # api generic (the callers name the class)
    invoke-static {p1}, Ljava/lang/Class;->forName(Ljava/lang/String;)Ljava/lang/Class;
    move-result-object v0
    const/4 v1, 1
    new-array v2, v1, [Ljava/lang/Class;
    const/4 v3, 0
    aput-object v0, v2, v3
    const-string v4, "captureDisplay"
    # api generic
    invoke-virtual {p0, v4, v2}, Ljava/lang/Class;->getMethod(Ljava/lang/String;[Ljava/lang/Class;)Ljava/lang/reflect/Method;
    move-result-object v2
    sput-object v2, Lxagent/Frame;->capture:Ljava/lang/reflect/Method;
    const-string v4, "$Builder"
    invoke-static {p1, v4}, Lxagent/Helper;->cat(Ljava/lang/String;Ljava/lang/String;)Ljava/lang/String;
    move-result-object v4
    # api generic
    invoke-static {v4}, Ljava/lang/Class;->forName(Ljava/lang/String;)Ljava/lang/Class;
    move-result-object v0
    new-array v2, v1, [Ljava/lang/Class;
    const-class v4, Landroid/os/IBinder;
    aput-object v4, v2, v3
    # api generic
    invoke-virtual {v0, v2}, Ljava/lang/Class;->getConstructor([Ljava/lang/Class;)Ljava/lang/reflect/Constructor;
    move-result-object v2
    sput-object v2, Lxagent/Frame;->builder:Ljava/lang/reflect/Constructor;
    return-void
.end method

# com.android.server.display.DisplayControl (Android 14+) from a class loader on the system server's whole class
# path, $SYSTEMSERVERCLASSPATH (services.jar alone when unset). Helper D1: on services.jar alone, loading
# libandroid_servers aborted the process on vendor ROMs whose JNI_OnLoad registers natives of classes in other
# jars of that path (scrcpy #5274 Transsion, #4943 Honor, #4616 Meizu; scrcpy a507b4f5 "Use the full system server
# classpath"), and it ran here, in the probe, before the greeting: every verb was lost. The library is now loaded
# on the first frame (lib), so even an abort costs only `frame` (the host then keeps screencap).
.method static displayControl()Ljava/lang/Class;
    .locals 10
    const-string v0, "com.android.internal.os.ClassLoaderFactory"
    # api 34..36 com.android.internal.os.ClassLoaderFactory
    invoke-static {v0}, Ljava/lang/Class;->forName(Ljava/lang/String;)Ljava/lang/Class;
    move-result-object v0
    # createClassLoader(String dexPath, String librarySearchPath, String libraryPermittedPath,
    #                   ClassLoader parent, int targetSdkVersion, boolean isNamespaceShared, String classLoaderName)
    const/4 v1, 7
    new-array v2, v1, [Ljava/lang/Class;
    const-class v3, Ljava/lang/String;
    const/4 v4, 0
    aput-object v3, v2, v4
    const/4 v4, 1
    aput-object v3, v2, v4
    const/4 v4, 2
    aput-object v3, v2, v4
    const-class v5, Ljava/lang/ClassLoader;
    const/4 v4, 3
    aput-object v5, v2, v4
    sget-object v5, Ljava/lang/Integer;->TYPE:Ljava/lang/Class;
    const/4 v4, 4
    aput-object v5, v2, v4
    sget-object v5, Ljava/lang/Boolean;->TYPE:Ljava/lang/Class;
    const/4 v4, 5
    aput-object v5, v2, v4
    const/4 v4, 6
    aput-object v3, v2, v4
    const-string v3, "createClassLoader"
    # api 34..36 com.android.internal.os.ClassLoaderFactory#createClassLoader(java.lang.String,java.lang.String,java.lang.String,java.lang.ClassLoader,int,boolean,java.lang.String)
    invoke-virtual {v0, v3, v2}, Ljava/lang/Class;->getDeclaredMethod(Ljava/lang/String;[Ljava/lang/Class;)Ljava/lang/reflect/Method;
    move-result-object v0
    new-array v2, v1, [Ljava/lang/Object;
    const-string v3, "SYSTEMSERVERCLASSPATH"
    invoke-static {v3}, Ljava/lang/System;->getenv(Ljava/lang/String;)Ljava/lang/String;
    move-result-object v3
    if-eqz v3, :no_env
    invoke-virtual {v3}, Ljava/lang/String;->isEmpty()Z
    move-result v4
    if-eqz v4, :path
    :no_env
    const-string v3, "/system/framework/services.jar"
    :path
    const/4 v4, 0
    aput-object v3, v2, v4
    invoke-static {}, Ljava/lang/ClassLoader;->getSystemClassLoader()Ljava/lang/ClassLoader;
    move-result-object v3
    const/4 v4, 3
    aput-object v3, v2, v4
    const/4 v3, 0
    invoke-static {v3}, Ljava/lang/Integer;->valueOf(I)Ljava/lang/Integer;
    move-result-object v3
    const/4 v4, 4
    aput-object v3, v2, v4
    sget-object v3, Ljava/lang/Boolean;->TRUE:Ljava/lang/Boolean;
    const/4 v4, 5
    aput-object v3, v2, v4
    const/4 v3, 0
    invoke-virtual {v0, v3, v2}, Ljava/lang/reflect/Method;->invoke(Ljava/lang/Object;[Ljava/lang/Object;)Ljava/lang/Object;
    move-result-object v0
    check-cast v0, Ljava/lang/ClassLoader;
    const-string v1, "com.android.server.display.DisplayControl"
    invoke-virtual {v0, v1}, Ljava/lang/ClassLoader;->loadClass(Ljava/lang/String;)Ljava/lang/Class;
    move-result-object v9
    sput-object v9, Lxagent/Frame;->dc:Ljava/lang/Class;
    return-object v9
.end method

# Loads DisplayControl's JNI library (libandroid_servers) into its class loader's namespace, once, on the first
# frame: Runtime.loadLibrary0(Class fromClass, String libname) (android-34 java/lang/Runtime.java:1001). A library
# that will not load is not fatal here (the capture that needs it fails then, and the verb answers `failed`).
.method static lib()V
    .locals 6
    sget-boolean v0, Lxagent/Frame;->lib:Z
    if-eqz v0, :load
    return-void
    :load
    const/4 v0, 1
    sput-boolean v0, Lxagent/Frame;->lib:Z
    sget-object v0, Lxagent/Frame;->dc:Ljava/lang/Class;
    if-nez v0, :try_lib
    return-void
    :try_lib
    const/4 v1, 2
    new-array v2, v1, [Ljava/lang/Class;
    const-class v3, Ljava/lang/Class;
    const/4 v4, 0
    aput-object v3, v2, v4
    const-class v3, Ljava/lang/String;
    const/4 v4, 1
    aput-object v3, v2, v4
    const-class v3, Ljava/lang/Runtime;
    const-string v4, "loadLibrary0"
    # api 34..36 java.lang.Runtime#loadLibrary0(java.lang.Class,java.lang.String)
    invoke-virtual {v3, v4, v2}, Ljava/lang/Class;->getDeclaredMethod(Ljava/lang/String;[Ljava/lang/Class;)Ljava/lang/reflect/Method;
    move-result-object v3
    const/4 v4, 1
    invoke-virtual {v3, v4}, Ljava/lang/reflect/Method;->setAccessible(Z)V
    new-array v2, v1, [Ljava/lang/Object;
    const/4 v4, 0
    aput-object v0, v2, v4
    const-string v5, "android_servers"
    const/4 v4, 1
    aput-object v5, v2, v4
    invoke-static {}, Ljava/lang/Runtime;->getRuntime()Ljava/lang/Runtime;
    move-result-object v4
    invoke-virtual {v3, v4, v2}, Ljava/lang/reflect/Method;->invoke(Ljava/lang/Object;[Ljava/lang/Object;)Ljava/lang/Object;
    :try_lib_end
    .catch Ljava/lang/Throwable; {:try_lib .. :try_lib_end} :lib_done
    :lib_done
    return-void
.end method

# ID frame GW GH -> "frame W H GW GH <B64>": the display (W x H as captured) in GW x GH cells (8-64 each), each
# the rounded mean R, G, B of every pixel in it, row by row, base64 of the GW*GH*3 bytes.
.method static opFrame([Ljava/lang/String;)Ljava/lang/String;
    .locals 6
    const/4 v0, 2
    invoke-static {p0, v0}, Lxagent/Helper;->arity([Ljava/lang/String;I)V
    const/4 v0, 2
    const/16 v1, 0x8
    const/16 v2, 0x40
    invoke-static {p0, v0, v1, v2}, Lxagent/Helper;->argInt([Ljava/lang/String;III)I
    move-result v3
    const/4 v0, 3
    invoke-static {p0, v0, v1, v2}, Lxagent/Helper;->argInt([Ljava/lang/String;III)I
    move-result v4
    sget-object v0, Lxagent/Frame;->state:Ljava/lang/String;
    const-string v1, "ok"
    invoke-virtual {v1, v0}, Ljava/lang/String;->equals(Ljava/lang/Object;)Z
    move-result v1
    if-nez v1, :available
    const-string v1, "unavailable"
    invoke-static {v1, v0}, Lxagent/Helper;->err(Ljava/lang/String;Ljava/lang/String;)Lxagent/Err;
    move-result-object v0
    throw v0
    :available
    invoke-static {}, Lxagent/Frame;->shot()Landroid/graphics/Bitmap;
    move-result-object v0
    if-nez v0, :have
    const-string v0, "failed"
    const-string v1, "the display gave no picture"
    invoke-static {v0, v1}, Lxagent/Helper;->err(Ljava/lang/String;Ljava/lang/String;)Lxagent/Err;
    move-result-object v0
    throw v0
    :have
    # a hardware bitmap (12+) cannot be read pixel by pixel: copy it to memory first
    sget-object v1, Landroid/graphics/Bitmap$Config;->ARGB_8888:Landroid/graphics/Bitmap$Config;
    const/4 v2, 0
    invoke-virtual {v0, v1, v2}, Landroid/graphics/Bitmap;->copy(Landroid/graphics/Bitmap$Config;Z)Landroid/graphics/Bitmap;
    move-result-object v1
    invoke-virtual {v0}, Landroid/graphics/Bitmap;->recycle()V
    invoke-static {}, Lxagent/Frame;->release()V
    if-nez v1, :copied
    const-string v0, "failed"
    const-string v1, "the picture could not be copied"
    invoke-static {v0, v1}, Lxagent/Helper;->err(Ljava/lang/String;Ljava/lang/String;)Lxagent/Err;
    move-result-object v0
    throw v0
    :copied
    sget v5, Lxagent/Frame;->turn:I
    invoke-static {v1, v3, v4, v5}, Lxagent/Frame;->grid(Landroid/graphics/Bitmap;III)Ljava/lang/String;
    move-result-object v0
    invoke-virtual {v1}, Landroid/graphics/Bitmap;->recycle()V
    return-object v0
.end method

# Helper D9: on 12+ the picture wraps the screenshot's HardwareBuffer (android-31 SurfaceControl.java:716-721
# asBitmap: Bitmap.wrapHardwareBuffer(mHardwareBuffer, ...)); recycling the Bitmap leaves the buffer (~10 MB for
# 1080x2400) to the garbage collector. It is closed as soon as the picture is copied (HardwareBuffer.close, API 26).
.method static release()V
    .locals 3
    sget-object v0, Lxagent/Frame;->buf:Ljava/lang/Object;
    const/4 v1, 0
    sput-object v1, Lxagent/Frame;->buf:Ljava/lang/Object;
    if-eqz v0, :done
    :try_start
    const-string v2, "getHardwareBuffer"
    # api 31..33 android.view.SurfaceControl$ScreenshotHardwareBuffer#getHardwareBuffer(*)
    # api 34..36 android.window.ScreenCapture$ScreenshotHardwareBuffer#getHardwareBuffer(*)
    invoke-static {v0, v2, v1}, Lxagent/Helper;->call(Ljava/lang/Object;Ljava/lang/String;Ljava/lang/Object;)Ljava/lang/Object;
    move-result-object v0
    check-cast v0, Landroid/hardware/HardwareBuffer;
    if-eqz v0, :done
    invoke-virtual {v0}, Landroid/hardware/HardwareBuffer;->close()V
    :try_end
    .catch Ljava/lang/Throwable; {:try_start .. :try_end} :done
    :done
    return-void
.end method

# The display as a Bitmap through the call probe found (null when the system gave none).
.method static shot()Landroid/graphics/Bitmap;
    .locals 9
    sget v0, Lxagent/Frame;->kind:I
    sget-object v1, Lxagent/Frame;->capture:Ljava/lang/reflect/Method;
    const/4 v2, 0
    sput v2, Lxagent/Frame;->turn:I
    packed-switch v0, :kinds
    return-object v2
    :k0
    # Helper D11. screenshot(int, int) captures at Surface.ROTATION_0 (api26 android/view/SurfaceControl.java:901-906,
    # api27 :911-916: nativeScreenshot(..., width, height, ..., Surface.ROTATION_0)): the display in its natural
    # orientation, scaled to what it is given, so in landscape the logical size squeezed it. AOSP's own shell-side
    # screenshot on 8.x (api26 android/app/UiAutomation.java:685-750, api27 the same lines) reads the rotation, swaps
    # W and H for 90/270 (:699-718) to capture at the natural size (UiAutomationConnection.java:152-160 api26,
    # :156-164 api27: SurfaceControl.screenshot(width, height)), then turns the picture by
    # getDegreesForRotation(rotation) = 360 - 90 * rotation (:737-750, :1015-1029). The same here; grid turns it.
    invoke-static {}, Lxagent/Frame;->info()[I
    move-result-object v3
    const/4 v4, 2
    aget v5, v3, v4
    sput v5, Lxagent/Frame;->turn:I
    const/4 v4, 0
    aget v6, v3, v4
    const/4 v4, 1
    aget v7, v3, v4
    and-int/lit8 v5, v5, 0x1
    if-eqz v5, :natural
    move v4, v6
    move v6, v7
    move v7, v4
    :natural
    invoke-static {v6}, Ljava/lang/Integer;->valueOf(I)Ljava/lang/Integer;
    move-result-object v5
    invoke-static {v7}, Ljava/lang/Integer;->valueOf(I)Ljava/lang/Integer;
    move-result-object v6
    const/4 v7, 2
    new-array v7, v7, [Ljava/lang/Object;
    const/4 v8, 0
    aput-object v5, v7, v8
    const/4 v8, 1
    aput-object v6, v7, v8
    goto :invoke
    :k1
    # Helper D11. With rotation 0 and no size, screenshot(Rect, int, int, int) gives SurfaceFlinger's "native portrait
    # orientation" (api28 android/view/SurfaceControl.java:1264-1271, the javadoc of this call): in landscape W and H
    # swapped and the content turned. AOSP's UiAutomation on 9-11 passes new Rect(0, 0, W, H) of the logical size and
    # the display's rotation (api28 android/app/UiAutomation.java:707-735, api29 :807-835, api30 :838-866), and
    # UiAutomationConnection W = crop.width(), H = crop.height() (api28 UiAutomationConnection.java:157-167, api29
    # :178-188, api30 :183-193); the call itself turns 90/270 into SurfaceFlinger's sense and the crop with it
    # (api28 SurfaceControl.java:1275-1286, api29 :1898-1913, api30 :2016-2031). The same here: upright, W x H.
    invoke-static {}, Lxagent/Frame;->info()[I
    move-result-object v3
    const/4 v4, 0
    aget v5, v3, v4
    const/4 v4, 1
    aget v6, v3, v4
    const/4 v4, 2
    aget v8, v3, v4
    new-instance v3, Landroid/graphics/Rect;
    const/4 v4, 0
    invoke-direct {v3, v4, v4, v5, v6}, Landroid/graphics/Rect;-><init>(IIII)V
    const/4 v7, 4
    new-array v7, v7, [Ljava/lang/Object;
    aput-object v3, v7, v4
    invoke-static {v5}, Ljava/lang/Integer;->valueOf(I)Ljava/lang/Integer;
    move-result-object v3
    const/4 v4, 1
    aput-object v3, v7, v4
    invoke-static {v6}, Ljava/lang/Integer;->valueOf(I)Ljava/lang/Integer;
    move-result-object v3
    const/4 v4, 2
    aput-object v3, v7, v4
    invoke-static {v8}, Ljava/lang/Integer;->valueOf(I)Ljava/lang/Integer;
    move-result-object v3
    const/4 v4, 3
    aput-object v3, v7, v4
    goto :invoke
    :k2
    # kind 2 was 12-13's getInternalDisplayToken() (the first physical display, D10): no longer chosen, 12-13 are kind 3
    return-object v2
    :k3
    invoke-static {}, Lxagent/Frame;->lib()V
    # the token of the physical display behind logical display 0 (physicalId)
    sget-object v3, Lxagent/Frame;->ids:Ljava/lang/reflect/Method;
    const/4 v4, 0
    new-array v5, v4, [Ljava/lang/Object;
    invoke-virtual {v3, v2, v5}, Ljava/lang/reflect/Method;->invoke(Ljava/lang/Object;[Ljava/lang/Object;)Ljava/lang/Object;
    move-result-object v3
    check-cast v3, [J
    array-length v5, v3
    if-nez v5, :has_display
    return-object v2
    :has_display
    invoke-static {v3}, Lxagent/Frame;->physicalId([J)J
    move-result-wide v5
    invoke-static {v5, v6}, Ljava/lang/Long;->valueOf(J)Ljava/lang/Long;
    move-result-object v5
    const/4 v3, 1
    new-array v6, v3, [Ljava/lang/Object;
    aput-object v5, v6, v4
    sget-object v3, Lxagent/Frame;->token:Ljava/lang/reflect/Method;
    invoke-virtual {v3, v2, v6}, Ljava/lang/reflect/Method;->invoke(Ljava/lang/Object;[Ljava/lang/Object;)Ljava/lang/Object;
    move-result-object v3
    :args
    # new DisplayCaptureArgs.Builder(token).build(), then captureDisplay(args).asBitmap()
    if-nez v3, :has_token
    return-object v2
    :has_token
    const/4 v4, 1
    new-array v5, v4, [Ljava/lang/Object;
    const/4 v6, 0
    aput-object v3, v5, v6
    sget-object v3, Lxagent/Frame;->builder:Ljava/lang/reflect/Constructor;
    invoke-virtual {v3, v5}, Ljava/lang/reflect/Constructor;->newInstance([Ljava/lang/Object;)Ljava/lang/Object;
    move-result-object v3
    const-string v4, "build"
    # api 31..33 android.view.SurfaceControl$DisplayCaptureArgs$Builder#build(*)
    # api 34..36 android.window.ScreenCapture$DisplayCaptureArgs$Builder#build(*)
    invoke-static {v3, v4, v2}, Lxagent/Helper;->call(Ljava/lang/Object;Ljava/lang/String;Ljava/lang/Object;)Ljava/lang/Object;
    move-result-object v3
    const/4 v4, 1
    new-array v7, v4, [Ljava/lang/Object;
    aput-object v3, v7, v6
    invoke-virtual {v1, v2, v7}, Ljava/lang/reflect/Method;->invoke(Ljava/lang/Object;[Ljava/lang/Object;)Ljava/lang/Object;
    move-result-object v3
    if-nez v3, :has_buffer
    return-object v2
    :has_buffer
    sput-object v3, Lxagent/Frame;->buf:Ljava/lang/Object;
    const-string v4, "asBitmap"
    # api 31..33 android.view.SurfaceControl$ScreenshotHardwareBuffer#asBitmap(*)
    # api 34..36 android.window.ScreenCapture$ScreenshotHardwareBuffer#asBitmap(*)
    invoke-static {v3, v4, v2}, Lxagent/Helper;->call(Ljava/lang/Object;Ljava/lang/String;Ljava/lang/Object;)Ljava/lang/Object;
    move-result-object v3
    check-cast v3, Landroid/graphics/Bitmap;
    return-object v3
    :invoke
    invoke-virtual {v1, v2, v7}, Ljava/lang/reflect/Method;->invoke(Ljava/lang/Object;[Ljava/lang/Object;)Ljava/lang/Object;
    move-result-object v3
    check-cast v3, Landroid/graphics/Bitmap;
    return-object v3
    :kinds
    .packed-switch 0x0
        :k0
        :k1
        :k2
        :k3
    .end packed-switch
.end method

# {W, H, rotation} of display 0: its logical size (after rotation) and rotation (0-3), from the display service
.method static info()[I
    .locals 5
    sget-object v0, Lxagent/Helper;->display:Ljava/lang/Object;
    const-string v1, "getDisplayInfo"
    const/4 v2, 0
    # api 26..30 android.hardware.display.IDisplayManager#getDisplayInfo(*)
    invoke-static {v0, v1, v2}, Lxagent/Helper;->call(Ljava/lang/Object;Ljava/lang/String;Ljava/lang/Object;)Ljava/lang/Object;
    move-result-object v0
    invoke-virtual {v0}, Ljava/lang/Object;->getClass()Ljava/lang/Class;
    move-result-object v1
    const/4 v2, 3
    new-array v2, v2, [I
    const-string v3, "logicalWidth"
    # api 26..30 android.view.DisplayInfo#logicalWidth:int
    invoke-virtual {v1, v3}, Ljava/lang/Class;->getField(Ljava/lang/String;)Ljava/lang/reflect/Field;
    move-result-object v3
    invoke-virtual {v3, v0}, Ljava/lang/reflect/Field;->getInt(Ljava/lang/Object;)I
    move-result v3
    const/4 v4, 0
    aput v3, v2, v4
    const-string v3, "logicalHeight"
    # api 26..30 android.view.DisplayInfo#logicalHeight:int
    invoke-virtual {v1, v3}, Ljava/lang/Class;->getField(Ljava/lang/String;)Ljava/lang/reflect/Field;
    move-result-object v3
    invoke-virtual {v3, v0}, Ljava/lang/reflect/Field;->getInt(Ljava/lang/Object;)I
    move-result v3
    const/4 v4, 1
    aput v3, v2, v4
    const-string v3, "rotation"
    # api 26..30 android.view.DisplayInfo#rotation:int
    invoke-virtual {v1, v3}, Ljava/lang/Class;->getField(Ljava/lang/String;)Ljava/lang/reflect/Field;
    move-result-object v3
    invoke-virtual {v3, v0}, Ljava/lang/reflect/Field;->getInt(Ljava/lang/Object;)I
    move-result v3
    and-int/lit8 v3, v3, 0x3
    const/4 v4, 2
    aput v3, v2, v4
    return-object v2
.end method

# The physical display behind logical display 0, among ids (not empty): DisplayInfo.address, a
# DisplayAddress$Physical, gives its id (12+; helper D10: on a foldable the first physical display may be the panel that
# is off; AOSP android-34 DisplayInfo.java `public DisplayAddress address`, DisplayAddress.Physical
# `getPhysicalDisplayId()`; Appium's uiautomator2 DisplayIdHelper takes the same route). The first id when the
# address is missing, not physical, or not among ids.
.method static physicalId([J)J
    .locals 8
    const/4 v0, 0
    aget-wide v1, p0, v0
    :try_start
    sget-object v3, Lxagent/Helper;->display:Ljava/lang/Object;
    # api 31..36 android.hardware.display.IDisplayManager#getDisplayInfo(*)
    const-string v4, "getDisplayInfo"
    const/4 v5, 0
    invoke-static {v3, v4, v5}, Lxagent/Helper;->call(Ljava/lang/Object;Ljava/lang/String;Ljava/lang/Object;)Ljava/lang/Object;
    move-result-object v3
    invoke-virtual {v3}, Ljava/lang/Object;->getClass()Ljava/lang/Class;
    move-result-object v4
    # api 31..36 android.view.DisplayInfo#address:android.view.DisplayAddress
    const-string v6, "address"
    invoke-virtual {v4, v6}, Ljava/lang/Class;->getField(Ljava/lang/String;)Ljava/lang/reflect/Field;
    move-result-object v4
    invoke-virtual {v4, v3}, Ljava/lang/reflect/Field;->get(Ljava/lang/Object;)Ljava/lang/Object;
    move-result-object v3
    if-eqz v3, :first
    # api 31..36 android.view.DisplayAddress$Physical#getPhysicalDisplayId(*)
    const-string v4, "getPhysicalDisplayId"
    invoke-static {v3, v4, v5}, Lxagent/Helper;->call(Ljava/lang/Object;Ljava/lang/String;Ljava/lang/Object;)Ljava/lang/Object;
    move-result-object v3
    check-cast v3, Ljava/lang/Long;
    invoke-virtual {v3}, Ljava/lang/Long;->longValue()J
    move-result-wide v3
    array-length v5, p0
    :each
    if-ge v0, v5, :first
    aget-wide v6, p0, v0
    cmp-long v6, v6, v3
    if-nez v6, :next
    return-wide v3
    :next
    add-int/lit8 v0, v0, 0x1
    goto :each
    :try_end
    .catch Ljava/lang/Throwable; {:try_start .. :try_end} :first
    :first
    return-wide v1
.end method

# "W H GW GH B64" of bitmap b turned upright by `turn` (the display's rotation, 0 when b already is upright):
# every pixel summed into its cell (row y into cell row y*GH/H, column x into x*GW/W of the upright picture; see
# part), read a row at a time so only one row is held. Sums are ints: the picture has at most 2^24 pixels (a larger one is
# `failed`) and a cell at most (W/8 + 1) * (H/8 + 1) of them (GW, GH >= 8), under 2^22, so a sum stays below 2^30.
.method static grid(Landroid/graphics/Bitmap;III)Ljava/lang/String;
    .locals 22
    invoke-virtual/range {p0 .. p0}, Landroid/graphics/Bitmap;->getWidth()I
    move-result v0
    invoke-virtual/range {p0 .. p0}, Landroid/graphics/Bitmap;->getHeight()I
    move-result v1
    if-lez v0, :bad
    if-lez v1, :bad
    mul-int v2, v0, v1
    const/high16 v3, 0x1000000
    if-gt v2, v3, :bad
    goto :sized
    :bad
    const-string v0, "failed"
    const-string v1, "the picture is empty or larger than 16 megapixels"
    invoke-static {v0, v1}, Lxagent/Helper;->err(Ljava/lang/String;Ljava/lang/String;)Lxagent/Err;
    move-result-object v0
    throw v0
    :sized
    # v2 = cells, v3 = column -> its part of the cell index, v4..v7 = r, g, b, count per cell, v8 = one row;
    # part's modes by turn 0-3: columns 0, 3, 1, 2 (v11), rows 2, 0, 3, 1 (v21)
    mul-int v2, p1, p2
    mul-int/lit8 v12, p3, 0x4
    const/16 v11, 0x2130
    shr-int/2addr v11, v12
    and-int/lit8 v11, v11, 0xf
    const/16 v21, 0x1302
    shr-int v21, v21, v12
    and-int/lit8 v21, v21, 0xf
    new-array v3, v0, [I
    const/4 v9, 0
    :cols
    if-ge v9, v0, :cols_done
    move v14, v9
    move v15, v0
    move/from16 v16, v11
    move/from16 v17, p1
    move/from16 v18, p2
    invoke-static/range {v14 .. v18}, Lxagent/Frame;->part(IIIII)I
    move-result v10
    aput v10, v3, v9
    add-int/lit8 v9, v9, 0x1
    goto :cols
    :cols_done
    new-array v4, v2, [I
    new-array v5, v2, [I
    new-array v6, v2, [I
    new-array v7, v2, [I
    new-array v8, v0, [I
    const/4 v9, 0
    :rows
    if-ge v9, v1, :rows_done
    # getPixels(row, 0, W, 0, y, W, 1)
    const/4 v11, 0
    const/4 v12, 1
    move-object/from16 v13, p0
    move-object v14, v8
    move v15, v11
    move/from16 v16, v0
    move/from16 v17, v11
    move/from16 v18, v9
    move/from16 v19, v0
    move/from16 v20, v12
    invoke-virtual/range {v13 .. v20}, Landroid/graphics/Bitmap;->getPixels([IIIIIII)V
    move v14, v9
    move v15, v1
    move/from16 v16, v21
    move/from16 v17, p1
    move/from16 v18, p2
    invoke-static/range {v14 .. v18}, Lxagent/Frame;->part(IIIII)I
    move-result v10
    const/4 v11, 0
    :px
    if-ge v11, v0, :px_done
    aget v12, v8, v11
    aget v13, v3, v11
    add-int/2addr v13, v10
    shr-int/lit8 v14, v12, 0x10
    and-int/lit16 v14, v14, 0xff
    aget v15, v4, v13
    add-int/2addr v15, v14
    aput v15, v4, v13
    shr-int/lit8 v14, v12, 0x8
    and-int/lit16 v14, v14, 0xff
    aget v15, v5, v13
    add-int/2addr v15, v14
    aput v15, v5, v13
    and-int/lit16 v14, v12, 0xff
    aget v15, v6, v13
    add-int/2addr v15, v14
    aput v15, v6, v13
    aget v15, v7, v13
    add-int/lit8 v15, v15, 0x1
    aput v15, v7, v13
    add-int/lit8 v11, v11, 0x1
    goto :px
    :px_done
    add-int/lit8 v9, v9, 0x1
    goto :rows
    :rows_done
    # the means, rounded, as bytes R G B per cell
    mul-int/lit8 v9, v2, 0x3
    new-array v8, v9, [B
    const/4 v9, 0
    :means
    if-ge v9, v2, :means_done
    aget v10, v7, v9
    if-nez v10, :counted
    const/4 v10, 1
    :counted
    div-int/lit8 v11, v10, 0x2
    mul-int/lit8 v12, v9, 0x3
    aget v13, v4, v9
    add-int/2addr v13, v11
    div-int/2addr v13, v10
    int-to-byte v13, v13
    aput-byte v13, v8, v12
    add-int/lit8 v12, v12, 0x1
    aget v13, v5, v9
    add-int/2addr v13, v11
    div-int/2addr v13, v10
    int-to-byte v13, v13
    aput-byte v13, v8, v12
    add-int/lit8 v12, v12, 0x1
    aget v13, v6, v9
    add-int/2addr v13, v11
    div-int/2addr v13, v10
    int-to-byte v13, v13
    aput-byte v13, v8, v12
    add-int/lit8 v9, v9, 0x1
    goto :means
    :means_done
    # the upright picture's W x H: b's turned by 90 or 270 degrees
    and-int/lit8 v9, p3, 0x1
    if-eqz v9, :sides
    move v9, v0
    move v0, v1
    move v1, v9
    :sides
    invoke-static {}, Ljava/util/Base64;->getEncoder()Ljava/util/Base64$Encoder;
    move-result-object v9
    invoke-virtual {v9, v8}, Ljava/util/Base64$Encoder;->encodeToString([B)Ljava/lang/String;
    move-result-object v8
    new-instance v9, Ljava/lang/StringBuilder;
    invoke-direct {v9}, Ljava/lang/StringBuilder;-><init>()V
    const-string v10, "frame "
    invoke-virtual {v9, v10}, Ljava/lang/StringBuilder;->append(Ljava/lang/String;)Ljava/lang/StringBuilder;
    invoke-virtual {v9, v0}, Ljava/lang/StringBuilder;->append(I)Ljava/lang/StringBuilder;
    const-string v10, " "
    invoke-virtual {v9, v10}, Ljava/lang/StringBuilder;->append(Ljava/lang/String;)Ljava/lang/StringBuilder;
    invoke-virtual {v9, v1}, Ljava/lang/StringBuilder;->append(I)Ljava/lang/StringBuilder;
    invoke-virtual {v9, v10}, Ljava/lang/StringBuilder;->append(Ljava/lang/String;)Ljava/lang/StringBuilder;
    move/from16 v11, p1
    invoke-virtual {v9, v11}, Ljava/lang/StringBuilder;->append(I)Ljava/lang/StringBuilder;
    invoke-virtual {v9, v10}, Ljava/lang/StringBuilder;->append(Ljava/lang/String;)Ljava/lang/StringBuilder;
    move/from16 v11, p2
    invoke-virtual {v9, v11}, Ljava/lang/StringBuilder;->append(I)Ljava/lang/StringBuilder;
    invoke-virtual {v9, v10}, Ljava/lang/StringBuilder;->append(Ljava/lang/String;)Ljava/lang/StringBuilder;
    invoke-virtual {v9, v8}, Ljava/lang/StringBuilder;->append(Ljava/lang/String;)Ljava/lang/StringBuilder;
    invoke-virtual {v9}, Ljava/lang/StringBuilder;->toString()Ljava/lang/String;
    move-result-object v8
    return-object v8
.end method

# Where pixel i of n along one side of the picture goes in the cell index of the upright GW x GH grid: mode bit 1
# flips it (n - 1 - i), bit 2 makes it a row of the upright picture ((i * GH / n) * GW) rather than a column
# (i * GW / n). AOSP turns 8.x's natural-orientation picture upright by drawing it rotated by
# getDegreesForRotation(rotation) = 360 - 90 * rotation degrees about the centres (api26 android/app/UiAutomation.java
# :737-750, :1015-1029), which puts the natural pixel (x, y) of a w x h picture at, upright: rotation 1 (x', y') =
# (y, w-1-x), 2 (w-1-x, h-1-y), 3 (h-1-y, x). Hence grid's modes: columns 0, 3, 1, 2 and rows 2, 0, 3, 1 by turn.
.method static part(IIIII)I
    .locals 2
    and-int/lit8 v0, p2, 0x1
    if-eqz v0, :kept
    sub-int v0, p1, p0
    add-int/lit8 p0, v0, -0x1
    :kept
    and-int/lit8 v0, p2, 0x2
    if-eqz v0, :across
    mul-int v0, p0, p4
    div-int/2addr v0, p1
    mul-int/2addr v0, p3
    return v0
    :across
    mul-int v0, p0, p3
    div-int/2addr v0, p1
    return v0
.end method

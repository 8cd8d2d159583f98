package xagentstub;

import java.io.IOException;
import java.io.InputStream;

/**
 * The class loader ClassLoaderFactory makes on a phone: it defines com.android.server.display.DisplayControl
 * itself (so Runtime.loadLibrary0(DisplayControl.class, ...) asks this loader for the library, as ART does through
 * the class's loader) and models loading libandroid_servers: its JNI_OnLoad registers the natives of every system
 * server class it knows, and when one lives in a jar outside this loader's dex path, jniRegisterNativeMethods
 * aborts the whole process ("Native registration unable to find class '...'; aborting...": scrcpy #5274 Tecno
 * Pova 5, #4943 Honor, #4616 Meizu 20, all Android 14; fixed in scrcpy a507b4f5 by the full SYSTEMSERVERCLASSPATH).
 * -Dstub.natives_need=JAR: the library needs JAR on the dex path, else the process aborts (status 134). The library
 * is not really there: otherwise the load fails as on a host (UnsatisfiedLinkError).
 */
public final class ServerLoader extends ClassLoader {
    private static final String DC = "com.android.server.display.DisplayControl";
    private final String dexPath;

    public ServerLoader(String dexPath, ClassLoader parent) {
        super(parent);
        this.dexPath = dexPath;
    }

    @Override
    protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
        if (!name.equals(DC) && !name.startsWith(DC + "$")) return super.loadClass(name, resolve);
        synchronized (getClassLoadingLock(name)) {
            Class<?> c = findLoadedClass(name);
            if (c != null) return c;
            try (InputStream in = getParent().getResourceAsStream(name.replace('.', '/') + ".class")) {
                byte[] b = in.readAllBytes();
                return defineClass(name, b, 0, b.length);
            } catch (IOException | NullPointerException e) {
                throw new ClassNotFoundException(name, e);
            }
        }
    }

    @Override
    protected String findLibrary(String libname) {
        Rec.log("native load " + libname);
        String need = Rec.prop("natives_need", null);
        if (need != null && !java.util.Arrays.asList(dexPath.split(":")).contains(need)) {
            Rec.log("abort: Native registration unable to find class in " + need + "; aborting...");
            Runtime.getRuntime().halt(134);
        }
        return null;
    }
}

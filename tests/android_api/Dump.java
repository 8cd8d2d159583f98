import java.io.File;
import java.lang.reflect.Constructor;
import java.lang.reflect.Executable;
import java.lang.reflect.Field;
import java.lang.reflect.Member;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.net.URL;
import java.net.URLClassLoader;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * Prints every public or protected member of the compiled android.* / com.android.* stubs (args: the stubs' class
 * directory), one per line: class, member, static, params, return, from, to, of, vendor, plumbing (tab-separated;
 * member "<class>" for the class itself, "<init>" for a constructor). Classes are loaded without initialising them,
 * so no stub behaviour runs.
 */
public class Dump {
    public static void main(String[] args) throws Exception {
        File root = new File(args[0]);
        List<String> names = new ArrayList<>();
        walk(root, "", names);
        Collections.sort(names);
        ClassLoader loader = new URLClassLoader(new URL[] {root.toURI().toURL()}, Dump.class.getClassLoader());
        Class<? extends java.lang.annotation.Annotation> apiClass =
                Class.forName("xagentstub.Api", false, loader).asSubclass(java.lang.annotation.Annotation.class);
        for (String name : names) {
            if (!name.startsWith("android.") && !name.startsWith("com.android.")) continue;
            Class<?> c = Class.forName(name, false, loader);
            if (c.isSynthetic() || c.isAnonymousClass() || c.isLocalClass()) continue;
            Object ca = c.getAnnotation(apiClass);
            print(name, "<class>", "-", "-", "-", ca, null, apiClass);
            List<Member> members = new ArrayList<>();
            Collections.addAll(members, c.getDeclaredConstructors());
            Collections.addAll(members, c.getDeclaredMethods());
            Collections.addAll(members, c.getDeclaredFields());
            for (Member m : members) {
                int mod = m.getModifiers();
                if (m.isSynthetic() || !(Modifier.isPublic(mod) || Modifier.isProtected(mod))) continue;
                if (m instanceof Method && ((Method) m).isBridge()) continue;
                String stat = Modifier.isStatic(mod) ? "static" : "instance";
                Object ma = ((java.lang.reflect.AnnotatedElement) m).getAnnotation(apiClass);
                if (m instanceof Field) {
                    print(name, m.getName(), stat, "-", type(((Field) m).getType()), ma, ca, apiClass);
                } else {
                    Executable e = (Executable) m;
                    StringBuilder ps = new StringBuilder();
                    Class<?>[] types = e.getParameterTypes();
                    // an inner (non-static) class's constructor takes its outer instance first: not in the source
                    int skip = (e instanceof Constructor && c.getEnclosingClass() != null
                            && !Modifier.isStatic(c.getModifiers())) ? 1 : 0;
                    for (int i = skip; i < types.length; i++) ps.append(ps.length() > 0 ? "," : "").append(type(types[i]));
                    String member = e instanceof Constructor ? "<init>" : e.getName();
                    String ret = e instanceof Method ? type(((Method) e).getReturnType()) : "void";
                    print(name, member, e instanceof Constructor ? "instance" : stat, ps.toString(), ret, ma, ca, apiClass);
                }
            }
        }
    }

    static String type(Class<?> t) {
        if (t.isArray()) return type(t.getComponentType()) + "[]";
        return t.getName();
    }

    static void print(String cls, String member, String stat, String params, String ret, Object a, Object classA,
            Class<?> apiClass) throws Exception {
        Object use = a != null ? a : classA;
        String from = "26", to = "36", of = "", vendor = "", plumbing = "";
        if (use != null) {
            from = String.valueOf(apiClass.getMethod("from").invoke(use));
            to = String.valueOf(apiClass.getMethod("to").invoke(use));
            of = (String) apiClass.getMethod("of").invoke(use);
            vendor = (String) apiClass.getMethod("vendor").invoke(use);
            plumbing = (String) apiClass.getMethod("plumbing").invoke(use);
        }
        System.out.println(String.join("\t", cls, member, stat, params, ret, from, to, of,
                vendor.isEmpty() ? "-" : "vendor", plumbing.isEmpty() ? "-" : "plumbing"));
    }

    static void walk(File dir, String pkg, List<String> out) {
        File[] files = dir.listFiles();
        if (files == null) return;
        for (File f : files) {
            if (f.isDirectory()) walk(f, pkg + f.getName() + ".", out);
            else if (f.getName().endsWith(".class")) out.add(pkg + f.getName().substring(0, f.getName().length() - 6));
        }
    }
}

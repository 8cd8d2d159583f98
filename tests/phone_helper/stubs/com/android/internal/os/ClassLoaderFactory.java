package com.android.internal.os;

/** Records the class loader the helper asks for (services.jar on 14+) and answers the stubs' own loader. */
public final class ClassLoaderFactory {
    public static ClassLoader createClassLoader(String dexPath, String librarySearchPath, String libraryPermittedPath,
            ClassLoader parent, int targetSdkVersion, boolean isNamespaceShared, String classLoaderName) {
        xagentstub.Rec.log("ClassLoaderFactory.createClassLoader(" + xagentstub.Rec.q(dexPath) + ", "
                + targetSdkVersion + ", " + isNamespaceShared + ")");
        return ClassLoaderFactory.class.getClassLoader();
    }
}

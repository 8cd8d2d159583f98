package com.android.internal.os;

/**
 * Records the class loader the helper asks for (the system server's class path on 14+) and answers one that
 * defines DisplayControl itself, so the JNI library the helper loads for it is looked up through that loader
 * (xagentstub.ServerLoader: where a vendor's native registration aborts).
 */
@xagentstub.Api(from = 27) // tests/fixtures/android-api/signatures.tsv: the class from api27 (8.0 has PathClassLoaderFactory)
public final class ClassLoaderFactory {
    public static ClassLoader createClassLoader(String dexPath, String librarySearchPath, String libraryPermittedPath,
            ClassLoader parent, int targetSdkVersion, boolean isNamespaceShared, String classLoaderName) {
        xagentstub.Rec.log("ClassLoaderFactory.createClassLoader(" + xagentstub.Rec.q(dexPath) + ", "
                + targetSdkVersion + ", " + isNamespaceShared + ")");
        return new xagentstub.ServerLoader(dexPath, ClassLoaderFactory.class.getClassLoader());
    }
}

package xagentstub;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Where a stub member exists on real Android: tests/android_api.rs checks every public or protected member of the
 * android.* / com.android.* stubs against the signature tables of tests/fixtures/android-api/ at each API level of
 * its range (26..36 when not annotated; a member without its own annotation takes its class's). `of` names the
 * framework class a private class's methods are (a binder interface's per-version Proxy shapes); `vendor` marks a
 * shape no AOSP source has, with its field report; `plumbing` marks what is not a framework member at all, with
 * what the stubs use it for.
 */
@Retention(RetentionPolicy.RUNTIME)
@Target({ElementType.TYPE, ElementType.METHOD, ElementType.CONSTRUCTOR, ElementType.FIELD})
public @interface Api {
    int from() default 26;

    int to() default 36;

    String of() default "";

    String vendor() default "";

    String plumbing() default "";
}

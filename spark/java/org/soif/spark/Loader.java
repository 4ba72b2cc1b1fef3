package org.soif.spark;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Locale;

/** Finds and loads {@code libsoif_spark.so} (see {@link Native}). */
final class Loader {
    private Loader() {}

    static synchronized void load() {
        String explicit = System.getProperty("soif.native.library");
        if (explicit == null || explicit.isEmpty()) {
            explicit = System.getenv("SOIF_NATIVE_LIBRARY");
        }
        if (explicit != null && !explicit.isEmpty()) {
            System.load(explicit);
            return;
        }
        String os = System.getProperty("os.name").toLowerCase(Locale.ROOT);
        String arch = System.getProperty("os.arch").toLowerCase(Locale.ROOT);
        if (arch.equals("amd64")) {
            arch = "x86_64";
        }
        String platform = (os.contains("linux") ? "linux" : os.contains("mac") ? "macos" : os) + "-" + arch;
        String name = os.contains("mac") ? "libsoif_spark.dylib" : "libsoif_spark.so";
        String resource = "/native/" + platform + "/" + name;
        try (InputStream in = Loader.class.getResourceAsStream(resource)) {
            if (in == null) {
                throw new UnsatisfiedLinkError(
                        "soif: this jar holds no native library for " + platform + " (" + resource
                                + "); build it there (spark/build.sh), or set -Dsoif.native.library=PATH");
            }
            Path tmp = Files.createTempFile("soif_spark", name);
            tmp.toFile().deleteOnExit();
            Files.copy(in, tmp, StandardCopyOption.REPLACE_EXISTING);
            System.load(tmp.toString());
        } catch (IOException e) {
            throw new UnsatisfiedLinkError("soif: copying the native library out of the jar: " + e);
        }
    }
}

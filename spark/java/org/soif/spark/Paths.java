package org.soif.spark;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;

/**
 * What the scan needs to know of a local file besides its name. Which files the paths
 * given to {@code load} name is decided by the native side ({@link Native#expand}), with
 * the same code as the Python data source's.
 */
final class Paths {
    private Paths() {}

    private static final byte[][] MAGIC = {
        {0x1f, (byte) 0x8b}, {'B', 'Z', 'h'}, {(byte) 0xfd, '7', 'z', 'X', 'Z', 0}, {0x28, (byte) 0xb5, 0x2f, (byte) 0xfd},
    };

    /** Whether the file starts as a gzip, bzip2, xz or zstd stream. */
    static boolean compressed(String path) throws IOException {
        byte[] head = new byte[6];
        int n;
        try (InputStream in = Files.newInputStream(Path.of(path))) {
            n = in.readNBytes(head, 0, head.length);
        }
        for (byte[] m : MAGIC) {
            if (n >= m.length && Arrays.equals(Arrays.copyOf(head, m.length), m)) {
                return true;
            }
        }
        return false;
    }
}

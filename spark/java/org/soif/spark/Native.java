package org.soif.spark;

/**
 * The native half of the reader (spark/native: the project's Rust decoder over JNI).
 *
 * <p>The library is {@code libsoif_spark.so}, found, in this order, at the path of the
 * system property {@code soif.native.library}, at the path of the environment variable
 * {@code SOIF_NATIVE_LIBRARY}, or inside this jar ({@code /native/<os>-<arch>/}), from
 * where it is copied to a temporary file once per JVM.
 */
final class Native {
    private Native() {}

    static {
        Loader.load();
    }

    /** Opens a read; see spark/native/src/lib.rs. Returns a handle for {@link #next}. */
    static native long open(
            String path,
            boolean ranged,
            long start,
            long end,
            long firstRecord,
            long envelope,
            boolean endKnown,
            boolean lenient,
            long maxRecordSize,
            int mode,
            boolean sourceColumn,
            int batchSize,
            String transforms);

    /** The next batch's rows (-1 at the end), its arrays and buffers in {@code descriptors}. */
    static native int next(long handle, long[] descriptors);

    /** Ends a read. */
    static native void close(long handle);

    /** The splits of a plain file in {@code parts} ranges of about equal size: {@code [start, end, firstRecord, envelope, endKnown]*}. */
    static native long[] split(String path, long parts, boolean lenient, long maxRecordSize);

    /**
     * The files the paths name, by soif's path rules with Spark's variant (see
     * docs/inputs.md): the same code as the Python data source's.
     *
     * @throws java.io.FileNotFoundException a path not found, a glob that matches nothing
     */
    static native String[] expand(String[] paths, boolean recursive) throws java.io.IOException;

    /**
     * Whether a path names a file of another filesystem ({@code s3://}, {@code hdfs://}…),
     * handed to the Python data source: soif's one rule (soif_sources::PathRules::is_remote),
     * the Python data source's too.
     */
    static native boolean remote(String path);

    /**
     * Whether a local file starts as a gzip, bzip2, xz or zstd stream (read whole, never
     * split): soif's one test of the first bytes (soif_sources::decompress).
     *
     * @throws java.io.IOException the file cannot be read
     */
    static native boolean compressed(String path) throws java.io.IOException;

    /**
     * Spark's read options (the keys and values as given), parsed by soif's option code:
     * {@code [mode (0 FAILFAST, 1 DROPMALFORMED, 2 PERMISSIVE), corrupt column, lenient,
     * maxRecordSize, splitSize, includeSource, recursiveFileLookup, batchSize, transforms
     * (the chain as the executors get it, with the files it reads; empty for none)]}.
     *
     * @throws IllegalArgumentException an unknown or malformed option
     */
    static native String[] options(String[] keys, String[] values);
}

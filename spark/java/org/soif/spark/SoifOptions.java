package org.soif.spark;

import java.io.Serializable;
import java.util.Locale;
import java.util.Map;

/**
 * The reader's options, parsed once on the driver and shipped to the tasks: the names
 * and defaults of the Python data source ({@code soif.spark}), Spark's own where Spark has
 * one.
 */
final class SoifOptions implements Serializable {
    private static final long serialVersionUID = 1L;

    static final long DEFAULT_MAX_RECORD_SIZE = 64L << 20;
    static final long DEFAULT_SPLIT_SIZE = 128L << 20;
    static final int DEFAULT_BATCH_SIZE = 4096;

    /** 0 FAILFAST, 1 DROPMALFORMED, 2 PERMISSIVE (the native reader's numbers). */
    final int mode;
    final String corruptColumn;
    final boolean lenient;
    final long maxRecordSize;
    final long splitSize;
    final boolean includeSource;
    final boolean recursive;
    final int batchSize;

    SoifOptions(Map<String, String> options) {
        String m = get(options, "mode", "PERMISSIVE").trim().toUpperCase(Locale.ROOT);
        switch (m) {
            case "FAILFAST":
                mode = 0;
                break;
            case "DROPMALFORMED":
                mode = 1;
                break;
            case "PERMISSIVE":
                mode = 2;
                break;
            default:
                throw new IllegalArgumentException(
                        "soif: option mode='" + m + "': expected PERMISSIVE, DROPMALFORMED or FAILFAST");
        }
        corruptColumn = get(options, "columnNameOfCorruptRecord", "_corrupt_record");
        lenient = bool(options, "lenient");
        maxRecordSize = size(options, "maxRecordSize", DEFAULT_MAX_RECORD_SIZE);
        splitSize = size(options, "splitSize", DEFAULT_SPLIT_SIZE);
        includeSource = bool(options, "includeSource");
        recursive = bool(options, "recursiveFileLookup");
        long b = size(options, "batchSize", DEFAULT_BATCH_SIZE);
        if (b > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("soif: option batchSize=" + b + " is too large");
        }
        batchSize = (int) b;
    }

    private static String get(Map<String, String> options, String key, String dflt) {
        for (Map.Entry<String, String> e : options.entrySet()) {
            if (e.getKey().equalsIgnoreCase(key)) {
                return e.getValue();
            }
        }
        return dflt;
    }

    private static boolean bool(Map<String, String> options, String key) {
        String v = get(options, key, "false").trim().toLowerCase(Locale.ROOT);
        switch (v) {
            case "true":
            case "1":
            case "yes":
                return true;
            case "false":
            case "0":
            case "no":
                return false;
            default:
                throw new IllegalArgumentException("soif: option " + key + "='" + v + "': expected true or false");
        }
    }

    /** A positive byte count: a number with an optional unit (KB, MB, GB, KiB, MiB, GiB). */
    static long size(Map<String, String> options, String key, long dflt) {
        String raw = get(options, key, null);
        if (raw == null) {
            return dflt;
        }
        String v = raw.trim().toLowerCase(Locale.ROOT).replace("_", "");
        long unit = 1;
        String[][] units = {
            {"kib", "1024"}, {"mib", "1048576"}, {"gib", "1073741824"},
            {"kb", "1000"}, {"mb", "1000000"}, {"gb", "1000000000"}, {"b", "1"}
        };
        for (String[] u : units) {
            if (v.endsWith(u[0])) {
                unit = Long.parseLong(u[1]);
                v = v.substring(0, v.length() - u[0].length()).trim();
                break;
            }
        }
        long n;
        try {
            n = Math.multiplyExact(Long.parseLong(v), unit);
        } catch (NumberFormatException | ArithmeticException e) {
            throw new IllegalArgumentException(
                    "soif: option " + key + "='" + raw + "': expected a positive size (e.g. 64MiB)");
        }
        if (n <= 0) {
            throw new IllegalArgumentException("soif: option " + key + "='" + raw + "' must be positive");
        }
        return n;
    }
}

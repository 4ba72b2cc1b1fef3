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
                throw new IllegalArgumentException(
                        "soif: option " + key + "='" + get(options, key, "") + "': expected true or false");
        }
    }

    private static final java.util.regex.Pattern SIZE =
            java.util.regex.Pattern.compile("\\A\\s*(\\d+)\\s*([A-Za-z]*)\\s*\\z");
    private static final Map<String, Long> UNITS = Map.ofEntries(
            Map.entry("", 1L), Map.entry("b", 1L),
            Map.entry("k", 1000L), Map.entry("kb", 1000L), Map.entry("kib", 1L << 10),
            Map.entry("m", 1000_000L), Map.entry("mb", 1000_000L), Map.entry("mib", 1L << 20),
            Map.entry("g", 1000_000_000L), Map.entry("gb", 1000_000_000L), Map.entry("gib", 1L << 30));

    /** A positive byte count: digits and an optional unit (as {@code soif.spark}'s {@code _size}). */
    static long size(Map<String, String> options, String key, long dflt) {
        String v = get(options, key, null);
        if (v == null) {
            return dflt;
        }
        java.util.regex.Matcher m = SIZE.matcher(v);
        Long unit = m.matches() ? UNITS.get(m.group(2).toLowerCase(Locale.ROOT)) : null;
        long n;
        try {
            if (unit == null) {
                throw new NumberFormatException();
            }
            n = Math.multiplyExact(Long.parseLong(m.group(1)), unit);
        } catch (NumberFormatException | ArithmeticException e) {
            throw new IllegalArgumentException("soif: option " + key + "='" + v
                    + "': expected a size in bytes (e.g. 134217728, 128MiB, 64MB)");
        }
        if (n <= 0) {
            throw new IllegalArgumentException("soif: option " + key + "='" + v + "': must be positive");
        }
        return n;
    }
}

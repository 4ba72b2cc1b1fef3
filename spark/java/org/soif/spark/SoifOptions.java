package org.soif.spark;

import java.io.Serializable;
import java.util.Map;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * The reader's options, parsed once on the driver and shipped to the tasks. The parsing
 * is the native side's ({@link Native#options}): the same code as the Python data
 * source's and the Python package's, with the same names, defaults, sizes
 * ({@code 64MB} = 64,000,000 bytes, {@code 64MiB} = 2^26) and errors.
 */
final class SoifOptions implements Serializable {
    private static final long serialVersionUID = 3L;

    /** 0 FAILFAST, 1 DROPMALFORMED, 2 PERMISSIVE (the native reader's numbers). */
    final int mode;
    final String corruptColumn;
    final boolean lenient;
    final long maxRecordSize;
    final long splitSize;
    final boolean includeSource;
    final boolean recursive;
    final int batchSize;
    /**
     * The transform chain as the executors build it: the specs with the bytes of the files
     * they read (read here, on the driver); empty for none.
     */
    final String transforms;

    SoifOptions(Map<String, String> options) {
        // The keys as the user spelt them, for the error messages.
        Map<String, String> given = options instanceof CaseInsensitiveStringMap
                ? ((CaseInsensitiveStringMap) options).asCaseSensitiveMap()
                : options;
        String[] keys = new String[given.size()];
        String[] values = new String[given.size()];
        int i = 0;
        for (Map.Entry<String, String> e : given.entrySet()) {
            keys[i] = e.getKey();
            values[i] = e.getValue();
            i++;
        }
        String[] o = Native.options(keys, values);
        mode = Integer.parseInt(o[0]);
        corruptColumn = o[1];
        lenient = Boolean.parseBoolean(o[2]);
        maxRecordSize = Long.parseLong(o[3]);
        splitSize = Long.parseLong(o[4]);
        includeSource = Boolean.parseBoolean(o[5]);
        recursive = Boolean.parseBoolean(o[6]);
        batchSize = Integer.parseInt(o[7]);
        transforms = o[8];
    }
}

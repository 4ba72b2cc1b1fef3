package org.soif.spark;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.types.StructType;

/** The scan of local files: plans the partitions on the driver, and makes the tasks' readers. */
final class SoifScan implements Scan, Batch {
    private final StructType schema;
    private final Map<String, String> options;
    private final SoifOptions opts;

    SoifScan(StructType schema, Map<String, String> options, SoifOptions opts) {
        this.schema = schema;
        this.options = options;
        this.opts = opts;
    }

    @Override
    public StructType readSchema() {
        return schema;
    }

    @Override
    public String description() {
        return "soif " + paths(options);
    }

    @Override
    public Batch toBatch() {
        return this;
    }

    /** The paths {@code load} was given: {@code path} for one, {@code paths} (a JSON array) for a list. */
    static List<String> paths(Map<String, String> options) {
        List<String> out = new ArrayList<>();
        String many = options.get("paths");
        if (many != null && !many.isEmpty()) {
            try {
                for (Object p : new ObjectMapper().readValue(many, List.class)) {
                    out.add(String.valueOf(p));
                }
            } catch (IOException e) {
                out.add(many);
            }
        }
        String one = options.get("path");
        if (one != null && !one.isEmpty()) {
            out.add(one);
        }
        if (out.isEmpty()) {
            throw new IllegalArgumentException("soif: no path given: spark.read.format(\"soif\").load(PATH)");
        }
        return out;
    }

    /**
     * As the Python data source's {@code plan_partitions}: a compressed file whole, a plain
     * file in as many ranges of about equal size as {@code splitSize} asks for (the stage
     * takes as long as its longest task), cut at true object boundaries by the boundary
     * pass of {@code soif split}; an empty file has none.
     */
    @Override
    public InputPartition[] planInputPartitions() {
        List<InputPartition> parts = new ArrayList<>();
        try {
            for (String path : Native.expand(paths(options).toArray(new String[0]), opts.recursive)) {
                if (Native.compressed(path)) {
                    parts.add(new SoifPartition(path));
                    continue;
                }
                long size = java.nio.file.Files.size(java.nio.file.Path.of(path));
                long n = Math.max(1, (size + opts.splitSize - 1) / opts.splitSize);
                long[] s = Native.split(path, n, opts.lenient, opts.maxRecordSize);
                for (int i = 0; i + 4 < s.length; i += 5) {
                    parts.add(new SoifPartition(path, s[i], s[i + 1], s[i + 2], s[i + 3], s[i + 4] != 0));
                }
            }
        } catch (java.io.FileNotFoundException e) {
            // A bad path is a bad argument of load(): PySpark shows it as such.
            throw new IllegalArgumentException(e.getMessage(), e);
        } catch (IOException e) {
            throw new UncheckedIOException(e.getMessage(), e);
        }
        return parts.toArray(new InputPartition[0]);
    }

    @Override
    public PartitionReaderFactory createReaderFactory() {
        return new SoifReaderFactory(schema, opts);
    }
}

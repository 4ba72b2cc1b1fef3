package org.soif.spark;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.types.StructType;

/**
 * Plans the partitions on the driver: each compressed file whole, each plain file cut
 * into byte ranges of about {@code splitSize} at true object boundaries (the boundary
 * pass of {@code soif split}, so no record is lost or invented wherever a range falls).
 */
final class SoifScan implements Scan, Batch {
    private static final String[] COMPRESSED = {".gz", ".gzip", ".bz2", ".xz", ".zst", ".zstd"};

    private final StructType schema;
    private final Map<String, String> options;
    private final SoifOptions opts;

    SoifScan(StructType schema, Map<String, String> options) {
        this.schema = schema;
        this.options = options;
        this.opts = new SoifOptions(options);
    }

    @Override
    public StructType readSchema() {
        return schema;
    }

    @Override
    public String description() {
        return "soif " + paths();
    }

    @Override
    public Batch toBatch() {
        return this;
    }

    private List<String> paths() {
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

    private static boolean visible(Path p) {
        String n = p.getName();
        return !(n.startsWith(".") || n.startsWith("_"));
    }

    /** The files a path names: itself, a directory's visible files, a glob's matches. */
    private void files(FileSystem fs, Path p, List<FileStatus> out) throws IOException {
        FileStatus[] matched = fs.globStatus(p);
        if (matched == null || matched.length == 0) {
            throw new IllegalArgumentException("soif: " + p + ": no such file, or a pattern that matches nothing");
        }
        for (FileStatus st : matched) {
            if (st.isDirectory()) {
                FileStatus[] inside = fs.listStatus(st.getPath());
                java.util.Arrays.sort(inside);
                for (FileStatus c : inside) {
                    if (!visible(c.getPath())) {
                        continue;
                    }
                    if (c.isDirectory()) {
                        if (opts.recursive) {
                            files(fs, c.getPath(), out);
                        }
                    } else {
                        out.add(c);
                    }
                }
            } else {
                out.add(st);
            }
        }
    }

    @Override
    public InputPartition[] planInputPartitions() {
        Configuration conf = new Configuration();
        List<InputPartition> parts = new ArrayList<>();
        try {
            for (String raw : paths()) {
                Path p = new Path(raw);
                FileSystem fs = p.getFileSystem(conf);
                if (!"file".equals(fs.getUri().getScheme())) {
                    throw new IllegalArgumentException("soif: " + raw
                            + ": the JVM reader reads local (or mounted) files; use the Python data source"
                            + " (soif.spark.register) for other filesystems");
                }
                List<FileStatus> found = new ArrayList<>();
                files(fs, p, found);
                for (FileStatus st : found) {
                    String local = st.getPath().toUri().getPath();
                    if (compressed(local) || st.getLen() == 0) {
                        parts.add(new SoifPartition(local));
                        continue;
                    }
                    long[] s = Native.split(local, opts.splitSize, opts.lenient, opts.maxRecordSize);
                    for (int i = 0; i + 4 < s.length; i += 5) {
                        parts.add(new SoifPartition(local, s[i], s[i + 1], s[i + 2], s[i + 3], s[i + 4] != 0));
                    }
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return parts.toArray(new InputPartition[0]);
    }

    private static boolean compressed(String path) {
        String lower = path.toLowerCase(java.util.Locale.ROOT);
        for (String ext : COMPRESSED) {
            if (lower.endsWith(ext)) {
                return true;
            }
        }
        return false;
    }

    @Override
    public PartitionReaderFactory createReaderFactory() {
        return new SoifReaderFactory(schema, opts);
    }
}

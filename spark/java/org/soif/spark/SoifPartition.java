package org.soif.spark;

import org.apache.spark.sql.connector.read.InputPartition;

/** A file read whole, or a byte range of a plain file starting and ending at object boundaries. */
final class SoifPartition implements InputPartition {
    private static final long serialVersionUID = 1L;

    final String path;
    final boolean ranged;
    final long start;
    final long end;
    final long firstRecord;
    final long envelope;
    final boolean endKnown;

    SoifPartition(String path) {
        this(path, false, 0, 0, 0, -1, false);
    }

    SoifPartition(String path, long start, long end, long firstRecord, long envelope, boolean endKnown) {
        this(path, true, start, end, firstRecord, envelope, endKnown);
    }

    private SoifPartition(
            String path, boolean ranged, long start, long end, long firstRecord, long envelope, boolean endKnown) {
        this.path = path;
        this.ranged = ranged;
        this.start = start;
        this.end = end;
        this.firstRecord = firstRecord;
        this.envelope = envelope;
        this.endKnown = endKnown;
    }
}

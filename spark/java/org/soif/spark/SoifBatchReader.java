package org.soif.spark;

import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnarBatch;

/**
 * One task's read: each {@link #next} asks the native reader for a batch and points this
 * reader's columns ({@link NativeColumn}) at its buffers, where the decoder built them.
 * Nothing is copied on the way; the buffers stay valid until the next call, when the
 * native side releases them, which is what Spark's {@code PartitionReader} contract asks:
 * a batch is used before {@code next()} is called again.
 */
final class SoifBatchReader implements PartitionReader<ColumnarBatch> {
    /** Room for every array's node and buffers: the layout and both extra columns need 2 + 2 × 20 + 2 × 50. */
    private static final int DESCRIPTORS = 512;

    private final NativeColumn[] columns;
    private final ColumnarBatch batch;
    private final long[] descriptors = new long[DESCRIPTORS];
    private long handle;

    SoifBatchReader(StructType schema, SoifOptions o, SoifPartition p) {
        StructField[] fields = schema.fields();
        columns = new NativeColumn[fields.length];
        for (int i = 0; i < fields.length; i++) {
            columns[i] = new NativeColumn(fields[i].dataType());
        }
        batch = new ColumnarBatch(columns);
        handle = Native.open(
                p.path, p.ranged, p.start, p.end, p.firstRecord, p.envelope, p.endKnown,
                o.lenient, o.maxRecordSize, o.mode, o.includeSource, o.batchSize, o.transforms);
    }

    @Override
    public boolean next() {
        if (handle == 0) {
            return false;
        }
        int rows = Native.next(handle, descriptors);
        if (rows < 0) {
            return false;
        }
        NativeColumn.Cursor cursor = new NativeColumn.Cursor(descriptors);
        for (NativeColumn c : columns) {
            c.load(cursor);
        }
        cursor.done();
        batch.setNumRows(rows);
        return true;
    }

    @Override
    public ColumnarBatch get() {
        return batch;
    }

    @Override
    public void close() {
        long h = handle;
        handle = 0;
        Native.close(h);
    }
}

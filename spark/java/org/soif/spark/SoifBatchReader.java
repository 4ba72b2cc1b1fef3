package org.soif.spark;

import java.util.ArrayList;
import java.util.List;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.ReferenceManager;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.VectorLoader;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.message.ArrowFieldNode;
import org.apache.arrow.vector.ipc.message.ArrowRecordBatch;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ArrowColumnVector;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;

/**
 * One task's read: each {@link #next} asks the native reader for a batch and loads its
 * buffers, where the decoder built them, into this reader's Arrow vectors, which Spark
 * reads through {@link ArrowColumnVector}s. Nothing is copied on the way: the buffers are
 * wrapped, not owned ({@link ReferenceManager#NO_OP}), and stay valid until the next call,
 * when the native side releases them. Only the validity bitmaps of columns without nulls
 * are allocated here (Arrow's loader makes an all-set one).
 */
final class SoifBatchReader implements PartitionReader<ColumnarBatch> {
    /** Room for every array's node and buffers: the layout and both extra columns need 2 + 2 × 20 + 2 × 50. */
    private static final int DESCRIPTORS = 512;

    private final BufferAllocator allocator = new RootAllocator(Long.MAX_VALUE);
    private final VectorSchemaRoot root;
    private final VectorLoader loader;
    private final ColumnarBatch batch;
    private final long[] descriptors = new long[DESCRIPTORS];
    private long handle;

    SoifBatchReader(StructType schema, SoifOptions o, SoifPartition p) {
        root = VectorSchemaRoot.create(Layout.arrow(schema), allocator);
        loader = new VectorLoader(root);
        ColumnVector[] columns = new ColumnVector[root.getFieldVectors().size()];
        for (int i = 0; i < columns.length; i++) {
            columns[i] = new Column(root.getVector(i));
        }
        batch = new ColumnarBatch(columns);
        try {
            handle = Native.open(
                    p.path, p.ranged, p.start, p.end, p.firstRecord, p.envelope, p.endKnown,
                    o.lenient, o.maxRecordSize, o.mode, o.includeSource, o.batchSize);
        } catch (RuntimeException | Error e) {
            root.close();
            allocator.close();
            throw e;
        }
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
        int i = 0;
        int n = (int) descriptors[i++];
        List<ArrowFieldNode> nodes = new ArrayList<>(n);
        for (int k = 0; k < n; k++, i += 2) {
            nodes.add(new ArrowFieldNode(descriptors[i], descriptors[i + 1]));
        }
        int b = (int) descriptors[i++];
        List<ArrowBuf> buffers = new ArrayList<>(b);
        for (int k = 0; k < b; k++, i += 2) {
            long address = descriptors[i];
            long size = descriptors[i + 1];
            ArrowBuf buf = address == 0
                    ? allocator.getEmpty()
                    : new ArrowBuf(ReferenceManager.NO_OP, null, size, address);
            buf.writerIndex(size);
            buffers.add(buf);
        }
        try (ArrowRecordBatch arrow = new ArrowRecordBatch(rows, nodes, buffers)) {
            loader.load(arrow);
        }
        batch.setNumRows(rows);
        return true;
    }

    @Override
    public ColumnarBatch get() {
        return batch;
    }

    /**
     * A column of the reader's vectors, which Spark must not close: it closes a batch
     * once read ({@code ColumnarBatch.closeIfFreeable}), and closing an Arrow struct
     * vector drops its children, which the next batch is loaded into. The reader closes
     * the vectors itself, at the end.
     */
    private static final class Column extends ArrowColumnVector {
        Column(org.apache.arrow.vector.ValueVector vector) {
            super(vector);
        }

        @Override
        public void close() {}
    }

    @Override
    public void close() {
        long h = handle;
        handle = 0;
        root.close();
        Native.close(h);
        allocator.close();
    }
}

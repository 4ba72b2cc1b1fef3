package org.soif.spark;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnarBatch;

/** Creates a task's reader: columnar only (the batches are Arrow, as the decoder builds them). */
final class SoifReaderFactory implements PartitionReaderFactory {
    private static final long serialVersionUID = 1L;

    private final StructType schema;
    private final SoifOptions opts;

    SoifReaderFactory(StructType schema, SoifOptions opts) {
        this.schema = schema;
        this.opts = opts;
    }

    @Override
    public boolean supportColumnarReads(InputPartition partition) {
        return true;
    }

    @Override
    public PartitionReader<InternalRow> createReader(InputPartition partition) {
        throw new UnsupportedOperationException("soif: the JVM reader is columnar");
    }

    @Override
    public PartitionReader<ColumnarBatch> createColumnarReader(InputPartition partition) {
        return new SoifBatchReader(schema, opts, (SoifPartition) partition);
    }
}

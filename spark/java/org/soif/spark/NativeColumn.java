package org.soif.spark;

import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.BinaryType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarArray;
import org.apache.spark.sql.vectorized.ColumnarMap;
import org.apache.spark.unsafe.Platform;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * A column of a native batch, read where the decoder built it: Spark's {@link ColumnVector}
 * over an Arrow array's buffers (validity bitmap, 32-bit offsets, values) given as
 * addresses, for the layout's types (string, binary, bigint, struct, array).
 *
 * <p>Why not Arrow Java's vectors and Spark's {@code ArrowColumnVector}: loading buffers
 * into them allocates a validity bitmap for every column without nulls, and every value
 * read goes through a holder object and a bounds check. Here a string is two offsets read
 * and a {@link UTF8String} over the bytes in place; a binary value is the one copy Spark's
 * {@code getBinary} asks for. The buffers stay valid until the reader's next batch, as
 * Spark's contract for a batch has it, and this column owns none of them ({@link #close}
 * does nothing).
 */
final class NativeColumn extends ColumnVector {
    private final NativeColumn[] children;
    private int nullCount;
    private long validity;
    private long offsets;
    private long values;

    NativeColumn(DataType type) {
        super(type);
        if (type instanceof StructType) {
            StructField[] fields = ((StructType) type).fields();
            children = new NativeColumn[fields.length];
            for (int i = 0; i < fields.length; i++) {
                children[i] = new NativeColumn(fields[i].dataType());
            }
        } else if (type instanceof ArrayType) {
            children = new NativeColumn[] {new NativeColumn(((ArrayType) type).elementType())};
        } else if (type instanceof StringType || type instanceof BinaryType || type instanceof LongType) {
            children = new NativeColumn[0];
        } else {
            throw new IllegalArgumentException("soif: no native column for " + type);
        }
    }

    /** Where a batch's descriptors are read from (see {@code Native.next}). */
    static final class Cursor {
        private final long[] d;
        private int node;
        private int buffer;
        private final int nodesEnd;
        private final int buffersEnd;

        Cursor(long[] descriptors) {
            d = descriptors;
            node = 1;
            nodesEnd = node + 2 * (int) d[0];
            buffer = nodesEnd + 1;
            buffersEnd = buffer + 2 * (int) d[nodesEnd];
        }

        long nullCount() {
            if (node >= nodesEnd) {
                throw new IllegalStateException("soif: a native batch has fewer arrays than the schema (a bug)");
            }
            long n = d[node + 1];
            node += 2;
            return n;
        }

        long address() {
            if (buffer >= buffersEnd) {
                throw new IllegalStateException("soif: a native batch has fewer buffers than the schema (a bug)");
            }
            long a = d[buffer];
            buffer += 2;
            return a;
        }

        void done() {
            if (node != nodesEnd || buffer != buffersEnd) {
                throw new IllegalStateException("soif: a native batch has more arrays than the schema (a bug)");
            }
        }
    }

    /** Takes this column's array, then its children's, from the cursor (Arrow's IPC order). */
    void load(Cursor c) {
        nullCount = (int) c.nullCount();
        validity = c.address();
        if (type instanceof StringType || type instanceof BinaryType) {
            offsets = c.address();
            values = c.address();
        } else if (type instanceof LongType) {
            values = c.address();
        } else if (type instanceof ArrayType) {
            offsets = c.address();
        }
        for (NativeColumn child : children) {
            child.load(c);
        }
    }

    @Override
    public void close() {}

    @Override
    public boolean hasNull() {
        return nullCount > 0;
    }

    @Override
    public int numNulls() {
        return nullCount;
    }

    @Override
    public boolean isNullAt(int rowId) {
        return validity != 0 && (Platform.getByte(null, validity + (rowId >> 3)) & (1 << (rowId & 7))) == 0;
    }

    private int start(int rowId) {
        return Platform.getInt(null, offsets + 4L * rowId);
    }

    private int end(int rowId) {
        return Platform.getInt(null, offsets + 4L * rowId + 4);
    }

    @Override
    public UTF8String getUTF8String(int rowId) {
        if (isNullAt(rowId)) {
            return null;
        }
        int s = start(rowId);
        return UTF8String.fromAddress(null, values + s, end(rowId) - s);
    }

    @Override
    public byte[] getBinary(int rowId) {
        if (isNullAt(rowId)) {
            return null;
        }
        int s = start(rowId);
        byte[] out = new byte[end(rowId) - s];
        Platform.copyMemory(null, values + s, out, Platform.BYTE_ARRAY_OFFSET, out.length);
        return out;
    }

    @Override
    public long getLong(int rowId) {
        return Platform.getLong(null, values + 8L * rowId);
    }

    @Override
    public ColumnarArray getArray(int rowId) {
        if (isNullAt(rowId)) {
            return null;
        }
        int s = start(rowId);
        return new ColumnarArray(children[0], s, end(rowId) - s);
    }

    @Override
    public ColumnVector getChild(int ordinal) {
        return children[ordinal];
    }

    private UnsupportedOperationException unsupported() {
        return new UnsupportedOperationException("soif: a " + type.simpleString() + " column has no such value");
    }

    @Override
    public boolean getBoolean(int rowId) {
        throw unsupported();
    }

    @Override
    public byte getByte(int rowId) {
        throw unsupported();
    }

    @Override
    public short getShort(int rowId) {
        throw unsupported();
    }

    @Override
    public int getInt(int rowId) {
        throw unsupported();
    }

    @Override
    public float getFloat(int rowId) {
        throw unsupported();
    }

    @Override
    public double getDouble(int rowId) {
        throw unsupported();
    }

    @Override
    public ColumnarMap getMap(int ordinal) {
        throw unsupported();
    }

    @Override
    public Decimal getDecimal(int rowId, int precision, int scale) {
        throw unsupported();
    }
}

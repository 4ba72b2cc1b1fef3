package org.soif.spark;

import java.util.ArrayList;
import java.util.List;
import org.apache.arrow.vector.types.FloatingPointPrecision;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * soif's Arrow layout as a Spark schema (the Parquet sink's columns and types, as
 * {@code soif.spark} declares them), and the Arrow schema of the native reader's batches.
 */
final class Layout {
    private Layout() {}

    private static StructField f(String name, DataType type) {
        return DataTypes.createStructField(name, type, true);
    }

    static StructType schema(SoifOptions o) {
        StructType attribute = new StructType(new StructField[] {
            f("name", DataTypes.StringType),
            f("value", DataTypes.StringType),
            f("bytes", DataTypes.BinaryType),
            f("name_bytes", DataTypes.BinaryType),
        });
        List<StructField> fields = new ArrayList<>(List.of(
                f("template", DataTypes.StringType),
                f("url", DataTypes.StringType),
                f("action", DataTypes.StringType),
                f("attributes", DataTypes.createArrayType(attribute, true)),
                f("template_bytes", DataTypes.BinaryType),
                f("url_bytes", DataTypes.BinaryType)));
        if (o.mode == 2) {
            fields.add(f(o.corruptColumn, new StructType(new StructField[] {
                f("bytes", DataTypes.BinaryType),
                f("text", DataTypes.StringType),
                f("error", DataTypes.StringType),
                f("offset", DataTypes.LongType),
                f("record", DataTypes.LongType),
            })));
        }
        if (o.includeSource) {
            fields.add(f("_source", new StructType(new StructField[] {
                f("file", DataTypes.StringType), f("offset", DataTypes.LongType),
            })));
        }
        return new StructType(fields.toArray(new StructField[0]));
    }

    /** The Arrow schema of a Spark schema made of the layout's types. */
    static Schema arrow(StructType schema) {
        List<Field> fields = new ArrayList<>();
        for (StructField sf : schema.fields()) {
            fields.add(arrow(sf.name(), sf.dataType()));
        }
        return new Schema(fields);
    }

    private static Field arrow(String name, DataType type) {
        if (type instanceof StructType) {
            List<Field> children = new ArrayList<>();
            for (StructField sf : ((StructType) type).fields()) {
                children.add(arrow(sf.name(), sf.dataType()));
            }
            return new Field(name, FieldType.nullable(ArrowType.Struct.INSTANCE), children);
        }
        if (type instanceof ArrayType) {
            Field item = arrow("element", ((ArrayType) type).elementType());
            return new Field(name, FieldType.nullable(ArrowType.List.INSTANCE), List.of(item));
        }
        ArrowType t;
        if (type.equals(DataTypes.StringType)) {
            t = ArrowType.Utf8.INSTANCE;
        } else if (type.equals(DataTypes.BinaryType)) {
            t = ArrowType.Binary.INSTANCE;
        } else if (type.equals(DataTypes.LongType)) {
            t = new ArrowType.Int(64, true);
        } else if (type.equals(DataTypes.DoubleType)) {
            t = new ArrowType.FloatingPoint(FloatingPointPrecision.DOUBLE);
        } else {
            throw new IllegalStateException("soif: no Arrow type for " + type);
        }
        return new Field(name, FieldType.nullable(t), null);
    }
}

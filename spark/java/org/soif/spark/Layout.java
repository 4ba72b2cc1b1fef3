package org.soif.spark;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * soif's Arrow layout as a Spark schema: the Parquet sink's columns and types, as
 * {@code soif.spark} declares them, and the extra columns the options ask for.
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
}

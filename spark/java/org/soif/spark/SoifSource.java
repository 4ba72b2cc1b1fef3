package org.soif.spark;

import java.util.Map;
import java.util.Set;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.sources.DataSourceRegister;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * soif's JVM data source: reads SOIF with the project's Rust decoder on the executors'
 * task threads (over JNI, see {@code spark/native}), handing Spark Arrow batches without a
 * copy.
 *
 * <pre>
 * spark.read.format("org.soif.spark.SoifSource").option("mode", "FAILFAST").load(path)
 * </pre>
 */
public final class SoifSource implements TableProvider, DataSourceRegister {
    @Override
    public String shortName() {
        return "soif";
    }

    @Override
    public StructType inferSchema(CaseInsensitiveStringMap options) {
        return Layout.schema(new SoifOptions(options));
    }

    @Override
    public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
        return new SoifTable(schema);
    }

    static final class SoifTable implements SupportsRead {
        private final StructType schema;

        SoifTable(StructType schema) {
            this.schema = schema;
        }

        @Override
        public String name() {
            return "soif";
        }

        @Override
        public StructType schema() {
            return schema;
        }

        @Override
        public Set<TableCapability> capabilities() {
            return Set.of(TableCapability.BATCH_READ);
        }

        @Override
        public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
            return () -> new SoifScan(schema, options);
        }
    }
}

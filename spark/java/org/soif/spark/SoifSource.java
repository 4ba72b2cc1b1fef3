package org.soif.spark;

import java.util.Arrays;
import java.util.EnumSet;
import java.util.Map;
import java.util.Set;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.SupportsWrite;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.execution.datasources.v2.python.PythonDataSourceV2;
import org.apache.spark.sql.sources.DataSourceRegister;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * The {@code soif} format when this jar is on Spark's classpath: local (and mounted)
 * files are read here, by the project's Rust decoder on the executors' task threads (over
 * JNI, {@code spark/native}), which hands Spark its Arrow batches without a copy; writes,
 * and reads of other filesystems ({@code s3://}, {@code hdfs://}…), go to the Python data
 * source ({@code soif.spark}, registered by {@code soif.spark.register(spark)}), which
 * remains the reference for every option.
 *
 * <p>Why both: the Python Data Source API runs the decoder in a Python worker and ships
 * each batch to the JVM over a socket, where the task thread waits for it; here the task
 * thread decodes itself (docs/performance.md, "Spark", gives the figures). The rows
 * are the same: both call the same reading loop ({@code python/src/core.rs}) with the same
 * options and the same splits.
 *
 * <pre>
 * spark = SparkSession.builder.config("spark.jars", "soif-spark.jar").getOrCreate()
 * soif.spark.register(spark)            # writes, remote filesystems
 * spark.read.format("soif").load("archive/")
 * </pre>
 */
public final class SoifSource implements TableProvider, DataSourceRegister {
    static final String NAME = "soif";

    /** The Python data source's name behind this one (soif.spark.PYTHON_NAME). */
    static final String PYTHON_NAME = "soif_python";

    @Override
    public String shortName() {
        return NAME;
    }

    @Override
    public StructType inferSchema(CaseInsensitiveStringMap options) {
        return Layout.schema(new SoifOptions(options));
    }

    /** A write's schema is the DataFrame's (the Python writer checks it). */
    @Override
    public boolean supportsExternalMetadata() {
        return true;
    }

    @Override
    public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
        return new SoifTable(schema, partitioning, properties);
    }

    /** The same table in the Python data source (Spark's own provider of Python data sources). */
    static Table python(StructType schema, Transform[] partitioning, Map<String, String> properties) {
        SparkSession session = SparkSession.active();
        if (!session.sessionState().dataSourceManager().dataSourceExists(PYTHON_NAME)) {
            throw new IllegalStateException("soif: writing SOIF, and reading other filesystems than local ones, is done"
                    + " by soif's Python data source: call soif.spark.register(spark) first (in the soif Python package)");
        }
        PythonDataSourceV2 provider = new PythonDataSourceV2();
        provider.setShortName(PYTHON_NAME);
        return provider.getTable(schema, partitioning, properties);
    }

    static final class SoifTable implements SupportsRead, SupportsWrite {
        private final StructType schema;
        private final Transform[] partitioning;
        private final Map<String, String> properties;

        SoifTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
            this.schema = schema;
            this.partitioning = partitioning;
            this.properties = properties;
        }

        @Override
        public String name() {
            return NAME;
        }

        // Deprecated since Spark 3.4 for columns(), which Spark 4 still derives from it.
        @Override
        @SuppressWarnings("deprecation")
        public StructType schema() {
            return schema;
        }

        @Override
        public Transform[] partitioning() {
            return partitioning;
        }

        @Override
        public Map<String, String> properties() {
            return properties;
        }

        @Override
        public Set<TableCapability> capabilities() {
            return EnumSet.of(TableCapability.BATCH_READ, TableCapability.BATCH_WRITE, TableCapability.TRUNCATE);
        }

        @Override
        public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
            SoifOptions opts = new SoifOptions(options);
            if (SoifScan.paths(options).stream().anyMatch(Native::remote)) {
                return ((SupportsRead) python(schema, partitioning, properties)).newScanBuilder(options);
            }
            StructType layout = Layout.schema(opts);
            if (!Arrays.equals(schema.fieldNames(), layout.fieldNames())) {
                throw new IllegalArgumentException(
                        "soif: the schema is soif's Arrow layout and cannot be set with .schema(...); expected the columns "
                                + Arrays.toString(layout.fieldNames()) + ", got " + Arrays.toString(schema.fieldNames())
                                + " (select or cast columns after loading)");
            }
            return () -> new SoifScan(layout, options, opts);
        }

        @Override
        public WriteBuilder newWriteBuilder(LogicalWriteInfo info) {
            return ((SupportsWrite) python(schema, partitioning, properties)).newWriteBuilder(info);
        }
    }
}

#!/usr/bin/env bash
# Builds soif's JVM data source: the native library (spark/native, the Rust decoder over
# JNI) and the jar that holds it (spark/java), against the Spark jars of an installed
# PySpark. Usage: spark/build.sh [PYTHON]   (default: the project's .venv). Prints the jar's path.
# SOIF_CARGO_PROFILE names the Cargo profile of the native library (default `release`;
# scripts/test.sh uses `ci-bindings`, see the root Cargo.toml).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
python="${1:-$root/.venv/bin/python}"
target="${CARGO_TARGET_DIR:-$root/target}"
out="$target/spark"
jars="$("$python" -c 'import os, pyspark; print(os.path.join(os.path.dirname(pyspark.__file__), "jars"))')"
profile="${SOIF_CARGO_PROFILE:-release}"
cargo build --profile "$profile" --locked --manifest-path "$here/native/Cargo.toml" --target-dir "$target" >&2
arch="$(uname -m)"
rm -rf "$out/classes"
mkdir -p "$out/classes/native/linux-$arch"
cp "$target/$profile/libsoif_spark.so" "$out/classes/native/linux-$arch/"
javac -d "$out/classes" --release 17 -nowarn -cp "$jars/*" "$here"/java/org/soif/spark/*.java >&2
cp -r "$here/resources/." "$out/classes/"
jar --create --file "$out/soif-spark.jar" -C "$out/classes" . >&2
echo "$out/soif-spark.jar"

"""Type stubs of soif.spark, the soif data source for PySpark 4 (see spark.py)."""

from typing import Any, Dict, Iterator, List, Optional, Sequence, Union

import pyarrow.fs

from pyspark.sql import SparkSession
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.types import StructType

import soif

DEFAULT_SPLIT_SIZE: int
CORRUPT_RECORD: str
ABORT_GRACE_SECONDS: float
SOURCE: str
PYTHON_NAME: str

def register(spark: SparkSession) -> None: ...
class RemoteFile:
    """A file on a remote filesystem (pyarrow.fs): its URI (no query string, no
    credentials), the filesystem and the path in it, and its size."""

    uri: str
    filesystem: pyarrow.fs.FileSystem
    path: str
    size: int
    def __init__(self, uri: str, filesystem: pyarrow.fs.FileSystem, path: str, size: int) -> None: ...

def expand_paths(paths: Sequence[str], recursive: bool = ...) -> List[Union[str, RemoteFile]]: ...

class SoifPartition(InputPartition):
    path: str
    split: Optional[soif.Split]
    remote: Optional[RemoteFile]
    def __init__(self, path: str, split: Optional[soif.Split], remote: Optional[RemoteFile] = ...) -> None: ...

def plan_partitions(
    files: Sequence[Union[str, RemoteFile]],
    split_size: int = ...,
    lenient: bool = ...,
    max_record_size: int = ...,
) -> List[SoifPartition]: ...

class SoifDataSource(DataSource):
    @classmethod
    def name(cls) -> str: ...
    def schema(self) -> StructType: ...
    def reader(self, schema: StructType) -> SoifReader: ...
    def writer(self, schema: StructType, overwrite: bool) -> SoifWriter: ...

class SoifReader(DataSourceReader):
    paths: List[str]
    schema: StructType
    def __init__(self, options: Dict[str, str], schema: Optional[StructType]) -> None: ...
    def partitions(self) -> List[SoifPartition]: ...
    def read(self, partition: SoifPartition) -> Iterator[Any]: ...

class SoifCommitMessage(WriterCommitMessage):
    partition: int
    temp: Optional[str]
    records: int
    def __init__(self, partition: int, temp: Optional[str], records: int) -> None: ...

class SoifWriter(DataSourceArrowWriter):
    dir: str
    overwrite: bool
    job: str
    def __init__(self, options: Dict[str, str], schema: Optional[StructType], overwrite: bool) -> None: ...
    def write(self, iterator: Iterator[Any]) -> SoifCommitMessage: ...
    def commit(self, messages: List[Optional[WriterCommitMessage]]) -> None: ...
    def abort(self, messages: List[Optional[WriterCommitMessage]]) -> None: ...

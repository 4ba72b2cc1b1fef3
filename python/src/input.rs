//! A source of the Python side's own: a binary file object (paths, URLs and `bytes`
//! objects are read through `soif_reader`).

use bytes::Bytes;
use futures::future::BoxFuture;
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedBytes;
use soif_pipeline::source::{Input, InputData, Source};
use soif_pipeline::Error;
use soif_sources::decompress;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, ReadBuf};

/// A binary file object (anything with `read(n)` returning `bytes`) as one input,
/// decompressed when its first bytes say so.
pub struct FileInput {
    name: Arc<str>,
    file: Option<Py<PyAny>>,
    read: Arc<AtomicU64>,
}

impl FileInput {
    pub fn new(name: &str, file: Py<PyAny>) -> FileInput {
        FileInput {
            name: Arc::from(name),
            file: Some(file),
            read: Arc::new(AtomicU64::new(0)),
        }
    }
}

impl Source for FileInput {
    fn next_input(&mut self) -> BoxFuture<'_, Result<Option<Input>, Error>> {
        let file = self.file.take();
        let name = self.name.clone();
        let read = self.read.clone();
        Box::pin(async move {
            let Some(file) = file else { return Ok(None) };
            let raw = PyRead {
                file,
                read,
                pending: Bytes::new(),
            };
            let (_, reader) = decompress::decompress(Box::new(raw))
                .await
                .map_err(|e| Error::io(name.to_string(), e))?;
            Ok(Some(Input {
                name,
                data: InputData::Soif(reader),
            }))
        })
    }

    fn bytes_read(&self) -> u64 {
        self.read.load(Ordering::Relaxed)
    }
}

/// Reads a Python file object, taking the GIL for each `read` call (the decoder runs
/// without it). A read never waits on the runtime, so it is always ready.
struct PyRead {
    file: Py<PyAny>,
    read: Arc<AtomicU64>,
    /// What a `read(n)` returned beyond `n` (a file object that ignores the size).
    pending: Bytes,
}

impl AsyncRead for PyRead {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        if !self.pending.is_empty() {
            let n = self.pending.len().min(buf.remaining());
            buf.put_slice(&self.pending[..n]);
            bytes::Buf::advance(&mut self.pending, n);
            return Poll::Ready(Ok(()));
        }
        let want = buf.remaining().clamp(64 << 10, 1 << 20);
        let result = Python::attach(|py| -> PyResult<usize> {
            let got = self.file.bind(py).call_method1("read", (want,))?;
            if got.is_none() {
                // A non-blocking file with nothing ready: not supported, say so.
                return Err(pyo3::exceptions::PyBlockingIOError::new_err(
                    "the file object returned None (non-blocking files are not supported)",
                ));
            }
            let data: PyBackedBytes = got.extract().map_err(|_| {
                pyo3::exceptions::PyTypeError::new_err(
                    "the file object's read() must return bytes: open it in binary mode ('rb')",
                )
            })?;
            let len = data.len();
            let n = len.min(buf.remaining());
            buf.put_slice(&data[..n]);
            if n < len {
                self.pending = Bytes::from_owner(data).slice(n..);
            }
            Ok(len)
        });
        match result {
            Ok(n) => {
                self.read.fetch_add(n as u64, Ordering::Relaxed);
                Poll::Ready(Ok(()))
            }
            Err(e) => Poll::Ready(Err(std::io::Error::other(e.to_string()))),
        }
    }
}

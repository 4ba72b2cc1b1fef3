//! Bytes held in memory as one input (a Python `bytes` object, a test's data).

use bytes::Bytes;
use futures::future::BoxFuture;
use soif_pipeline::source::{Input, InputData, Source};
use soif_pipeline::Error;
use soif_sources::decompress::{self, Compression, MAGIC_LEN};
use std::sync::Arc;

/// Bytes in memory as one input (named `name`). Plain SOIF is decoded in place (records are slices of
/// the object, nothing is copied); compressed data is decompressed as a stream.
pub struct BytesInput {
    name: Arc<str>,
    data: Option<Bytes>,
    len: u64,
}

impl BytesInput {
    pub fn new(name: &str, data: Bytes) -> BytesInput {
        BytesInput {
            name: Arc::from(name),
            len: data.len() as u64,
            data: Some(data),
        }
    }
}

impl Source for BytesInput {
    fn next_input(&mut self) -> BoxFuture<'_, Result<Option<Input>, Error>> {
        let data = self.data.take();
        let name = self.name.clone();
        Box::pin(async move {
            let Some(data) = data else { return Ok(None) };
            let head = &data[..data.len().min(MAGIC_LEN)];
            if Compression::detect(head) == Compression::None {
                return Ok(Some(Input {
                    name,
                    data: InputData::Held {
                        data,
                        consumed: Box::new(|_| {}),
                        range: None,
                    },
                }));
            }
            let (_, reader) = decompress::decompress(Box::new(std::io::Cursor::new(data)))
                .await
                .map_err(|e| Error::io(name.to_string(), e))?;
            Ok(Some(Input {
                name,
                data: InputData::Soif(reader),
            }))
        })
    }

    fn bytes_read(&self) -> u64 {
        if self.data.is_some() {
            0
        } else {
            self.len
        }
    }

    fn total_bytes(&self) -> Option<u64> {
        Some(self.len)
    }
}

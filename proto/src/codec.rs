//! The codec of every generated client and server: prost's, except that a request that
//! does not decode is the caller's error (INVALID_ARGUMENT), not the server's
//! (tonic-prost answers INTERNAL). The message says what failed to decode, never what
//! the bytes were.

use std::marker::PhantomData;

use prost::Message;
use tonic::Status;
use tonic::codec::{BufferSettings, Codec, DecodeBuf, Decoder};
use tonic_prost::{ProstCodec, ProstDecoder, ProstEncoder};

/// prost encoding; decode failures are INVALID_ARGUMENT.
#[derive(Debug, Clone)]
pub struct StrictCodec<T, U> {
    inner: ProstCodec<T, U>,
}

impl<T, U> Default for StrictCodec<T, U> {
    fn default() -> Self {
        Self {
            inner: ProstCodec::default(),
        }
    }
}

impl<T, U> Codec for StrictCodec<T, U>
where
    T: Message + Send + 'static,
    U: Message + Default + Send + 'static,
{
    type Encode = T;
    type Decode = U;
    type Encoder = ProstEncoder<T>;
    type Decoder = StrictDecoder<U>;

    fn encoder(&mut self) -> Self::Encoder {
        self.inner.encoder()
    }

    fn decoder(&mut self) -> Self::Decoder {
        StrictDecoder {
            inner: self.inner.decoder(),
            _pd: PhantomData,
        }
    }
}

/// prost's decoder with decode failures reported as INVALID_ARGUMENT.
#[derive(Debug)]
pub struct StrictDecoder<U> {
    inner: ProstDecoder<U>,
    _pd: PhantomData<U>,
}

impl<U: Message + Default> Decoder for StrictDecoder<U> {
    type Item = U;
    type Error = Status;

    fn decode(&mut self, buf: &mut DecodeBuf<'_>) -> Result<Option<U>, Status> {
        self.inner.decode(buf).map_err(|status| {
            Status::invalid_argument(format!(
                "the message is not a valid {}: {}",
                std::any::type_name::<U>()
                    .rsplit("::")
                    .next()
                    .unwrap_or("message"),
                status.message()
            ))
        })
    }

    fn buffer_settings(&self) -> BufferSettings {
        self.inner.buffer_settings()
    }
}

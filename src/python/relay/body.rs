//! The response body the relay hands hyper, the names of upstream failures (as the
//! records spell them), and the side copy's bounded decoder.

use std::io::Write;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use hyper::body::{Body, Frame, SizeHint};
use tokio::sync::mpsc;

/// Why a response was left unfinished: hyper drops the connection, so that the
/// client cannot take it for a whole one.
#[derive(Debug)]
pub(crate) struct Abort;

impl std::fmt::Display for Abort {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the response was cut")
    }
}

impl std::error::Error for Abort {}

/// One piece of a streamed body, or the end of an unfinished one.
pub(crate) type Piece = Result<Bytes, Abort>;

/// A response body: whole, or streamed from the exchange's task.
pub(crate) enum RelayBody {
    Whole(Option<Bytes>),
    Stream(mpsc::Receiver<Piece>),
}

impl Body for RelayBody {
    type Data = Bytes;
    type Error = Abort;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Abort>>> {
        match self.get_mut() {
            RelayBody::Whole(body) => Poll::Ready(body.take().map(|b| Ok(Frame::data(b)))),
            RelayBody::Stream(rx) => match rx.poll_recv(cx) {
                Poll::Ready(Some(Ok(b))) => Poll::Ready(Some(Ok(Frame::data(b)))),
                Poll::Ready(Some(Err(a))) => Poll::Ready(Some(Err(a))),
                Poll::Ready(None) => Poll::Ready(None),
                Poll::Pending => Poll::Pending,
            },
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(self, RelayBody::Whole(None))
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            RelayBody::Whole(Some(b)) => SizeHint::with_exact(b.len() as u64),
            RelayBody::Whole(None) => SizeHint::with_exact(0),
            RelayBody::Stream(_) => SizeHint::default(),
        }
    }
}

fn io_kind(error: &(dyn std::error::Error + 'static)) -> Option<std::io::ErrorKind> {
    let mut source = Some(error);
    while let Some(e) = source {
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            return Some(io.kind());
        }
        source = e.source();
    }
    None
}

/// The name of a failure to get the upstream's response head, as httpx names it
/// (the records and the error bodies say it).
pub(crate) fn request_error_name(e: &hyper_util::client::legacy::Error) -> &'static str {
    if e.is_connect() {
        return match io_kind(e) {
            Some(std::io::ErrorKind::TimedOut) => "ConnectTimeout",
            _ => "ConnectError",
        };
    }
    match io_kind(e) {
        Some(std::io::ErrorKind::TimedOut) => "ReadTimeout",
        Some(_) => "ReadError",
        None => "RemoteProtocolError",
    }
}

/// The name of a failure while the upstream's body is read, as httpx names it.
pub(crate) fn read_error_name(e: &hyper::Error) -> &'static str {
    if e.is_incomplete_message() || e.is_parse() {
        return "RemoteProtocolError";
    }
    match io_kind(e) {
        Some(std::io::ErrorKind::TimedOut) => "ReadTimeout",
        Some(
            std::io::ErrorKind::UnexpectedEof
            | std::io::ErrorKind::ConnectionReset
            | std::io::ErrorKind::ConnectionAborted
            | std::io::ErrorKind::BrokenPipe,
        )
        | None => "RemoteProtocolError",
        Some(_) => "ReadError",
    }
}

/// The most one read of a compressed body may expand to in the side copy.
const MAX_DECODED_PER_READ: usize = 1 << 24;
/// Compressed bytes decoded at a time, so that the bound is kept within one step.
const STEP: usize = 1024;

/// The side copy's decoder of a gzip or zlib-wrapped deflate body, bounded per read.
pub(crate) enum Decoder {
    Gzip(flate2::write::GzDecoder<Vec<u8>>),
    Deflate(flate2::write::ZlibDecoder<Vec<u8>>),
}

impl Decoder {
    pub(crate) fn new(encoding: &str) -> Option<Self> {
        match encoding {
            "gzip" => Some(Decoder::Gzip(flate2::write::GzDecoder::new(Vec::new()))),
            "deflate" => Some(Decoder::Deflate(
                flate2::write::ZlibDecoder::new(Vec::new()),
            )),
            _ => None,
        }
    }

    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        match self {
            Decoder::Gzip(d) => d.write(data),
            Decoder::Deflate(d) => d.write(data),
        }
    }

    fn out(&mut self) -> &mut Vec<u8> {
        match self {
            Decoder::Gzip(d) => d.get_mut(),
            Decoder::Deflate(d) => d.get_mut(),
        }
    }

    /// The decoded bytes of one read; the record's reason when it cannot be decoded.
    pub(crate) fn decode(&mut self, mut data: &[u8]) -> Result<Vec<u8>, String> {
        self.out().clear();
        while !data.is_empty() {
            let step = data.get(..STEP.min(data.len())).unwrap_or(data);
            let used = self.write(step).map_err(invalid)?;
            if used == 0 {
                // The compressed stream ended: what follows it is not read.
                break;
            }
            data = data.get(used..).unwrap_or_default();
            if self.out().len() > MAX_DECODED_PER_READ && !data.is_empty() {
                return Err("the compressed body expands past 16 MiB per read".to_owned());
            }
        }
        if self.out().len() > MAX_DECODED_PER_READ {
            return Err("the compressed body expands past 16 MiB per read".to_owned());
        }
        Ok(std::mem::take(self.out()))
    }

    /// What the decoder still holds at the end of the body.
    pub(crate) fn flush(&mut self) -> Vec<u8> {
        let _ = match self {
            Decoder::Gzip(d) => d.try_finish(),
            Decoder::Deflate(d) => d.try_finish(),
        };
        std::mem::take(self.out())
    }
}

fn invalid(e: std::io::Error) -> String {
    format!("the body is not valid compressed data: {e}")
}

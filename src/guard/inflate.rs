//! A body's `Content-Encoding` (gzip, deflate) decoded as its bytes arrive,
//! in bounded memory: the compressed bytes go to the decoder a slice at a
//! time, so one write can never produce more than a bounded amount, and the
//! decoded total is held to a size and a ratio bound (a compression bomb is
//! refused early, not decoded whole).

use std::io::Write;

use flate2::write::{DeflateDecoder, MultiGzDecoder, ZlibDecoder};

/// A body's content coding, as `Content-Encoding` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// No coding (`identity`, or no header).
    Identity,
    /// `gzip` / `x-gzip`.
    Gzip,
    /// `deflate`: zlib-wrapped as HTTP says, or raw deflate as some servers send.
    Deflate,
}

impl Encoding {
    /// The coding a `Content-Encoding` value names, or `None` for one the guard
    /// cannot decode (`br`, `zstd`, a list of codings).
    #[must_use]
    pub fn parse(header: &str) -> Option<Self> {
        match header.trim().to_ascii_lowercase().as_str() {
            "" | "identity" => Some(Encoding::Identity),
            "gzip" | "x-gzip" => Some(Encoding::Gzip),
            "deflate" => Some(Encoding::Deflate),
            _ => None,
        }
    }
}

/// Compressed bytes handed to the decoder at once: deflate expands a byte to
/// at most about 1,032, so one slice decodes to at most about 260 KiB.
const SLICE: usize = 256;
/// The ratio bound applies once this much is decoded.
const RATIO_FROM: u64 = 1 << 20;

/// Bounds on a decoded body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InflateLimits {
    /// Decoded bytes in all.
    pub max_decoded_bytes: u64,
    /// Decoded bytes per compressed byte (past the first MiB).
    pub max_ratio: u64,
}

impl Default for InflateLimits {
    fn default() -> Self {
        Self {
            max_decoded_bytes: 256 << 20,
            max_ratio: 200,
        }
    }
}

enum Inner {
    Gzip(MultiGzDecoder<Vec<u8>>),
    Zlib(ZlibDecoder<Vec<u8>>),
    Raw(DeflateDecoder<Vec<u8>>),
}

impl Inner {
    fn write_all(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        match self {
            Inner::Gzip(d) => d.write_all(bytes),
            Inner::Zlib(d) => d.write_all(bytes),
            Inner::Raw(d) => d.write_all(bytes),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Inner::Gzip(d) => d.flush(),
            Inner::Zlib(d) => d.flush(),
            Inner::Raw(d) => d.flush(),
        }
    }

    fn finish(&mut self) -> std::io::Result<()> {
        match self {
            Inner::Gzip(d) => d.try_finish(),
            Inner::Zlib(d) => d.try_finish(),
            Inner::Raw(d) => d.try_finish(),
        }
    }

    fn out(&mut self) -> &mut Vec<u8> {
        match self {
            Inner::Gzip(d) => d.get_mut(),
            Inner::Zlib(d) => d.get_mut(),
            Inner::Raw(d) => d.get_mut(),
        }
    }
}

impl std::fmt::Debug for Inner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Inner::Gzip(_) => "gzip",
            Inner::Zlib(_) => "zlib",
            Inner::Raw(_) => "raw deflate",
        })
    }
}

/// Decodes one body.
#[derive(Debug)]
pub(crate) struct Inflater {
    encoding: Encoding,
    inner: Option<Inner>,
    /// The first bytes of a deflate body, until they tell zlib from raw.
    head: Vec<u8>,
    limits: InflateLimits,
    given: u64,
    decoded: u64,
}

impl Inflater {
    pub(crate) fn new(encoding: Encoding, limits: InflateLimits) -> Self {
        Self {
            encoding,
            inner: None,
            head: Vec::new(),
            limits,
            given: 0,
            decoded: 0,
        }
    }

    /// Decodes `bytes`, handing each decoded run to `out`, which answers
    /// whether to go on.
    pub(crate) fn push(
        &mut self,
        bytes: &[u8],
        out: &mut dyn FnMut(&[u8]) -> bool,
    ) -> Result<(), String> {
        if self.inner.is_none() {
            self.head.extend_from_slice(bytes);
            let Some(inner) = self.start() else {
                return Ok(());
            };
            self.inner = Some(inner);
            let head = std::mem::take(&mut self.head);
            return self.decode(&head, out);
        }
        self.decode(bytes, out)
    }

    /// The end of the body: what the decoder still holds, and the check that
    /// the compressed stream ended (a gzip trailer, the final deflate block).
    pub(crate) fn finish(&mut self, out: &mut dyn FnMut(&[u8]) -> bool) -> Result<(), String> {
        if self.inner.is_none() {
            if self.head.is_empty() {
                return Ok(());
            }
            self.inner = Some(self.start_now());
            let head = std::mem::take(&mut self.head);
            self.decode(&head, out)?;
        }
        let name = self.name();
        let Some(inner) = self.inner.as_mut() else {
            return Ok(());
        };
        let ended = inner.finish();
        let run = std::mem::take(inner.out());
        self.count(run.len())?;
        if !run.is_empty() && !out(&run) {
            return Ok(());
        }
        ended.map_err(|e| format!("the {name} body is cut short or corrupt: {e}"))
    }

    fn name(&self) -> &'static str {
        match self.encoding {
            Encoding::Identity => "identity",
            Encoding::Gzip => "gzip",
            Encoding::Deflate => "deflate",
        }
    }

    /// The decoder, once the first bytes tell which (deflate: zlib or raw).
    fn start(&self) -> Option<Inner> {
        match self.encoding {
            Encoding::Deflate if self.head.len() < 2 => None,
            _ => Some(self.start_now()),
        }
    }

    fn start_now(&self) -> Inner {
        match self.encoding {
            Encoding::Gzip | Encoding::Identity => Inner::Gzip(MultiGzDecoder::new(Vec::new())),
            Encoding::Deflate => match self.head.as_slice() {
                // RFC 1950: method 8, and the header's check bits.
                [cmf, flg, ..]
                    if cmf & 0x0f == 8 && (u16::from(*cmf) * 256 + u16::from(*flg)) % 31 == 0 =>
                {
                    Inner::Zlib(ZlibDecoder::new(Vec::new()))
                }
                _ => Inner::Raw(DeflateDecoder::new(Vec::new())),
            },
        }
    }

    fn decode(&mut self, bytes: &[u8], out: &mut dyn FnMut(&[u8]) -> bool) -> Result<(), String> {
        let name = self.name();
        for slice in bytes.chunks(SLICE) {
            self.given = self
                .given
                .saturating_add(u64::try_from(slice.len()).unwrap_or(u64::MAX));
            let Some(inner) = self.inner.as_mut() else {
                return Ok(());
            };
            inner
                .write_all(slice)
                .and_then(|()| inner.flush())
                .map_err(|e| format!("the {name} body is corrupt: {e}"))?;
            let run = std::mem::take(inner.out());
            self.count(run.len())?;
            if !run.is_empty() && !out(&run) {
                return Ok(());
            }
        }
        Ok(())
    }

    fn count(&mut self, n: usize) -> Result<(), String> {
        let name = self.name();
        self.decoded = self
            .decoded
            .saturating_add(u64::try_from(n).unwrap_or(u64::MAX));
        if self.decoded > self.limits.max_decoded_bytes {
            return Err(format!(
                "the {name} body decodes to more than {} bytes (max_decoded_bytes)",
                self.limits.max_decoded_bytes
            ));
        }
        if self.decoded > RATIO_FROM && self.decoded / self.given.max(1) > self.limits.max_ratio {
            return Err(format!(
                "the {name} body decodes to {} bytes from {}: over {} decoded bytes per \
                 compressed byte (max_ratio), a compression bomb",
                self.decoded, self.given, self.limits.max_ratio
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::write::{GzEncoder, ZlibEncoder};
    use flate2::Compression;

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut e = GzEncoder::new(Vec::new(), Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn inflate(
        encoding: Encoding,
        pieces: &[&[u8]],
        limits: InflateLimits,
    ) -> Result<Vec<u8>, String> {
        let mut i = Inflater::new(encoding, limits);
        let mut got = Vec::new();
        for p in pieces {
            i.push(p, &mut |run| {
                got.extend_from_slice(run);
                true
            })?;
        }
        i.finish(&mut |run| {
            got.extend_from_slice(run);
            true
        })?;
        Ok(got)
    }

    #[test]
    fn gzip_cut_anywhere_decodes_the_same() {
        let data = b"data: {\"a\":1}\n\n".repeat(200);
        let z = gzip(&data);
        for cut in [
            0,
            1,
            2,
            5,
            10,
            11,
            20,
            z.len() / 2,
            z.len() - 8,
            z.len() - 1,
        ] {
            let (a, b) = z.split_at(cut);
            assert_eq!(
                inflate(Encoding::Gzip, &[a, b], InflateLimits::default()).unwrap(),
                data
            );
        }
        let bytewise: Vec<&[u8]> = z.chunks(1).collect();
        assert_eq!(
            inflate(Encoding::Gzip, &bytewise, InflateLimits::default()).unwrap(),
            data
        );
    }

    #[test]
    fn deflate_zlib_and_raw() {
        let data = b"{\"x\": 1}".repeat(50);
        let mut e = ZlibEncoder::new(Vec::new(), Compression::default());
        e.write_all(&data).unwrap();
        let z = e.finish().unwrap();
        assert_eq!(
            inflate(
                Encoding::Deflate,
                &[&z[..1], &z[1..]],
                InflateLimits::default()
            )
            .unwrap(),
            data
        );
        let mut e = flate2::write::DeflateEncoder::new(Vec::new(), Compression::default());
        e.write_all(&data).unwrap();
        let raw = e.finish().unwrap();
        assert_eq!(
            inflate(Encoding::Deflate, &[&raw], InflateLimits::default()).unwrap(),
            data
        );
    }

    #[test]
    fn a_bomb_is_refused_before_it_is_decoded_whole() {
        let data = vec![b' '; 64 << 20];
        let z = gzip(&data);
        let err = inflate(Encoding::Gzip, &[&z], InflateLimits::default()).unwrap_err();
        assert!(err.contains("max_ratio"), "{err}");
        let limits = InflateLimits {
            max_decoded_bytes: 1000,
            max_ratio: 1_000_000,
        };
        let err = inflate(Encoding::Gzip, &[&z], limits).unwrap_err();
        assert!(err.contains("max_decoded_bytes"), "{err}");
    }

    #[test]
    fn a_cut_or_corrupt_body_is_an_error() {
        let z = gzip(b"data: {}\n\n");
        assert!(inflate(
            Encoding::Gzip,
            &[&z[..z.len() - 4]],
            InflateLimits::default()
        )
        .is_err());
        assert!(inflate(
            Encoding::Gzip,
            &[b"not gzip at all"],
            InflateLimits::default()
        )
        .is_err());
    }

    #[test]
    fn codings_by_name() {
        assert_eq!(Encoding::parse("GZIP"), Some(Encoding::Gzip));
        assert_eq!(Encoding::parse(""), Some(Encoding::Identity));
        assert_eq!(Encoding::parse("br"), None);
        assert_eq!(Encoding::parse("gzip, br"), None);
    }
}

//! Cutting a byte string into pieces chosen by the fuzz input.

/// `bytes` cut at up to `count % 16` points drawn from `seed` (a small
/// xorshift), in order, every byte kept. Points may repeat (empty pieces are
/// kept: a push of nothing must change nothing).
#[must_use]
pub fn pieces(bytes: &[u8], count: u8, seed: u16) -> Vec<&[u8]> {
    let mut points = Vec::new();
    let mut x = u32::from(seed) | 0x1_0000;
    let span = bytes.len() + 1;
    for _ in 0..(count % 16) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        points.push(x as usize % span);
    }
    points.push(0);
    points.push(bytes.len());
    points.sort_unstable();
    points.windows(2).map(|w| &bytes[w[0]..w[1]]).collect()
}

/// Every byte on its own.
#[must_use]
pub fn bytewise(bytes: &[u8]) -> Vec<&[u8]> {
    bytes.chunks(1).collect()
}

/// `text` cut into pieces at char boundaries (for APIs that take `&str`).
#[must_use]
pub fn str_pieces(text: &str, count: u8, seed: u16) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut start, mut at) = (0, 0);
    for piece in pieces(text.as_bytes(), count, seed) {
        at += piece.len();
        let mut end = at;
        while !text.is_char_boundary(end) {
            end += 1;
        }
        let end = end.max(start);
        out.push(&text[start..end]);
        start = end;
    }
    out
}

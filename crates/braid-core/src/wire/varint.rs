//! QUIC variable-length integers (RFC 9000 §16): 1, 2, 4 or 8 bytes, the top two bits of the
//! first byte give the length. Values up to 2^62 - 1.

/// The largest value a varint can carry.
pub const MAX: u64 = (1 << 62) - 1;

/// Bytes needed to encode `v` (values above [`MAX`] are not encodable; callers keep below it).
pub const fn size(v: u64) -> usize {
    if v < 1 << 6 {
        1
    } else if v < 1 << 14 {
        2
    } else if v < 1 << 30 {
        4
    } else {
        8
    }
}

/// Appends `v` to `out`. Values above [`MAX`] are clamped to [`MAX`].
pub fn put(out: &mut Vec<u8>, v: u64) {
    let v = v.min(MAX);
    match size(v) {
        1 => out.push(v as u8),
        2 => out.extend_from_slice(&((v as u16) | 0x4000).to_be_bytes()),
        4 => out.extend_from_slice(&((v as u32) | 0x8000_0000).to_be_bytes()),
        _ => out.extend_from_slice(&(v | 0xc000_0000_0000_0000).to_be_bytes()),
    }
}

/// Writes `v` at the start of `buf`, returning the bytes written, or None when it does not fit.
pub fn write(buf: &mut [u8], v: u64) -> Option<usize> {
    let v = v.min(MAX);
    let n = size(v);
    let dst = buf.get_mut(..n)?;
    match n {
        1 => dst[0] = v as u8,
        2 => dst.copy_from_slice(&((v as u16) | 0x4000).to_be_bytes()),
        4 => dst.copy_from_slice(&((v as u32) | 0x8000_0000).to_be_bytes()),
        _ => dst.copy_from_slice(&(v | 0xc000_0000_0000_0000).to_be_bytes()),
    }
    Some(n)
}

/// Reads a varint from the start of `buf`: the value and the bytes it took, or None if truncated.
pub fn read(buf: &[u8]) -> Option<(u64, usize)> {
    let first = *buf.first()?;
    let n = 1usize << (first >> 6);
    let bytes = buf.get(..n)?;
    let mut v = u64::from(first & 0x3f);
    for b in &bytes[1..] {
        v = (v << 8) | u64::from(*b);
    }
    Some((v, n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_all_sizes() {
        for v in [0, 63, 64, 16383, 16384, (1 << 30) - 1, 1 << 30, MAX] {
            let mut out = Vec::new();
            put(&mut out, v);
            assert_eq!(out.len(), size(v));
            assert_eq!(read(&out), Some((v, out.len())));
            let mut buf = [0u8; 8];
            assert_eq!(write(&mut buf, v), Some(size(v)));
            assert_eq!(&buf[..size(v)], &out[..]);
        }
    }

    #[test]
    fn truncated_is_none() {
        assert_eq!(read(&[]), None);
        assert_eq!(read(&[0x40]), None);
        assert_eq!(read(&[0xc0, 0, 0, 0, 0, 0, 0]), None);
        assert_eq!(write(&mut [0u8; 1], 64), None);
    }
}

//! Reading NAL unit payloads: emulation-prevention removal and an exp-Golomb bit reader, enough
//! for the first fields of slice headers and parameter sets.

use crate::error::{ParseError, ParseResult};

/// The RBSP of a NAL payload: `00 00 03` becomes `00 00`. At most `limit` output bytes are
/// produced, since slice headers need only their first bytes.
pub fn unescape(payload: &[u8], limit: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(payload.len().min(limit));
    let mut zeros = 0;
    for &b in payload {
        if out.len() >= limit {
            break;
        }
        if zeros >= 2 && b == 3 {
            zeros = 0;
            continue;
        }
        zeros = if b == 0 { zeros + 1 } else { 0 };
        out.push(b);
    }
    out
}

/// MSB-first bit reader.
pub struct BitReader<'a> {
    bytes: &'a [u8],
    bit: usize,
}

impl<'a> BitReader<'a> {
    /// Reads `bytes` from the first bit.
    pub fn new(bytes: &'a [u8]) -> Self {
        BitReader { bytes, bit: 0 }
    }

    /// One bit.
    pub fn bit(&mut self) -> ParseResult<bool> {
        let byte = self
            .bytes
            .get(self.bit / 8)
            .ok_or(ParseError::BitstreamEnd)?;
        let v = (byte >> (7 - self.bit % 8)) & 1;
        self.bit += 1;
        Ok(v == 1)
    }

    /// `n` bits (at most 32) as an unsigned number.
    pub fn bits(&mut self, n: u32) -> ParseResult<u32> {
        let mut v = 0u32;
        for _ in 0..n.min(32) {
            v = (v << 1) | u32::from(self.bit()?);
        }
        Ok(v)
    }

    /// Skips `n` bits.
    pub fn skip(&mut self, n: usize) -> ParseResult<()> {
        if self.bit + n > self.bytes.len() * 8 {
            return Err(ParseError::BitstreamEnd);
        }
        self.bit += n;
        Ok(())
    }

    /// Unsigned exp-Golomb code `ue(v)`.
    pub fn ue(&mut self) -> ParseResult<u32> {
        let mut zeros = 0;
        while !self.bit()? {
            zeros += 1;
            if zeros > 31 {
                return Err(ParseError::ExpGolombTooLong);
            }
        }
        let rest = self.bits(zeros)?;
        Ok(((1u64 << zeros) - 1 + u64::from(rest)) as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emulation_prevention_is_removed() {
        assert_eq!(
            unescape(&[0, 0, 3, 1, 0, 0, 3, 0, 0, 3], 100),
            vec![0, 0, 1, 0, 0, 0, 0]
        );
        assert_eq!(unescape(&[1, 2, 3, 4], 2), vec![1, 2]);
    }

    #[test]
    fn exp_golomb_codes() {
        // 1 | 010 | 011 | 00100 | 0001000 -> 0, 1, 2, 3, 7
        let bytes = [0b1010_0110, 0b0100_0001, 0b0000_0000];
        let mut r = BitReader::new(&bytes);
        let got: Vec<u32> = (0..5).map(|_| r.ue().unwrap()).collect();
        assert_eq!(got, vec![0, 1, 2, 3, 7]);
        assert!(BitReader::new(&[0, 0, 0, 0, 0]).ue().is_err());
        assert!(BitReader::new(&[]).bit().is_err());
    }
}

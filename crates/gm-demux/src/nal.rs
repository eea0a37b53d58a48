//! What each sample's NAL units say about its picture: slice type, random-access kind,
//! whether other pictures may reference it, leading-picture kind; and in-band parameter sets.

use std::collections::HashMap;

use crate::bits::{BitReader, unescape};
use crate::codec::{Codec, HevcPpsFields, hevc_pps_slice_fields};
use crate::error::{ParseError, ParseResult, invalid};
pub use crate::picture::{Leading, Picture, RandomAccess, SliceType};

/// Reads pictures in decode order, keeping the parameter-set state that slice headers need.
pub struct PictureParser {
    codec: Codec,
    nal_length_size: usize,
    hevc_pps: HashMap<u32, HevcPpsFields>,
}

/// One NAL unit of a sample.
pub struct NalUnits<'a> {
    data: &'a [u8],
    len_size: usize,
    partial_tail: bool,
}

impl<'a> NalUnits<'a> {
    /// Splits a length-prefixed sample; a NAL unit running past the end is an error.
    pub fn new(data: &'a [u8], len_size: usize) -> Self {
        NalUnits {
            data,
            len_size,
            partial_tail: false,
        }
    }

    /// Splits the first bytes of a longer sample: the last NAL unit may be cut short.
    pub fn window(data: &'a [u8], len_size: usize) -> Self {
        NalUnits {
            data,
            len_size,
            partial_tail: true,
        }
    }
}

impl<'a> Iterator for NalUnits<'a> {
    type Item = ParseResult<&'a [u8]>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.data.is_empty() {
            return None;
        }
        if !matches!(self.len_size, 1..=4) {
            self.data = &[];
            return Some(Err(invalid!(
                "a NAL length prefix of {} bytes",
                self.len_size
            )));
        }
        if self.data.len() < self.len_size {
            self.data = &[];
            return Some(Err(ParseError::TruncatedNalLength));
        }
        let len = self.data[..self.len_size]
            .iter()
            .fold(0usize, |a, &b| (a << 8) | usize::from(b));
        let rest = &self.data[self.len_size..];
        if len > rest.len() && self.partial_tail {
            self.data = &[];
            return Some(Ok(rest));
        }
        if len > rest.len() {
            self.data = &[];
            return Some(Err(ParseError::NalPastEnd {
                len,
                left: rest.len(),
            }));
        }
        let (nal, tail) = rest.split_at(len);
        self.data = tail;
        Some(Ok(nal))
    }
}

impl PictureParser {
    /// A parser primed with the configuration record's parameter sets.
    pub fn new(codec: Codec, nal_length_size: u8, parameter_sets: &[Vec<u8>]) -> Self {
        let mut p = PictureParser {
            codec,
            nal_length_size: usize::from(nal_length_size),
            hevc_pps: HashMap::new(),
        };
        for ps in parameter_sets {
            p.parameter_set(ps);
        }
        p
    }

    fn parameter_set(&mut self, nal: &[u8]) {
        if self.codec == Codec::Hevc
            && nal.len() > 2
            && (nal[0] >> 1) & 0x3f == 34
            && let Ok((id, fields)) = hevc_pps_slice_fields(nal)
        {
            self.hevc_pps.insert(id, fields);
        }
    }

    /// The first bytes of a sample are enough: slice headers come first. Returns the picture
    /// and the in-band parameter sets the sample carries.
    pub fn parse(&mut self, sample: &[u8]) -> ParseResult<(Picture, Vec<Vec<u8>>)> {
        self.parse_window(sample, false)
    }

    /// Like [`parse`](Self::parse) on the first bytes of a sample; `truncated` says the sample
    /// goes on, so its last NAL unit may be cut short (its header is still whole).
    pub fn parse_window(
        &mut self,
        bytes: &[u8],
        truncated: bool,
    ) -> ParseResult<(Picture, Vec<Vec<u8>>)> {
        let nals = if truncated {
            NalUnits::window(bytes, self.nal_length_size)
        } else {
            NalUnits::new(bytes, self.nal_length_size)
        };
        match self.codec {
            Codec::H264 => self.parse_h264(nals),
            Codec::Hevc => self.parse_hevc(nals),
            Codec::Vp9 | Codec::Av1 => {
                Err(invalid!("{} samples are not NAL units", self.codec.name()))
            }
        }
    }

    fn parse_h264(&mut self, nals: NalUnits<'_>) -> ParseResult<(Picture, Vec<Vec<u8>>)> {
        let mut pic = Picture {
            slice_type: None,
            random_access: RandomAccess::None,
            reference: false,
            leading: Leading::No,
            temporal_id: 0,
        };
        let mut sets = Vec::new();
        let mut recovery = false;
        let mut saw_slice = false;
        for nal in nals {
            let nal = nal?;
            let Some(&h) = nal.first() else { continue };
            let ty = h & 0x1f;
            match ty {
                1 | 5 => {
                    saw_slice = true;
                    if h & 0x60 != 0 {
                        pic.reference = true;
                    }
                    if ty == 5 {
                        pic.random_access = RandomAccess::Idr;
                    }
                    let rbsp = unescape(&nal[1..], 16);
                    let mut b = BitReader::new(&rbsp);
                    let _first_mb = b.ue()?;
                    let st = match b.ue()? % 5 {
                        0 | 3 => SliceType::P,
                        1 => SliceType::B,
                        _ => SliceType::I,
                    };
                    pic.slice_type = Some(worst(pic.slice_type, st));
                }
                6 => recovery |= h264_sei_has_recovery_point(&nal[1..]),
                7 | 8 => sets.push(nal.to_vec()),
                _ => {}
            }
        }
        if !saw_slice {
            return Err("no slice NAL unit in the sample".into());
        }
        if pic.random_access == RandomAccess::None
            && recovery
            && pic.slice_type == Some(SliceType::I)
        {
            pic.random_access = RandomAccess::RecoveryPoint;
        }
        Ok((pic, sets))
    }

    fn parse_hevc(&mut self, nals: NalUnits<'_>) -> ParseResult<(Picture, Vec<Vec<u8>>)> {
        let mut pic: Option<Picture> = None;
        let mut sets = Vec::new();
        for nal in nals {
            let nal = nal?;
            if nal.len() < 2 {
                continue;
            }
            let ty = (nal[0] >> 1) & 0x3f;
            let tid = (nal[1] & 7).saturating_sub(1);
            if (32..=34).contains(&ty) {
                self.parameter_set(nal);
                sets.push(nal.to_vec());
                continue;
            }
            if ty >= 32 || pic.is_some() {
                continue;
            }
            if (22..=31).contains(&ty) || (10..=15).contains(&ty) {
                return Err(invalid!("reserved HEVC NAL unit type {ty}"));
            }
            let random_access = match ty {
                16..=18 => RandomAccess::Bla,
                19 | 20 => RandomAccess::Idr,
                21 => RandomAccess::Cra,
                _ => RandomAccess::None,
            };
            let leading = match ty {
                6 | 7 => Leading::Radl,
                8 | 9 => Leading::Rasl,
                _ => Leading::No,
            };
            let reference = !(ty < 16 && ty % 2 == 0);
            let rbsp = unescape(&nal[2..], 32);
            let mut b = BitReader::new(&rbsp);
            let first_slice = b.bit()?;
            let mut slice_type = None;
            if first_slice {
                if (16..=23).contains(&ty) {
                    b.bit()?; // no_output_of_prior_pics_flag
                }
                let pps_id = b.ue()?;
                let pps = self.hevc_pps.get(&pps_id).copied().ok_or_else(|| {
                    invalid!("slice refers to HEVC PPS {pps_id}, which was not seen")
                })?;
                b.skip(pps.num_extra_slice_header_bits as usize)?;
                slice_type = Some(match b.ue()? {
                    0 => SliceType::B,
                    1 => SliceType::P,
                    2 => SliceType::I,
                    v => return Err(invalid!("HEVC slice_type {v}")),
                });
            }
            pic = Some(Picture {
                slice_type,
                random_access,
                reference,
                leading,
                temporal_id: tid,
            });
        }
        let pic = pic.ok_or_else(|| ParseError::from("no slice NAL unit in the sample"))?;
        Ok((pic, sets))
    }
}

fn worst(a: Option<SliceType>, b: SliceType) -> SliceType {
    match (a, b) {
        (Some(SliceType::B), _) | (_, SliceType::B) => SliceType::B,
        (Some(SliceType::P), _) | (_, SliceType::P) => SliceType::P,
        _ => SliceType::I,
    }
}

/// Whether an H.264 SEI NAL payload holds a recovery point message (payload type 6).
fn h264_sei_has_recovery_point(payload: &[u8]) -> bool {
    let rbsp = unescape(payload, 4096);
    let mut i = 0;
    while i < rbsp.len() && rbsp[i] != 0x80 {
        let mut ty = 0usize;
        while i < rbsp.len() && rbsp[i] == 0xff {
            ty += 255;
            i += 1;
        }
        let Some(&t) = rbsp.get(i) else { return false };
        ty += usize::from(t);
        i += 1;
        let mut size = 0usize;
        while i < rbsp.len() && rbsp[i] == 0xff {
            size += 255;
            i += 1;
        }
        let Some(&s) = rbsp.get(i) else { return false };
        size += usize::from(s);
        i += 1;
        if ty == 6 {
            return true;
        }
        i += size;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(nals: &[&[u8]]) -> Vec<u8> {
        let mut v = Vec::new();
        for n in nals {
            v.extend_from_slice(&(n.len() as u32).to_be_bytes());
            v.extend_from_slice(n);
        }
        v
    }

    #[test]
    fn h264_slice_kinds() {
        let mut p = PictureParser::new(Codec::H264, 4, &[]);
        // IDR, nal_ref_idc 3: first_mb 0 ('1'), slice_type 7 ('0001000') = I.
        let (pic, _) = p.parse(&sample(&[&[0x65, 0b1000_1000, 0]])).unwrap();
        assert_eq!(pic.random_access, RandomAccess::Idr);
        assert_eq!(pic.slice_type, Some(SliceType::I));
        assert!(pic.reference);
        // Non-reference B: nal_ref_idc 0, slice_type 6 ('00111') = B.
        let (pic, _) = p.parse(&sample(&[&[0x01, 0b1001_1100]])).unwrap();
        assert_eq!((pic.slice_type, pic.reference), (Some(SliceType::B), false));
        // Recovery point SEI + non-IDR I slice = open-GOP random access point.
        let sei: &[u8] = &[0x06, 0x06, 0x01, 0x84, 0x80];
        let (pic, _) = p.parse(&sample(&[sei, &[0x21, 0b1000_1000]])).unwrap();
        assert_eq!(pic.random_access, RandomAccess::RecoveryPoint);
        assert!(p.parse(&sample(&[sei])).is_err(), "no slice");
        let mut truncated = sample(&[&[0x65, 0x88]]);
        truncated[3] = 40;
        assert!(p.parse(&truncated).is_err());
    }
}

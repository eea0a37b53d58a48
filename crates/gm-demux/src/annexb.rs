//! Length-prefixed samples to Annex-B byte streams (start codes), with the parameter sets put
//! in front of the first packet of a decode run, which is what NVDEC's parser needs.

use crate::error::ParseError;
use crate::nal::NalUnits;

const START_CODE: [u8; 4] = [0, 0, 0, 1];

/// Appends `sample` (NAL units with `len_size`-byte lengths) to `out` as Annex-B; an error
/// when a length runs past the end of the sample.
pub fn append_annexb(out: &mut Vec<u8>, sample: &[u8], len_size: u8) -> Result<(), ParseError> {
    for nal in NalUnits::new(sample, usize::from(len_size)) {
        out.extend_from_slice(&START_CODE);
        out.extend_from_slice(nal?);
    }
    Ok(())
}

/// Appends each parameter set with a start code.
pub fn append_parameter_sets(out: &mut Vec<u8>, sets: &[Vec<u8>]) {
    for s in sets {
        out.extend_from_slice(&START_CODE);
        out.extend_from_slice(s);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_become_start_codes() {
        let sample = [0, 0, 0, 2, 0x65, 0xaa, 0, 0, 0, 1, 0x06];
        let mut out = Vec::new();
        append_parameter_sets(&mut out, &[vec![0x67, 1], vec![0x68, 2]]);
        append_annexb(&mut out, &sample, 4).unwrap();
        assert_eq!(
            out,
            vec![
                0, 0, 0, 1, 0x67, 1, 0, 0, 0, 1, 0x68, 2, 0, 0, 0, 1, 0x65, 0xaa, 0, 0, 0, 1, 0x06
            ]
        );
        let two = [0, 1, 0x41, 0, 2, 0x41, 0x42];
        let mut out = Vec::new();
        append_annexb(&mut out, &two, 2).unwrap();
        assert_eq!(out, vec![0, 0, 0, 1, 0x41, 0, 0, 0, 1, 0x41, 0x42]);
        assert!(append_annexb(&mut Vec::new(), &[0, 0, 0, 9, 1], 4).is_err());
        // VP9 and AV1 tracks have no NAL length size: an error, not endless empty units.
        assert!(append_annexb(&mut Vec::new(), &[1, 2, 3], 0).is_err());
    }
}

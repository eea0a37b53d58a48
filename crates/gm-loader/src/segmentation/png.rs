//! A label map's class indices from PNG bytes.

use std::path::Path;

use gm_transforms::targets::Mask;

use super::SegmentationError;

/// Label maps above this many pixels are refused before their rows are allocated.
const MAX_PIXELS: u64 = 1 << 28;

/// The class index of every pixel of a PNG label map: 8-bit grey or palette (VOC's palette
/// PNGs hold the index, its colour is for viewing), or 1-, 2- or 4-bit packed. Colour,
/// grey-with-alpha and 16-bit maps are refused with the reason (a colour-coded map needs its
/// colours turned into indices first). `path` names the file in errors.
pub fn label_map(bytes: &[u8], path: &Path) -> Result<Mask, SegmentationError> {
    let bad = |reason: String| SegmentationError::LabelMap {
        path: path.to_path_buf(),
        reason,
    };
    let mut decoder = png::Decoder::new(std::io::Cursor::new(bytes));
    // The raw samples: palette indices stay indices, packed samples stay packed.
    decoder.set_transformations(png::Transformations::IDENTITY);
    let mut reader = decoder
        .read_info()
        .map_err(|e| bad(format!("not a readable PNG: {e}")))?;
    let info = reader.info();
    let (width, height) = (info.width, info.height);
    let (colour, depth) = (info.color_type, info.bit_depth);
    match colour {
        png::ColorType::Grayscale | png::ColorType::Indexed => {}
        other => {
            return Err(bad(format!(
                "a {other:?} PNG is not a label map of class indices (one grey or palette \
                 index per pixel)"
            )));
        }
    }
    let bits = match depth {
        png::BitDepth::One => 1,
        png::BitDepth::Two => 2,
        png::BitDepth::Four => 4,
        png::BitDepth::Eight => 8,
        png::BitDepth::Sixteen => {
            return Err(bad(
                "16-bit class indices do not fit gm's 8-bit masks".into()
            ));
        }
    };
    if u64::from(width) * u64::from(height) > MAX_PIXELS {
        return Err(bad(format!(
            "{width}x{height} is above {MAX_PIXELS} pixels"
        )));
    }
    let mut buf = vec![
        0u8;
        reader
            .output_buffer_size()
            .ok_or_else(|| bad("too large".into()))?
    ];
    let frame = reader
        .next_frame(&mut buf)
        .map_err(|e| bad(format!("cannot decode: {e}")))?;
    let stride = frame.line_size;
    let pixels = width as usize * height as usize;
    let data = if bits == 8 && stride == width as usize && buf.len() >= pixels {
        // The decoder's rows are the map's: no second buffer.
        buf.truncate(pixels);
        buf
    } else {
        let mut data = Vec::with_capacity(pixels);
        for row in buf.chunks(stride).take(height as usize) {
            unpack(row, bits, width as usize, &mut data);
        }
        data
    };
    if data.len() != pixels {
        return Err(bad("fewer rows than its header says".into()));
    }
    Ok(Mask {
        width,
        height,
        data,
    })
}

/// The first `width` samples of `bits` bits each of a packed row (most significant first).
fn unpack(row: &[u8], bits: usize, width: usize, out: &mut Vec<u8>) {
    if bits == 8 {
        out.extend_from_slice(&row[..width.min(row.len())]);
        return;
    }
    let per_byte = 8 / bits;
    let mask = (1u8 << bits) - 1;
    let samples = row
        .iter()
        .flat_map(|&b| (0..per_byte).map(move |k| (b >> (8 - bits * (k + 1))) & mask));
    out.extend(samples.take(width));
}

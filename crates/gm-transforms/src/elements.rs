//! Reading and writing single elements of a batch tensor the fused kernel wrote (u8, f16,
//! bf16 or f32; CHW or HWC), for the CPU twins of the batch operations.

use gm_cuda::DType;

use crate::types::{Layout, OutputSpec};

/// How a value becomes a u8 element.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ToU8 {
    /// Round half to even, clamp to 0..255 (the fused kernel's store).
    Round,
    /// Truncate toward zero, clamp to 0..255 (torch's float-to-uint8 cast for values in range).
    Truncate,
}

/// The element index of channel `c` of pixel (`x`, `y`) in one image of `spec`.
pub(crate) fn index(spec: &OutputSpec, c: usize, x: usize, y: usize) -> usize {
    let (w, h, ch) = (spec.width as usize, spec.height as usize, spec.channels());
    match spec.layout {
        Layout::Chw => c * w * h + y * w + x,
        Layout::Hwc => (y * w + x) * ch + c,
    }
}

/// Element `i` of `data` (elements of `dtype`) as f32.
pub(crate) fn load(dtype: DType, data: &[u8], i: usize) -> f32 {
    let e = dtype.size();
    let b = &data[i * e..(i + 1) * e];
    match dtype {
        DType::U8 => f32::from(b[0]),
        DType::U16 => f32::from(u16::from_le_bytes([b[0], b[1]])),
        DType::F16 => half::f16::from_le_bytes([b[0], b[1]]).to_f32(),
        DType::BF16 => half::bf16::from_le_bytes([b[0], b[1]]).to_f32(),
        DType::F32 => f32::from_le_bytes([b[0], b[1], b[2], b[3]]),
    }
}

/// Writes `v` as element `i` of `data`; floats round to nearest even.
pub(crate) fn store(dtype: DType, data: &mut [u8], i: usize, v: f32, to_u8: ToU8) {
    let e = dtype.size();
    let o = &mut data[i * e..(i + 1) * e];
    match dtype {
        DType::U8 => {
            let r = match to_u8 {
                ToU8::Round => v.round_ties_even(),
                ToU8::Truncate => v.trunc(),
            };
            o[0] = r.clamp(0.0, 255.0) as u8;
        }
        DType::U16 => {
            o.copy_from_slice(&(v.round_ties_even().clamp(0.0, 65535.0) as u16).to_le_bytes())
        }
        DType::F16 => o.copy_from_slice(&half::f16::from_f32(v).to_le_bytes()),
        DType::BF16 => o.copy_from_slice(&half::bf16::from_f32(v).to_le_bytes()),
        DType::F32 => o.copy_from_slice(&v.to_le_bytes()),
    }
}

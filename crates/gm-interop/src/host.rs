//! Host bytes as typed element vectors, for the frameworks' CPU tensors.

use half::{bf16, f16};

/// Native-endian bytes as elements; copies, since a `Vec<u8>` need not be aligned for `T`.
pub(crate) fn elements<T: bytemuck::Pod>(bytes: &[u8]) -> Vec<T> {
    bytemuck::pod_collect_to_vec(bytes)
}

/// The element types batches come in, typed.
pub(crate) enum HostElements {
    U8(Vec<u8>),
    U16(Vec<u16>),
    F16(Vec<f16>),
    Bf16(Vec<bf16>),
    F32(Vec<f32>),
}

impl HostElements {
    /// Takes the bytes: u8 elements are moved, wider ones copied into aligned vectors.
    pub(crate) fn new(dtype: gm_cuda::DType, bytes: Vec<u8>) -> HostElements {
        match dtype {
            gm_cuda::DType::U8 => HostElements::U8(bytes),
            gm_cuda::DType::U16 => HostElements::U16(elements(&bytes)),
            gm_cuda::DType::F16 => HostElements::F16(elements(&bytes)),
            gm_cuda::DType::BF16 => HostElements::Bf16(elements(&bytes)),
            gm_cuda::DType::F32 => HostElements::F32(elements(&bytes)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_become_native_endian_elements() {
        let v = [1.5f32, -2.0, 3.25];
        let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_ne_bytes()).collect();
        // An unaligned start must still work.
        let mut shifted = vec![0u8];
        shifted.extend_from_slice(&bytes);
        assert_eq!(elements::<f32>(&shifted[1..]), v);
        let h = [f16::from_f32(0.5), f16::from_f32(-7.0)];
        let hb: Vec<u8> = h.iter().flat_map(|x| x.to_ne_bytes()).collect();
        match HostElements::new(gm_cuda::DType::F16, hb) {
            HostElements::F16(got) => assert_eq!(got, h),
            _ => panic!("wrong variant"),
        }
    }
}

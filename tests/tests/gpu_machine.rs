//! What a GPU machine must offer the decoders: on a machine with a CUDA device, the NVDEC and
//! nvJPEG libraries must load (the later decoder issues depend on both).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

use gm_codec::libraries::{NvLibrary, open_library};
use gm_cuda::gpu_test_device;

#[test]
fn a_gpu_machine_has_nvcuvid_and_nvjpeg() {
    let device = gpu_test_device!("a_gpu_machine_has_nvcuvid_and_nvjpeg");
    let cuvid =
        open_library(NvLibrary::NvCuvid).unwrap_or_else(|e| panic!("{}: {e}", device.name()));
    assert!(cuvid.has_symbol("cuvidCreateDecoder") && cuvid.has_symbol("cuvidGetDecoderCaps"));
    let jpeg = open_library(NvLibrary::NvJpeg).unwrap_or_else(|e| panic!("{}: {e}", device.name()));
    let version = jpeg.version().expect("nvjpegGetProperty answers");
    assert!(
        jpeg.has_symbol("nvjpegDecodeBatched"),
        "{} {version}",
        jpeg.path
    );
    eprintln!("nvcuvid: {}, nvJPEG {version}: {}", cuvid.path, jpeg.path);
}

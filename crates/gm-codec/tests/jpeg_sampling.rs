//! Every sampling-factor combination libjpeg-turbo's cjpeg writes (factors 1-4 per component,
//! baseline and progressive: tests/media/jpeg/sampling.tar.gz, made by make_sampling.sh)
//! decoded by every path against libjpeg-turbo. The reference is gm's own libjpeg-turbo decode,
//! itself checked file by file against the MD5 of `djpeg`'s pixels, so no file is decoded
//! against an unverified reference. A path either decodes a file within the bound clean files
//! meet or refuses it with a reason; nothing comes out silently wrong (a file whose luma was
//! sampled more coarsely than its chroma once came out at 8.4 dB).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

mod common;

use std::collections::HashMap;
use std::io::Read;

use common::{fixtures, md5_hex, md5_list};
use gm_codec::jpeg::{
    BackendChoice, DecodePath, DecoderOptions, EncodedImage, ImageDecoder, PixelFormat, decode_rgb,
    decode_rgb_libjpeg, needs_libjpeg, parse,
};
use gm_cuda::testing::device_or_skip;

/// The bound a decoder other than libjpeg-turbo must meet against it: zune-jpeg's and the GPU
/// colour kernel's fancy upsampling round a few values differently (50 dB on the 4:2:0
/// fixture), the GPU tests' 40 dB PSNR and a mean error under 1 per sample.
const MIN_PSNR: f64 = 40.0;
const MAX_MEAN_ERROR: f64 = 1.0;

/// (name, bytes) of every fixture, in the archive's (sorted) order.
fn sampling_files() -> Vec<(String, Vec<u8>)> {
    let path = fixtures().join("jpeg/sampling.tar.gz");
    let gz = flate2::read::GzDecoder::new(std::fs::File::open(&path).unwrap());
    let mut archive = tar::Archive::new(gz);
    let mut files = Vec::new();
    for entry in archive.entries().unwrap() {
        let mut entry = entry.unwrap();
        let name = entry.path().unwrap().to_string_lossy().into_owned();
        let mut data = Vec::new();
        entry.read_to_end(&mut data).unwrap();
        files.push((name, data));
    }
    files
}

/// file name -> MD5 of djpeg's RGB pixels.
fn djpeg_md5s() -> HashMap<String, String> {
    md5_list("jpeg/sampling_djpeg.md5").into_iter().collect()
}

/// libjpeg-turbo's pixels of each file, each checked against djpeg's MD5.
fn references(files: &[(String, Vec<u8>)]) -> Vec<Vec<u8>> {
    let md5s = djpeg_md5s();
    assert_eq!(md5s.len(), files.len(), "one djpeg MD5 per fixture");
    files
        .iter()
        .map(|(name, data)| {
            let info = parse(data).unwrap();
            let img = decode_rgb_libjpeg(data, &info).unwrap();
            assert_eq!(md5_hex(&img.rgb), md5s[name], "{name}: not djpeg's pixels");
            img.rgb
        })
        .collect()
}

/// PSNR over all samples and the mean absolute error.
fn psnr_mae(a: &[u8], b: &[u8]) -> (f64, f64) {
    assert_eq!(a.len(), b.len());
    let (mut se, mut abs) = (0f64, 0f64);
    for (&x, &y) in a.iter().zip(b) {
        let d = f64::from(x.abs_diff(y));
        se += d * d;
        abs += d;
    }
    let n = a.len() as f64;
    let psnr = if se == 0.0 {
        f64::INFINITY
    } else {
        10.0 * (255.0f64 * 255.0 * n / se).log10()
    };
    (psnr, abs / n)
}

/// `Some(line)` describing the miss when `got` is outside the bound against `want`.
fn outside_bound(tag: &str, name: &str, got: &[u8], want: &[u8]) -> Option<String> {
    let (psnr, mae) = psnr_mae(got, want);
    (psnr < MIN_PSNR || mae >= MAX_MEAN_ERROR)
        .then(|| format!("{tag} {name}: {psnr:.1} dB, mean error {mae:.2}"))
}

#[test]
fn the_fixtures_are_every_combination_cjpeg_writes() {
    let files = sampling_files();
    // 311 combinations of three components' factors (cjpeg refuses fractional ratios and MCUs
    // of more than 10 blocks), each baseline and progressive.
    assert_eq!(files.len(), 622);
    for (name, data) in &files {
        let info = parse(data).unwrap();
        let factors: Vec<String> = info
            .components
            .iter()
            .map(|c| format!("{}x{}", c.h, c.v))
            .collect();
        assert_eq!(name[2..name.len() - 4], factors.join("-"), "{name}");
        assert_eq!((info.width, info.height), (45, 37), "{name}");
    }
}

#[test]
fn the_cpu_path_decodes_every_sampling_combination_as_libjpeg_turbo() {
    let files = sampling_files();
    let refs = references(&files);
    let mut misses = Vec::new();
    let mut via_libjpeg = 0;
    for ((name, data), want) in files.iter().zip(&refs) {
        let info = parse(data).unwrap();
        let img = decode_rgb(data, &info, false)
            .unwrap_or_else(|e| panic!("{name}: the CPU path refused it: {e}"));
        if needs_libjpeg(&info) {
            via_libjpeg += 1;
            assert_eq!(&img.rgb, want, "{name}: libjpeg-turbo's own pixels");
        } else {
            misses.extend(outside_bound("cpu", name, &img.rgb, want));
        }
    }
    assert!(
        misses.is_empty(),
        "{} files outside the bound:\n{}",
        misses.len(),
        misses.join("\n")
    );
    // The common layouts stay on zune-jpeg (the faster decoder).
    assert!(via_libjpeg < files.len(), "{via_libjpeg}");
}

#[test]
fn every_gpu_backend_decodes_each_sampling_combination_right_or_refuses_it() {
    let Some(device) = device_or_skip("every_gpu_backend_decodes_each_sampling_combination") else {
        return;
    };
    let files = sampling_files();
    let refs = references(&files);
    let inputs: Vec<EncodedImage<'_>> = files
        .iter()
        .map(|(n, d)| EncodedImage { name: n, data: d })
        .collect();
    for (tag, backend) in [
        ("auto", BackendChoice::Auto),
        ("hw", BackendChoice::Hardware),
        ("cuda", BackendChoice::Cuda),
    ] {
        let options = DecoderOptions {
            backend,
            format: PixelFormat::Rgb,
            apply_orientation: false,
            ..Default::default()
        };
        let mut decoder = ImageDecoder::new(&device, options).unwrap();
        let batch = decoder.decode(&inputs).unwrap();
        let (mut misses, mut paths) = (Vec::new(), HashMap::new());
        for (i, ((name, _), want)) in files.iter().zip(&refs).enumerate() {
            let img = match &batch.images[i] {
                Ok(img) => img,
                Err(e) => {
                    // Auto has the CPU path behind it: everything libjpeg-turbo decodes.
                    assert_ne!(backend, BackendChoice::Auto, "{name}: refused: {e}");
                    *paths.entry("refused").or_insert(0) += 1;
                    continue;
                }
            };
            *paths.entry(img.path.name()).or_insert(0) += 1;
            let got = batch.download(i).unwrap().unwrap();
            if img.path == DecodePath::Cpu && needs_libjpeg(&parse(&files[i].1).unwrap()) {
                assert_eq!(&got, want, "{tag} {name}: libjpeg-turbo's own pixels");
            } else {
                misses.extend(outside_bound(tag, name, &got, want));
            }
        }
        eprintln!("{tag}: {paths:?}");
        assert!(
            misses.is_empty(),
            "{tag}: {} files outside the bound:\n{}",
            misses.len(),
            misses.join("\n")
        );
    }
}

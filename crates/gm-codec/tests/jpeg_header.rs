//! JPEG headers of real files against ffprobe and their known encodings, the choice of
//! decoder, EXIF orientation, limits, and hostile bytes.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

mod common;

use common::{file, fixtures, minimal_jpeg, shared_jpeg, with_orientation};

use gm_codec::jpeg::{
    Backend, Coding, DEFAULT_MAX_PIXELS, HeaderError, ImageErrorKind, RouteError, Subsampling,
    parse, route,
};
use proptest::prelude::*;

fn golden() -> Vec<(String, u32, u32, String)> {
    std::fs::read_to_string(fixtures().join("golden/jpeg_ffprobe.csv"))
        .unwrap()
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (
                f[0].to_string(),
                f[1].parse().unwrap(),
                f[2].parse().unwrap(),
                f[3].to_string(),
            )
        })
        .collect()
}

#[test]
fn headers_of_real_files_match_ffprobe_and_their_encodings() {
    let Some(jpeg) = shared_jpeg() else {
        eprintln!("../shared/media/jpeg absent");
        return;
    };
    for (name, w, h, pix_fmt) in golden() {
        let info = parse(&file(&jpeg, &name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!((info.width, info.height), (w, h), "{name}");
        let comps = match pix_fmt.as_str() {
            "gray" => 1,
            "gbrap" => 4,
            _ => 3,
        };
        assert_eq!(info.components.len(), comps, "{name}");
        assert_eq!(info.precision, 8, "{name}");
        // The odd set's names say how each file was encoded.
        let want = [
            (".420", Subsampling::S420),
            (".422", Subsampling::S422),
            (".440", Subsampling::S440),
            (".444", Subsampling::S444),
            (".411", Subsampling::S411),
            (".410", Subsampling::S410),
        ]
        .into_iter()
        .find(|(k, _)| name.contains(k))
        .map(|(_, s)| s)
        .or(name.contains("gray").then_some(Subsampling::Grey));
        if let Some(want) = want {
            assert_eq!(info.subsampling(), want, "{name}");
        }
        if name.starts_with("video-") {
            // "separate.dc.progression" files are progressive too.
            let progressive = name.contains("progress");
            assert_eq!(
                info.coding,
                if progressive {
                    Coding::Progressive
                } else {
                    Coding::Baseline
                },
                "{name}"
            );
        }
        let backend = route(&info, true, true, DEFAULT_MAX_PIXELS).unwrap();
        let expected = if info.components.len() == 4 || info.is_rgb() {
            Backend::Cpu
        } else if info.coding == Coding::Progressive
            || matches!(info.subsampling(), Subsampling::S411 | Subsampling::S410)
            || name == "video-005.gray.q50.2x2.jpeg"
        {
            Backend::Cuda
        } else {
            Backend::Hardware
        };
        assert_eq!(backend, expected, "{name}: {info:?}");
        // Without the hardware engines, what they would take goes to the CUDA backend.
        let no_hw = route(&info, false, true, DEFAULT_MAX_PIXELS).unwrap();
        assert_eq!(
            no_hw,
            if expected == Backend::Hardware {
                Backend::Cuda
            } else {
                expected
            },
            "{name}"
        );
        assert_eq!(
            route(&info, false, false, DEFAULT_MAX_PIXELS).unwrap(),
            Backend::Cpu,
            "{name}"
        );
    }
    let cmyk = parse(&file(&jpeg, "video-001.cmyk.jpeg")).unwrap();
    assert_eq!(
        cmyk.adobe_transform.map(|t| t != 1),
        Some(true),
        "CMYK files carry an Adobe transform"
    );
}

#[test]
fn exif_orientation_is_read_in_both_byte_orders() {
    let base = minimal_jpeg(64, 48);
    assert_eq!(parse(&base).unwrap().orientation, 1);
    for le in [true, false] {
        for o in 1..=8 {
            assert_eq!(
                parse(&with_orientation(&base, o, le)).unwrap().orientation,
                o as u8
            );
        }
        assert_eq!(
            parse(&with_orientation(&base, 9, le)).unwrap().orientation,
            1,
            "invalid values are ignored"
        );
    }
}

#[test]
fn declared_giant_images_are_refused_before_allocating() {
    let info = parse(&minimal_jpeg(64250, 64250)).unwrap();
    assert_eq!(info.subsampling(), Subsampling::S420);
    let err = route(&info, true, true, DEFAULT_MAX_PIXELS).unwrap_err();
    assert!(
        matches!(
            err,
            RouteError::TooLarge {
                width: 64250,
                height: 64250,
                ..
            }
        ),
        "{err}"
    );
    assert!(route(&info, true, true, u64::MAX).is_ok());
}

#[test]
fn broken_headers_are_errors() {
    assert_eq!(parse(&[]), Err(HeaderError::NotJpeg));
    assert_eq!(parse(b"GIF89a not a jpeg"), Err(HeaderError::NotJpeg));
    assert_eq!(parse(&[0xFF, 0xD8]), Err(HeaderError::Truncated));
    let full = minimal_jpeg(64, 48);
    for cut in 2..full.len() - 1 {
        assert!(parse(&full[..cut]).is_err(), "cut at {cut}");
    }
    let mut zero = minimal_jpeg(0, 48);
    assert!(matches!(parse(&zero), Err(HeaderError::Malformed(_))));
    zero[5] = 1; // a segment length below 2
    assert!(parse(&zero).is_err());
    // An APPn or comment that claims a length below 2 is read as libjpeg reads it: its length
    // field only.
    for marker in [0xE0, 0xFE] {
        let mut short = vec![0xFF, 0xD8, 0xFF, marker, 0, 1];
        short.extend_from_slice(&full[2..]);
        assert_eq!(parse(&short).map(|i| i.width), Ok(64));
    }
    let no_frame = [0xFF, 0xD8, 0xFF, 0xDA, 0, 2];
    assert!(
        matches!(parse(&no_frame), Err(HeaderError::Malformed(m)) if m.contains("before the frame header"))
    );
}

proptest! {
    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256), keep_soi in any::<bool>()) {
        let mut b = bytes;
        if keep_soi && b.len() >= 2 {
            b[0] = 0xFF;
            b[1] = 0xD8;
        }
        let _ = parse(&b).map(|i| route(&i, true, true, DEFAULT_MAX_PIXELS));
    }

    #[test]
    fn mutated_headers_never_panic(at in 0usize..40, value in any::<u8>(), cut in 0usize..40) {
        let mut b = with_orientation(&minimal_jpeg(640, 480), 6, true);
        let k = at % b.len();
        b[k] = value;
        b.truncate(b.len() - cut.min(b.len()));
        let _ = parse(&b).map(|i| route(&i, true, true, DEFAULT_MAX_PIXELS));
    }
}

/// The CPU fallback (zune-jpeg) against ffmpeg's decoder on every shared JPEG: same size, and
/// close pixels (the decoders' IDCT and chroma upsampling differ, so a PSNR bound, not
/// equality). Catches channel order, colour space and size mistakes in the wrapper.
#[test]
fn cpu_fallback_decodes_like_ffmpeg() {
    let Some(jpeg) = shared_jpeg() else {
        return;
    };
    if !common::ffmpeg_or_skip("cpu_fallback_decodes_like_ffmpeg") {
        return;
    }
    let mut worst = (f64::MAX, String::new());
    for (name, _, _, _) in golden() {
        let path = if jpeg.join("odd").join(&name).exists() {
            jpeg.join("odd").join(&name)
        } else {
            jpeg.join("photos").join(&name)
        };
        let data = std::fs::read(&path).unwrap();
        let info = parse(&data).unwrap();
        let img = match gm_codec::jpeg::decode_rgb(&data, &info, false) {
            Ok(img) => img,
            Err(e) => {
                assert!(name.contains("truncated"), "{name} did not decode: {e}");
                continue;
            }
        };
        assert_eq!((img.width, img.height), (info.width, info.height), "{name}");
        // ffmpeg decodes the Adobe-RGB file as if it were YCbCr (7.2 dB against the same frame
        // coded as YCbCr), so that file is held to the YCbCr encode of its frame instead.
        let reference = if info.is_rgb() {
            jpeg.join("odd").join("video-001.jpeg")
        } else {
            path.clone()
        };
        let bound = if info.is_rgb() { 22.0 } else { 30.0 };
        let out = std::process::Command::new("ffmpeg")
            .args(["-hide_banner", "-loglevel", "error", "-i"])
            .arg(&reference)
            .args(["-pix_fmt", "rgb24", "-f", "rawvideo", "-"])
            .output()
            .unwrap();
        assert_eq!(out.stdout.len(), img.rgb.len(), "{name}");
        let rgb_psnr = psnr(&img.rgb, &out.stdout);
        let luma_psnr = psnr(&luma(&img.rgb), &luma(&out.stdout));
        eprintln!("{name}: PSNR {rgb_psnr:.1} dB (luma {luma_psnr:.1} dB)");
        if rgb_psnr < worst.0 {
            worst = (rgb_psnr, name.clone());
        }
        assert!(
            rgb_psnr >= bound,
            "{name}: PSNR {rgb_psnr:.1} dB against ffmpeg (luma {luma_psnr:.1} dB)"
        );
    }
    eprintln!("lowest PSNR {:.1} dB ({})", worst.0, worst.1);
}

fn psnr(a: &[u8], b: &[u8]) -> f64 {
    let mse = a
        .iter()
        .zip(b)
        .map(|(&x, &y)| (f64::from(x) - f64::from(y)).powi(2))
        .sum::<f64>()
        / a.len() as f64;
    if mse == 0.0 {
        99.0
    } else {
        10.0 * (255.0f64 * 255.0 / mse).log10()
    }
}

/// BT.601 luma of packed RGB, rounded to u8.
fn luma(rgb: &[u8]) -> Vec<u8> {
    rgb.chunks_exact(3)
        .map(|p| {
            let y = 0.299 * f64::from(p[0]) + 0.587 * f64::from(p[1]) + 0.114 * f64::from(p[2]);
            y.round().clamp(0.0, 255.0) as u8
        })
        .collect()
}

/// No panic in the CPU decoder, not even one `catch_unwind` would turn into an error: the
/// inputs the fuzzers found (one made zune-jpeg 0.4.21 panic), every committed JPEG, and each
/// of them cut short at several points. A panic hook counts panics on this test's thread.
#[test]
fn cpu_fallback_never_panics_on_fuzz_finds_or_truncations() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static PANICS: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static WATCHED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    }
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if WATCHED.with(|w| w.get()) {
            PANICS.fetch_add(1, Ordering::SeqCst);
        }
        previous(info);
    }));
    WATCHED.with(|w| w.set(true));
    let mut files: Vec<_> = ["regressions", "jpeg"]
        .iter()
        .flat_map(|d| std::fs::read_dir(fixtures().join(d)).unwrap())
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "jpg" || x == "jpeg"))
        .collect();
    files.sort();
    assert!(files.len() >= 4, "{files:?}");
    let mut decoded = 0;
    for path in &files {
        let data = std::fs::read(path).unwrap();
        for cut in [
            data.len(),
            data.len() * 3 / 4,
            data.len() / 2,
            data.len() / 5,
        ] {
            let Ok(info) = parse(&data[..cut]) else {
                continue;
            };
            decoded += usize::from(gm_codec::jpeg::decode_rgb(&data[..cut], &info, true).is_ok());
        }
    }
    WATCHED.with(|w| w.set(false));
    assert_eq!(PANICS.load(Ordering::SeqCst), 0, "a decoder panicked");
    assert!(
        decoded >= files.len(),
        "{decoded} decodes of {} files",
        files.len()
    );
}

#[test]
fn grey_images_with_odd_sampling_factors_avoid_the_engines() {
    let Some(jpeg) = shared_jpeg() else {
        eprintln!("../shared/media/jpeg absent");
        return;
    };
    let odd = parse(&file(&jpeg, "video-005.gray.q50.2x2.jpeg")).unwrap();
    assert_eq!(odd.subsampling(), Subsampling::Grey);
    assert_eq!(
        route(&odd, true, true, DEFAULT_MAX_PIXELS),
        Ok(Backend::Cuda)
    );
    let plain = parse(&file(&jpeg, "video-005.gray.q50.jpeg")).unwrap();
    assert_eq!(
        route(&plain, true, true, DEFAULT_MAX_PIXELS),
        Ok(Backend::Hardware)
    );
}

/// Inserts `junk` before the marker of the second header segment of `jpeg`.
fn with_junk_before_second_segment(jpeg: &[u8], junk: &[u8]) -> (Vec<u8>, usize) {
    let len = usize::from(u16::from_be_bytes([jpeg[4], jpeg[5]]));
    let at = 4 + len;
    assert_eq!(jpeg[at], 0xFF, "a marker follows the first segment");
    let mut out = jpeg[..at].to_vec();
    out.extend_from_slice(junk);
    out.extend_from_slice(&jpeg[at..]);
    (out, at)
}

#[test]
fn junk_before_header_markers_is_skipped_as_libjpeg_does() {
    let original = std::fs::read(fixtures().join("jpeg/baboon-201x151-420.jpg")).unwrap();
    let clean = parse(&original).unwrap();
    assert!(clean.extraneous.is_empty());
    // A file with junk is damaged, and libjpeg-turbo (the reference) decodes it: its pixels
    // are those of the same coefficients arithmetic-coded, which only libjpeg-turbo decodes.
    let twin = std::fs::read(fixtures().join("jpeg/baboon-201x151-420-arith.jpg")).unwrap();
    let reference = gm_codec::jpeg::decode_rgb(&twin, &parse(&twin).unwrap(), false).unwrap();
    // Plain junk, junk holding a stuffed 0xFF00 (not a marker), and a lone byte: libjpeg
    // skips each to the next marker with an "extraneous bytes" warning.
    for junk in [
        &b"\x00junk\x12"[..],
        &[0x13, 0xFF, 0x00, 0x07][..],
        &[0x5A][..],
    ] {
        let (data, at) = with_junk_before_second_segment(&original, junk);
        let info = parse(&data).unwrap();
        assert_eq!(info.extraneous, vec![at..at + junk.len()], "{junk:?}");
        assert_eq!((info.width, info.height), (201, 151));
        assert_eq!(&*info.without_extraneous(&data), &original[..]);
        // Routed to the CPU (nvJPEG refuses such streams), where libjpeg-turbo skips the junk
        // and decodes exactly the pixels of the file without it.
        assert_eq!(
            route(&info, true, true, DEFAULT_MAX_PIXELS).unwrap(),
            Backend::Cpu
        );
        let img = gm_codec::jpeg::decode_rgb(&data, &info, false).unwrap();
        assert_eq!(img.rgb, reference.rgb, "{junk:?}");
    }
    // Junk up to the end of the data is a truncated header, not a hang or a panic.
    let (mut data, at) = with_junk_before_second_segment(&original, b"junk");
    data.truncate(at + 3);
    assert_eq!(parse(&data), Err(HeaderError::Truncated));
}

#[test]
fn truncated_jpegs_are_refused_or_decoded_as_libjpeg_does_by_option() {
    use gm_codec::jpeg::{DecoderOptions, Truncated, decode_host, decode_host_with};
    let whole = std::fs::read(fixtures().join("jpeg/baboon-201x151-420.jpg")).unwrap();
    // A cut file is decoded by libjpeg-turbo; its pixels of the whole image are those of the
    // arithmetic-coded twin (same coefficients), which only libjpeg-turbo decodes.
    let twin = std::fs::read(fixtures().join("jpeg/baboon-201x151-420-arith.jpg")).unwrap();
    let full = decode_host(&twin, DEFAULT_MAX_PIXELS, false).unwrap();
    let cut = &whole[..whole.len() * 3 / 5];
    assert!(matches!(
        decode_host(cut, DEFAULT_MAX_PIXELS, false),
        Err(ImageErrorKind::Truncated(_))
    ));
    let options = DecoderOptions {
        apply_orientation: false,
        truncated: Truncated::Decode,
        ..DecoderOptions::default()
    };
    let part = decode_host_with(cut, &options).unwrap();
    assert_eq!((part.width, part.height), (201, 151));
    // The rows coded before the cut come out as in the whole file; the rows after it do not.
    let row = 201 * 3;
    assert_eq!(part.rgb[..8 * row], full.rgb[..8 * row]);
    assert_ne!(part.rgb[140 * row..], full.rgb[140 * row..]);
    // libjpeg decodes what was never coded as zero coefficients: every block keeps the last
    // DC value, so the last row is one flat colour.
    let last = &part.rgb[150 * row..];
    assert!(last.chunks(3).all(|p| p == &last[..3]), "{:?}", &last[..12]);
    // The header cut short stays an error under either policy.
    assert!(decode_host_with(&whole[..40], &options).is_err());
}

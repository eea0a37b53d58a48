//! The CPU twin of the chroma-upsampling kernel against zune-jpeg (the CPU reference of every
//! GPU JPEG test) on real photos: exact for 4:4:4 planes, where only the colour conversion
//! runs; for subsampled files, planes decoded by ffmpeg come out close to zune-jpeg and much
//! closer than with the chroma repeated, which is what nvJPEG's own conversion does.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use gm_codec::jpeg::{PixelFormat, PlaneLayout, decode_rgb, orient, parse, ycc_to_rgb_host};
use zune_core::bytestream::ZCursor;
use zune_core::colorspace::ColorSpace;
use zune_core::options::DecoderOptions;
use zune_jpeg::JpegDecoder;

fn demo(path: &str) -> PathBuf {
    common::demo_images().join(path)
}

fn psnr(a: &[u8], b: &[u8]) -> (f64, f64) {
    assert_eq!(a.len(), b.len());
    let se: f64 = a
        .iter()
        .zip(b)
        .map(|(&x, &y)| f64::from(x.abs_diff(y)).powi(2))
        .sum();
    let mae = a
        .iter()
        .zip(b)
        .map(|(&x, &y)| f64::from(x.abs_diff(y)))
        .sum::<f64>()
        / a.len() as f64;
    let mse = se / a.len() as f64;
    let db = if mse == 0.0 {
        f64::INFINITY
    } else {
        10.0 * (255.0f64 * 255.0 / mse).log10()
    };
    (db, mae)
}

/// Packs tightly stored planes (Y, then Cb, then Cr) into `layout`'s padded pitches.
fn pack(layout: &PlaneLayout, y: &[u8], cb: &[u8], cr: &[u8]) -> Vec<u8> {
    let mut out = vec![0u8; layout.bytes()];
    let (w, cw) = (layout.width as usize, layout.c_width as usize);
    for (r, row) in y.chunks(w).enumerate() {
        out[r * layout.y_pitch..r * layout.y_pitch + w].copy_from_slice(row);
    }
    for (k, plane) in [cb, cr].into_iter().enumerate() {
        let at = layout.y_bytes() + k * layout.c_bytes();
        for (r, row) in plane.chunks(cw).enumerate() {
            out[at + r * layout.c_pitch..at + r * layout.c_pitch + cw].copy_from_slice(row);
        }
    }
    out
}

#[test]
fn four_four_four_planes_convert_exactly_like_zune_jpeg() {
    let data = std::fs::read(demo("frames/video-001.jpeg")).unwrap();
    let info = parse(&data).unwrap();
    let layout = PlaneLayout::for_jpeg(&info).unwrap();
    assert_eq!((layout.hs, layout.vs, layout.grey), (1, 1, false));
    let opts = DecoderOptions::default().jpeg_set_out_colorspace(ColorSpace::YCbCr);
    let ycc = JpegDecoder::new_with_options(ZCursor::new(&data), opts)
        .decode()
        .unwrap();
    let n = (info.width * info.height) as usize;
    assert_eq!(ycc.len(), n * 3);
    let plane = |c: usize| ycc.iter().skip(c).step_by(3).copied().collect::<Vec<_>>();
    let planes = pack(&layout, &plane(0), &plane(1), &plane(2));
    let want = decode_rgb(&data, &info, false).unwrap();
    assert_eq!(
        ycc_to_rgb_host(&planes, &layout, 1, PixelFormat::Rgb),
        want.rgb,
        "4:4:4 planes through the twin must equal zune-jpeg's RGB"
    );
    for o in 2..=8 {
        assert_eq!(
            ycc_to_rgb_host(&planes, &layout, o, PixelFormat::Rgb),
            orient(&want, o).rgb,
            "orientation {o}"
        );
    }
}

fn ffmpeg(args: &[&str]) -> Vec<u8> {
    let out = Command::new("ffmpeg")
        .args(["-v", "error", "-y"])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "ffmpeg {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// The planes ffmpeg's decoder gives for `jpeg` (its native layout, no conversion).
fn ffmpeg_planes(jpeg: &Path, pix_fmt: &str) -> Vec<u8> {
    ffmpeg(&[
        "-i",
        &jpeg.to_string_lossy(),
        "-f",
        "rawvideo",
        "-pix_fmt",
        pix_fmt,
        "-",
    ])
}

#[test]
fn subsampled_planes_upsample_like_zune_jpeg() {
    if !common::ffmpeg_or_skip("subsampled_planes_upsample_like_zune_jpeg") {
        return;
    }
    let fixtures = common::fixtures().join("jpeg");
    let mut cases: Vec<(String, PathBuf, &str)> = vec![
        (
            "baboon 4:2:0 400x400".into(),
            demo("animals/baboon.jpg"),
            "yuvj420p",
        ),
        (
            "butterfly 4:2:0 400x288".into(),
            demo("animals/butterfly.jpg"),
            "yuvj420p",
        ),
    ];
    // Odd sizes, each layout (tests/media/jpeg/make_jpegs.sh).
    for pix in ["420", "422", "440"] {
        cases.push((
            format!("baboon 4:{}:{} 201x151", &pix[1..2], &pix[2..3]),
            fixtures.join(format!("baboon-201x151-{pix}.jpg")),
            match pix {
                "420" => "yuvj420p",
                "422" => "yuvj422p",
                _ => "yuvj440p",
            },
        ));
    }
    for (name, path, pix) in cases {
        let data = std::fs::read(&path).unwrap();
        let info = parse(&data).unwrap();
        let layout = PlaneLayout::for_jpeg(&info).unwrap();
        let raw = ffmpeg_planes(&path, pix);
        let (w, cw, ch) = (
            info.width as usize,
            layout.c_width as usize,
            layout.c_height as usize,
        );
        let ny = w * info.height as usize;
        assert_eq!(raw.len(), ny + 2 * cw * ch, "{name}: plane sizes");
        let (y, c) = raw.split_at(ny);
        let (cb, cr) = c.split_at(cw * ch);
        let planes = pack(&layout, y, cb, cr);
        let want = decode_rgb(&data, &info, false).unwrap();
        let smooth = ycc_to_rgb_host(&planes, &layout, 1, PixelFormat::Rgb);
        // The same planes with each chroma sample repeated: nvJPEG's own conversion.
        let mut repeated_cb = vec![0u8; w * info.height as usize];
        let mut repeated_cr = repeated_cb.clone();
        for yy in 0..info.height as usize {
            for xx in 0..w {
                let k = (yy / usize::from(layout.vs)) * cw + xx / usize::from(layout.hs);
                repeated_cb[yy * w + xx] = cb[k];
                repeated_cr[yy * w + xx] = cr[k];
            }
        }
        let full = PlaneLayout::new(info.width, info.height, 1, 1, false);
        let repeated = ycc_to_rgb_host(
            &pack(&full, y, &repeated_cb, &repeated_cr),
            &full,
            1,
            PixelFormat::Rgb,
        );
        let (db, mae) = psnr(&smooth, &want.rgb);
        let (rep_db, rep_mae) = psnr(&repeated, &want.rgb);
        eprintln!(
            "{name}: smooth {db:.2} dB (MAE {mae:.3}), repeated {rep_db:.2} dB (MAE {rep_mae:.3})"
        );
        assert!(db >= 52.0 && mae < 0.2, "{name}: {db:.2} dB, MAE {mae:.3}");
        assert!(
            db > rep_db + 3.0,
            "{name}: smooth {db:.2} dB is not clearly better than repeated {rep_db:.2} dB"
        );
    }
}

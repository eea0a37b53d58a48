//! `gm jpeg` on the GPU: PNGs of real photos equal the library's decode, bad files are named.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

mod common;

use std::path::PathBuf;

use common::{gm, read_png};

fn shared_jpeg() -> PathBuf {
    std::env::var_os("GM_SHARED_MEDIA")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/media"))
        .join("jpeg")
}

#[test]
fn gm_jpeg_writes_pngs_close_to_the_cpu_decode_and_names_bad_files() {
    let _device = gm_cuda::gpu_test_device!("gm_jpeg_writes_pngs");
    let dir = std::env::temp_dir().join(format!("gm-jpeg-{}", std::process::id()));
    let media = shared_jpeg();
    let photos = [
        "photos/fruits.jpg",
        "photos/messi5.jpg",
        "odd/video-001.cmyk.jpeg",
    ];
    for backend in ["auto", "cpu"] {
        let out = gm()
            .arg("jpeg")
            .args(photos.iter().map(|p| media.join(p)))
            .args(["--backend", backend, "--out"])
            .arg(&dir)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(stdout.contains("via cpu"), "{stdout}");
        if backend == "auto" {
            assert!(
                stdout.contains("via hw") || stdout.contains("via cuda"),
                "{stdout}"
            );
        }
        for p in photos {
            let data = std::fs::read(media.join(p)).unwrap();
            let info = gm_codec::jpeg::parse(&data).unwrap();
            let want = gm_codec::jpeg::decode_rgb(&data, &info, true).unwrap();
            let stem = std::path::Path::new(p)
                .file_stem()
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let (w, h, got) = read_png(&dir.join(format!("{stem}.png")));
            assert_eq!((w, h), (want.width, want.height), "{p}");
            let se: f64 = got
                .iter()
                .zip(&want.rgb)
                .map(|(a, b)| f64::from(a.abs_diff(*b)).powi(2))
                .sum();
            let mse = se / got.len() as f64;
            let psnr = if mse == 0.0 {
                f64::INFINITY
            } else {
                10.0 * (65025.0 / mse).log10()
            };
            // nvJPEG replicates chroma where zune-jpeg interpolates it: see gm-codec's
            // jpeg_gpu tests for the measured gap.
            assert!(psnr >= 35.0, "{backend} {p}: {psnr:.1} dB");
        }
    }
    // A bad file fails the command, names the file and still writes the good one.
    let bad = dir.join("bad.jpg");
    std::fs::write(&bad, b"\xFF\xD8 not really").unwrap();
    let out = gm()
        .arg("jpeg")
        .arg(media.join(photos[0]))
        .arg(&bad)
        .arg("--out")
        .arg(dir.join("second"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success());
    assert!(stdout.contains(&format!("{}:", bad.display())), "{stdout}");
    assert!(dir.join("second/fruits.png").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

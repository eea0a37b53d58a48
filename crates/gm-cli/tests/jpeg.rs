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

#[test]
fn gm_jpeg_with_the_cpu_backend_needs_no_gpu_and_equals_the_cpu_decoder() {
    // Runs everywhere: CI has no GPU, and the CPU backend must not ask for one.
    let dir = std::env::temp_dir().join(format!("gm-jpeg-cpu-{}", std::process::id()));
    let media = shared_jpeg();
    let photos = ["photos/fruits.jpg", "odd/video-001.cmyk.jpeg"];
    let bad = std::env::temp_dir().join(format!("gm-jpeg-cpu-bad-{}.jpg", std::process::id()));
    std::fs::write(&bad, b"\xFF\xD8 not really").unwrap();
    let out = gm()
        .arg("jpeg")
        .args(photos.iter().map(|p| media.join(p)))
        .arg(&bad)
        .args(["--backend", "cpu", "--out"])
        .arg(&dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // The bad file fails the command and is named; the good ones are written all the same.
    assert!(!out.status.success(), "{stdout}{stderr}");
    assert!(!stderr.contains("needs a CUDA device"), "{stderr}");
    assert!(stdout.contains(&format!("{}:", bad.display())), "{stdout}");
    for p in photos {
        let data = std::fs::read(media.join(p)).unwrap();
        let want = gm_codec::jpeg::decode_host(&data, u64::MAX, true).unwrap();
        let stem = std::path::Path::new(p)
            .file_stem()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        assert!(stdout.contains(&format!("{}x{} jpeg via cpu", want.width, want.height)));
        let (w, h, got) = read_png(&dir.join(format!("{stem}.png")));
        assert_eq!((w, h), (want.width, want.height), "{p}");
        assert!(
            got == want.rgb,
            "{p}: the PNG differs from the CPU decoder's pixels"
        );
    }
    // `auto` decodes on the CPU, and says so, where there is no GPU.
    let out = gm()
        .arg("jpeg")
        .arg(media.join(photos[0]))
        .args(["--out"])
        .arg(dir.join("auto"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(
        stderr.contains("decoding on the CPU"),
        gm_cuda::available().is_err(),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_file(&bad);
}

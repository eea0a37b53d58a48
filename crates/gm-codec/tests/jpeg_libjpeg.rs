//! The CPU path's libjpeg-turbo half (issue 25): the layouts zune-jpeg cannot decode as
//! libjpeg-turbo does go to libjpeg-turbo, and their pixels equal `djpeg`'s (libjpeg-turbo
//! 2.1.5) exactly, as MD5s made by tests/media/jpeg/make_jpegs.sh; damage after the header is
//! recovered as libjpeg recovers it, and a fatal error after a warning is still a refusal.
//! (Cut files: jpeg_header's truncation test.)
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

mod common;

use common::{fixtures, md5_hex, md5_list};
use gm_codec::jpeg::{
    Coding, DEFAULT_MAX_PIXELS, ImageErrorKind, decode_host, decode_rgb, needs_libjpeg, parse,
    scan_damaged,
};

fn jpeg(name: &str) -> Vec<u8> {
    std::fs::read(fixtures().join("jpeg").join(name)).unwrap()
}

/// file name -> MD5 of djpeg's RGB pixels.
fn djpeg_md5s() -> Vec<(String, String)> {
    md5_list("jpeg/libjpeg_djpeg.md5")
}

/// djpeg's MD5 for fixture `name`.
fn djpeg_md5(name: &str) -> String {
    djpeg_md5s().into_iter().find(|(n, _)| n == name).unwrap().1
}

/// The reason of a `Corrupt` error; any other kind fails the test.
fn corrupt_reason(err: ImageErrorKind) -> String {
    match err {
        ImageErrorKind::Corrupt(why) => why,
        other => panic!("{other:?}"),
    }
}

/// The offsets of `data`'s start-of-scan markers.
fn scans(data: &[u8]) -> Vec<usize> {
    data.windows(2)
        .enumerate()
        .filter(|(_, w)| *w == [0xFF, 0xDA])
        .map(|(i, _)| i)
        .collect()
}

#[test]
fn layouts_zune_jpeg_gets_wrong_go_to_libjpeg_and_equal_djpeg() {
    let md5s = djpeg_md5s();
    assert_eq!(md5s.len(), 3);
    for (name, want) in md5s {
        let data = jpeg(&name);
        let info = parse(&data).unwrap();
        assert!(needs_libjpeg(&info), "{name}");
        let img = decode_rgb(&data, &info, false).unwrap();
        assert_eq!((img.width, img.height), (info.width, info.height), "{name}");
        assert_eq!(md5_hex(&img.rgb), want, "{name}: not djpeg's pixels");
    }
    let arith = parse(&jpeg("baboon-201x151-420-arith.jpg")).unwrap();
    assert_eq!(arith.coding, Coding::Arithmetic { progressive: false });
    let split = parse(&jpeg("baboon-201x151-420-one-scan-per-component.jpg")).unwrap();
    assert_eq!(
        (split.coding, split.first_scan_components),
        (Coding::Baseline, 1)
    );
    // The Huffman-coded original stays with zune-jpeg, within a few steps of djpeg (its
    // fancy upsampling rounds differently: 27% of values differ, by at most 4, 50.5 dB); the
    // arithmetic and one-scan files hold the same coefficients (jpegtran is lossless).
    let plain = jpeg("baboon-201x151-420.jpg");
    let info = parse(&plain).unwrap();
    assert!(!needs_libjpeg(&info) && !scan_damaged(&plain, &info));
    let zune = decode_rgb(&plain, &info, false).unwrap();
    let arith = jpeg("baboon-201x151-420-arith.jpg");
    let libjpeg = decode_rgb(&arith, &parse(&arith).unwrap(), false).unwrap();
    let max_step = zune
        .rgb
        .iter()
        .zip(&libjpeg.rgb)
        .map(|(a, b)| a.abs_diff(*b))
        .max()
        .unwrap();
    assert!(
        (1..=4).contains(&max_step),
        "zune-jpeg vs libjpeg-turbo: {max_step}"
    );
}

/// `data` with `junk` inserted before the second start-of-scan marker.
fn with_junk_before_second_scan(data: &[u8], junk: &[u8]) -> Vec<u8> {
    // The second scan's DHT (if any) sits before it; junk goes right before the SOS.
    let at = scans(data)[1];
    [&data[..at], junk, &data[at..]].concat()
}

#[test]
fn junk_between_scans_is_recovered_as_libjpeg_recovers_it() {
    let name = "baboon-201x151-420-one-scan-per-component.jpg";
    let data = jpeg(name);
    let damaged = with_junk_before_second_scan(&data, &[0x12, 0x34, 0x56]);
    let info = parse(&damaged).unwrap();
    assert!(info.extraneous.is_empty(), "the junk is after the header");
    assert!(scan_damaged(&damaged, &info));
    assert!(!scan_damaged(&data, &parse(&data).unwrap()));
    // libjpeg skips the junk with a warning and decodes the same pixels.
    let want = djpeg_md5(name);
    let img = decode_host(&damaged, DEFAULT_MAX_PIXELS, false).unwrap();
    assert_eq!(md5_hex(&img.rgb), want);
}

#[test]
fn a_fatal_error_after_a_warning_is_a_refusal_with_libjpegs_reason() {
    let data = jpeg("baboon-201x151-420-one-scan-per-component.jpg");
    let mut damaged = with_junk_before_second_scan(&data, &[0x12, 0x34]);
    // The second scan asks for Huffman tables 3/3, which no DHT defines: fatal in libjpeg,
    // after the junk's warning.
    let sos = scans(&damaged)[1];
    damaged[sos + 6] = 0x33;
    let why = corrupt_reason(decode_host(&damaged, DEFAULT_MAX_PIXELS, false).unwrap_err());
    assert!(
        why.contains("libjpeg-turbo") && why.contains("Huffman table"),
        "{why}"
    );
}

#[test]
fn scan_damage_is_found_without_decoding() {
    let data = jpeg("baboon-201x151-420.jpg");
    let info = parse(&data).unwrap();
    assert!(!scan_damaged(&data, &info));
    // A restart marker where none can be in sequence, a TEM marker inside the data, and a
    // segment running past the end.
    let end = data.len() - 2;
    for bad in [
        vec![0xFF, 0xD3],
        vec![0xFF, 0x01],
        vec![0xFF, 0xFE, 0xFF, 0xF0],
    ] {
        let damaged = [&data[..end - 100], &bad[..], &data[end - 100..]].concat();
        assert!(scan_damaged(&damaged, &info), "{bad:x?}");
    }
    // No end-of-image marker is not damage here (the truncation policy decides).
    assert!(!scan_damaged(&data[..end], &info));
    // Nothing in arbitrary bytes makes it panic or loop.
    for cut in (0..data.len()).step_by(97) {
        let _ = scan_damaged(&data[..cut], &info);
    }
}

/// Where the Ss byte of the scan header at `sos` is (after its component list).
fn spectral_start(data: &[u8], sos: usize) -> usize {
    sos + 5 + 2 * usize::from(data[sos + 4])
}

#[test]
fn sequential_scan_parameters_out_of_range_are_decoded_as_libjpeg_decodes_them() {
    // libjpeg warns ("Invalid SOS parameters for sequential JPEG") and decodes all 64
    // coefficients anyway, so the pixels are the undamaged file's (whose MD5 is its
    // arithmetic-coded twin's: the same coefficients); zune-jpeg differs from those by up to
    // 4 steps (above), so the MD5 shows libjpeg-turbo decoded it.
    let mut data = jpeg("baboon-201x151-420.jpg");
    let at = spectral_start(&data, scans(&data)[0]);
    assert_eq!(data[at..at + 3], [0, 63, 0]);
    data[at + 1] = 62;
    let info = parse(&data).unwrap();
    assert!(scan_damaged(&data, &info));
    let want = djpeg_md5("baboon-201x151-420-arith.jpg");
    let img = decode_host(&data, DEFAULT_MAX_PIXELS, false).unwrap();
    assert_eq!(md5_hex(&img.rgb), want);
}

#[test]
fn progressive_scan_parameters_libjpeg_rejects_are_refused_with_its_reason() {
    let data = jpeg("baboon-201x151-420-progressive.jpg");
    let info = parse(&data).unwrap();
    assert_eq!(info.coding, Coding::Progressive);
    assert!(!scan_damaged(&data, &info));
    assert!(decode_host(&data, DEFAULT_MAX_PIXELS, false).is_ok());
    // Each break of libjpeg's rules (imagetestsuite b0b8914c has the first: a refinement
    // two bits at once, Ah=10 Al=11, which zune-jpeg accepted), in the second scan (an AC
    // band of one component: 01 05 02, Ss Se Ah/Al).
    let sos = scans(&data)[1];
    let at = spectral_start(&data, sos);
    assert_eq!(data[at..at + 3], [1, 5, 0x02]);
    for (offset, value) in [(2, 0xAB), (2, 0x0E), (0, 6), (1, 64), (0, 0)] {
        let mut bad = data.clone();
        bad[at + offset] = value;
        assert!(scan_damaged(&bad, &info), "byte {offset} = {value:#x}");
        let why = corrupt_reason(decode_host(&bad, DEFAULT_MAX_PIXELS, false).unwrap_err());
        assert!(
            why.contains("libjpeg-turbo") && why.contains("progressive"),
            "{why}"
        );
    }
}

#[test]
fn a_stuffed_zero_after_fill_bytes_in_the_header_is_junk_as_libjpeg_reads_it() {
    // imagetestsuite f6b4389c and a jpeg-decoder fuzz input have `FF FF 00` between
    // segments: libjpeg discards it with a warning; gm's header reader used to take 0x00 for
    // a marker and stop.
    let data = jpeg("baboon-201x151-420.jpg");
    let dqt = data.windows(2).position(|w| w == [0xFF, 0xDB]).unwrap();
    let damaged = [&data[..dqt], &[0x12, 0xFF, 0xFF, 0x00, 0x34], &data[dqt..]].concat();
    let info = parse(&damaged).unwrap();
    assert_eq!(info.extraneous, vec![dqt..dqt + 5]);
    assert_eq!((info.width, info.height), (201, 151));
    let want = djpeg_md5("baboon-201x151-420-arith.jpg");
    let img = decode_host(&damaged, DEFAULT_MAX_PIXELS, false).unwrap();
    assert_eq!(md5_hex(&img.rgb), want);
}

#[test]
fn damaged_files_are_recovered_exactly_as_libjpeg_turbo_recovers_them() {
    // Three of jpeg-decoder's fuzz inputs (tests/media/jpeg-damaged): junk before the scan,
    // a bad Huffman code, out-of-range scan parameters with the data cut short. mozjpeg's
    // copy of libjpeg, used before, recovered each differently from djpeg (and Pillow).
    let dir = fixtures().join("jpeg-damaged");
    let md5s = std::fs::read_to_string(dir.join("libjpeg_djpeg.md5")).unwrap();
    let mut checked = 0;
    for line in md5s.lines() {
        let (want, name) = line.split_once("  ").unwrap();
        let data = std::fs::read(dir.join(name)).unwrap();
        let info = parse(&data).unwrap();
        let img = decode_rgb(&data, &info, false).unwrap();
        assert_eq!(md5_hex(&img.rgb), want, "{name}");
        checked += 1;
    }
    assert_eq!(checked, 3);
}

#[test]
fn a_fatal_header_error_after_a_warning_is_refused_with_libjpegs_reason() {
    // Junk before the first DHT (a warning), then that DHT's table index out of range (fatal
    // in libjpeg's header reading): TurboJPEG reports the pair as a warning and leaves the
    // header unread; gm must give libjpeg's reason, not a size mismatch.
    let data = jpeg("baboon-201x151-420.jpg");
    let dht = data.windows(2).position(|w| w == [0xFF, 0xC4]).unwrap();
    let mut damaged = [&data[..dht], &[0x12, 0x34], &data[dht..]].concat();
    damaged[dht + 2 + 4] = 0x1F; // Tc = 1, Th = 15
    let info = parse(&damaged).unwrap();
    assert!(!info.extraneous.is_empty());
    let why = corrupt_reason(decode_rgb(&damaged, &info, false).unwrap_err());
    assert!(
        why.contains("libjpeg-turbo") && why.contains("DHT") && !why.contains("-1x-1"),
        "{why}"
    );
}

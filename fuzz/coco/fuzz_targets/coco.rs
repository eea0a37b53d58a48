//! Fuzzes COCO annotation files: the JSON checked object by object, every image's targets
//! (polygons rasterized, runs decoded, keypoints), and the compressed-runs text on its own.
#![no_main]

use std::path::Path;
use std::sync::Arc;

use gm_loader::coco::{CocoAnnotations, CocoDataset, EmptyImages, Rle};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(r) = Rle::from_text(17, 23, text) {
            let _ = r.decode();
            assert_eq!(Rle::from_text(17, 23, &r.to_text()).ok(), Some(r));
        }
    }
    let Ok(a) = CocoAnnotations::parse(Path::new("fuzz.json"), data) else {
        return;
    };
    let d = CocoDataset::new(Arc::new(a), Path::new("."), EmptyImages::Keep);
    for i in 0..gm_loader::Dataset::len(&d).min(64) {
        if let Ok(t) = d.targets(i) {
            for m in t.masks.iter().flatten() {
                let _ = m.decode();
            }
        }
    }
});

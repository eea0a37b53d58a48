//! Indexes read through remote storage equal the local ones, for every fixture video: through
//! the in-process FaultServer (always), moto's S3 and RangeHTTPServer (when installed).

use std::path::{Path, PathBuf};

use gm_demux::{ByteSource, IndexOptions, VideoIndex};
use gm_storage::testing::{FaultServer, range_http_or_skip, s3_or_skip};
use gm_storage::{RemoteSource, RemoteUrl, Storage, StorageOptions};

/// tests/media/video, or `$GM_FIXTURES/video` in the GPU bundle.
fn video_dir() -> PathBuf {
    std::env::var_os("GM_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/media"))
        .join("video")
}

fn videos() -> Vec<PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(video_dir())
        .expect("tests/media/video")
        .map(|e| e.expect("entry").path())
        .collect();
    v.sort();
    assert!(v.len() >= 20, "the fixture set shrank: {}", v.len());
    v
}

/// The remote index with the fields that name the source (path, version, counters) taken
/// from the local one, after checking the version fields that must agree.
fn remote_index(storage: &Storage, url: &RemoteUrl, local: &VideoIndex) -> VideoIndex {
    let src = RemoteSource::open(storage, url).unwrap_or_else(|e| panic!("{url}: {e}"));
    let mut remote = VideoIndex::from_source(&src, IndexOptions::default())
        .unwrap_or_else(|e| panic!("{url}: {e}"));
    assert_eq!(remote.path, Path::new(url.url().as_str()));
    assert_eq!(remote.file_size, local.file_size, "{url}");
    assert_eq!(remote.requests, src.requests());
    remote.path = local.path.clone();
    remote.modified = local.modified;
    remote.etag = None;
    remote.bytes_read = local.bytes_read;
    remote.requests = 0;
    remote
}

fn check_all(storage: &Storage, url_of: impl Fn(&str) -> RemoteUrl) {
    for video in videos() {
        let name = video
            .file_name()
            .and_then(|n| n.to_str())
            .expect("a file name");
        let local = match VideoIndex::open(&video, IndexOptions::default()) {
            Ok(index) => index,
            // Fixtures that the demuxer refuses locally must be refused remotely too.
            Err(local_err) => {
                let src = RemoteSource::open(storage, &url_of(name)).expect("open");
                let remote_err = VideoIndex::from_source(&src, IndexOptions::default())
                    .expect_err("refused remotely too");
                assert_eq!(
                    std::mem::discriminant(&local_err),
                    std::mem::discriminant(&remote_err)
                );
                continue;
            }
        };
        let remote = remote_index(storage, &url_of(name), &local);
        assert!(
            remote == local,
            "{name}: the remote index differs from the local one"
        );
    }
}

#[test]
fn every_fixture_indexes_the_same_through_the_fault_server() {
    let server = FaultServer::start().expect("a loopback port");
    server.serve_dir(&video_dir(), "media").expect("fixtures");
    // Small blocks, so that indexing takes many ranged reads and not one whole-file GET.
    let options = StorageOptions {
        open_bytes: 8 << 10,
        block_size: 4 << 10,
        ..StorageOptions::default()
    };
    let storage = Storage::new(options);
    check_all(&storage, |name| server.url(&format!("media/{name}")));
}

#[test]
fn every_fixture_indexes_the_same_through_s3() {
    let Some(server) = s3_or_skip("every_fixture_indexes_the_same_through_s3") else {
        return;
    };
    let options = StorageOptions {
        open_bytes: 8 << 10,
        block_size: 4 << 10,
        ..StorageOptions::default()
    };
    let bucket = server.bucket("index", options);
    assert_eq!(
        bucket.upload_dir(&video_dir(), "v").expect("upload"),
        videos().len()
    );
    check_all(&bucket.storage, |name| bucket.url(&format!("v/{name}")));
}

#[test]
fn every_fixture_indexes_the_same_through_a_range_http_server() {
    let name = "every_fixture_indexes_the_same_through_a_range_http_server";
    let Some(server) = range_http_or_skip(name, &video_dir()) else {
        return;
    };
    let storage = Storage::new(StorageOptions {
        open_bytes: 8 << 10,
        block_size: 4 << 10,
        ..StorageOptions::default()
    });
    check_all(&storage, |name| server.url(name));
}

/// Requests and bytes for one MP4 and one WebM: what indexing costs remotely.
#[test]
fn indexing_reads_only_the_boxes_and_headers_it_needs() {
    let server = FaultServer::start().expect("a loopback port");
    server.serve_dir(&video_dir(), "").expect("fixtures");
    let options = StorageOptions {
        open_bytes: 8 << 10,
        block_size: 4 << 10,
        ..StorageOptions::default()
    };
    let storage = Storage::new(options);
    let mp4 = "h264_1366x766.mp4";
    let src = RemoteSource::open(&storage, &server.url(mp4)).expect("open");
    let index = VideoIndex::from_source(&src, IndexOptions::default()).expect("index");
    let size = src.len();
    eprintln!(
        "{mp4}: {} requests, {} of {size} bytes",
        src.requests(),
        src.bytes_fetched()
    );
    // The open GET, the moov box, and the keyframes' header windows (one prefetch run here).
    assert!(src.requests() <= 4, "{} requests", src.requests());
    assert!(
        src.bytes_fetched() * 4 < size,
        "{} of {size}",
        src.bytes_fetched()
    );
    assert!(index.gops.len() > 1);
    // Matroska's walk reads every block header: 1 MiB blocks fetch a small file in one GET.
    let webm = "vp9_odd.webm";
    let src = RemoteSource::open(&storage, &server.url(webm)).expect("open");
    VideoIndex::from_source(&src, IndexOptions::default()).expect("index");
    assert_eq!((src.requests(), src.bytes_fetched()), (1, src.len()));
}

/// A saved index is used while the object's ETag is unchanged, and rebuilt once it changes.
#[test]
fn saved_indexes_are_keyed_by_size_and_etag() {
    let server = FaultServer::start().expect("a loopback port");
    let video = video_dir().join("h264_bpyramid.mp4");
    let bytes = std::fs::read(&video).expect("fixture");
    server.insert("v.mp4", bytes.clone());
    // Small first GETs, so that indexing takes more requests than opening.
    let options = StorageOptions {
        open_bytes: 8 << 10,
        block_size: 4 << 10,
        ..StorageOptions::default()
    };
    let storage = Storage::new(options);
    let dir = std::env::temp_dir().join(format!("gm-storage-idx-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join("v.gmidx");
    let open = || RemoteSource::open(&storage, &server.url("v.mp4")).expect("open");
    let built =
        VideoIndex::open_cached_source(&open(), &file, IndexOptions::default()).expect("built");
    assert!(built.etag.is_some() && built.requests > 0);
    let src = open();
    let loaded =
        VideoIndex::open_cached_source(&src, &file, IndexOptions::default()).expect("loaded");
    assert_eq!(
        (loaded.packets.len(), src.requests()),
        (built.packets.len(), 1),
        "only the open GET"
    );
    // The same bytes under a new ETag (the object was replaced): the saved index is stale.
    server.insert("v.mp4", bytes);
    let src = open();
    let err = VideoIndex::load_version(&file, src.name(), &src.version()).expect_err("stale");
    assert!(
        matches!(err, gm_demux::DemuxError::StaleIndex { .. }),
        "{err}"
    );
    let rebuilt =
        VideoIndex::open_cached_source(&src, &file, IndexOptions::default()).expect("rebuilt");
    assert_eq!(rebuilt.etag, src.version().etag);
    assert!(src.requests() > 1, "rebuilt from the object");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A decode plan read remotely gives the local packets, in about one request per run.
#[test]
fn decode_runs_read_remotely_equal_the_local_packets() {
    use gm_demux::IndexingDemuxer;
    use std::sync::Arc;
    let server = FaultServer::start().expect("a loopback port");
    server.serve_dir(&video_dir(), "").expect("fixtures");
    let options = StorageOptions {
        open_bytes: 8 << 10,
        block_size: 4 << 10,
        ..StorageOptions::default()
    };
    let storage = Storage::new(options);
    for name in ["h264_bpyramid.mp4", "hevc_open_gop.mp4", "vp9_altref.webm"] {
        let local =
            IndexingDemuxer::open(&video_dir().join(name), IndexOptions::default()).expect("local");
        let src = Arc::new(RemoteSource::open(&storage, &server.url(name)).expect("open"));
        let index = VideoIndex::from_source(src.as_ref(), IndexOptions::default()).expect("index");
        // A fresh source reads the packets: its cache holds only the first GET.
        let src = Arc::new(RemoteSource::open(&storage, &server.url(name)).expect("open"));
        let remote = IndexingDemuxer::new(Arc::new(index), src.clone());
        let n = local.index().frame_count();
        let frames = [n / 3, n / 3 + 1, n - 1];
        let plan = local.plan(&frames).expect("plan");
        assert_eq!(remote.plan(&frames).expect("plan"), plan);
        for run in &plan.runs {
            let before = src.requests();
            let got = remote.read_run(run).expect("remote run");
            let want = local.read_run(run).expect("local run");
            assert!(
                got == want,
                "{name}: run of {} packets differs",
                run.packets.len()
            );
            let spent = src.requests() - before;
            // One prefetch request per stretch of blocks; a WebM is cached whole at open.
            assert!(
                spent <= 2,
                "{name}: {spent} requests for a run of {} packets",
                run.packets.len()
            );
        }
    }
}

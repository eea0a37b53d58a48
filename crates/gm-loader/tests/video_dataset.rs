//! Video datasets without a GPU: episode counts, time-based and multi-camera episodes, the
//! persisted index cache, and files that cannot be indexed.
#![allow(clippy::unwrap_used)]

mod video_common;

use std::path::PathBuf;
use std::sync::Arc;

use gm_demux::{IndexOptions, IndexingDemuxer, VideoIndex};
use gm_episodes::{GapPolicy, TimedEpisodes, Timeline};
use gm_loader::{BadFiles, LoaderError, Progress, VideoDataset, index_file_name};
use video_common::{fixture, videos};

fn temp(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("gm-videoset-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn video_datasets_count_and_locate_episodes() {
    let d = VideoDataset::open(&videos(), 4, 3, 2).unwrap();
    let mut total = 0;
    for p in videos() {
        let n = IndexingDemuxer::open(&p, IndexOptions::default())
            .unwrap()
            .index()
            .frame_count();
        // Span 7 frames, a new episode every 3.
        total += if n >= 7 { (n - 7) / 3 + 1 } else { 0 };
    }
    assert_eq!(d.len(), total);
    let (v, k) = d.locate(d.len() - 1).unwrap();
    assert_eq!(v, 2);
    assert_eq!(
        d.frames(d.len() - 1).unwrap(),
        (0..4).map(|j| 3 * k + 2 * j).collect::<Vec<_>>()
    );
    assert_eq!(d.locate(0), Some((0, 0)));
    assert!(d.locate(d.len()).is_none());
    assert!(d.clip(d.len()).is_none());
    assert_eq!((d.cameras(), d.frames_per_clip(), d.scenes()), (1, 4, 3));
    assert!(!d.is_multi_camera());
    let e = VideoDataset::open(&[fixture("missing.mp4")], 4, 1, 1)
        .err()
        .unwrap();
    assert!(e.to_string().contains("missing.mp4"), "{e}");
}

#[test]
fn timed_episodes_follow_the_timestamps() {
    let d = VideoDataset::builder()
        .videos(&[fixture("h264_vfr.mp4")])
        .timed(0.5, 12.0, 0.25)
        .tolerance(0.05)
        .open()
        .unwrap();
    let index = VideoIndex::open(&fixture("h264_vfr.mp4"), IndexOptions::default()).unwrap();
    let t = TimedEpisodes::new(Timeline::from_index(&index), 0.5, 12.0, 0.25)
        .unwrap()
        .with_tolerance(0.05)
        .unwrap();
    assert_eq!(d.len(), t.episode_count());
    assert_eq!(d.frames_per_clip(), 6);
    for i in 0..d.len() {
        assert_eq!(d.frames(i).unwrap(), t.episode(i as i64).unwrap());
    }
}

#[test]
fn multi_camera_scenes_align_cameras_by_time() {
    let scene = vec![
        fixture("h264_no_bframes.mp4"),
        fixture("hevc_closed_gop.mp4"),
    ];
    let d = VideoDataset::builder()
        .scenes(vec![scene.clone(), scene.clone()])
        .timed(0.4, 10.0, 0.2)
        .open()
        .unwrap();
    assert!(d.is_multi_camera());
    assert_eq!((d.cameras(), d.frames_per_clip(), d.scenes()), (2, 4, 2));
    assert_eq!(d.len() % 2, 0);
    let c = d.clip(d.len() / 2).unwrap();
    assert_eq!(c.scene, 1);
    assert_eq!(c.cameras.len(), 2);
    // Different video ids, same recording: the same frames.
    assert_ne!(c.cameras[0].0, c.cameras[1].0);
    assert_eq!(c.cameras[0].1, c.cameras[1].1);
    assert!(d.name(0).contains("h264_no_bframes") && d.name(0).contains("hevc_closed_gop"));

    // Scenes of unequal camera counts are refused.
    let e = VideoDataset::builder()
        .scenes(vec![scene.clone(), vec![fixture("h264_bpyramid.mp4")]])
        .timed(0.4, 10.0, 0.2)
        .open()
        .err()
        .unwrap();
    assert!(matches!(e, LoaderError::Config(_)), "{e}");

    // A VFR camera (no frame at 2/30 s) next to a CFR one, sampled at 15 fps with a zero
    // tolerance: the first clip has a gap, as an error or skipped.
    let vfr = vec![fixture("h264_no_bframes.mp4"), fixture("h264_vfr.mp4")];
    let strict = || {
        VideoDataset::builder()
            .scenes(vec![vfr.clone()])
            .timed(0.4, 15.0, 0.1)
            .tolerance(0.0)
            .bad_files(BadFiles::Fail)
    };
    let err = strict().open().err().unwrap();
    assert!(err.to_string().contains("h264_no_bframes"), "{err}");
    let skipped = strict().gaps(GapPolicy::Skip).open().unwrap();
    let loose = VideoDataset::builder()
        .scenes(vec![vfr.clone()])
        .timed(0.4, 15.0, 0.1)
        .open()
        .unwrap();
    assert_eq!(skipped.len() + 1, loose.len());
    assert_eq!(skipped.clip(0), loose.clip(1));
    for i in 0..skipped.len() {
        assert_eq!(skipped.clip(i).unwrap().cameras[0].1.len(), 6);
    }
}

#[test]
fn the_index_cache_is_written_once_and_reused() {
    let dir = temp("cache");
    let open = || {
        VideoDataset::builder()
            .videos(&videos())
            .frames(4, 2)
            .index_cache(&dir)
            .open()
            .unwrap()
    };
    let first = open();
    let files: Vec<PathBuf> = videos()
        .iter()
        .map(|v| dir.join(index_file_name(v)))
        .collect();
    let stamps: Vec<_> = files
        .iter()
        .map(|f| std::fs::metadata(f).unwrap().modified().unwrap())
        .collect();
    std::thread::sleep(std::time::Duration::from_millis(20));
    let second = open();
    for (f, s) in files.iter().zip(&stamps) {
        assert_eq!(
            std::fs::metadata(f).unwrap().modified().unwrap(),
            *s,
            "{} was rewritten",
            f.display()
        );
    }
    assert_eq!(first.len(), second.len());
    for i in 0..first.len() {
        assert_eq!(first.clip(i), second.clip(i));
    }
    for v in 0..3 {
        assert_eq!(
            first.video_index(v).packets,
            second.video_index(v).packets,
            "video {v}: the saved index equals the built one"
        );
    }
    // A damaged cache file is rebuilt, not trusted.
    std::fs::write(&files[1], b"GMIDX garbage").unwrap();
    let third = open();
    assert_eq!(third.video_index(1).packets, first.video_index(1).packets);
    assert!(std::fs::read(&files[1]).unwrap().len() > 100);
    // Same name in another folder: another cache file.
    assert_ne!(
        index_file_name(&fixture("h264_vfr.mp4")),
        index_file_name(&dir.join("h264_vfr.mp4"))
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn files_that_cannot_be_indexed_are_skipped_or_fail() {
    let dir = temp("bad");
    let text = dir.join("notes.mp4");
    std::fs::write(&text, b"this is not a video").unwrap();
    let list = vec![
        fixture("h264_bpyramid.mp4"),
        text.clone(),
        dir.join("gone.mp4"),
    ];
    let good = VideoDataset::open(&[fixture("h264_bpyramid.mp4")], 4, 4, 1).unwrap();
    let d = VideoDataset::builder()
        .videos(&list)
        .frames(4, 4)
        .open()
        .unwrap();
    assert_eq!(d.len(), good.len());
    assert_eq!(d.scenes(), 1);
    let skipped = d.skipped();
    assert_eq!(skipped.len(), 2, "{skipped:?}");
    assert!(skipped[0].name.contains("notes.mp4") && !skipped[0].reason.to_string().is_empty());
    assert!(skipped[1].name.contains("gone.mp4"), "{skipped:?}");
    let e = VideoDataset::builder()
        .videos(&list)
        .frames(4, 4)
        .bad_files(BadFiles::Fail)
        .open()
        .err()
        .unwrap();
    assert!(e.to_string().contains("notes.mp4"), "{e}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_directory_of_videos_is_read_in_name_order() {
    let dir = temp("dir");
    for n in ["b.mp4", "a.MP4", "c.mov"] {
        std::fs::copy(fixture("h264_bpyramid.mp4"), dir.join(n)).unwrap();
    }
    std::fs::write(dir.join("readme.txt"), b"not a video").unwrap();
    let d = VideoDataset::builder()
        .directory(&dir)
        .frames(8, 8)
        .open()
        .unwrap();
    assert_eq!(d.scenes(), 3);
    let names: Vec<String> = (0..3)
        .map(|v| {
            d.path(v)
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    assert_eq!(names, ["a.MP4", "b.mp4", "c.mov"]);
    assert!(d.skipped().is_empty());
    let e = VideoDataset::builder()
        .directory(dir.join("nope"))
        .open()
        .err()
        .unwrap();
    assert!(e.to_string().contains("nope"), "{e}");
    let _ = std::fs::remove_dir_all(dir);
}

/// The index with the fields that name its source (path, version, counters) cleared.
fn content(index: &VideoIndex) -> VideoIndex {
    let mut c = index.clone();
    c.path = PathBuf::new();
    (c.modified, c.etag, c.bytes_read, c.requests) = (None, None, 0, 0);
    c
}

#[test]
fn remote_videos_give_the_local_episodes_and_indexes() {
    use gm_storage::testing::FaultServer;
    let server = FaultServer::start().unwrap();
    let dir = fixture("");
    server.serve_dir(&dir, "v").unwrap();
    let urls: Vec<PathBuf> = videos()
        .iter()
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            PathBuf::from(server.url(&format!("v/{name}")).to_string())
        })
        .collect();
    let cache = temp("remote-cache");
    let open = |paths: &[PathBuf]| {
        VideoDataset::builder()
            .videos(paths)
            .frames(4, 3)
            .index_cache(&cache)
            .open()
            .unwrap()
    };
    let local = open(&videos());
    let remote = open(&urls);
    assert_eq!(remote.len(), local.len());
    for i in 0..local.len() {
        assert_eq!(remote.frames(i), local.frames(i), "episode {i}");
    }
    for (v, url) in urls.iter().enumerate() {
        assert_eq!(remote.path(v), url);
        assert!(remote.video_index(v).etag.is_some());
        assert!(
            content(remote.video_index(v)) == content(local.video_index(v)),
            "video {v}"
        );
    }
    // The second open finds the saved indexes (same ETags): one open GET per video.
    let before = server.requests();
    let again = open(&urls);
    assert_eq!(
        (again.len(), server.requests() - before),
        (local.len(), urls.len() as u64)
    );
    std::fs::remove_dir_all(&cache).unwrap();
}

#[test]
fn a_bucket_prefix_lists_videos_as_a_directory_does() {
    let name = "a_bucket_prefix_lists_videos_as_a_directory_does";
    let Some(server) = gm_storage::testing::s3_or_skip(name) else {
        return;
    };
    let bucket = server.bucket("videos", gm_storage::StorageOptions::default());
    let dir = temp("listing");
    for v in videos() {
        std::fs::copy(&v, dir.join(v.file_name().unwrap())).unwrap();
    }
    std::fs::write(dir.join("notes.txt"), b"not a video").unwrap();
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    std::fs::copy(&videos()[0], dir.join("sub/deeper.mp4")).unwrap();
    let uploaded = bucket.upload_dir(&dir, "clips").unwrap() as u64;
    let open = |d: PathBuf, progress: &Arc<Progress>| {
        VideoDataset::builder()
            .directory(d)
            .frames(4, 3)
            .storage(&bucket.storage)
            .progress(Arc::clone(progress))
            .open()
            .unwrap()
    };
    let local_progress = Progress::new();
    let local = open(dir.clone(), &local_progress);
    let progress = Progress::new();
    let remote = open(
        PathBuf::from(format!("s3://{}/clips", bucket.name())),
        &progress,
    );
    // The listing counted every object under the prefix (videos or not); indexing counted
    // the videos. A local directory lists nothing.
    assert_eq!(progress.listed(), uploaded);
    assert_eq!((progress.done(), progress.total()), (3, 3));
    assert_eq!(local_progress.listed(), 0);
    assert_eq!((local_progress.done(), local_progress.total()), (3, 3));
    let names = |d: &VideoDataset, n: usize| -> Vec<String> {
        (0..n)
            .map(|v| {
                d.path(v)
                    .file_name()
                    .unwrap()
                    .to_string_lossy()
                    .into_owned()
            })
            .collect()
    };
    assert_eq!(names(&remote, 3), names(&local, 3));
    assert_eq!((remote.len(), remote.scenes()), (local.len(), 3));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn remote_videos_index_on_more_threads_than_local_ones() {
    use gm_storage::testing::{Fault, FaultServer};
    use gm_storage::{Storage, StorageOptions};
    use std::time::Duration;
    let server = FaultServer::start().unwrap();
    let bytes = std::fs::read(fixture("h264_bpyramid.mp4")).unwrap();
    let n = 24;
    for i in 0..n {
        server.insert(&format!("v{i:02}.mp4"), bytes.clone());
    }
    // Every first GET takes 300 ms, so the indexing threads' first requests overlap.
    server.script(None, Fault::Delay(Duration::from_millis(300)), n as u32);
    let storage = Storage::new(StorageOptions {
        concurrency: 64,
        ..StorageOptions::default()
    });
    let urls: Vec<PathBuf> = (0..n)
        .map(|i| PathBuf::from(server.url(&format!("v{i:02}.mp4")).url().as_str()))
        .collect();
    let d = VideoDataset::builder()
        .videos(&urls)
        .frames(4, 4)
        .storage(&storage)
        .open()
        .unwrap();
    assert_eq!(d.scenes(), n);
    // 64 / 4 = 16 threads: more than the 8 that local files get at most.
    let peak = storage.stats().peak_in_flight;
    assert!(peak > 8 && peak <= 16, "{peak} requests at once");
}

/// Every fixture video (that indexes) packed into tar shards of 256 KiB, with its path.
fn video_shards(dir: &std::path::Path) -> (Vec<String>, Vec<PathBuf>) {
    use gm_loader::shards::ShardWriter;
    let mut files: Vec<PathBuf> = std::fs::read_dir(fixture(""))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.extension()
                .is_some_and(|e| gm_loader::VIDEO_EXTENSIONS.contains(&&*e.to_string_lossy()))
        })
        .filter(|p| VideoIndex::open(p, IndexOptions::default()).is_ok())
        .collect();
    files.sort();
    assert!(files.len() >= 10, "{}", files.len());
    let mut writer = ShardWriter::new(dir, "videos", 256 << 10).unwrap();
    for (i, path) in files.iter().enumerate() {
        let ext = path.extension().unwrap().to_string_lossy().into_owned();
        let bytes = std::fs::read(path).unwrap();
        let label = i.to_string();
        writer
            .add(
                &format!("v{i:03}"),
                &[(&ext, &bytes), ("cls", label.as_bytes())],
            )
            .unwrap();
    }
    let shards = writer.finish().unwrap();
    assert!(shards.len() > 1);
    (
        shards.iter().map(|p| p.display().to_string()).collect(),
        files,
    )
}

/// The index of each member (read through a `SliceSource`) equals the index of the file, and
/// a plan's packets read from the member equal those read from the file.
fn check_members(data: &gm_loader::WebDataset, files: &[PathBuf]) {
    use gm_demux::ByteSource;
    use std::sync::Arc;
    assert_eq!(gm_loader::Dataset::len(data), files.len());
    for (i, path) in files.iter().enumerate() {
        let local = VideoIndex::open(path, IndexOptions::default()).unwrap();
        let slice = data.video_source(i).unwrap();
        assert_eq!(slice.len(), std::fs::metadata(path).unwrap().len());
        let name = slice.name().display().to_string();
        let ext = path.extension().unwrap().to_string_lossy();
        assert!(name.ends_with(&format!("#v{i:03}.{ext}")), "{name}");
        let slice: Arc<dyn ByteSource> = Arc::new(slice);
        let mut member = VideoIndex::from_source(slice.as_ref(), IndexOptions::default()).unwrap();
        assert!(
            member.etag.as_deref().unwrap().contains('@'),
            "{:?}",
            member.etag
        );
        member.path = local.path.clone();
        member.modified = local.modified;
        member.etag = None;
        member.bytes_read = local.bytes_read;
        member.requests = local.requests;
        assert_eq!(member, local, "{}", path.display());
        let frames = member.frame_count();
        let from_file = IndexingDemuxer::open(path, IndexOptions::default()).unwrap();
        let from_member = IndexingDemuxer::new(Arc::new(member), slice);
        let plan = from_file.plan(&[0, frames / 2, frames - 1]).unwrap();
        for run in &plan.runs {
            assert_eq!(
                from_member.read_run(run).unwrap(),
                from_file.read_run(run).unwrap(),
                "{}",
                path.display()
            );
        }
    }
}

#[test]
fn videos_inside_tar_shards_index_and_read_as_the_files() {
    let dir = temp("wds");
    let (names, files) = video_shards(&dir);
    let data = gm_loader::WebDataset::from_shards(names).open().unwrap();
    check_members(&data, &files);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn videos_inside_tar_shards_in_s3_index_and_read_as_the_files() {
    let name = "videos_inside_tar_shards_in_s3_index_and_read_as_the_files";
    let Some(server) = gm_storage::testing::s3_or_skip(name) else {
        return;
    };
    let dir = temp("wds-s3");
    let (names, files) = video_shards(&dir);
    let bucket = server.bucket("videos", gm_storage::StorageOptions::default());
    bucket.upload_dir(&dir, "wds").unwrap();
    let prefix = format!("s3://{}/wds", bucket.name());
    let remote: Vec<String> = names
        .iter()
        .map(|n| n.replace(&dir.display().to_string(), &prefix))
        .collect();
    let data = gm_loader::WebDataset::from_shards(remote.clone())
        .storage(bucket.storage.clone())
        .open()
        .unwrap();
    check_members(&data, &files);
    // Without the .idx, indexed by hopping between tar headers: a few KiB, not the shards.
    for name in &names {
        let idx = std::path::Path::new(name).with_extension("idx");
        let key = format!("wds/{}", idx.file_name().unwrap().to_string_lossy());
        bucket.storage.delete(&bucket.url(&key)).unwrap();
    }
    let before = bucket.storage.stats();
    let hopped = gm_loader::WebDataset::from_shards(remote)
        .storage(bucket.storage.clone())
        .index_by_headers(true)
        .open()
        .unwrap();
    let fetched = bucket.storage.stats().bytes - before.bytes;
    let shard_bytes: u64 = names
        .iter()
        .map(|n| std::fs::metadata(n).unwrap().len())
        .sum();
    assert!(
        fetched * 20 < shard_bytes,
        "{fetched} of {shard_bytes} bytes read to index"
    );
    check_members(&hopped, &files);
    std::fs::remove_dir_all(&dir).unwrap();
}

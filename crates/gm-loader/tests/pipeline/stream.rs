//! WebDataset streaming mode (no index; `.tar` and `.tar.gz`): ranks x streams visit every
//! sample once, resuming from a saved state continues exactly, and cut or deleted shards are
//! one record each while the epoch goes on.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};

use gm_loader::LoaderState;
use gm_loader::shards::{ShardWriter, StreamBatch, StreamOptions, WebDatasetStream};
use gm_storage::Storage;

/// Samples per shard of the test set.
const COUNTS: [usize; 11] = [5, 7, 3, 12, 1, 9, 4, 6, 2, 8, 5];

fn payload(shard: usize, i: usize) -> Vec<u8> {
    (0..(37 * (i + 1) + 300 * shard))
        .map(|k| (k * 31 + shard * 7 + i) as u8)
        .collect()
}

/// Shards `s00-000000.tar`, ... with `COUNTS` samples `k<shard>_<i>` of a `.bin` and a `.cls`;
/// gzip-compressed copies `*.tar.gz` when `gzip`.
fn write_shards(name: &str, gzip: bool) -> (PathBuf, Vec<String>) {
    let dir = std::env::temp_dir().join(format!("gm-stream-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let mut names = Vec::new();
    for (shard, &count) in COUNTS.iter().enumerate() {
        let mut w = ShardWriter::new(&dir, &format!("s{shard:02}"), u64::MAX).unwrap();
        for i in 0..count {
            let label = (shard * 100 + i).to_string();
            w.add(
                &format!("k{shard}_{i}"),
                &[("bin", &payload(shard, i)), ("cls", label.as_bytes())],
            )
            .unwrap();
        }
        let tar = w.finish().unwrap().remove(0);
        if gzip {
            let gz = tar.with_extension("tar.gz");
            let mut enc = flate2::write::GzEncoder::new(
                std::fs::File::create(&gz).unwrap(),
                flate2::Compression::fast(),
            );
            enc.write_all(&std::fs::read(&tar).unwrap()).unwrap();
            enc.finish().unwrap();
            std::fs::remove_file(&tar).unwrap();
            names.push(gz.display().to_string());
        } else {
            names.push(tar.display().to_string());
        }
    }
    (dir, names)
}

fn stream(names: &[String], options: StreamOptions) -> WebDatasetStream {
    WebDatasetStream::from_shards(names.to_vec(), options, Storage::default()).unwrap()
}

fn options(rank: usize, world: usize, streams: usize) -> StreamOptions {
    StreamOptions {
        seed: 17,
        rank,
        world_size: world,
        streams,
        batch_size: 4,
        shuffle_buffer: 5,
        ..StreamOptions::default()
    }
}

/// Asserts each sample's bytes and key are those written for its (shard, ordinal).
fn check_contents(batches: &[StreamBatch]) {
    for s in batches.iter().flat_map(|b| &b.samples) {
        let i = s.ordinal as usize;
        assert_eq!(s.sample.key, format!("k{}_{i}", s.shard));
        assert_eq!(
            s.sample.members[0],
            ("bin".to_string(), payload(s.shard, i))
        );
        let label = (s.shard * 100 + i).to_string().into_bytes();
        assert_eq!(s.sample.members[1], ("cls".to_string(), label));
    }
}

#[test]
fn ranks_and_streams_visit_every_sample_exactly_once() {
    for gzip in [false, true] {
        let (dir, names) = write_shards(if gzip { "cover-gz" } else { "cover" }, gzip);
        let all: BTreeSet<(usize, u64)> = COUNTS
            .iter()
            .enumerate()
            .flat_map(|(s, &n)| (0..n as u64).map(move |i| (s, i)))
            .collect();
        for world in 1..=4 {
            for streams in 1..=5 {
                let mut seen = Vec::new();
                for rank in 0..world {
                    let data = stream(&names, options(rank, world, streams));
                    let batches: Vec<StreamBatch> = data.epoch(3).collect();
                    check_contents(&batches);
                    assert!(batches.iter().all(|b| b.shard_errors.is_empty()));
                    let n = batches.len();
                    assert!(batches[..n - 1].iter().all(|b| b.samples.len() == 4));
                    seen.extend(
                        batches
                            .iter()
                            .flat_map(|b| b.samples.iter().map(|s| (s.shard, s.ordinal))),
                    );
                }
                let unique: BTreeSet<_> = seen.iter().copied().collect();
                let what = format!("gzip {gzip}, {world} ranks x {streams} streams");
                assert_eq!(seen.len(), unique.len(), "{what}: repeats");
                assert_eq!(unique, all, "{what}");
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[test]
fn the_order_is_seeded_shuffled_and_bounded_by_the_buffer() {
    let (dir, names) = write_shards("order", false);
    let order = |o: StreamOptions, epoch| -> Vec<(usize, u64)> {
        stream(&names, o)
            .epoch(epoch)
            .flat_map(|b| b.samples.into_iter().map(|s| (s.shard, s.ordinal)))
            .collect()
    };
    let a = order(options(0, 1, 2), 0);
    assert_eq!(a, order(options(0, 1, 2), 0), "the same seed and epoch");
    assert_ne!(a, order(options(0, 1, 2), 1), "another epoch");
    // Without a buffer a stream gives its shards' samples in tar order.
    let plain = order(
        StreamOptions {
            shuffle_buffer: 1,
            ..options(0, 1, 1)
        },
        0,
    );
    let mut runs = plain.chunk_by(|x, y| x.0 == y.0);
    assert!(runs.all(|run| run.iter().enumerate().all(|(k, s)| s.1 == k as u64)));
    let shuffled = order(
        StreamOptions {
            shuffle_buffer: 8,
            ..options(0, 1, 1)
        },
        0,
    );
    assert_ne!(plain, shuffled);
    // Each sample leaves the buffer at most `shuffle_buffer - 1` places early.
    for (pos, s) in shuffled.iter().enumerate() {
        let at = plain.iter().position(|x| x == s).unwrap();
        assert!(at < pos + 8, "{s:?} at {pos}, read at {at}");
    }
    let data = stream(
        &names,
        StreamOptions {
            shuffle_buffer: 3,
            ..options(0, 1, 2)
        },
    );
    let mut epoch = data.epoch(0);
    for _ in epoch.by_ref() {}
    assert!(
        epoch.peak_buffered().0 <= 2 * 3,
        "{:?}",
        epoch.peak_buffered()
    );
    let bytes = StreamOptions {
        shuffle_buffer_bytes: 4000,
        ..options(0, 1, 1)
    };
    let data = stream(&names, bytes);
    let mut epoch = data.epoch(0);
    for _ in epoch.by_ref() {}
    let biggest = COUNTS
        .iter()
        .enumerate()
        .map(|(s, &n)| payload(s, n - 1).len())
        .max()
        .unwrap();
    assert!(
        epoch.peak_buffered().1 < 4000 + 2 * biggest as u64,
        "{:?}",
        epoch.peak_buffered()
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Batches of `data`'s epoch 2, resumed from a saved state after each of `cuts` batches,
/// equal the unbroken run.
fn check_resume(data: &WebDatasetStream, names: &[String], o: &StreamOptions) {
    let unbroken: Vec<StreamBatch> = data.epoch(2).collect();
    assert!(unbroken.len() >= 6, "{}", unbroken.len());
    let n = unbroken.len();
    for cut in [0, 1, 2, n / 2, n - 2, n - 1] {
        let mut epoch = data.epoch(2);
        let head: Vec<StreamBatch> = epoch.by_ref().take(cut).collect();
        let saved = epoch.state().to_json();
        drop(epoch);
        let again = stream(names, o.clone());
        let state = LoaderState::from_json(&saved).unwrap();
        assert_eq!(state.next_batch, cut);
        let tail: Vec<StreamBatch> = again.resume(&state).unwrap().collect();
        assert!(head == unbroken[..cut], "cut {cut}: head");
        assert!(tail == unbroken[cut..], "cut {cut}: resumed");
    }
}

#[test]
fn resuming_a_stream_continues_the_unbroken_run_exactly() {
    for gzip in [false, true] {
        let (dir, names) = write_shards(if gzip { "resume-gz" } else { "resume" }, gzip);
        let o = options(1, 2, 3);
        check_resume(&stream(&names, o.clone()), &names, &o);
        // With passes: epoch_batches past one pass.
        let one_pass = stream(&names, o.clone()).epoch(2).count();
        let o = StreamOptions {
            epoch_batches: Some(one_pass + 4),
            ..o
        };
        let data = stream(&names, o.clone());
        assert_eq!(data.epoch(2).count(), one_pass + 4);
        check_resume(&data, &names, &o);
        std::fs::remove_dir_all(&dir).unwrap();
    }
    // A state of another loader is refused.
    let (dir, names) = write_shards("resume-other", false);
    let first = stream(&names, options(0, 2, 3));
    let mut epoch = first.epoch(0);
    epoch.next();
    let state = epoch.state();
    assert!(stream(&names, options(1, 2, 3)).resume(&state).is_err());
    assert!(stream(&names, options(0, 2, 2)).resume(&state).is_err());
    // A damaged position is refused, not followed.
    let mut damaged = state.clone();
    if let Some(s) = damaged.stream.as_mut() {
        s.streams[0].buffer.push((names.len(), 0));
    }
    assert!(stream(&names, options(0, 2, 3)).resume(&damaged).is_err());
    let mut damaged = state.clone();
    if let Some(s) = damaged.stream.as_mut() {
        s.turn = 3;
    }
    assert!(stream(&names, options(0, 2, 3)).resume(&damaged).is_err());
    assert!(stream(&names, options(0, 2, 3)).resume(&state).is_ok());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A growing buffer (webdataset's `initial`): the first draw once the buffer holds
/// `shuffle_initial`, then two reads per draw until it is full, then one. Exactly that many
/// samples are read before each batch, the buffer bound still holds, and resuming in the
/// growing phase continues the unbroken run.
#[test]
fn a_growing_shuffle_buffer_draws_early_and_resumes_exactly() {
    let (dir, names) = write_shards("growing", false);
    let growing = StreamOptions {
        shuffle_buffer: 12,
        shuffle_initial: 3,
        ..options(0, 1, 1)
    };
    let buffered_after = |o: &StreamOptions, batches: usize| {
        let data = stream(&names, o.clone());
        let mut epoch = data.epoch(0);
        for _ in 0..batches {
            epoch.next().unwrap();
        }
        let state = epoch.state().stream.unwrap();
        (state.streams[0].buffer.len(), state.streams[0].drawn)
    };
    // Reads 3 then draws; then 2 reads per draw: 9 read for the first 4 out.
    assert_eq!(buffered_after(&growing, 1), (5, 4));
    // Growing by one per draw up to 12, then one read per draw keeps 11 between pulls.
    assert_eq!(buffered_after(&growing, 2), (9, 8));
    assert_eq!(buffered_after(&growing, 4), (11, 16));
    // shuffle_initial at the buffer's size fills it first: 15 read for the first 4.
    let whole = StreamOptions {
        shuffle_initial: 12,
        ..growing.clone()
    };
    assert_eq!(buffered_after(&whole, 1), (11, 4));
    // Every sample once, none more than 11 places early.
    let order = |o: StreamOptions| -> Vec<(usize, u64)> {
        stream(&names, o)
            .epoch(0)
            .flat_map(|b| b.samples.into_iter().map(|s| (s.shard, s.ordinal)))
            .collect()
    };
    let plain = order(StreamOptions {
        shuffle_buffer: 1,
        ..growing.clone()
    });
    let shuffled = order(growing.clone());
    assert_eq!(plain.len(), COUNTS.iter().sum::<usize>());
    assert_ne!(shuffled, plain);
    assert_ne!(shuffled, order(whole));
    for (pos, s) in shuffled.iter().enumerate() {
        let at = plain.iter().position(|x| x == s).unwrap();
        assert!(at < pos + 12, "{s:?} at {pos}, read at {at}");
    }
    let mut sorted = shuffled.clone();
    sorted.sort_unstable();
    let mut expected = plain.clone();
    expected.sort_unstable();
    assert_eq!(sorted, expected);
    let o = StreamOptions {
        shuffle_buffer: 12,
        shuffle_initial: 2,
        ..options(1, 2, 3)
    };
    check_resume(&stream(&names, o.clone()), &names, &o);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_cut_shard_and_a_deleted_shard_are_one_record_each_and_the_epoch_goes_on() {
    let (dir, names) = write_shards("faults", false);
    // Shard 3 (12 samples) cut inside its 8th sample; shard 5 deleted after listing.
    let cut = Path::new(&names[3]);
    let index = gm_loader::shards::TarIndex::build(std::fs::File::open(cut).unwrap()).index;
    let eighth = index.samples[7].members[0].offset + 10;
    std::fs::OpenOptions::new()
        .write(true)
        .open(cut)
        .unwrap()
        .set_len(eighth)
        .unwrap();
    std::fs::remove_file(&names[5]).unwrap();
    let o = options(0, 1, 2);
    let data = stream(&names, o.clone());
    let batches: Vec<StreamBatch> = data.epoch(0).collect();
    check_contents(&batches);
    let errors: Vec<&String> = batches
        .iter()
        .flat_map(|b| &b.shard_errors)
        .map(|f| &f.message)
        .collect();
    assert_eq!(errors.len(), 2, "{errors:?}");
    let cut_record = errors.iter().find(|e| e.contains(&names[3])).unwrap();
    assert!(cut_record.contains("ended after 7 samples"), "{cut_record}");
    let gone = errors.iter().find(|e| e.contains(&names[5])).unwrap();
    assert!(gone.contains("gave 0 samples"), "{gone}");
    let seen: BTreeSet<(usize, u64)> = batches
        .iter()
        .flat_map(|b| b.samples.iter().map(|s| (s.shard, s.ordinal)))
        .collect();
    let want: BTreeSet<(usize, u64)> = COUNTS
        .iter()
        .enumerate()
        .filter(|&(s, _)| s != 5)
        .flat_map(|(s, &n)| (0..if s == 3 { 7 } else { n as u64 }).map(move |i| (s, i)))
        .collect();
    assert_eq!(seen, want);
    check_resume(&data, &names, &o);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn streaming_shards_from_s3_gives_the_local_batches() {
    let Some(server) =
        gm_storage::testing::s3_or_skip("streaming_shards_from_s3_gives_the_local_batches")
    else {
        return;
    };
    for gzip in [false, true] {
        let (dir, names) = write_shards(if gzip { "s3-gz" } else { "s3" }, gzip);
        let bucket = server.bucket("stream", gm_storage::StorageOptions::default());
        bucket.upload_dir(&dir, "wds").unwrap();
        let remote: Vec<String> = names
            .iter()
            .map(|n| {
                n.replace(
                    &dir.display().to_string(),
                    &format!("s3://{}/wds", bucket.name()),
                )
            })
            .collect();
        let o = options(1, 2, 3);
        let local: Vec<StreamBatch> = stream(&names, o.clone()).epoch(1).collect();
        let data = WebDatasetStream::from_shards(remote, o, bucket.storage.clone()).unwrap();
        let got: Vec<StreamBatch> = data.epoch(1).collect();
        assert!(got == local, "gzip {gzip}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

/// A shard that vanished between the save and the resume: the samples buffered from it
/// cannot be fetched again, and the resumed epoch's first batch says so, naming the shard
/// (before, they were dropped without a word).
#[test]
fn a_shard_gone_before_a_resume_is_reported_not_dropped_silently() {
    let (dir, names) = write_shards("resume-gone", false);
    let o = options(0, 1, 2);
    let data = stream(&names, o.clone());
    let mut epoch = data.epoch(1);
    epoch.by_ref().take(3).count();
    let state = epoch.state();
    drop(epoch);
    let buffered: BTreeSet<usize> = state
        .stream
        .as_ref()
        .unwrap()
        .streams
        .iter()
        .flat_map(|c| c.buffer.iter().map(|k| k.0))
        .collect();
    let gone = *buffered
        .iter()
        .next()
        .expect("samples buffered after 3 batches");
    std::fs::remove_file(&names[gone]).unwrap();
    let resumed: Vec<StreamBatch> = stream(&names, o).resume(&state).unwrap().collect();
    let errors: Vec<&String> = resumed
        .iter()
        .flat_map(|b| &b.shard_errors)
        .map(|f| &f.message)
        .collect();
    let record = errors
        .iter()
        .find(|e| e.contains(&names[gone]) && e.contains("resuming"))
        .unwrap_or_else(|| panic!("no record of {}: {errors:?}", names[gone]));
    assert!(record.contains("re-reading its first"), "{record}");
    std::fs::remove_dir_all(&dir).unwrap();
}

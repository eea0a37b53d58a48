//! WebDataset streaming alone, with nothing decoded (issue 22): `gm-loader--stream_read
//! PATTERN [EPOCHS]` reads `EPOCHS` (default 3) epochs of `WebDatasetStream` over the shards of
//! `PATTERN` (local paths or s3:// / http:// URLs, brace ranges allowed) and prints one JSON
//! line per epoch: samples, bytes, seconds, samples/s, MB/s, and the process's CPU seconds
//! (user + system) spent in it. The rate a streamed `Loader` can reach is at most this, so
//! comparing local shards with the same shards on a store says what the store's path costs
//! before any decoding. `GM_BENCH_STREAMS` (4), `GM_BENCH_SHUFFLE` (1000),
//! `GM_BENCH_SHUFFLE_INITIAL` (100) and
//! `GM_BENCH_BATCH` (256) set the stream options; `GM_BENCH_REPEAT` lists the pattern's shards
//! that many times (1), as the pipeline bench does, for longer epochs over few shards.
#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

use std::time::Instant;

use gm_loader::shards::{StreamOptions, WebDatasetStream, expand};
use gm_storage::Storage;

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name).map_or(default, |v| v.parse().expect("a count"))
}

/// User plus system CPU seconds of this process so far.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command's closing parenthesis: utime and stime are the 12th and 13th.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    (ticks(11) + ticks(12)) / 100.0
}

fn main() {
    let mut args = std::env::args().skip(1);
    let pattern = args
        .next()
        .expect("usage: gm-loader--stream_read PATTERN [EPOCHS]");
    let epochs: u64 = args
        .next()
        .map_or(3, |v| v.parse().expect("EPOCHS: a count"));
    let repeat = env_usize("GM_BENCH_REPEAT", 1);
    let once = expand(&pattern).unwrap();
    let names: Vec<String> = (0..repeat).flat_map(|_| once.iter().cloned()).collect();
    let options = StreamOptions {
        streams: env_usize("GM_BENCH_STREAMS", 4),
        shuffle_buffer: env_usize("GM_BENCH_SHUFFLE", 1000),
        shuffle_initial: env_usize("GM_BENCH_SHUFFLE_INITIAL", 100),
        batch_size: env_usize("GM_BENCH_BATCH", 256),
        ..StreamOptions::default()
    };
    let data = WebDatasetStream::from_shards(names, options, Storage::global()).unwrap();
    for epoch in 0..epochs {
        let (t, cpu) = (Instant::now(), cpu_seconds());
        let (mut samples, mut bytes, mut errors) = (0usize, 0u64, 0usize);
        for batch in data.epoch(epoch) {
            samples += batch.samples.len();
            bytes += batch.samples.iter().map(|s| s.sample.bytes()).sum::<u64>();
            errors += batch.shard_errors.len();
        }
        let secs = t.elapsed().as_secs_f64();
        println!(
            "{{\"bench\":\"stream_read\",\"pattern\":\"{pattern}\",\"repeat\":{repeat},\"epoch\":{epoch},\"samples\":{samples},\"bytes\":{bytes},\"shard_errors\":{errors},\"seconds\":{secs:.3},\"samples_per_s\":{:.0},\"mb_per_s\":{:.1},\"cpu_seconds\":{:.2}}}",
            samples as f64 / secs,
            bytes as f64 / secs / 1e6,
            cpu_seconds() - cpu
        );
    }
}

//! Progress bars (with rate and ETA) for the CLI's long one-off jobs: listing a bucket prefix
//! and indexing a video dataset. The library counts in a `gm_loader::Progress`; a thread here
//! polls it and draws on stderr (indicatif hides the bar when stderr is not a terminal).

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::Result;
use gm_loader::{ImageFolder, Progress, VideoDataset, VideoDatasetBuilder};
use gm_storage::Storage;
use indicatif::{ProgressBar, ProgressStyle};

const LISTING: &str = "  {spinner} {msg}: {pos} objects listed, {per_sec}, {elapsed}";
const WORK: &str = "  {msg}: {bar:40} {pos}/{len} {per_sec}, ETA {eta}";

/// Draws `progress` until dropped: a spinner with the listing rate while objects are listed
/// (no total yet), then a bar with rate and ETA once the work knows its total.
struct Watch {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Watch {
    fn start(progress: Arc<Progress>, listing: &str, working: &str) -> Watch {
        let stop = Arc::new(AtomicBool::new(false));
        let (listing, working) = (listing.to_string(), working.to_string());
        let flag = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            let bar = ProgressBar::new_spinner().with_message(listing);
            bar.set_style(style(LISTING));
            let mut counting = false;
            while !flag.load(Ordering::Relaxed) {
                let total = progress.total();
                if total > 0 && !counting {
                    // The listing is done (or there was none): the work's own bar from here.
                    counting = true;
                    bar.set_style(style(WORK));
                    bar.set_message(working.clone());
                    bar.set_length(total);
                    bar.reset();
                }
                bar.set_position(if counting {
                    progress.done()
                } else {
                    progress.listed()
                });
                std::thread::sleep(Duration::from_millis(100));
            }
            bar.finish_and_clear();
        });
        Watch {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn style(template: &str) -> ProgressStyle {
    ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_bar())
}

/// An ImageFolder of `root` (a directory or a bucket prefix), with a bar while a prefix lists.
pub fn list_images(root: &Path, storage: &Storage) -> Result<ImageFolder> {
    if !gm_storage::looks_like_url(&root.to_string_lossy()) {
        // A local walk is quick and counts nothing.
        return Ok(ImageFolder::with_storage(root, storage)?);
    }
    let progress = Progress::new();
    let _watch = Watch::start(
        Arc::clone(&progress),
        &format!("listing {}", root.display()),
        "",
    );
    Ok(ImageFolder::with_progress(root, storage, Some(&progress))?)
}

/// Opens a video dataset, with bars while its directory lists and its videos index.
pub fn open_videos(builder: VideoDatasetBuilder, name: &str) -> Result<VideoDataset> {
    let progress = Progress::new();
    let _watch = Watch::start(
        Arc::clone(&progress),
        &format!("listing {name}"),
        "indexing videos",
    );
    Ok(builder.progress(progress).open()?)
}

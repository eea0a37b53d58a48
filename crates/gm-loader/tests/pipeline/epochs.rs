//! `Loader::epochs`: epochs back to back on the CPU path, the next started behind the last
//! batches of the running one, with the batches each epoch alone would give.

use std::sync::Arc;

use super::common::*;
use gm_loader::{BadSamplePolicy, Dataset, Loader, Sampler};

fn shuffled_loader() -> Loader {
    Loader::builder(photos(3))
        .cpu()
        .sampler(Sampler::shuffled(2))
        .seed(5)
        .batch_size(4)
        .workers(2)
        .transforms(train_chain(32))
        .build()
        .unwrap()
}

#[test]
fn epochs_back_to_back_equal_epochs_one_by_one() {
    let mut loader = shuffled_loader();
    // Where the running epoch's workers have read their last batch.
    let (per_epoch, prestart) = (loader.batches_per_epoch(), loader.prestart_at());
    let ahead = back_to_back_equal_alone(&mut shuffled_loader(), &mut loader, 3..6);
    // The next epoch starts once `prestart` batches are left, not before; none after the last.
    for (e, taken, started) in ahead {
        let expect = (per_epoch - taken <= prestart && e < 5).then_some(e + 1);
        assert_eq!(started, expect, "epoch {e} after {taken} batches");
    }
}

#[test]
fn an_error_ends_the_run_and_nothing_follows() {
    let folder = demo_folder();
    let truncated = (0..folder.len())
        .find(|&i| folder.name(i).contains("truncated"))
        .unwrap();
    let shared: Arc<dyn Dataset> = Arc::new(folder);
    let mut loader = Loader::builder_shared(shared)
        .cpu()
        .batch_size(4)
        .bad_samples(BadSamplePolicy::Fail)
        .transforms(eval_chain(24))
        .build()
        .unwrap();
    let items: Vec<_> = loader.epochs(0..3).collect();
    assert_eq!(items.len(), truncated / 4 + 1, "nothing after the error");
    let (e, last) = items.last().unwrap();
    assert_eq!(*e, 0);
    assert!(is_bad_sample(last));
    assert!(items.iter().all(|(e, _)| *e == 0));
    // An empty range yields nothing.
    assert_eq!(loader.epochs(4..4).count(), 0);
}

//! `Loader::epochs`: epochs back to back on the CPU path, the next started behind the last
//! batches of the running one, with the batches each epoch alone would give.

use std::sync::Arc;

use super::common::*;
use gm_loader::{BadSamplePolicy, Dataset, Loader, PRESTART_AT, Sampler};

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
    let mut one_by_one = shuffled_loader();
    let want: Vec<Vec<Seen>> = (3..6).map(|e| run_epoch(&mut one_by_one, e)).collect();
    let mut loader = shuffled_loader();
    let per_epoch = loader.batches_per_epoch();
    assert!(per_epoch > PRESTART_AT + 1, "{per_epoch} batches per epoch");
    let mut got: Vec<Vec<Seen>> = (0..3).map(|_| Vec::new()).collect();
    let mut ahead = Vec::new();
    let mut epochs = loader.epochs(3..6);
    while let Some((e, b)) = epochs.next() {
        let this = &mut got[(e - 3) as usize];
        this.push(seen(&b.unwrap()));
        ahead.push((e, this.len(), epochs.started_ahead()));
    }
    for (k, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_same(g, w, &format!("epoch {}", k + 3));
    }
    // The next epoch starts once PRESTART_AT batches are left, not before; none after the last.
    for (e, taken, started) in ahead {
        let expect = (per_epoch - taken <= PRESTART_AT && e < 5).then_some(e + 1);
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

//! How the image loader spends the host cores it is given.
//!
//! The engines (NVJPG) need about 80 µs of host time per ImageNet-sized JPEG; the CUDA backend's
//! share needs about 3x that per image it takes, for its Huffman decoding on the CPU. Pinned to
//! C cores on an H100 host (2026-11-23, bench/results/2026-11-23-h100-cores), engines alone gave
//! 20.0k images/s on 2 cores, 26.3k on 4 and 27.8-29.3k on 6 and 8, where the 0.8 engine share
//! with 4 CUDA threads gave 7.1k, 13.3k, 18.5k and 19.9k: below about 10 cores the CUDA share
//! only takes cores from the engines' feeders. With the whole 16-core host it adds up to 10%
//! over the engines alone, at 3-5 times the cores. A plan depends only on the budget and on
//! how many loaders share the node, so batches are bit-reproducible for fixed settings (the
//! split decides which decoder decodes which image).
//!
//! On a node whose cores several loaders share (one process per GPU under torchrun or Slurm),
//! the CUDA share buys nothing: on a 4 x H100 host of 64 cores (2026-11-27,
//! bench/results/2026-11-27-h100x4-host, call 7), four loaders at once delivered 81.0k
//! images/s in all with the split on 28.8 cores, and 103.0k on the engines alone on 13.3
//! cores, where one loader alone had 32.8k and 31.0k. The host runs every thread slower as
//! more of its cores work (the same host steps took 20-30% more CPU time per image with four
//! loaders, file reads included), so the split's extra host work costs the others more than
//! it adds. A shared node's plan therefore decodes on the engines alone at any budget.
//!
//! A loader that reads each sample's masks has host work per image that file reads alone do
//! not (a label map's PNG decode, a COCO image's outlines rasterized), and the CUDA share's
//! Huffman threads take the cores it needs. On the H200's 16 cores (2026-11-29,
//! bench/results/2026-11-29-h200-masks-plan), segmentation delivered 11.2k-11.6k images/s with
//! the split and 8 workers, 12.7k-13.4k on the engines alone with 8, and 13.1k-15.2k on the
//! engines alone with 12: masks' plans decode on the engines alone, with three workers of
//! every four cores. That holds for masks as pixels. COCO's masks go to the GPU as runs
//! ([`Dataset::masks_as_runs`](crate::Dataset::masks_as_runs)), a few bytes an object, and
//! their loader keeps the image plan: on the H200 (2026-11-29,
//! bench/results/2026-11-29-h200-mask-runs) COCO detection with masks gave 7.4k images/s with
//! it and 4 workers, 7.5k and 7.3k with 6 and 8, and 7.2-8.4k on the engines alone with 12,
//! 8 and 6 workers, all bound by the GPU stages and the loop's targets rather than the
//! workers.

use gm_codec::jpeg::{CudaWorkers, DecoderOptions, Split};

use crate::NodeCpus;

/// Below this many cores the loader decodes on the engines alone.
pub const ENGINES_ONLY_BELOW: usize = 10;

/// What the image loader does with a budget of host cores: its reader threads and its
/// decoder's split between the engines and the CUDA backend, with that backend's threads.
#[derive(Debug, Clone)]
pub struct CorePlan {
    /// The budget this plan is for.
    pub cores: usize,
    /// Host threads reading files for the GPU path.
    pub workers: usize,
    /// Host threads reading and decoding files for the CPU path.
    pub cpu_workers: usize,
    /// Host threads for the GPU path when each sample's masks are read too, as pixels
    /// ([`LoaderBuilder::masks`](crate::LoaderBuilder::masks)): a label map's PNG decode is
    /// host work per image that file reads alone are not.
    pub mask_workers: usize,
    /// The decoder settings.
    pub decoder: DecoderOptions,
    /// The decoder settings of a GPU loader that reads masks as pixels: the engines alone
    /// (see the module's notes).
    pub mask_decoder: DecoderOptions,
    /// GPU stages: 3 from [`ENGINES_ONLY_BELOW`] cores, 2 below. On the whole 16-core H100
    /// host (2026-11-24, bench/results/2026-11-24-h100-stages), 3 stages gave 1.09-1.30x the
    /// images/s of 2 (median 1.21 over 18 pairs in one call, both orders) for 2.3 more host
    /// cores and 370 MB more device memory; 4 gave what 3 did. Small budgets keep 2, as
    /// measured when the budget was chosen.
    pub stages: usize,
}

impl CorePlan {
    /// The plan for `cores` host cores (at least 1) of a node this loader has to itself.
    pub fn for_cores(cores: usize) -> CorePlan {
        CorePlan::for_node(cores, 1)
    }

    /// The plan for `cores` host cores (at least 1) when `loaders` loader processes share the
    /// node (the launcher's local world size): from 2 loaders on, the engines alone decode
    /// (see the module's notes), with the stages and workers of the budget.
    pub fn for_node(cores: usize, loaders: usize) -> CorePlan {
        let cores = cores.max(1);
        let decoder = if cores < ENGINES_ONLY_BELOW || loaders > 1 {
            engines_alone()
        } else {
            DecoderOptions::for_loader()
        };
        CorePlan {
            cores,
            workers: cores.saturating_sub(2).clamp(2, 4),
            cpu_workers: cores.min(32),
            mask_workers: (cores * 3 / 4).clamp(2, 12),
            decoder,
            mask_decoder: engines_alone(),
            stages: if cores < ENGINES_ONLY_BELOW { 2 } else { 3 },
        }
    }

    /// The plan for [`default_core_budget`] on a node shared by [`local_loaders`].
    pub fn from_env() -> CorePlan {
        CorePlan::from_env_on(None)
    }

    /// [`CorePlan::from_env`] for a loader placed on a NUMA node (see [`NodeCpus`]): the
    /// budget is also at most the node's share for one of the host's loaders.
    pub fn from_env_on(node: Option<&NodeCpus>) -> CorePlan {
        let loaders = local_loaders();
        let budget = default_core_budget();
        CorePlan::for_node(
            node.map_or(budget, |n| budget.min(n.budget(loaders))),
            loaders,
        )
    }

    /// The plan for a budget of `cores` given by the user, on a node shared by
    /// [`local_loaders`].
    pub fn for_cores_here(cores: usize) -> CorePlan {
        CorePlan::for_node(cores, local_loaders())
    }
}

/// The engines alone; one CUDA thread stays for what they cannot take (progressive and CMYK
/// JPEGs; other formats go to the CPU).
fn engines_alone() -> DecoderOptions {
    DecoderOptions {
        split: Split::Fixed { hw_load: 1.0 },
        cuda: CudaWorkers {
            threads: 1,
            ..DecoderOptions::for_loader().cuda
        },
        ..DecoderOptions::for_loader()
    }
}

/// The loader processes of this node as the launcher says (`LOCAL_WORLD_SIZE` from torchrun,
/// `SLURM_NTASKS_PER_NODE` from Slurm), 1 without one.
pub fn local_loaders() -> usize {
    local_processes(|k| std::env::var(k).ok())
}

fn local_processes(var: impl Fn(&str) -> Option<String>) -> usize {
    ["LOCAL_WORLD_SIZE", "SLURM_NTASKS_PER_NODE"]
        .iter()
        .find_map(|k| var(k).and_then(|v| v.trim().parse::<usize>().ok()))
        .filter(|&n| n > 0)
        .unwrap_or(1)
}

/// The cores a loader takes when it is not told: the cores this process may run on, divided
/// by the processes of this node when a launcher says how many there are (`LOCAL_WORLD_SIZE`
/// from torchrun, `SLURM_NTASKS_PER_NODE` from Slurm), as one loader per GPU shares a host.
pub fn default_core_budget() -> usize {
    let host = std::thread::available_parallelism().map_or(1, |n| n.get());
    core_budget(host, |k| std::env::var(k).ok())
}

/// [`default_core_budget`] for `host` cores and any variable lookup.
pub(crate) fn core_budget(host: usize, var: impl Fn(&str) -> Option<String>) -> usize {
    (host / local_processes(var)).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_budgets_decode_on_the_engines_alone() {
        for cores in [1, 2, 4, 8, 9] {
            let p = CorePlan::for_cores(cores);
            assert_eq!(p.decoder.split, Split::Fixed { hw_load: 1.0 }, "{cores}");
            assert_eq!(p.decoder.cuda.threads, 1);
            assert!((2..=4).contains(&p.workers));
            assert_eq!(p.stages, 2, "{cores}");
        }
        assert_eq!(CorePlan::for_cores(2).workers, 2);
        assert_eq!(CorePlan::for_cores(6).workers, 4);
        assert_eq!(CorePlan::for_cores(0).cores, 1);
    }

    #[test]
    fn large_budgets_keep_the_loaders_split() {
        let p = CorePlan::for_cores(14);
        assert_eq!(p.decoder.split, DecoderOptions::for_loader().split);
        assert_eq!(p.decoder.cuda.threads, 4);
        assert_eq!((p.workers, p.cpu_workers, p.stages), (4, 14, 3));
        assert_eq!(CorePlan::for_cores(ENGINES_ONLY_BELOW).stages, 3);
        assert_eq!(CorePlan::for_cores(128).cpu_workers, 32);
    }

    #[test]
    fn a_shared_node_decodes_on_the_engines_at_any_budget() {
        for cores in [4, 10, 16, 28, 64] {
            let p = CorePlan::for_node(cores, 4);
            assert_eq!(p.decoder.split, Split::Fixed { hw_load: 1.0 }, "{cores}");
            assert_eq!(p.decoder.cuda.threads, 1);
            // Stages and workers still follow the budget.
            assert_eq!(p.stages, CorePlan::for_cores(cores).stages);
            assert_eq!(p.workers, CorePlan::for_cores(cores).workers);
        }
        assert_eq!(
            CorePlan::for_node(16, 1).decoder.split,
            DecoderOptions::for_loader().split
        );
    }

    #[test]
    fn loaders_that_read_masks_decode_on_the_engines_with_more_workers() {
        for cores in [2, 8, 16, 64] {
            let p = CorePlan::for_cores(cores);
            assert_eq!(
                p.mask_decoder.split,
                Split::Fixed { hw_load: 1.0 },
                "{cores}"
            );
            assert_eq!(p.mask_decoder.cuda.threads, 1);
            assert!(p.mask_workers >= p.workers, "{cores}");
        }
        assert_eq!(CorePlan::for_cores(16).mask_workers, 12);
        assert_eq!(CorePlan::for_cores(8).mask_workers, 6);
        assert_eq!(CorePlan::for_cores(2).mask_workers, 2);
        assert_eq!(CorePlan::for_cores(64).mask_workers, 12);
    }

    #[test]
    fn the_budget_is_shared_by_the_processes_of_a_node() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| v.to_string())
            }
        };
        assert_eq!(core_budget(64, env(&[])), 64);
        assert_eq!(core_budget(64, env(&[("LOCAL_WORLD_SIZE", "4")])), 16);
        assert_eq!(core_budget(112, env(&[("SLURM_NTASKS_PER_NODE", "8")])), 14);
        assert_eq!(core_budget(4, env(&[("LOCAL_WORLD_SIZE", "8")])), 1);
        // Nonsense is ignored, not fatal: the budget only tunes threads.
        assert_eq!(core_budget(16, env(&[("LOCAL_WORLD_SIZE", "zero")])), 16);
        assert_eq!(core_budget(16, env(&[("LOCAL_WORLD_SIZE", "0")])), 16);
    }
}

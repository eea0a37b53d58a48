//! What the loader yields.

use std::sync::Arc;

use gm_cuda::{CudaError, Event, Stream};
use gm_transforms::Layout;
use gm_transforms::targets::TargetGeometry;

use super::dataset::Label;
use super::device_targets::DeviceTargets;
use super::masks::BatchMasks;
use super::sizes::{Placement, image_shape};
use crate::coco::{CocoError, MovedCoco};
use crate::error::LoaderError;
use crate::release::Release;
use crate::tensors::{HostTensor, Images};

/// One image's targets moved with its pixels, or why they could not be.
pub type MovedSample = Result<MovedCoco, CocoError>;

/// One batch, in sampler order.
///
/// On the GPU the images are written on the loader's stream; a consumer calls
/// [`Batch::wait_on`] with its own stream before reading (or waits on [`Batch::ready_event`]),
/// and calls
/// [`Batch::record_stream`] if its reads are still queued when the batch is dropped, so that
/// the memory is not handed to the next batch before they ran.
#[derive(Debug)]
pub struct Batch {
    /// First: it must drop before `images` (see `Release`).
    release: Option<Release>,
    /// The images: `[B, 3, H, W]` (or HWC, or one channel) of the chain's output type.
    pub images: Images,
    /// Label of each image.
    pub labels: Vec<Label>,
    /// With MixUp/CutMix on ([`LoaderBuilder::batch_mix`](crate::LoaderBuilder::batch_mix)):
    /// the mixed labels, `[B, num_classes]` f32 on the host, each row summing to 1 (row `i`:
    /// `lambda` on `labels[i]`, `1 - lambda` on `labels[i - 1]`); `None` otherwise.
    pub soft_labels: Option<HostTensor>,
    /// Dataset index of each image (a substituted sample shows its substitute's index).
    pub indices: Vec<usize>,
    /// Each image's name (`shard#key`), for a streaming WebDataset
    /// ([`Loader::streaming`](crate::Loader::streaming)), whose indices name no file; `None`
    /// for other datasets (their [`Dataset::name`](crate::Dataset::name) does).
    pub names: Option<Vec<String>>,
    /// Each image's geometry: the crops, resizes, flips, pads and warps its pixels went
    /// through, to move its boxes, keypoints and masks the same way
    /// ([`TargetGeometry::boxes`](gm_transforms::targets::TargetGeometry::boxes),
    /// [`keypoints`](gm_transforms::targets::TargetGeometry::keypoints),
    /// [`mask`](gm_transforms::targets::TargetGeometry::mask)).
    pub geometry: Vec<TargetGeometry>,
    /// With [`LoaderBuilder::masks`](crate::LoaderBuilder::masks): each image's masks moved
    /// with its pixels (on the GPU, written by the same launch and ready with the images).
    pub masks: Option<BatchMasks>,
    /// With [`LoaderBuilder::targets`](crate::LoaderBuilder::targets) over a dataset that
    /// has them ([`Dataset::moved_targets`](crate::Dataset::moved_targets)): each image's
    /// targets moved through its geometry, or why its annotations could not be read or moved
    /// (the image stays in its batch; its targets are missing, not wrong).
    pub targets: Option<Vec<MovedSample>>,
    /// On a GPU loader, with `targets`: the same targets on the device, one buffer ready with
    /// the images.
    pub device_targets: Option<DeviceTargets>,
    /// Each image's own (height, width), torchvision's `image_sizes`: in a padded batch
    /// ([`BatchSizes::Padded`](crate::BatchSizes::Padded)) the image is the top-left corner
    /// of its slot, in a ragged one ([`BatchSizes::Ragged`](crate::BatchSizes::Ragged)) the
    /// whole of it.
    pub sizes: Vec<(u32, u32)>,
    /// Where each image's slot starts in `images`, in elements.
    pub offsets: Vec<usize>,
    /// The images' layout and channels, for [`Batch::image_shape`].
    layout: Option<(Layout, usize)>,
    /// The epoch.
    pub epoch: u64,
    /// Position of this batch in the epoch, from 0.
    pub position: usize,
    /// Recorded when the images are in place (GPU only).
    ready_event: Option<Arc<Event>>,
}

impl Batch {
    /// A batch; `gpu` is the ready event and the stage stream the memory goes back to.
    pub(crate) fn new(
        images: Images,
        labels: Vec<Label>,
        indices: Vec<usize>,
        epoch: u64,
        position: usize,
        gpu: Option<(Arc<Event>, Stream)>,
    ) -> Batch {
        let (ready_event, release) = match gpu {
            Some((event, stage)) => (Some(event), Some(Release::new(stage))),
            None => (None, None),
        };
        Batch {
            images,
            labels,
            soft_labels: None,
            indices,
            names: None,
            geometry: Vec::new(),
            masks: None,
            targets: None,
            device_targets: None,
            sizes: Vec::new(),
            offsets: Vec::new(),
            layout: None,
            epoch,
            position,
            ready_event,
            release,
        }
    }

    /// The batch with its images' names.
    pub(crate) fn with_names(mut self, names: Option<Vec<String>>) -> Batch {
        self.names = names;
        self
    }

    /// The batch with its images' masks.
    pub(crate) fn with_masks(mut self, masks: Option<BatchMasks>) -> Batch {
        self.masks = masks;
        self
    }

    /// The batch with its images' moved targets.
    pub(crate) fn with_targets(mut self, targets: Option<Vec<MovedSample>>) -> Batch {
        self.targets = targets;
        self
    }

    /// The batch with its targets on the device.
    pub(crate) fn with_device_targets(mut self, targets: Option<DeviceTargets>) -> Batch {
        self.device_targets = targets;
        self
    }

    /// The batch with its images' geometry.
    pub(crate) fn with_geometry(mut self, geometry: Vec<TargetGeometry>) -> Batch {
        self.geometry = geometry;
        self
    }

    /// The batch with where its images lie.
    pub(crate) fn with_placement(mut self, p: Placement) -> Batch {
        self.layout = Some((p.spec.layout, p.spec.channels()));
        self.sizes = p.sizes;
        self.offsets = p.offsets;
        self
    }

    /// Image `i`'s own shape (`[C, h, w]` or `[h, w, C]`): in a ragged batch, the
    /// contiguous `images[offsets[i]..]` holds exactly that; in a padded one, the top-left
    /// corner of slot `i`.
    pub fn image_shape(&self, i: usize) -> Option<Vec<usize>> {
        let (layout, channels) = self.layout?;
        Some(image_shape(layout, channels, *self.sizes.get(i)?))
    }

    /// The images' layout (`None` for a batch built without one).
    pub fn layout(&self) -> Option<Layout> {
        self.layout.map(|(l, _)| l)
    }

    /// The batch with its mixed labels.
    pub(crate) fn with_soft_labels(mut self, soft: Option<HostTensor>) -> Batch {
        self.soft_labels = soft;
        self
    }

    /// The event the images are ready on (GPU only).
    pub fn ready_event(&self) -> Option<&Arc<Event>> {
        self.ready_event.as_ref()
    }

    /// Makes `stream` wait (on the device) until the images are in place; nothing to wait
    /// for on the CPU path.
    pub fn wait_on(&self, stream: &Stream) -> Result<(), LoaderError> {
        if let Some(e) = &self.ready_event {
            stream.wait(e)?;
        }
        Ok(())
    }

    /// Number of images.
    pub fn len(&self) -> usize {
        self.labels.len()
    }

    /// Whether the batch holds no image.
    pub fn is_empty(&self) -> bool {
        self.labels.is_empty()
    }

    /// Marks the images as used by work queued on `stream` (PyTorch's `record_stream`): when
    /// the batch is dropped, its memory is reused only after that work.
    pub fn record_stream(&mut self, stream: &Stream) -> Result<(), CudaError> {
        match &mut self.release {
            Some(r) => r.record(stream),
            None => Ok(()),
        }
    }
}

//! The decode threads of one `VideoDecoder`. An NVDEC session belongs to one thread, so each
//! session lives on a thread of its own; threads start as requests need them, up to a limit.
//! A request's decode runs (each starts at a GOP and ends with a flush) are independent, so
//! they are spread over the sessions and several NVDEC engines work on one request: a call
//! for frames in 8 GOPs decodes on up to 8 engines at once, one frame needs one session.

use std::sync::{Arc, mpsc};
use std::thread::JoinHandle;

use gm_codec::nvdec::DecoderSession;
use gm_codec::{CodecError, Routing};
use gm_cuda::{Device, DevicePool, Event, PoolConfig, Stream, Tensor as GmTensor};
use gm_demux::{DecodePlan, IndexingDemuxer};
use gm_transforms::{FusedKernel, Orientation};

use super::Output;
use super::frames::decode_group;

/// Sessions a decoder starts at most when the caller does not say: the NVDEC engines of an
/// H100 or H200 (a session beyond the engines' count queues on them, so more buy nothing).
pub(super) const DEFAULT_SESSIONS: usize = 7;

/// What every decode thread needs to know about its decoder.
pub(super) struct Setup {
    pub(super) demux: Arc<IndexingDemuxer>,
    pub(super) output: Output,
    /// RGB output (height, width) when resized.
    pub(super) size: Option<(u32, u32)>,
    /// Output width and height.
    pub(super) width: u32,
    pub(super) height: u32,
    /// How RGB frames are turned (the display matrix, or as stored).
    pub(super) shown: Orientation,
    /// Which decoder takes the stream (NVDEC, or libavcodec where NVDEC cannot).
    pub(super) routing: Routing,
}

/// Decoded frames: the tensor, its ready event and the stream its memory is fenced on.
pub(super) type Decoded = Result<(GmTensor, Arc<Event>, Stream), CodecError>;

/// One session's share of a request: its runs, the request's tensor, and the event that
/// orders the session's writes after the tensor's allocation.
struct Group {
    plan: DecodePlan,
    out: GmTensor,
    allocated: Arc<Event>,
    reply: mpsc::Sender<Result<(), CodecError>>,
}

/// A decode thread: its queue, its handle and its session's stream.
struct Thread {
    jobs: Option<mpsc::Sender<Group>>,
    handle: Option<JoinHandle<()>>,
    stream: Stream,
    /// Recorded on `stream` after the thread's share, for the lead stream to wait on.
    done: Event,
}

impl Drop for Thread {
    fn drop(&mut self) {
        // Closing the queue ends the thread's loop.
        self.jobs = None;
        if let Some(t) = self.handle.take()
            && t.join().is_err()
        {
            tracing::error!("a video decode thread panicked");
        }
    }
}

/// The decode threads of one decoder and the pool its frames' memory comes from.
pub(super) struct Sessions {
    device: Device,
    setup: Arc<Setup>,
    pool: DevicePool,
    limit: usize,
    threads: Vec<Thread>,
}

impl Sessions {
    /// Sessions on `device`, at most `limit`; the first starts now, so that a GPU or codec
    /// problem shows at the first request.
    pub(super) fn new(device: Device, setup: Setup, limit: usize) -> Result<Sessions, CodecError> {
        let mut s = Sessions {
            pool: DevicePool::new(&device, PoolConfig::unbounded("gm-python frames")),
            device,
            setup: Arc::new(setup),
            limit: limit.max(1),
            threads: Vec::new(),
        };
        s.grow(1)?;
        Ok(s)
    }

    /// Decodes `frames` into one tensor, its runs spread over up to `limit` sessions.
    pub(super) fn decode(&mut self, frames: &[usize]) -> Decoded {
        let plan = self.setup.demux.plan(frames)?;
        let groups = plan.split(self.limit);
        self.grow(groups.len())?;
        let lead = self.threads[0].stream.clone();
        let dtype = self.setup.output.dtype();
        let out = GmTensor::empty(&self.pool, &lead, &self.shape(frames.len()), dtype)?;
        let allocated = Arc::new(Event::new(&self.device)?);
        allocated.record(&lead)?;
        let (reply, answers) = mpsc::channel();
        let (mut used, shares) = (Vec::with_capacity(groups.len()), groups.len());
        for (t, plan) in self.threads.iter().zip(groups) {
            let group = Group {
                plan,
                out: out.clone(),
                allocated: allocated.clone(),
                reply: reply.clone(),
            };
            if t.jobs.as_ref().is_some_and(|j| j.send(group).is_ok()) {
                used.push(t);
            }
        }
        drop(reply);
        // Every sent share answers, or its thread died and dropped its sender: either way the
        // loop ends once all of them are accounted for.
        let mut first_error = None;
        let mut answered = 0;
        for r in answers.iter() {
            answered += 1;
            if let Err(e) = r {
                first_error.get_or_insert(e);
            }
        }
        // Whatever each session queued (also before an error) is ordered before the tensor's
        // ready event and its memory's return to the pool.
        for t in &used {
            t.done.record(&t.stream)?;
            lead.wait(&t.done)?;
        }
        if let Some(e) = first_error {
            return Err(e);
        }
        if answered < shares {
            return Err(CodecError::Pool("a video decode thread stopped".into()));
        }
        let ready = Arc::new(Event::new(&self.device)?);
        ready.record(&lead)?;
        Ok((out, ready, lead))
    }

    fn shape(&self, n: usize) -> Vec<usize> {
        let (w, h) = (self.setup.width as usize, self.setup.height as usize);
        match self.setup.output {
            Output::Rgb => vec![n, 3, h, w],
            Output::Nv12 | Output::P016 => vec![n, h * 3 / 2, w],
        }
    }

    /// Starts threads until there are `n` (at most `limit`).
    fn grow(&mut self, n: usize) -> Result<(), CodecError> {
        while self.threads.len() < n.min(self.limit) {
            let t = start(&self.device, self.setup.clone(), self.threads.len())?;
            self.threads.push(t);
        }
        Ok(())
    }
}

/// Starts decode thread `i`; returns once its session exists (or could not be made).
fn start(device: &Device, setup: Arc<Setup>, i: usize) -> Result<Thread, CodecError> {
    let (jobs, queue) = mpsc::channel::<Group>();
    let (started, start) = mpsc::channel();
    let dev = device.clone();
    let handle = std::thread::Builder::new()
        .name(format!("gm-video-decoder-{i}"))
        .spawn(move || decode_thread(dev, setup, queue, started))
        .map_err(|e| CodecError::Pool(format!("could not start a decode thread: {e}")))?;
    let stream = match start.recv() {
        Ok(Ok(stream)) => stream,
        Ok(Err(e)) => return Err(e),
        Err(_) => {
            return Err(CodecError::Pool(
                "the video decode thread stopped at its start".into(),
            ));
        }
    };
    Ok(Thread {
        jobs: Some(jobs),
        handle: Some(handle),
        stream,
        done: Event::new(device)?,
    })
}

/// A decode thread: makes its session and kernel, then decodes shares until the queue closes.
fn decode_thread(
    device: Device,
    setup: Arc<Setup>,
    queue: mpsc::Receiver<Group>,
    started: mpsc::Sender<Result<Stream, CodecError>>,
) {
    let made = DecoderSession::new(&device, None).and_then(|mut s| {
        s.set_routing(setup.routing);
        Ok((FusedKernel::new(&device)?, s))
    });
    let (mut kernel, mut session) = match made {
        Ok(m) => m,
        Err(e) => {
            let _ = started.send(Err(e));
            return;
        }
    };
    let _ = started.send(Ok(session.stream().clone()));
    while let Ok(g) = queue.recv() {
        let r = session
            .stream()
            .wait(&g.allocated)
            .map_err(CodecError::from)
            .and_then(|()| decode_group(&mut session, &mut kernel, &setup, &g.plan, &g.out));
        let _ = g.reply.send(r);
    }
}

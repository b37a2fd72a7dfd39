//! Workload generators: what each application thread asks of the file system next.
//!
//! Filebench personalities follow the `.f` files IOPathTune and DIAL used (one file per stream,
//! offsets aligned to the I/O size for random access); `ior` follows IOR's segment/block/transfer
//! layout for shared files and file-per-process; `h5bench.vpic`/`h5bench.bdcats` follow
//! h5bench_write/h5bench_read over one shared HDF5 file; `dlio` follows the DLIO benchmark's
//! data loader (shuffled files or samples, batches, compute time, prefetch).

use std::collections::VecDeque;

use crate::config::{H5Config, JobConfig};
use crate::model::{OpKind, Step};
use crate::rng::Rng;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    SeqRead,
    SeqWrite,
    RandRead,
    RandWrite,
    /// Read the whole file, reopen, repeat.
    WholeRead,
    /// Write the whole file, close, repeat.
    WholeWrite,
    /// Whole-file write then whole-file read of the same file, repeat.
    WholeRw,
    /// IOR process `rank` of `nproc`.
    Ior { rank: u32, nproc: u32 },
    /// h5bench MPI rank `rank` of `nproc`, writing (VPIC-IO) or reading (BDCATS-IO).
    H5 { rank: u32, nproc: u32, write: bool },
    /// DLIO data-loader thread `worker` of `workers` (over every rank of the job).
    Dlio { worker: u32, workers: u32 },
}

/// Loop state of the h5bench and DLIO threads (filebench and IOR keep theirs in `pos`/`phase`).
#[derive(Clone, Debug, Default)]
pub struct Progress {
    /// h5bench: index of the next I/O over all timesteps.
    /// DLIO: index of the next file (sequential formats) or sample (random formats) of this
    /// worker in the current epoch.
    pub step: u64,
    /// DLIO: next byte to read in the current file (sequential formats) or sample.
    pub offset: u64,
    pub epoch: u64,
    /// DLIO: bytes read toward the batch being assembled.
    pub batch_bytes: u64,
    /// DLIO: when the training step of the last complete batch ends.
    pub compute_end: u64,
    /// DLIO: training steps scheduled so far (one per complete batch of this loader).
    pub steps_scheduled: u64,
    /// DLIO: start times of the training steps of batches read but not yet consumed (the
    /// loader's prefetch queue).
    pub queue: StepQueue,
}

/// The start times of queued training steps, kept as runs `(first start, steps)`: the steps of
/// one run follow each other every `computation_ns`. One read of many batches (tiny samples, a
/// large transfer) queues millions of steps; as runs they cost one entry.
#[derive(Clone, Debug, Default)]
pub struct StepQueue {
    runs: VecDeque<(u64, u64)>,
    steps: u64,
}

impl StepQueue {
    /// Queue `n` steps, the first starting at `first` (the others follow every `computation_ns`;
    /// [`StepQueue::pop_started`] is told that spacing).
    fn push(&mut self, first: u64, n: u64) {
        if n > 0 {
            self.runs.push_back((first, n));
            self.steps += n;
        }
    }

    /// Drop the steps that have started by `now`.
    fn pop_started(&mut self, now: u64, spacing: u64) {
        while let Some(run) = self.runs.front_mut() {
            if run.0 > now {
                break;
            }
            // with no spacing every step of the run starts at once
            let started = (now - run.0).checked_div(spacing).map_or(run.1, |k| (k + 1).min(run.1));
            self.steps -= started;
            run.1 -= started;
            if run.1 > 0 {
                run.0 = run.0.saturating_add(started.saturating_mul(spacing));
                break;
            }
            self.runs.pop_front();
        }
    }

    /// Steps queued.
    fn len(&self) -> u64 {
        self.steps
    }

    /// The first queued step's start.
    fn first(&self) -> Option<u64> {
        self.runs.front().map(|run| run.0)
    }
}

/// One thread's next request.
#[derive(Clone, Copy, Debug)]
pub struct Request {
    pub kind: OpKind,
    pub file_slot: usize,
    pub offset: u64,
    pub len: u64,
    pub fsync_after: bool,
    /// True when this request starts a new open of the file (whole-file personalities).
    pub reopen: bool,
    /// When the thread issues it: after its compute time (h5bench, DLIO), else at once.
    pub start_at: u64,
    /// What the thread does next (after its compute time), in order: IOR's barriers and file
    /// removal between phases, BDCATS-IO's wait for rank 0 to open the dataset.
    pub between: &'static [Step],
}

// IOR between phases, as its `TestIoSys()` does: after a write phase every rank waits at a
// barrier; after a read phase (the end of a repetition) it waits at a barrier, the file is
// removed (IOR removes it unless `-k`, and before the next write unless `-E`; with `-E` it
// opens it with `O_TRUNC`, which empties it as well), and it waits at a barrier again.
const AFTER_WRITE: &[Step] = &[Step::Barrier];
const AFTER_READ: &[Step] = &[Step::Barrier, Step::Remove, Step::Barrier];

// h5bench_read opens each timestep's group and datasets with collective metadata reads
// (`H5Pset_all_coll_metadata_ops` on its file, group and dataset access lists): rank 0 reads an
// object header and broadcasts it, so no rank opens a dataset before rank 0 has. Rank 0 waits
// for nobody; the others may fall behind it but not get ahead.
const AFTER_RANK0_OPENS: &[Step] = &[Step::AfterRank0Opens];

/// Roles of the threads of one job instance on one client (each role entry is one thread;
/// threads sharing a file are listed with the same file group).
pub fn roles(job: &JobConfig) -> Result<Vec<(Role, u32)>, String> {
    let mut out = Vec::new();
    let t = job.threads.max(1);
    for g in 0..t {
        match job.workload.as_str() {
            "filebench.seqread" => out.push((Role::SeqRead, g)),
            "filebench.seqwrite" => out.push((Role::SeqWrite, g)),
            "filebench.randomread" => out.push((Role::RandRead, g)),
            "filebench.randomwrite" => out.push((Role::RandWrite, g)),
            "filebench.randomrw" => {
                out.push((Role::RandRead, g));
                out.push((Role::RandWrite, g));
            }
            "filebench.seqrw" => {
                out.push((Role::SeqRead, g));
                out.push((Role::SeqWrite, g));
            }
            "filebench.wholefileread" => out.push((Role::WholeRead, g)),
            "filebench.wholefilewrite" => out.push((Role::WholeWrite, g)),
            "filebench.wholefilerw" => out.push((Role::WholeRw, g)),
            "ior" | "h5bench.vpic" | "h5bench.bdcats" | "dlio" => {
                // handled by the caller: one thread per process or loader thread
                return Err(job.workload.clone());
            }
            w => return Err(format!("job {}: unsupported workload {w}", job.name)),
        }
    }
    Ok(out)
}

/// Next request of a filebench-style thread. `pos` is the thread's cursor, `phase` its loop state,
/// `eof` the file's size now (at least `filesize`; sequential writers grow it).
///
/// A sequential write (filebench's `write` flowop without `random`) writes at the descriptor's
/// offset and never seeks back, so the file grows past `filesize`; a sequential read (`read`
/// without `random`) seeks back to 0 at the end of the file (`lseek(0)` once a read returns 0),
/// the end being where writers of the same file have got to. Random flowops pick offsets within
/// `filesize`; whole-file flowops read or write `filesize` bytes from 0.
pub fn next_filebench(role: Role, job: &JobConfig, pos: &mut u64, phase: &mut u32, rng: &mut Rng, eof: u64) -> Request {
    let io = job.iosize;
    let size = job.filesize;
    let slots = (size / io).max(1);
    // the cursor of a thread that goes back to 0 at `end`
    let seq = |pos: &mut u64, end: u64| {
        if *pos + io > end {
            *pos = 0;
        }
        let off = *pos;
        *pos += io;
        off
    };
    // the end of a whole-file pass, or of the file a sequential reader reads
    let mut end = size;
    let (kind, offset, reopen) = match role {
        Role::SeqRead => {
            end = eof.max(size);
            (OpKind::Read, seq(pos, end), false)
        }
        Role::SeqWrite => {
            let off = *pos;
            *pos = off.saturating_add(io);
            end = *pos;
            (OpKind::Write, off, false)
        }
        Role::RandRead => (OpKind::Read, rng.below(slots) * io, false),
        Role::RandWrite => (OpKind::Write, rng.below(slots) * io, false),
        Role::WholeRead => {
            let reopen = *pos == 0 || *pos + io > size;
            (OpKind::Read, seq(pos, size), reopen)
        }
        Role::WholeWrite => {
            let reopen = *pos == 0 || *pos + io > size;
            (OpKind::Write, seq(pos, size), reopen)
        }
        Role::WholeRw => {
            let wrapped = *pos + io > size;
            if wrapped {
                *phase ^= 1;
            }
            let reopen = *pos == 0 || wrapped;
            let off = seq(pos, size);
            (if *phase == 0 { OpKind::Write } else { OpKind::Read }, off, reopen)
        }
        Role::Ior { .. } | Role::H5 { .. } | Role::Dlio { .. } => unreachable!("not a filebench thread"),
    };
    Request { kind, file_slot: 0, offset, len: io.min(end - offset), fsync_after: job.fsync, reopen, start_at: 0, between: &[] }
}

/// Whose data IOR process `rank` reads back: its own, or with `reorder_tasks` (IOR's `-C`) that
/// of a rank on another client. IOR shifts by the tasks per node, as it places ranks on nodes in
/// blocks; pfsim places them round-robin, so the next rank is on the next client.
pub fn ior_read_owner(job: &JobConfig, rank: u32, nproc: u32) -> u32 {
    let ior = job.ior.as_ref().expect("checked in config");
    if ior.reorder_tasks && job.clients.len() > 1 {
        (rank + 1) % nproc
    } else {
        rank
    }
}

/// A key for a job's seeded permutations: the scenario's seed mixed with the job's name.
fn job_key(seed: u64, job: &JobConfig) -> u64 {
    seed ^ job.name.bytes().fold(0u64, |h, b| h.wrapping_mul(31).wrapping_add(b as u64))
}

/// Next request of IOR process `rank`: a write phase over every segment, then a read phase.
/// With `reorder_tasks` the read phase reads another client's rank's data: in a shared file its
/// blocks, with a file per process its file (the thread's second file, slot 1).
///
/// With `random` (IOR's `-z`, `GetOffsetArrayRandom()`) every transfer of a phase is done exactly
/// once, in a random order. In a shared file the transfers of a segment (`block` x processes
/// bytes) are shuffled and dealt to the ranks (rank r takes places r, r + nproc, ... of the
/// shuffle), so a rank's transfers are spread over the whole segment; with a file per process a
/// rank does its own transfers in a shuffled order. As in IOR the order is the same in every
/// segment, phase and repetition (IOR draws its seed once per test), and a rank reading back
/// another rank's data (`reorder_tasks`) reads that rank's transfers. The shuffle is the keyed
/// permutation of DLIO's loader, keyed by the scenario's seed and the job's name.
pub fn next_ior(role: Role, job: &JobConfig, pos: &mut u64, phase: &mut u32, seed: u64) -> Request {
    let Role::Ior { rank, nproc } = role else { unreachable!() };
    let ior = job.ior.as_ref().expect("checked in config");
    let per_block = (ior.block / ior.transfer).max(1);
    let total = per_block * ior.segments.max(1);
    let mut between: &'static [Step] = &[];
    if *pos >= total {
        between = if *phase == 0 { AFTER_WRITE } else { AFTER_READ };
        *pos = 0;
        *phase ^= 1;
    }
    let (seg, k) = (*pos / per_block, *pos % per_block);
    *pos += 1;
    let owner = if *phase == 0 { rank } else { ior_read_owner(job, rank, nproc) };
    let (n, o) = (nproc as u64, owner as u64);
    let offset = if ior.file_per_process {
        // IOR seeds each rank's shuffle with the test's seed plus the rank
        let k = if ior.random { shuffle(k, per_block, job_key(seed, job).wrapping_add(o), 0) } else { k };
        seg * ior.block + k * ior.transfer
    } else if ior.random {
        // the owner's k-th of the segment's transfers, dealt round-robin from one shuffle
        let slot = shuffle(o + k * n, per_block * n, job_key(seed, job), 0);
        seg * n * ior.block + slot * ior.transfer
    } else {
        (seg * n + o) * ior.block + k * ior.transfer
    };
    let last_of_phase = *pos >= total;
    Request {
        kind: if *phase == 0 { OpKind::Write } else { OpKind::Read },
        file_slot: usize::from(ior.file_per_process && owner != rank),
        offset,
        len: ior.transfer,
        fsync_after: *phase == 0 && last_of_phase && ior.fsync,
        reopen: *pos == 1,
        start_at: 0,
        between,
    }
}

/// Size of the file an IOR job works on (per process or shared).
pub fn ior_file_size(job: &JobConfig, nproc: u32) -> u64 {
    let ior = job.ior.as_ref().expect("checked in config");
    // saturating: a size past 2^64 is refused by the capacity check, not wrapped into a small one
    let per = ior.block.saturating_mul(ior.segments.max(1));
    if ior.file_per_process {
        per
    } else {
        per.saturating_mul(nproc as u64)
    }
}

/// Particle properties VPIC-IO writes per timestep: x, y, z, px, py, pz (float), id_1, id_2 (int).
pub const H5_PROPERTIES: u64 = 8;
/// The order in which h5bench_read's `read_h5_data()` reads the datasets (x, y, z, id_1, id_2,
/// px, py, pz), as their places in the file, which VPIC-IO creates and allocates in its order
/// x, y, z, px, py, pz, id_1, id_2.
const H5_READ_ORDER: [u64; H5_PROPERTIES as usize] = [0, 1, 2, 6, 7, 3, 4, 5];
/// Bytes of one property of one particle.
pub const H5_ELEMENT: u64 = 4;

/// Whether the rank's accesses are strided: VPIC-IO's strided file pattern, BDCATS-IO's strided read.
fn h5_strided(h5: &H5Config, write: bool) -> bool {
    if write { h5.file_pattern == "strided" } else { h5.read_option == "strided" }
}

/// Datasets written or read per timestep, and I/Os per dataset.
fn h5_shape(h5: &H5Config, write: bool) -> (u64, u64) {
    let datasets = if write && h5.file_pattern == "interleaved" { 1 } else { H5_PROPERTIES };
    (datasets, if h5_strided(h5, write) { h5.block_cnt.max(1) } else { 1 })
}

/// Bytes of one I/O of an h5bench rank: a block of a strided access, the first
/// TO_READ_NUM_PARTICLES of a partial read, else the rank's whole part of a dataset (of 32-byte
/// records for an interleaved write).
fn h5_request_len(h5: &H5Config, write: bool) -> u64 {
    if write && h5.file_pattern == "interleaved" {
        h5.particles * H5_PROPERTIES * H5_ELEMENT
    } else if h5_strided(h5, write) {
        h5.block * H5_ELEMENT
    } else if !write && h5.read_option == "partial" {
        h5.to_read * H5_ELEMENT
    } else {
        h5.particles * H5_ELEMENT
    }
}

/// Bytes of the shared HDF5 file: every timestep's datasets, one after the other (HDF5's
/// contiguous layout; the few KiB of metadata are not simulated).
pub fn h5_file_size(h5: &H5Config) -> u64 {
    let total = h5.particles.saturating_mul(h5.processes as u64);
    (H5_PROPERTIES * H5_ELEMENT).saturating_mul(total).saturating_mul(h5.timesteps)
}

/// Next request of an h5bench rank, or None when its last timestep is done (the kernel ends, as
/// the real one does; size `timesteps` to outlast the scenario to measure a steady state). Each
/// timestep writes (or reads) the rank's part of every dataset, then the rank computes for
/// `compute_ns` before the next timestep.
pub fn next_h5(role: Role, job: &JobConfig, prog: &mut Progress, now: u64) -> Option<Request> {
    let Role::H5 { rank, nproc, write } = role else { unreachable!() };
    let h5 = job.h5bench.as_ref().expect("checked in config");
    let (datasets, blocks) = h5_shape(h5, write);
    let per_step = datasets * blocks;
    if prog.step >= per_step * h5.timesteps {
        return None;
    }
    let (t, rem) = (prog.step / per_step, prog.step % per_step);
    let (d, b) = (rem / blocks, rem % blocks);
    let start_at = if rem == 0 && prog.step > 0 { now + h5.compute_ns } else { now };
    prog.step += 1;
    let total = h5.particles * nproc as u64;
    let rank = rank as u64;
    let len = h5_request_len(h5, write);
    let offset = if write && h5.file_pattern == "interleaved" {
        // one compound dataset per timestep: each particle's eight fields side by side
        let record = H5_PROPERTIES * H5_ELEMENT;
        t * total * record + rank * h5.particles * record
    } else {
        let d = if write { d } else { H5_READ_ORDER[d as usize] };
        let dataset = (t * H5_PROPERTIES + d) * total * H5_ELEMENT;
        if h5_strided(h5, write) {
            // BLOCK_CNT blocks of BLOCK_SIZE particles, STRIDE_SIZE apart, from the rank's offset;
            // independent MPI-IO sends each block as its own system call
            dataset + (rank * h5.particles + b * h5.stride) * H5_ELEMENT
        } else {
            // a partial read takes the first TO_READ_NUM_PARTICLES of the rank's slab: h5bench_read
            // starts each rank at the prefix sum of the particles per rank (its FILE_OFFSET), not
            // of TO_READ
            dataset + rank * h5.particles * H5_ELEMENT
        }
    };
    let opens = !write && rank != 0 && b == 0;
    Some(Request {
        kind: if write { OpKind::Write } else { OpKind::Read },
        file_slot: 0,
        offset,
        len,
        fsync_after: false,
        reopen: prog.step == 1,
        start_at,
        between: if opens { AFTER_RANK0_OPENS } else { &[] },
    })
}

/// The timestep (0-based) an h5bench rank has just finished, if its request number
/// `requests` (1-based: the count of requests made, the last of which just ended) was the last
/// of one.
pub fn h5_timestep_done(role: Role, job: &JobConfig, requests: u64) -> Option<u64> {
    let Role::H5 { write, .. } = role else { return None };
    let h5 = job.h5bench.as_ref().expect("checked in config");
    let (datasets, blocks) = h5_shape(h5, write);
    let per_step = datasets * blocks;
    (requests > 0 && requests.is_multiple_of(per_step)).then(|| requests / per_step - 1)
}

/// Whether an h5bench job writes (VPIC-IO) rather than reads (BDCATS-IO).
pub fn h5_writes(job: &JobConfig) -> bool {
    job.workload == "h5bench.vpic"
}

/// Bytes an h5bench job's ranks write or read together per timestep: h5bench's
/// `local_data_size` per timestep times the ranks.
pub fn h5_timestep_bytes(job: &JobConfig) -> u64 {
    let h5 = job.h5bench.as_ref().expect("checked in config");
    let write = h5_writes(job);
    let (datasets, blocks) = h5_shape(h5, write);
    datasets * blocks * h5_request_len(h5, write) * h5.processes as u64
}

/// The dataset (counted over all timesteps, in the order they are read) that a BDCATS-IO rank
/// opens with its request number `step` (0-based), or None for a VPIC-IO rank and for a
/// request that goes on in a dataset already open (the second and later blocks of a strided
/// read).
pub fn h5_read_opens(role: Role, job: &JobConfig, step: u64) -> Option<u64> {
    let Role::H5 { write: false, .. } = role else { return None };
    let h5 = job.h5bench.as_ref().expect("checked in config");
    let (_, blocks) = h5_shape(h5, false);
    step.is_multiple_of(blocks).then_some(step / blocks)
}

/// Training steps of a DLIO loader that have ended by `now`: its steps run back to back and the
/// last of them ends at `compute_end`, so those still running or waiting are the ones that end
/// after `now`.
pub fn dlio_steps_done(job: &JobConfig, prog: &Progress, now: u64) -> u64 {
    let computation = job.dlio.as_ref().expect("checked in config").computation_ns;
    let unfinished = match prog.compute_end.checked_sub(now) {
        Some(left) if left > 0 => left.div_ceil(computation.max(1)),
        _ => 0,
    };
    prog.steps_scheduled.saturating_sub(unfinished)
}

/// True for the DLIO formats read as whole files in order (records are shuffled in memory);
/// the others are read sample by sample at shuffled offsets.
pub fn dlio_sequential(format: &str) -> bool {
    matches!(format, "tfrecord" | "npz")
}

/// A shuffle of 0..n that needs no table: a keyed permutation (a four-round Feistel network
/// over the smallest even number of bits that holds n, cycle-walked back into 0..n), keyed by
/// (seed, epoch). Neighbouring positions land at unrelated places, as in DLIO's seeded shuffles
/// (numpy permutations). An affine map (a*i + c) mod n, used before, gave every loader a
/// constant stride and, for some seeds, neighbouring loaders neighbouring samples: 2 KiB samples
/// shared their pages and a quarter of the reads hit the page cache.
fn shuffle(i: u64, n: u64, seed: u64, epoch: u64) -> u64 {
    if n <= 1 {
        return 0;
    }
    let mut h = crate::rng::Rng::new(seed ^ epoch.wrapping_mul(0x9e37_79b9_7f4a_7c15));
    let keys = [h.next_u64(), h.next_u64(), h.next_u64(), h.next_u64()];
    let bits = 64 - (n - 1).leading_zeros(); // n - 1 < 2^bits
    let half = bits.div_ceil(2);
    let mask = (1u64 << half) - 1;
    // i < n <= 2^(2 half) < 4n: each walk step leaves the range with probability < 3/4
    let mut x = i;
    loop {
        let (mut left, mut right) = (x >> half, x & mask);
        for key in keys {
            let mut round = crate::rng::Rng::new(right ^ key);
            (left, right) = (right, left ^ (round.next_u64() & mask));
        }
        x = (left << half) | right;
        if x < n {
            return x;
        }
    }
}

/// Next request of a DLIO loader thread, or None when this worker has nothing to read (fewer
/// files than workers with a whole-file format).
///
/// Files (sequential formats) or samples (random formats) of each epoch are shuffled and dealt
/// round-robin to the `workers` loader threads of all ranks. Every `batch_size * sample_size /
/// read_threads` bytes make one batch; the training step of a batch starts when the batch is
/// read and the previous step has ended, and lasts `computation_ns`. A loader runs ahead of
/// training by at most `prefetch` batches, then waits for the next step to start.
pub fn next_dlio(role: Role, job: &JobConfig, prog: &mut Progress, now: u64, seed: u64) -> Option<Request> {
    let Role::Dlio { worker, workers } = role else { unreachable!() };
    let dl = job.dlio.as_ref().expect("checked in config");
    let (w, n_workers) = (worker as u64, workers as u64);
    // training steps of batches completed by the previous read
    let batch = (dl.batch_size.saturating_mul(dl.sample_size) / dl.read_threads as u64).max(1);
    let batches = prog.batch_bytes / batch;
    if batches > 0 {
        // step i starts when batch i is read and step i - 1 has ended: the first at
        // max(compute_end, now), the others back to back
        prog.batch_bytes -= batches * batch;
        let first = prog.compute_end.max(now);
        prog.compute_end = first.saturating_add(batches.saturating_mul(dl.computation_ns));
        prog.steps_scheduled += batches;
        prog.queue.push(first, batches);
    }
    prog.queue.pop_started(now, dl.computation_ns);
    let start_at = match prog.queue.first() {
        Some(first) if prog.queue.len() >= u64::from(dl.prefetch.max(1)) => first,
        _ => now,
    };

    let file_size = dl.samples_per_file * dl.sample_size;
    let seed = job_key(seed, job);
    let (file, offset, len, reopen);
    if dlio_sequential(&dl.format) {
        let mine = dl.files / n_workers + u64::from(w < dl.files % n_workers);
        if mine == 0 {
            return None;
        }
        if prog.offset >= file_size {
            prog.offset = 0;
            prog.step += 1;
        }
        if prog.step >= mine {
            prog.step = 0;
            prog.epoch += 1;
        }
        file = shuffle(w + prog.step * n_workers, dl.files, seed, prog.epoch);
        offset = prog.offset;
        len = dl.transfer_size.min(file_size - offset);
        reopen = offset == 0;
        prog.offset += len;
    } else {
        let samples = dl.files * dl.samples_per_file;
        let mine = samples / n_workers + u64::from(w < samples % n_workers);
        if mine == 0 {
            return None;
        }
        if prog.offset >= dl.sample_size {
            prog.offset = 0;
            prog.step += 1;
        }
        if prog.step >= mine {
            prog.step = 0;
            prog.epoch += 1;
        }
        let sample = shuffle(w + prog.step * n_workers, samples, seed, prog.epoch);
        file = sample / dl.samples_per_file;
        offset = (sample % dl.samples_per_file) * dl.sample_size + prog.offset;
        len = dl.transfer_size.min(dl.sample_size - prog.offset);
        // the loader opens (maps) the files once per epoch
        reopen = prog.step == 0 && prog.offset == 0;
        prog.offset += len;
    }
    prog.batch_bytes += len;
    Some(Request {
        kind: OpKind::Read,
        file_slot: file as usize,
        offset,
        len,
        fsync_after: false,
        reopen,
        start_at,
        between: &[],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{DlioConfig, IorConfig};

    fn job(workload: &str, h5bench: Option<H5Config>, dlio: Option<DlioConfig>) -> JobConfig {
        JobConfig {
            name: "j".into(),
            clients: vec![0],
            workload: workload.into(),
            threads: 1,
            iosize: 0,
            filesize: 0,
            stripe_count: 1,
            stripe_size: 1 << 20,
            start_ns: 0,
            stop_ns: u64::MAX,
            fsync: false,
            cached: false,
            ior: None,
            h5bench,
            dlio,
        }
    }

    fn ior_job(clients: usize, file_per_process: bool, reorder_tasks: bool) -> JobConfig {
        let ior = IorConfig {
            api: "POSIX".into(),
            processes: 4,
            transfer: 1 << 20,
            block: 2 << 20,
            segments: 1,
            file_per_process,
            random: false,
            fsync: false,
            reorder_tasks,
        };
        JobConfig { clients: (0..clients).collect(), ior: Some(ior), ..job("ior", None, None) }
    }

    /// (kind, file slot, offset) of every request of IOR rank 1 of 4: two writes, then two reads.
    fn ior_requests(job: &JobConfig) -> Vec<(OpKind, usize, u64)> {
        let (mut pos, mut phase) = (0, 0);
        let role = Role::Ior { rank: 1, nproc: 4 };
        (0..4).map(|_| next_ior(role, job, &mut pos, &mut phase, 1)).map(|r| (r.kind, r.file_slot, r.offset)).collect()
    }

    /// Offsets of one phase of IOR rank `rank` of 4 (`write`: the first phase, else the second).
    fn ior_phase(job: &JobConfig, rank: u32, write: bool, seed: u64) -> Vec<u64> {
        let ior = job.ior.as_ref().unwrap();
        let n = ior.block / ior.transfer * ior.segments;
        let (mut pos, mut phase) = (0, 0);
        let role = Role::Ior { rank, nproc: 4 };
        let mut reqs: Vec<Request> = (0..2 * n).map(|_| next_ior(role, job, &mut pos, &mut phase, seed)).collect();
        let reqs = if write { reqs.drain(..n as usize).collect::<Vec<_>>() } else { reqs.split_off(n as usize) };
        assert!(reqs.iter().all(|r| r.kind == if write { OpKind::Write } else { OpKind::Read }));
        reqs.iter().map(|r| r.offset).collect()
    }

    #[test]
    fn ior_random_does_every_transfer_of_a_phase_once() {
        const MIB: u64 = 1 << 20;
        // 1 MiB transfers, 8 MiB blocks, 2 segments, 4 ranks: 32 transfers per segment, 64 in all
        let mut j = ior_job(2, false, false);
        let ior = j.ior.as_mut().unwrap();
        (ior.block, ior.segments, ior.random) = (8 * MIB, 2, true);
        let mut all: Vec<u64> = (0..4).flat_map(|rank| ior_phase(&j, rank, true, 5)).collect();
        all.sort_unstable();
        // IOR's GetOffsetArrayRandom(): a permutation of the shared file's transfers, not draws
        // with replacement (which leave about 37% of them unwritten)
        assert_eq!(all, (0..64).map(|i| i * MIB).collect::<Vec<_>>());
        let rank1 = ior_phase(&j, 1, true, 5);
        // dealt from the whole segment, not from the rank's own block; the same order in each
        assert!(rank1[..8].iter().any(|&o| !(8 * MIB..16 * MIB).contains(&o)), "{rank1:?}");
        assert!(rank1[..8].iter().all(|&o| o < 32 * MIB));
        assert_eq!(rank1[8..], rank1[..8].iter().map(|o| o + 32 * MIB).collect::<Vec<_>>());
        // reads go over the same transfers (IOR keeps its seed for the test); a seed gives one order
        assert_eq!(ior_phase(&j, 1, false, 5), rank1);
        assert_ne!(ior_phase(&j, 1, true, 6), rank1);
        // with -C a rank reads back the transfers of the rank it reads for
        let mut c = j.clone();
        c.ior.as_mut().unwrap().reorder_tasks = true;
        assert_eq!(ior_phase(&c, 1, false, 5), ior_phase(&j, 2, true, 5));

        // a file per process: each rank's own transfers, every one once, in a shuffled order
        j.ior.as_mut().unwrap().file_per_process = true;
        let mut own = ior_phase(&j, 3, true, 5);
        assert_ne!(own, (0..16).map(|i| i * MIB).collect::<Vec<_>>(), "shuffled");
        own.sort_unstable();
        assert_eq!(own, (0..16).map(|i| i * MIB).collect::<Vec<_>>());
    }

    #[test]
    fn sequential_writes_grow_the_file_and_sequential_reads_wrap_at_its_end() {
        const MIB: u64 = 1 << 20;
        let j = JobConfig { iosize: MIB, filesize: 4 * MIB, ..job("filebench.seqrw", None, None) };
        let (mut pos, mut phase, mut rng) = (0, 0, Rng::new(1));
        // a write flowop without `random` writes at the descriptor's offset and never seeks back
        let writes: Vec<(u64, u64)> = (0..6)
            .map(|_| next_filebench(Role::SeqWrite, &j, &mut pos, &mut phase, &mut rng, 4 * MIB))
            .map(|r| (r.offset, r.len))
            .collect();
        assert_eq!(writes, (0..6).map(|i| (i * MIB, MIB)).collect::<Vec<_>>());
        // a reader goes back to 0 at the end of the file, where the writer has got to
        let mut read = |eof| {
            let (mut pos, mut phase) = (0, 0);
            (0..7).map(|_| next_filebench(Role::SeqRead, &j, &mut pos, &mut phase, &mut rng, eof).offset / MIB).collect::<Vec<_>>()
        };
        assert_eq!(read(6 * MIB), [0, 1, 2, 3, 4, 5, 0]);
        assert_eq!(read(4 * MIB), [0, 1, 2, 3, 0, 1, 2]);
    }

    #[test]
    fn ior_reads_back_its_own_data_unless_tasks_are_reordered() {
        const MIB: u64 = 1 << 20;
        let (w, r) = (OpKind::Write, OpKind::Read);
        // shared file: rank 1's block is the second; with -C it reads rank 2's, the third
        assert_eq!(ior_requests(&ior_job(2, false, false)), [(w, 0, 2 * MIB), (w, 0, 3 * MIB), (r, 0, 2 * MIB), (r, 0, 3 * MIB)]);
        assert_eq!(ior_requests(&ior_job(2, false, true)), [(w, 0, 2 * MIB), (w, 0, 3 * MIB), (r, 0, 4 * MIB), (r, 0, 5 * MIB)]);
        // a file per process: with -C the reads go to the thread's second file, rank 2's
        assert_eq!(ior_requests(&ior_job(2, true, true)), [(w, 0, 0), (w, 0, MIB), (r, 1, 0), (r, 1, MIB)]);
        // on one client there is no other client to read from
        assert_eq!(ior_requests(&ior_job(1, false, true)), ior_requests(&ior_job(1, false, false)));
    }

    fn h5(file_pattern: &str, read_option: &str) -> H5Config {
        H5Config {
            processes: 2,
            particles: 1000,
            timesteps: 2,
            compute_ns: 5,
            file_pattern: file_pattern.into(),
            read_option: read_option.into(),
            to_read: 100,
            stride: 64,
            block: 16,
            block_cnt: 3,
        }
    }

    #[test]
    fn vpic_writes_each_ranks_slab_of_every_dataset_then_computes() {
        let j = job("h5bench.vpic", Some(h5("contig", "full")), None);
        let role = Role::H5 { rank: 1, nproc: 2, write: true };
        let mut prog = Progress::default();
        let reqs: Vec<Request> = std::iter::from_fn(|| next_h5(role, &j, &mut prog, 100)).collect();
        assert_eq!(reqs.len(), 16, "8 datasets x 2 timesteps, then the kernel ends");
        let dataset = 2 * 1000 * 4; // both ranks' particles, 4 bytes each
        for (i, r) in reqs.iter().enumerate() {
            assert_eq!((r.kind, r.offset, r.len), (OpKind::Write, i as u64 * dataset + 4000, 4000));
            // the compute time comes between timesteps, not before the first
            assert_eq!(r.start_at, if i == 8 { 105 } else { 100 }, "request {i}");
            assert_eq!(r.reopen, i == 0);
        }
    }

    #[test]
    fn vpic_interleaved_writes_one_compound_record_array_per_timestep() {
        let j = job("h5bench.vpic", Some(h5("interleaved", "full")), None);
        let mut prog = Progress::default();
        let role = Role::H5 { rank: 1, nproc: 2, write: true };
        let reqs: Vec<Request> = std::iter::from_fn(|| next_h5(role, &j, &mut prog, 0)).collect();
        let got: Vec<(u64, u64)> = reqs.iter().map(|r| (r.offset, r.len)).collect();
        assert_eq!(got, vec![(32_000, 32_000), (96_000, 32_000)]);
    }

    #[test]
    fn bdcats_partial_and_strided_reads() {
        let role = Role::H5 { rank: 1, nproc: 2, write: false };
        let j = job("h5bench.bdcats", Some(h5("contig", "partial")), None);
        let mut prog = Progress::default();
        let reqs: Vec<Request> = std::iter::from_fn(|| next_h5(role, &j, &mut prog, 0)).collect();
        // the first 100 particles of rank 1's slab (h5bench_read's FILE_OFFSET: the prefix sum of
        // the particles per rank), not of the other ranks' 100
        assert_eq!((reqs[0].kind, reqs[0].offset, reqs[0].len), (OpKind::Read, 4000, 400));
        assert_eq!((reqs[1].offset, reqs[1].len), (8000 + 4000, 400));

        let j = job("h5bench.bdcats", Some(h5("contig", "strided")), None);
        let mut prog = Progress::default();
        let reqs: Vec<Request> = std::iter::from_fn(|| next_h5(role, &j, &mut prog, 0)).collect();
        assert_eq!(reqs.len(), 2 * 8 * 3);
        let got: Vec<(u64, u64)> = reqs[..4].iter().map(|r| (r.offset, r.len)).collect();
        // blocks of 16 particles every 64 from the rank's offset (1000), then the next dataset
        assert_eq!(got, vec![(4000, 64), (4256, 64), (4512, 64), (8000 + 4000, 64)]);
    }

    #[test]
    fn bdcats_ranks_wait_for_rank_0_to_open_each_dataset() {
        // strided: three blocks per dataset, each its own request; only the first opens it
        let j = job("h5bench.bdcats", Some(h5("contig", "strided")), None);
        for rank in 0..2 {
            let role = Role::H5 { rank, nproc: 2, write: false };
            let mut prog = Progress::default();
            let reqs: Vec<Request> = std::iter::from_fn(|| next_h5(role, &j, &mut prog, 0)).collect();
            for (i, r) in reqs.iter().enumerate() {
                let opens = (i % 3 == 0).then_some(i as u64 / 3);
                assert_eq!(h5_read_opens(role, &j, i as u64), opens, "rank {rank}, request {i}");
                let waits = rank != 0 && opens.is_some();
                assert_eq!(r.between, if waits { AFTER_RANK0_OPENS } else { &[] }, "rank {rank}, request {i}");
            }
        }
        // VPIC-IO's ranks wait for nobody
        let j = job("h5bench.vpic", Some(h5("contig", "full")), None);
        let role = Role::H5 { rank: 1, nproc: 2, write: true };
        let mut prog = Progress::default();
        assert!(std::iter::from_fn(|| next_h5(role, &j, &mut prog, 0)).all(|r| r.between.is_empty()));
        assert_eq!(h5_read_opens(role, &j, 0), None);
    }

    #[test]
    fn bdcats_reads_the_datasets_in_h5bench_read_order() {
        // read_h5_data(): x, y, z, id_1, id_2, px, py, pz; VPIC-IO created them x, y, z, px, py,
        // pz, id_1, id_2, so in the file the reads go 0, 1, 2, 6, 7, 3, 4, 5
        let dataset = 2 * 1000 * 4;
        for option in ["full", "partial", "strided"] {
            let j = job("h5bench.bdcats", Some(h5("contig", option)), None);
            let role = Role::H5 { rank: 0, nproc: 2, write: false };
            let mut prog = Progress::default();
            let reqs: Vec<Request> = std::iter::from_fn(|| next_h5(role, &j, &mut prog, 0)).collect();
            let blocks = if option == "strided" { 3 } else { 1 };
            let order: Vec<u64> = reqs.iter().step_by(blocks).map(|r| r.offset / dataset).collect();
            assert_eq!(order, [0, 1, 2, 6, 7, 3, 4, 5, 8, 9, 10, 14, 15, 11, 12, 13], "{option}");
        }
        // VPIC-IO writes them in file order
        let j = job("h5bench.vpic", Some(h5("contig", "full")), None);
        let (role, mut prog) = (Role::H5 { rank: 0, nproc: 2, write: true }, Progress::default());
        let order: Vec<u64> = std::iter::from_fn(|| next_h5(role, &j, &mut prog, 0)).map(|r| r.offset / dataset).collect();
        assert_eq!(order, (0..16).collect::<Vec<_>>());
    }

    fn dlio(format: &str, computation_ns: u64) -> DlioConfig {
        DlioConfig {
            format: format.into(),
            files: 5,
            samples_per_file: 4,
            sample_size: 1000,
            transfer_size: 500,
            read_threads: 1,
            batch_size: 2,
            computation_ns,
            prefetch: 2,
        }
    }

    #[test]
    fn dlio_whole_file_formats_read_every_file_once_per_epoch() {
        let j = job("dlio", None, Some(dlio("tfrecord", 0)));
        let mut seen = Vec::new();
        for worker in 0..2 {
            let role = Role::Dlio { worker, workers: 2 };
            let mut prog = Progress::default();
            // 4000-byte files in 500-byte reads
            let files = if worker == 0 { 3 } else { 2 };
            for k in 0..files * 8 {
                let r = next_dlio(role, &j, &mut prog, 0, 1).unwrap();
                assert_eq!((r.offset, r.len, r.reopen), ((k % 8) * 500, 500, k % 8 == 0));
                if k % 8 == 0 {
                    seen.push(r.file_slot);
                }
            }
            assert_eq!(prog.epoch, 0);
            next_dlio(role, &j, &mut prog, 0, 1).unwrap();
            assert_eq!(prog.epoch, 1, "worker {worker} starts its second epoch");
        }
        seen.sort_unstable();
        assert_eq!(seen, vec![0, 1, 2, 3, 4]);
    }

    #[test]
    fn dlio_random_formats_read_samples_and_wait_for_training() {
        let j = job("dlio", None, Some(dlio("indexed_binary", 1_000)));
        let role = Role::Dlio { worker: 0, workers: 1 };
        let mut prog = Progress::default();
        let mut starts = Vec::new();
        let mut samples = Vec::new();
        let mut now = 0;
        for _ in 0..13 {
            let r = next_dlio(role, &j, &mut prog, now, 7).unwrap();
            now = r.start_at + 10; // each read takes 10 ns
            starts.push(r.start_at);
            if r.offset.is_multiple_of(1000) {
                samples.push(r.file_slot as u64 * 4 + r.offset / 1000);
            }
        }
        // a batch is 2000 bytes (4 reads); training steps last 1000 ns. Batch 1 trains from
        // 40 to 1040; batches 2 and 3 wait ready in the loader's queue (prefetch 2), so the
        // first read of batch 4 waits for batch 2's step to start at 1040
        let expected: Vec<u64> = (0..12).map(|i| i * 10).chain([1040]).collect();
        assert_eq!(starts, expected);
        samples.sort_unstable();
        samples.dedup();
        assert_eq!(samples.len(), 7, "13 half-sample reads cover 7 distinct samples");
    }

    #[test]
    fn dlio_steps_end_one_after_another() {
        // the same loader as above: batch 1 (reads 0-3) trains from 40 to 1040, batch 2 (reads
        // 4-7, ready at 80) from 1040 to 2040, batch 3 (ready at 120) from 2040 to 3040
        let j = job("dlio", None, Some(dlio("indexed_binary", 1_000)));
        let role = Role::Dlio { worker: 0, workers: 1 };
        let mut prog = Progress::default();
        let mut now = 0;
        for _ in 0..13 {
            now = next_dlio(role, &j, &mut prog, now, 7).unwrap().start_at + 10;
        }
        assert_eq!((prog.steps_scheduled, prog.compute_end), (3, 3_040));
        let done = |t| dlio_steps_done(&j, &prog, t);
        assert_eq!([done(39), done(1_039), done(1_040), done(2_500), done(3_040), done(9_999)], [0, 0, 1, 2, 3, 3]);
        // without compute time a step ends as its batch is read
        let j = job("dlio", None, Some(dlio("indexed_binary", 0)));
        let mut prog = Progress::default();
        for t in 0..13 {
            next_dlio(role, &j, &mut prog, t * 10, 7).unwrap();
        }
        assert_eq!(dlio_steps_done(&j, &prog, 120), prog.steps_scheduled);
        assert_eq!(prog.steps_scheduled, 3);
    }

    #[test]
    fn one_read_of_many_batches_queues_their_steps_as_one_run() {
        // 1-byte samples read 64 MiB at a time: one read completes 64 Mi batches. Queued one
        // entry per step, that took 30 s and 1.2 GB for a second of simulated time.
        let mut dl = dlio("tfrecord", 1_000);
        (dl.files, dl.samples_per_file, dl.sample_size, dl.transfer_size, dl.batch_size) = (1, 64 << 20, 1, 64 << 20, 1);
        let j = job("dlio", None, Some(dl));
        let role = Role::Dlio { worker: 0, workers: 1 };
        let mut prog = Progress::default();
        next_dlio(role, &j, &mut prog, 0, 1).unwrap();
        let second = next_dlio(role, &j, &mut prog, 5, 1).unwrap();
        assert_eq!(prog.queue.runs.len(), 1);
        // step 0 started at 5; 64 Mi - 1 steps wait, a step every 1000 ns: the loader waits
        // for the next one
        assert_eq!(prog.queue.len(), (64 << 20) - 1);
        assert_eq!(second.start_at, 1_005);
        assert_eq!(prog.compute_end, 5 + (64 << 20) * 1_000);
        prog.queue.pop_started(5 + 10 * 1_000, 1_000);
        assert_eq!((prog.queue.len(), prog.queue.first()), ((64 << 20) - 11, Some(11_005)));
    }

    #[test]
    fn training_steps_of_any_length_do_not_overflow_the_clock() {
        // 1000 h a step and thousands of steps per read: the clock saturates instead of wrapping
        let mut dl = dlio("tfrecord", 3_600_000_000_000_000);
        (dl.sample_size, dl.transfer_size, dl.batch_size, dl.samples_per_file) = (1, 8192, 1, 8192);
        let j = job("dlio", None, Some(dl));
        let role = Role::Dlio { worker: 0, workers: 1 };
        let mut prog = Progress::default();
        next_dlio(role, &j, &mut prog, 0, 1).unwrap();
        let r = next_dlio(role, &j, &mut prog, 1, 1).unwrap();
        assert_eq!(prog.compute_end, u64::MAX);
        assert_eq!(r.start_at, 1 + 3_600_000_000_000_000, "the next read waits for step 1 to start");
    }

    #[test]
    fn shuffle_is_a_permutation() {
        for n in [1u64, 2, 7, 12, 500] {
            let mut seen: Vec<u64> = (0..n).map(|i| shuffle(i, n, 42, 3)).collect();
            seen.sort_unstable();
            assert_eq!(seen, (0..n).collect::<Vec<_>>(), "n = {n}");
        }
        // another epoch, another order
        let a: Vec<u64> = (0..500).map(|i| shuffle(i, 500, 42, 0)).collect();
        let b: Vec<u64> = (0..500).map(|i| shuffle(i, 500, 42, 1)).collect();
        assert_ne!(a, b);
    }

    #[test]
    fn shuffle_has_no_stride() {
        // Megatron's sample count, 20 loaders: neither one loader's successive samples nor two
        // neighbouring loaders' samples may keep a constant distance (an affine shuffle did)
        let n = 277_203_535u64;
        for seed in 1..=5u64 {
            let s = |i: u64| shuffle(i, n, seed, 0) as i128;
            let steps: Vec<i128> = (0..50u64).map(|k| s(20 * (k + 1)) - s(20 * k)).collect();
            assert!(steps.windows(2).all(|w| w[0] != w[1]), "seed {seed}: constant stride");
            let near = (0..1000u64).filter(|&k| (s(k + 1) - s(k)).abs() <= 1).count();
            assert_eq!(near, 0, "seed {seed}: neighbouring positions on neighbouring samples");
        }
        // the full range, to 2^62: stays a permutation's image
        assert!(shuffle((1 << 62) - 1, 1 << 62, 7, 0) < 1 << 62);
        assert!(shuffle(5, (1 << 62) + 3, 7, 0) < (1 << 62) + 3);
    }
}

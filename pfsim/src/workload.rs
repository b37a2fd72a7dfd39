//! Workload generators: what each application thread asks of the file system next.
//!
//! Filebench personalities follow the `.f` files IOPathTune and DIAL used (one file per stream,
//! offsets aligned to the I/O size for random access); `ior` follows IOR's segment/block/transfer
//! layout for shared files and file-per-process.

use crate::config::JobConfig;
use crate::model::OpKind;
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
}

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
            "ior" => {
                // handled by the caller: one thread per process
                return Err("ior".into());
            }
            w => return Err(format!("job {}: unsupported workload {w}", job.name)),
        }
    }
    Ok(out)
}

/// Next request of a filebench-style thread. `pos` is the thread's cursor, `phase` its loop state.
pub fn next_filebench(role: Role, job: &JobConfig, pos: &mut u64, phase: &mut u32, rng: &mut Rng) -> Request {
    let io = job.iosize;
    let size = job.filesize;
    let slots = (size / io).max(1);
    let seq = |pos: &mut u64| {
        if *pos + io > size {
            *pos = 0;
        }
        let off = *pos;
        *pos += io;
        off
    };
    let (kind, offset, reopen) = match role {
        Role::SeqRead => (OpKind::Read, seq(pos), false),
        Role::SeqWrite => (OpKind::Write, seq(pos), false),
        Role::RandRead => (OpKind::Read, rng.below(slots) * io, false),
        Role::RandWrite => (OpKind::Write, rng.below(slots) * io, false),
        Role::WholeRead => {
            let reopen = *pos == 0 || *pos + io > size;
            (OpKind::Read, seq(pos), reopen)
        }
        Role::WholeWrite => {
            let reopen = *pos == 0 || *pos + io > size;
            (OpKind::Write, seq(pos), reopen)
        }
        Role::WholeRw => {
            let wrapped = *pos + io > size;
            if wrapped {
                *phase ^= 1;
            }
            let reopen = *pos == 0 || wrapped;
            let off = seq(pos);
            (if *phase == 0 { OpKind::Write } else { OpKind::Read }, off, reopen)
        }
        Role::Ior { .. } => unreachable!("ior threads use next_ior"),
    };
    Request { kind, file_slot: 0, offset, len: io.min(size - offset), fsync_after: job.fsync, reopen }
}

/// Next request of IOR process `rank`: a write phase over every segment, then a read phase.
pub fn next_ior(role: Role, job: &JobConfig, pos: &mut u64, phase: &mut u32, rng: &mut Rng) -> Request {
    let Role::Ior { rank, nproc } = role else { unreachable!() };
    let ior = job.ior.as_ref().expect("checked in config");
    let per_block = (ior.block / ior.transfer).max(1);
    let total = per_block * ior.segments.max(1);
    if *pos >= total {
        *pos = 0;
        *phase ^= 1;
    }
    let i = if ior.random { rng.below(total) } else { *pos };
    *pos += 1;
    let (seg, k) = (i / per_block, i % per_block);
    let offset = if ior.file_per_process {
        seg * ior.block + k * ior.transfer
    } else {
        (seg * nproc as u64 + rank as u64) * ior.block + k * ior.transfer
    };
    let last_of_phase = *pos >= total;
    Request {
        kind: if *phase == 0 { OpKind::Write } else { OpKind::Read },
        file_slot: 0,
        offset,
        len: ior.transfer,
        fsync_after: *phase == 0 && last_of_phase && ior.fsync,
        reopen: *pos == 1,
    }
}

/// Size of the file an IOR job works on (per process or shared).
pub fn ior_file_size(job: &JobConfig, nproc: u32) -> u64 {
    let ior = job.ior.as_ref().expect("checked in config");
    let per = ior.block * ior.segments.max(1);
    if ior.file_per_process {
        per
    } else {
        per * nproc as u64
    }
}

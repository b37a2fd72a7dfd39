//! Network links and OST devices: the shared resources every RPC competes for.


/// A node's network link in one direction. LNet sends the bulk data between two peers over one
/// TCP connection, so transfers on a link are served in order (FIFO), each at the link's rate.
#[derive(Clone, Debug, Default)]
pub struct Link {
    pub free_at: u64,
    pub busy_ns: u64,
}

/// Reserve the sender's up-link and the receiver's down-link for `bytes` at the link rate; one
/// transfer alone moves no faster than `stream_bps`. Returns when the last byte has arrived
/// (latency not included).
pub fn transfer(up: &mut Link, down: &mut Link, now: u64, bytes: u64, bw_bps: f64, stream_bps: f64) -> u64 {
    let start = now.max(up.free_at).max(down.free_at);
    let dur = (bytes as f64 * 1e9 / bw_bps).ceil() as u64;
    let end = start + dur;
    up.free_at = end;
    down.free_at = end;
    up.busy_ns += dur;
    down.busy_ns += dur;
    end.max(now + (bytes as f64 * 1e9 / stream_bps).ceil() as u64)
}

/// A disk's mechanics: where its head is and what moving it costs.
///
/// A request that does not continue a recent one waits for the head: for a short way forward,
/// while the platter turns past the gap (at the media rate); otherwise for a seek over the
/// distance, `seek_ns · sqrt(distance / capacity)` (seek time grows with the square root of the
/// distance over most of the stroke), and half a revolution on average. `seek_ns` makes the mean
/// over two uniformly random places (E[sqrt|X - Y|] = 8/15) equal the random-access penalty, so
/// that parameter keeps its meaning: the mean time to reach a random block.
#[derive(Clone, Copy, Debug)]
pub struct Disk {
    pub capacity: u64,
    pub half_rev_ns: f64,
    pub seek_ns: f64,
    /// The byte after the last one served.
    pub head: u64,
}

impl Disk {
    pub fn new(capacity: u64, rpm: u32, penalty_ns: u64) -> Disk {
        let half_rev_ns = 30e9 / f64::from(rpm.max(1));
        let seek_ns = ((penalty_ns as f64 - half_rev_ns) * 15.0 / 8.0).max(0.0);
        Disk { capacity: capacity.max(1 << 20), half_rev_ns, seek_ns, head: 0 }
    }

    /// Time from the head's place to the start of a request at `lba`, at `ns_per_byte` media rate.
    pub fn position_ns(&self, lba: u64, ns_per_byte: f64) -> u64 {
        let distance = lba.abs_diff(self.head);
        let far = self.half_rev_ns + self.seek_ns * (distance as f64 / self.capacity as f64).min(1.0).sqrt();
        let t = if lba >= self.head { far.min(distance as f64 * ns_per_byte) } else { far };
        t.ceil() as u64
    }
}

/// An OST's block device as a set of independent channels (flash channels of an SSD, the one
/// actuator of a disk). Logical blocks are spread over the channels in `stripe` units, so a large
/// request uses many channels while small concurrent requests may collide on the same one.
/// Each channel serves its pieces in order; a request that does not continue a recent one pays
/// the random-access penalty on its first channel (an SSD's FTL map miss and lost internal
/// read-ahead), or on a disk the time to move its head there (`Disk`).
#[derive(Debug)]
pub struct Device {
    channels: Vec<u64>,
    stripe: u64,
    read_ns_per_byte: f64,
    write_ns_per_byte: f64,
    read_access_ns: u64,
    write_access_ns: u64,
    /// Service time of a whole stripe unit (read, write): most pieces are one, and `ceil` is a
    /// library call on baseline x86-64.
    unit_ns: [u64; 2],
    penalty_ns: u64,
    /// A disk's head and seek curve; None for an SSD, which pays `penalty_ns` wherever it goes.
    disk: Option<Disk>,
    recent_ends: [(u64, u64); 16],
    recent_pos: usize,
    pub busy_ns: u64,
}

impl Device {
    /// `read_bw`/`write_bw` are the whole device's bandwidths, bytes per second.
    pub fn new(channels: usize, stripe: u64, read_bw: f64, write_bw: f64, access: (u64, u64), penalty_ns: u64, disk: Option<Disk>) -> Device {
        let n = channels.max(1) as f64;
        let stripe = stripe.max(4096);
        let (read_ns_per_byte, write_ns_per_byte) = (1e9 * n / read_bw, 1e9 * n / write_bw);
        Device {
            channels: vec![0; channels.max(1)],
            stripe,
            read_ns_per_byte,
            write_ns_per_byte,
            read_access_ns: access.0,
            write_access_ns: access.1,
            unit_ns: [piece_ns(stripe, read_ns_per_byte), piece_ns(stripe, write_ns_per_byte)],
            penalty_ns,
            disk,
            recent_ends: [(u64::MAX, u64::MAX); 16],
            recent_pos: 0,
            busy_ns: 0,
        }
    }

    /// Where byte `start` of object `obj` lies on the device: objects sit at scattered places,
    /// so the object id is mixed into the block address.
    pub fn lba(&self, obj: u64, start: u64) -> u64 {
        let place = obj.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 20;
        match &self.disk {
            // on a disk, distance matters: objects start within its capacity
            Some(d) => (place % (d.capacity / self.stripe).max(1)) * self.stripe + start,
            // an SSD's addresses only pick channels; they stay below 2^62 so that an object's
            // bytes never wrap (`place` < 2^44, so stripes up to 256 KiB are never folded)
            None => (place % (SSD_ADDRESS_SPACE / self.stripe).max(1)) * self.stripe + start,
        }
    }

    /// The time a request waits between its issue and its first byte.
    pub fn access_ns(&self, write: bool) -> u64 {
        if write { self.write_access_ns } else { self.read_access_ns }
    }

    /// Queue a request for bytes [start, start + len) of object `obj`; returns when its last
    /// byte has been read or written.
    pub fn submit(&mut self, now: u64, obj: u64, start: u64, len: u64, write: bool) -> u64 {
        let sequential = self.recent_ends.iter().any(|&(o, e)| o == obj && e == start);
        self.recent_ends[self.recent_pos] = (obj, start + len);
        self.recent_pos = (self.recent_pos + 1) % self.recent_ends.len();
        let (per_byte, access) =
            if write { (self.write_ns_per_byte, self.write_access_ns) } else { (self.read_ns_per_byte, self.read_access_ns) };
        let lba = self.lba(obj, start);
        let n = self.channels.len() as u64;
        let unit_ns = self.unit_ns[usize::from(write)];
        let mut pos = lba;
        let end = lba + len.max(1);
        let mut done = now;
        let mut first = true;
        let mut unit = pos / self.stripe;
        while pos < end {
            let piece_end = (unit + 1) * self.stripe;
            let piece = piece_end.min(end) - pos;
            // the FTL places stripe units on channels in no simple order: hash the unit number,
            // so concurrent requests collide on channels at random, even sequential ones
            let ch = ((unit.wrapping_mul(0xff51_afd7_ed55_8ccd) >> 29) % n) as usize;
            let mut t = if piece == self.stripe { unit_ns } else { piece_ns(piece, per_byte) };
            if first && !sequential {
                t += match &self.disk {
                    Some(d) => d.position_ns(pos, per_byte),
                    None => self.penalty_ns,
                };
            }
            first = false;
            let begin = self.channels[ch].max(now + access);
            self.channels[ch] = begin + t;
            self.busy_ns += t;
            done = done.max(begin + t);
            pos += piece;
            unit += 1;
        }
        if let Some(d) = &mut self.disk {
            d.head = end;
        }
        done
    }
}

/// The bytes an SSD's block addresses span (see [`Device::lba`]).
const SSD_ADDRESS_SPACE: u64 = 1 << 62;

/// Service time of `bytes` at `ns_per_byte`, rounded up to whole nanoseconds.
fn piece_ns(bytes: u64, ns_per_byte: f64) -> u64 {
    (bytes as f64 * ns_per_byte).ceil() as u64
}

/// mq-deadline's defaults: `read_expire`, `write_expire`, `fifo_batch`, `writes_starved`.
const READ_EXPIRE_NS: u64 = 500_000_000;
const WRITE_EXPIRE_NS: u64 = 5_000_000_000;
const FIFO_BATCH: u32 = 16;
const WRITES_STARVED: u32 = 2;
/// The largest request merging builds: Lustre's `l_tunedisk` raises a disk's `max_sectors_kb`
/// to its hardware limit (32767 KiB for SATA), so merges stop at the largest 2.15 RPC, 16 MiB.
const MAX_MERGE_BYTES: u64 = 16 << 20;

/// A device request: bytes [start, start + len) of object `obj`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    pub obj: u64,
    pub start: u64,
    pub len: u64,
    pub write: bool,
}

/// One request waiting in the elevator: the RPC it serves and what it reads or writes.
#[derive(Clone, Copy, Debug)]
struct Pending {
    rpc: u32,
    obj: u64,
    start: u64,
    len: u64,
    write: bool,
    lba: u64,
    arrived: u64,
}

/// What the elevator sends to the device next: one request, perhaps several merged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dispatch {
    pub obj: u64,
    pub start: u64,
    pub len: u64,
    pub write: bool,
    /// When the request could have been issued: its first part's arrival, or the access time
    /// before now (the device then prepared it while finishing the previous one).
    pub issued: u64,
}

/// mq-deadline (Linux `block/mq-deadline.c`, `__dd_dispatch_request`; `ost_scheduler:
/// mq-deadline`) in front of a one-actuator device (a disk), one request on the device at a time. While the disk is
/// busy, requests wait here, sorted by block within each direction. When it frees:
///
/// * a batch goes on in its direction while fewer than `fifo_batch` (16) requests have been
///   dispatched in it and a request lies at or after the direction's position (a one-way
///   sweep);
/// * otherwise a new batch starts: reads, unless writes wait and have already let
///   `writes_starved` (2) read batches go first; then the oldest request of that direction if
///   it has waited past its deadline (reads 500 ms, writes 5 s) or nothing lies ahead, else the
///   next one ahead.
///
/// Waiting requests that continue the dispatched one on the disk, in the same direction, merge
/// into it (up to 16 MiB) and cost one access. Not modelled: I/O priorities, zoned devices, and
/// the disk's own command queue (NCQ).
#[derive(Debug, Default)]
pub struct Elevator {
    queue: Vec<Pending>,
    /// The RPCs whose data is on the device now (empty: the device is idle).
    serving: Vec<u32>,
    /// Per direction (read, write): the block after the last request dispatched in it.
    position: [u64; 2],
    /// The direction of the current batch (true: writes), and how many it has dispatched.
    batch_write: Option<bool>,
    batching: u32,
    /// Read batches started while writes were waiting.
    starved: u32,
}

impl Elevator {
    pub fn is_idle(&self) -> bool {
        self.serving.is_empty()
    }

    /// RPC `rpc` asks for `request` at `now`.
    pub fn push(&mut self, device: &Device, rpc: u32, request: Request, now: u64) {
        let Request { obj, start, len, write } = request;
        let lba = device.lba(obj, start);
        self.queue.push(Pending { rpc, obj, start, len, write, lba, arrived: now });
    }

    /// The first waiting request of direction `write` at or after its position.
    fn ahead(&self, write: bool) -> Option<usize> {
        let at = self.position[usize::from(write)];
        let waiting = self.queue.iter().enumerate().filter(|(_, p)| p.write == write && p.lba >= at);
        waiting.min_by_key(|(i, p)| (p.lba, *i)).map(|(i, _)| i)
    }

    /// The oldest waiting request of direction `write` (the head of mq-deadline's FIFO).
    fn oldest(&self, write: bool) -> Option<usize> {
        let waiting = self.queue.iter().enumerate().filter(|(_, p)| p.write == write);
        waiting.min_by_key(|(i, p)| (p.arrived, *i)).map(|(i, _)| i)
    }

    /// The next request for the device, its RPCs now being served; None if nothing waits.
    pub fn dispatch(&mut self, device: &Device, now: u64) -> Option<Dispatch> {
        debug_assert!(self.serving.is_empty(), "one request on the device at a time");
        // The queue holds at most the OSS's service threads' requests: scans are cheap.
        let going_on = match self.batch_write {
            Some(write) if self.batching < FIFO_BATCH => self.ahead(write),
            _ => None,
        };
        let first = match going_on {
            Some(i) => {
                self.batching += 1;
                i
            }
            None => {
                let reads = self.queue.iter().any(|p| !p.write);
                let writes = self.queue.iter().any(|p| p.write);
                let write = if reads && !(writes && self.starved >= WRITES_STARVED) {
                    self.starved += u32::from(writes);
                    false
                } else if writes {
                    self.starved = 0;
                    true
                } else {
                    return None;
                };
                let oldest = self.oldest(write).expect("a request of that direction waits");
                let expire = if write { WRITE_EXPIRE_NS } else { READ_EXPIRE_NS };
                let expired = now.saturating_sub(self.queue[oldest].arrived) >= expire;
                self.batch_write = Some(write);
                self.batching = 1;
                if expired { oldest } else { self.ahead(write).unwrap_or(oldest) }
            }
        };
        let lead = self.queue.swap_remove(first);
        let (mut len, mut arrived) = (lead.len, lead.arrived);
        self.serving.push(lead.rpc);
        while let Some(next) = self.queue.iter().position(|p| {
            p.obj == lead.obj && p.write == lead.write && p.start == lead.start + len && len + p.len <= MAX_MERGE_BYTES
        }) {
            let part = self.queue.swap_remove(next);
            len += part.len;
            arrived = arrived.min(part.arrived);
            self.serving.push(part.rpc);
        }
        self.position[usize::from(lead.write)] = lead.lba + len;
        let issued = arrived.max(now.saturating_sub(device.access_ns(lead.write)));
        Some(Dispatch { obj: lead.obj, start: lead.start, len, write: lead.write, issued })
    }

    /// The device finished the request it was given: its RPCs, in dispatch order.
    pub fn finish(&mut self) -> Vec<u32> {
        std::mem::take(&mut self.serving)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MB: u64 = 1 << 20;

    fn disk() -> Device {
        Device::new(1, MB, 100e6, 100e6, (200_000, 200_000), 8_000_000, None)
    }

    fn req(obj: u64, start: u64, len: u64, write: bool) -> Request {
        Request { obj, start, len, write }
    }

    /// Dispatch everything at `now`: the RPCs of each device request, in order.
    fn order(elevator: &mut Elevator, device: &Device, now: u64) -> Vec<Vec<u32>> {
        let mut out = Vec::new();
        while elevator.dispatch(device, now).is_some() {
            out.push(elevator.finish());
        }
        out
    }

    #[test]
    fn an_ssd_with_large_stripe_units_serves_every_object_without_wrapping() {
        // 64 MiB units: before the address space was bounded, `place * stripe` overflowed
        // (a panic in debug builds; in release a wrapped request could take no time at all)
        let mut ssd = Device::new(8, 64 * MB, 500e6, 300e6, (20_000, 20_000), 400_000, None);
        let mut now = 0;
        for obj in [1, 7, 0x1234_5678, u64::MAX / 3, u64::MAX] {
            let lba = ssd.lba(obj, 0);
            assert!(lba.checked_add(1 << 62).is_some(), "object {obj}: address {lba}");
            let done = ssd.submit(now, obj, 0, 4 * MB, true);
            assert!(done >= now + 20_000 + 4 * MB * 3, "object {obj}: {done} after {now}"); // 3.3 ns a byte
            now = done;
        }
        // stripe units up to 256 KiB keep the addresses they always had
        let small = Device::new(8, 128 << 10, 500e6, 300e6, (20_000, 20_000), 400_000, None);
        let place = 0x1234_5678_u64.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 20;
        assert_eq!(small.lba(0x1234_5678, 5), place * (128 << 10) + 5);
    }

    #[test]
    fn a_disk_pays_for_distance_and_the_mean_over_random_places_is_the_penalty() {
        let penalty = 8_000_000;
        let mut d = Disk::new(1 << 40, 7200, penalty);
        let per_byte = 1e9 / 170e6;
        d.head = 100 * MB;
        // a small gap ahead: the platter turns past it (64 KiB at 170 MB/s: 0.39 ms)
        assert_eq!(d.position_ns(100 * MB + 65536, per_byte), (65536.0 * per_byte).ceil() as u64);
        // a step back, however small: half a revolution at least (4.17 ms at 7200 rpm)
        let back = d.position_ns(100 * MB - 65536, per_byte);
        assert!((4_166_667..4_300_000).contains(&back), "{back}");
        // farther costs more, and a full stroke the most
        let near = d.position_ns(200 * MB, per_byte);
        let far = d.position_ns(600 << 30, per_byte);
        let stroke = Disk { head: 0, ..d }.position_ns(1 << 40, per_byte);
        assert!(back < near && near < far && far < stroke, "{back} {near} {far} {stroke}");
        // two random places: on average, the configured penalty
        let mut rng = crate::rng::Rng::new(7);
        let n = 20_000;
        let total: u64 = (0..n)
            .map(|_| {
                d.head = (rng.unit() * (1u64 << 40) as f64) as u64;
                d.position_ns((rng.unit() * (1u64 << 40) as f64) as u64, per_byte)
            })
            .sum();
        let mean = total as f64 / f64::from(n);
        assert!((mean - penalty as f64).abs() < 0.02 * penalty as f64, "mean {mean}");
    }

    #[test]
    fn sweeps_in_block_order_from_the_position_then_takes_the_oldest() {
        let device = disk();
        let mut e = Elevator { position: [0, device.lba(7, 3 * MB)], ..Default::default() };
        for (rpc, mb, arrived) in [(0, 5, 0), (1, 1, 30), (2, 4, 0), (3, 9, 0), (4, 2, 10)] {
            e.push(&device, rpc, req(7, mb * MB, 4096, true), arrived);
        }
        // from 3 MiB up: 4, 5, 9; nothing ahead: the oldest of the rest (2 MiB), then ahead of it
        assert_eq!(order(&mut e, &device, 100), vec![vec![2], vec![0], vec![3], vec![4], vec![1]]);
    }

    #[test]
    fn merges_what_continues_the_request_in_the_same_direction_only() {
        let device = disk();
        let mut e = Elevator::default();
        e.push(&device, 0, req(7, 0, MB, true), 10);
        e.push(&device, 1, req(7, 2 * MB, MB, true), 5);
        e.push(&device, 2, req(7, MB, MB, true), 20);
        e.push(&device, 3, req(7, 3 * MB, MB, false), 100); // a read: not merged into writes
        e.push(&device, 4, req(8, 3 * MB, MB, true), 0); // another object
        let first = e.dispatch(&device, 1_000_000).unwrap();
        assert_eq!((first.obj, first.start, first.len, first.write), (7, 3 * MB, MB, false), "reads first");
        e.finish();
        let d = e.dispatch(&device, 1_000_000).unwrap();
        assert_eq!((d.obj, d.start, d.len, d.write), (7, 0, 3 * MB, true));
        assert_eq!(d.issued, 800_000, "queued long enough: the access overlapped the previous request");
        assert_eq!(e.finish(), vec![0, 2, 1]);
        assert_eq!(e.queue.len(), 1);
    }

    #[test]
    fn merging_stops_at_sixteen_mib() {
        let device = disk();
        let mut e = Elevator::default();
        for i in 0..5u32 {
            e.push(&device, i, req(7, u64::from(i) * 4 * MB, 4 * MB, false), 0);
        }
        assert_eq!(order(&mut e, &device, 0), vec![vec![0, 1, 2, 3], vec![4]]);
    }

    #[test]
    fn writes_get_a_batch_after_two_read_batches() {
        let device = disk();
        let mut e = Elevator::default();
        e.push(&device, 100, req(9, 0, 4096, true), 0);
        // 40 reads, none adjacent: batches of 16 reads, 16 reads, then the write
        for i in 0..40u32 {
            e.push(&device, i, req(7, u64::from(i) * 2 * MB, 4096, false), 0);
        }
        let got = order(&mut e, &device, 1);
        assert_eq!(got[32], vec![100]);
        assert!(got[..32].iter().all(|rpcs| rpcs[0] < 100));
        assert_eq!(got.len(), 41);
    }

    #[test]
    fn an_expired_request_starts_the_next_batch() {
        let device = disk();
        let behind = req(7, 1 << 30, 4096, false);
        let ahead = req(7, 3 << 30, 4096, false);
        let fresh = || Elevator { position: [device.lba(7, 2 << 30), 0], ..Default::default() };
        // before read_expire the sweep goes on forward
        let mut e = fresh();
        e.push(&device, 0, behind, 0);
        e.push(&device, 1, ahead, 400_000_000);
        assert_eq!(e.dispatch(&device, 499_999_999).map(|d| d.start), Some(3 << 30));
        // at read_expire the oldest goes first
        let mut e = fresh();
        e.push(&device, 0, behind, 0);
        e.push(&device, 1, ahead, 400_000_000);
        assert_eq!(e.dispatch(&device, 500_000_000).map(|d| d.start), Some(1 << 30));
    }
}

//! Network links and OST devices: the shared resources every RPC competes for.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};

/// A node's network link in one direction. LNet sends the bulk data between two peers over one
/// TCP connection, so transfers on a link are served in order (FIFO), each at the link's rate.
#[derive(Clone, Debug, Default)]
pub struct Link {
    pub free_at: u64,
    pub busy_ns: u64,
}

/// Reserve the sender's up-link and the receiver's down-link for `bytes`; returns the time the
/// last byte leaves the wire (latency not included).
pub fn transfer(up: &mut Link, down: &mut Link, now: u64, bytes: u64, bw_bps: f64) -> u64 {
    let start = now.max(up.free_at).max(down.free_at);
    let dur = (bytes as f64 * 1e9 / bw_bps).ceil() as u64;
    let end = start + dur;
    up.free_at = end;
    down.free_at = end;
    up.busy_ns += dur;
    down.busy_ns += dur;
    end
}

/// One request on a device.
#[derive(Clone, Copy, Debug)]
pub struct DiskReq {
    pub rpc: u32,
    /// Device time the transfer needs at full bandwidth, ns.
    pub work_ns: f64,
    /// Fixed access time before data moves (command overhead, seek, FTL lookup), ns.
    pub access_ns: u64,
    pub obj: u64,
    pub start: u64,
    pub end: u64,
}

#[derive(Clone, Copy, Debug)]
struct Active {
    vfinish: f64,
    rpc: u32,
}
impl PartialEq for Active {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for Active {}
impl PartialOrd for Active {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Active {
    // min-heap on finish virtual time, then rpc id for determinism
    fn cmp(&self, o: &Self) -> Ordering {
        o.vfinish.total_cmp(&self.vfinish).then(o.rpc.cmp(&self.rpc))
    }
}

/// An OST's block device. Up to `queue_depth` requests are in service at once (NCQ slots); each
/// first waits its access time, then shares the device bandwidth equally with the other
/// transferring requests (processor sharing, as an SSD spreads concurrent commands over its
/// channels). A request that continues where a recent one ended skips the random-access penalty,
/// which models the elevator merging adjacent requests and the drive's own read-ahead.
#[derive(Debug)]
pub struct Device {
    pub queue_depth: usize,
    pub penalty_ns: u64,
    waiting: VecDeque<DiskReq>,
    in_slots: usize,
    /// Virtual time: work each transferring request has received, ns of full-bandwidth time.
    vtime: f64,
    last_update: u64,
    active: BinaryHeap<Active>,
    recent_ends: [(u64, u64); 16],
    recent_pos: usize,
    /// Incremented whenever the next completion time may have changed.
    pub generation: u64,
    pub busy_ns: u64,
    pub hdd: bool,
}

impl Device {
    pub fn new(queue_depth: usize, penalty_ns: u64, hdd: bool) -> Device {
        Device {
            queue_depth,
            penalty_ns,
            waiting: VecDeque::new(),
            in_slots: 0,
            vtime: 0.0,
            last_update: 0,
            active: BinaryHeap::new(),
            recent_ends: [(u64::MAX, u64::MAX); 16],
            recent_pos: 0,
            generation: 0,
            busy_ns: 0,
            hdd,
        }
    }

    fn advance(&mut self, now: u64) {
        let n = self.active.len();
        if n > 0 && now > self.last_update {
            let dt = (now - self.last_update) as f64;
            self.vtime += dt / n as f64;
            self.busy_ns += now - self.last_update;
        }
        self.last_update = now;
    }

    fn is_sequential(&self, r: &DiskReq) -> bool {
        self.recent_ends.iter().any(|&(o, e)| o == r.obj && e == r.start)
    }

    /// Queue a request; returns the requests that obtained a slot now: (rpc, access delay, work).
    pub fn submit(&mut self, now: u64, mut r: DiskReq) -> Vec<(u32, u64, f64)> {
        if !self.is_sequential(&r) {
            r.access_ns += self.penalty_ns;
        }
        self.recent_ends[self.recent_pos] = (r.obj, r.end);
        self.recent_pos = (self.recent_pos + 1) % self.recent_ends.len();
        self.waiting.push_back(r);
        self.fill_slots(now)
    }

    fn fill_slots(&mut self, _now: u64) -> Vec<(u32, u64, f64)> {
        let mut started = Vec::new();
        while self.in_slots < self.queue_depth {
            let Some(r) = self.pop_next() else { break };
            self.in_slots += 1;
            started.push((r.rpc, r.access_ns, r.work_ns));
        }
        started
    }

    /// A disk with one actuator serves the queued request that continues the last one first
    /// (elevator); an SSD serves in arrival order.
    fn pop_next(&mut self) -> Option<DiskReq> {
        if self.hdd && self.waiting.len() > 1 {
            let head = self.recent_ends[(self.recent_pos + 15) % 16];
            if let Some(i) = self.waiting.iter().position(|r| r.obj == head.0 && r.start == head.1) {
                return self.waiting.remove(i);
            }
        }
        self.waiting.pop_front()
    }

    /// The access time of a request is over: it starts moving data.
    pub fn start_transfer(&mut self, now: u64, rpc: u32, work_ns: f64) {
        self.advance(now);
        self.active.push(Active { vfinish: self.vtime + work_ns.max(1.0), rpc });
        self.generation += 1;
    }

    /// When the next transfer finishes, if any.
    pub fn next_completion(&self) -> Option<u64> {
        let top = self.active.peek()?;
        let n = self.active.len() as f64;
        let left = ((top.vfinish - self.vtime) * n).max(0.0);
        Some(self.last_update + left.ceil() as u64)
    }

    /// Finish every transfer done by `now`; returns them and the requests that got a slot.
    pub fn complete(&mut self, now: u64) -> (Vec<u32>, Vec<(u32, u64, f64)>) {
        self.advance(now);
        let mut done = Vec::new();
        while let Some(top) = self.active.peek() {
            // a transfer is done when its remaining work is below a nanosecond of device time
            if (top.vfinish - self.vtime) * self.active.len() as f64 > 0.5 {
                break;
            }
            done.push(top.rpc);
            self.active.pop();
            self.in_slots -= 1;
        }
        self.generation += 1;
        let started = self.fill_slots(now);
        (done, started)
    }
}

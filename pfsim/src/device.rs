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

/// An OST's block device as a set of independent channels (flash channels of an SSD, the one
/// actuator of a disk). Logical blocks are spread over the channels in `stripe` units, so a large
/// request uses many channels while small concurrent requests may collide on the same one.
/// Each channel serves its pieces in order; a request that does not continue a recent one pays
/// the random-access penalty on its first channel (seek, FTL map miss), which models both a
/// disk's seek and an SSD's loss of its internal read-ahead.
#[derive(Debug)]
pub struct Device {
    channels: Vec<u64>,
    stripe: u64,
    read_ns_per_byte: f64,
    write_ns_per_byte: f64,
    read_access_ns: u64,
    write_access_ns: u64,
    penalty_ns: u64,
    recent_ends: [(u64, u64); 16],
    recent_pos: usize,
    pub busy_ns: u64,
}

impl Device {
    /// `read_bw`/`write_bw` are the whole device's bandwidths, bytes per second.
    pub fn new(channels: usize, stripe: u64, read_bw: f64, write_bw: f64, access: (u64, u64), penalty_ns: u64) -> Device {
        let n = channels.max(1) as f64;
        Device {
            channels: vec![0; channels.max(1)],
            stripe: stripe.max(4096),
            read_ns_per_byte: 1e9 * n / read_bw,
            write_ns_per_byte: 1e9 * n / write_bw,
            read_access_ns: access.0,
            write_access_ns: access.1,
            penalty_ns,
            recent_ends: [(u64::MAX, u64::MAX); 16],
            recent_pos: 0,
            busy_ns: 0,
        }
    }

    /// Queue a request for bytes [start, start + len) of object `obj`; returns when its last
    /// byte has been read or written.
    pub fn submit(&mut self, now: u64, obj: u64, start: u64, len: u64, write: bool) -> u64 {
        let sequential = self.recent_ends.iter().any(|&(o, e)| o == obj && e == start);
        self.recent_ends[self.recent_pos] = (obj, start + len);
        self.recent_pos = (self.recent_pos + 1) % self.recent_ends.len();
        let (per_byte, access) =
            if write { (self.write_ns_per_byte, self.write_access_ns) } else { (self.read_ns_per_byte, self.read_access_ns) };
        // objects sit at scattered places on the device; mix the object id into the block address
        let lba = (obj.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 20) * self.stripe + start;
        let n = self.channels.len() as u64;
        let mut pos = lba;
        let end = lba + len.max(1);
        let mut done = now;
        let mut first = true;
        while pos < end {
            let piece_end = (pos / self.stripe + 1) * self.stripe;
            let piece = piece_end.min(end) - pos;
            // the FTL places stripe units on channels in no simple order: hash the unit number,
            // so concurrent requests collide on channels at random, even sequential ones
            let unit = pos / self.stripe;
            let ch = ((unit.wrapping_mul(0xff51_afd7_ed55_8ccd) >> 29) % n) as usize;
            let mut t = (piece as f64 * per_byte).ceil() as u64;
            if first && !sequential {
                t += self.penalty_ns;
            }
            first = false;
            let begin = self.channels[ch].max(now + access);
            self.channels[ch] = begin + t;
            self.busy_ns += t;
            done = done.max(begin + t);
            pos += piece;
        }
        done
    }
}

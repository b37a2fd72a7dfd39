//! The agent's fast probe: read a client's statistics files and parse them into numbers.
//!
//! The Python agent reads 1,000 OSCs every 0.5 s.  Reading and parsing their files in Python
//! costs ~0.2 ms per OSC; this module does the same work in one call for every device and
//! hands back plain numbers (`pfstune.lustre.table` turns them into numpy arrays).
//!
//! The parsers here are *not* a second definition of the formats: they accept a strict subset
//! of what the Python parsers (`pfstune/lustre/parse.py`) accept, and give the same numbers on
//! it.  Anything else is refused with a reason, and the caller reads that device with the
//! Python parsers, which decide what is damaged and warn about it.  What is accepted:
//!
//! - text of printable ASCII, tabs and newlines only (NUL padding at the ends of a `stats` or
//!   one-line file is stripped, as Python does; NUL anywhere in `rpc_stats` is refused);
//! - `stats` files whose every line is a counter line or a header line of the Python line
//!   reader (`_COUNTER` / `_HEADER` in parse.py), blank lines aside, with the last line ended;
//! - `rpc_stats` laid out exactly as the Python fast path (`_rpc_stats_fast`) reads it: the
//!   header and instantaneous lines, then the three histograms after their column lines, every
//!   row `LABEL:` and seven numbers, the last row of each column at cum 100 % (or 0 when empty),
//!   pages-per-RPC and RPCs-in-flight labels among the ones kept (1..4096, 0..31);
//! - one-line files: a decimal integer (as an integer) or other text (as text);
//! - integers that fit a signed 64-bit value (Python would keep a larger one exactly).

use std::fs::File;
use std::io::{ErrorKind, Read};
use std::path::Path;

/// Pages-per-RPC histogram labels kept (`pfstune.lustre.table.PPR_LABELS`).
pub const PPR_LABELS: [u64; 13] = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096];
/// Number of RPCs-in-flight labels kept (0..31, `RIF_LABELS`).
pub const RIF_LABELS: usize = 32;
/// Width of the histogram row: ppr read, ppr write, rif read, rif write (`HIST_COLUMNS`).
pub const HIST_COLUMNS: usize = 2 * PPR_LABELS.len() + 2 * RIF_LABELS;
/// The instantaneous lines kept, in `pfstune.lustre.table.RPC_LINES` order.
pub const RPC_LINES: [&str; 4] = [
    "read rpcs in flight",
    "pending read pages",
    "write rpcs in flight",
    "pending write pages",
];
/// Every instantaneous line the Python fast path knows (lower case), kept or not.
const INSTANT_LINES: [&str; 5] = [
    "read rpcs in flight",
    "write rpcs in flight",
    "dio rpcs in flight",
    "pending write pages",
    "pending read pages",
];
const HEADER_NAMES: [&str; 3] = ["snapshot_time", "start_time", "elapsed_time"];
/// What precedes each histogram block: the end of the previous line, a blank line, the column line.
const COLUMNS_TAIL: &str = "\n\n\t\t\tread\t\t\twrite\n";
const COLUMNS_LINE: &str = "\t\t\tread\t\t\twrite";
/// Each block's title line as Lustre prints it, in order (pages per RPC, RPCs in flight, offset).
const TITLES: [&str; 3] = [
    "pages per rpc         rpcs   % cum % |       rpcs   % cum %\n",
    "rpcs in flight        rpcs   % cum % |       rpcs   % cum %\n",
    "offset                rpcs   % cum % |       rpcs   % cum %\n",
];

/// Why the fast path left a file to the Python parsers.
pub type Refusal = &'static str;

/// A histogram label the table does not keep (the Python packer folds it).
const BEYOND: Refusal = "a histogram label beyond the ones kept";

// ---------------------------------------------------------------------------
// Small pieces
// ---------------------------------------------------------------------------

/// Printable ASCII, tab and newline: the only bytes accepted (so that whitespace, digits and
/// case mean the same here as in Python's `str` methods and regexes).
fn plain(text: &[u8]) -> bool {
    // No early exit: a branch-free fold over every byte is several times faster (vectorised).
    let bad = text.iter().fold(0u8, |bad, &b| {
        bad | u8::from(!(b == b'\t' || b == b'\n' || (0x20..0x7f).contains(&b)))
    });
    bad == 0
}

fn is_ws(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

fn all_digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

/// `-?\d+`.
fn is_int(s: &str) -> bool {
    all_digits(s.strip_prefix('-').unwrap_or(s))
}

/// A decimal integer as i64; refused beyond i64 (Python would keep it exactly).
fn int64(s: &str) -> Result<i64, Refusal> {
    s.parse::<i64>().map_err(|_| "an integer beyond 64 bits")
}

/// Digits as u64; refused beyond u64.
fn uint64(s: &str) -> Result<u64, Refusal> {
    s.parse::<u64>().map_err(|_| "an integer beyond 64 bits")
}

/// Strip NUL bytes at both ends (padding of a fixed-size buffer read whole).
fn strip_nuls(mut text: &[u8]) -> &[u8] {
    while let [0, rest @ ..] = text {
        text = rest;
    }
    while let [rest @ .., 0] = text {
        text = rest;
    }
    text
}

fn text_of(bytes: &[u8]) -> Result<&str, Refusal> {
    if !plain(bytes) {
        return Err("bytes other than printable ASCII, tabs and newlines");
    }
    std::str::from_utf8(bytes).map_err(|_| "not UTF-8")
}

/// Skip spaces and tabs from `i`.
fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && is_ws(b[i]) {
        i += 1;
    }
    i
}

fn skip_digits(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    i
}

/// Python's `_HEADER` regex on one line:
/// `\s*(snapshot_time|start_time|elapsed_time)\s*:?\s*(\d+)(?:\.(\d+))?\s*(\(?secs\.(?:nsecs|usecs)\)?)?\s*$`
/// and `_header_value` of its groups.  Returns (name index, seconds), None if it does not match.
pub fn header_line(line: &str) -> Option<(usize, f64)> {
    let b = line.as_bytes();
    let mut i = skip_ws(b, 0);
    let name = HEADER_NAMES.iter().position(|n| line[i..].starts_with(n))?;
    i = skip_ws(b, i + HEADER_NAMES[name].len());
    if i < b.len() && b[i] == b':' {
        i = skip_ws(b, i + 1);
    }
    let whole_start = i;
    i = skip_digits(b, i);
    if i == whole_start {
        return None;
    }
    let whole = &line[whole_start..i];
    let mut frac = "";
    if i < b.len() && b[i] == b'.' {
        let start = i + 1;
        i = skip_digits(b, start);
        if i == start {
            return None; // "5." : nothing else may take the dot
        }
        frac = &line[start..i];
    }
    i = skip_ws(b, i);
    let mut usecs = false;
    if i < b.len() {
        let mut rest = &line[i..];
        rest = rest.strip_prefix('(').unwrap_or(rest);
        rest = rest.strip_prefix("secs.")?;
        if let Some(r) = rest.strip_prefix("usecs") {
            usecs = true;
            rest = r;
        } else {
            rest = rest.strip_prefix("nsecs")?;
        }
        rest = rest.strip_prefix(')').unwrap_or(rest);
        if !rest.bytes().all(is_ws) {
            return None;
        }
    }
    let seconds = if frac.is_empty() {
        whole.parse::<f64>().ok()?
    } else if usecs {
        // Old kernels print "%lu.%lu secs.usecs" without zero padding: ".5" is 5 µs.
        let (w, f) = (whole.parse::<u64>().ok()?, frac.parse::<u64>().ok()?);
        w as f64 + f as f64 / 1e6
    } else {
        line[whole_start..whole_start + whole.len() + 1 + frac.len()]
            .parse::<f64>()
            .ok()? // "WHOLE.FRAC"
    };
    // a number no f64 holds is garbage: left to the Python reader, which reports it
    seconds.is_finite().then_some((name, seconds))
}

// ---------------------------------------------------------------------------
// stats
// ---------------------------------------------------------------------------

/// One counter line: its count and, unless count-only, min, max and sum.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Counter {
    pub samples: i64,
    pub values: Option<(i64, i64, i64)>,
}

/// A parsed `stats` file: its header's `start_time` and its counters in file order.
#[derive(Clone, Debug, PartialEq)]
pub struct StatsFile<'a> {
    pub start_time: Option<f64>,
    pub counters: Vec<(&'a str, Counter)>,
}

/// Python's `_COUNTER` regex on one line:
/// `(\S+)\s+(\d+)\s+samples\s+\[([^\]\s]*)\](?:\s+(-?\d+)\s+(-?\d+)\s+(-?\d+)(?:\s+(\d+))?)?\s*$`.
/// Ok(None) if the line is not a counter line at all.
fn counter_line(line: &str) -> Result<Option<(&str, Counter)>, Refusal> {
    let b = line.as_bytes();
    let name_end = b.iter().position(|&c| is_ws(c)).unwrap_or(b.len());
    if name_end == 0 {
        return Ok(None);
    }
    let mut i = skip_ws(b, name_end);
    if i == name_end {
        return Ok(None);
    }
    let count_start = i;
    i = skip_digits(b, i);
    if i == count_start || i == b.len() || !is_ws(b[i]) {
        return Ok(None);
    }
    let count = &line[count_start..i];
    i = skip_ws(b, i);
    let Some(rest) = line[i..].strip_prefix("samples") else {
        return Ok(None);
    };
    i = line.len() - rest.len();
    let after = skip_ws(b, i);
    if after == i || after == b.len() || b[after] != b'[' {
        return Ok(None);
    }
    let Some(close) = line[after + 1..].find([']', ' ', '\t']) else {
        return Ok(None);
    };
    let close = after + 1 + close;
    if b[close] != b']' {
        return Ok(None);
    }
    let tail = &line[close + 1..];
    if !tail.is_empty() && !is_ws(tail.as_bytes()[0]) {
        return Ok(None);
    }
    // Up to five whitespace-separated fields after "]" (a fifth means the line is not a counter).
    let (tb, mut next, mut found, mut j) = (tail.as_bytes(), [""; 5], 0, 0);
    while found < next.len() {
        j = skip_ws(tb, j);
        if j == tb.len() {
            break;
        }
        let start = j;
        while j < tb.len() && !is_ws(tb[j]) {
            j += 1;
        }
        next[found] = &tail[start..j];
        found += 1;
    }
    let values = match found {
        0 => None,
        3 | 4 if is_int(next[0]) && is_int(next[1]) && is_int(next[2]) => {
            if found == 4 && !all_digits(next[3]) {
                return Ok(None);
            }
            Some((int64(next[0])?, int64(next[1])?, int64(next[2])?))
        }
        _ => return Ok(None),
    };
    Ok(Some((
        &line[..name_end],
        Counter {
            samples: int64(count)?,
            values,
        },
    )))
}

/// Parse a `stats` file (`osc.*.stats`, `llite.*.stats`); see the module docstring.
pub fn parse_stats(bytes: &[u8]) -> Result<StatsFile<'_>, Refusal> {
    let text = text_of(strip_nuls(bytes))?;
    let (body, last) = match text.rfind('\n') {
        Some(end) => (&text[..end], &text[end + 1..]),
        None => ("", text),
    };
    if !last.bytes().all(is_ws) {
        return Err("last line has no newline");
    }
    let mut out = StatsFile {
        start_time: None,
        counters: Vec::new(),
    };
    let mut header = false;
    if !body.is_empty() || text.contains('\n') {
        for line in body.split('\n') {
            if let Some((name, counter)) = counter_line(line)? {
                out.counters.push((name, counter));
            } else if line.bytes().all(is_ws) {
                continue;
            } else if let Some((name, seconds)) = header_line(line) {
                header = true;
                if name == 1 {
                    out.start_time = Some(seconds);
                }
            } else {
                return Err("a line that is neither a counter nor a header");
            }
        }
    }
    if out.counters.is_empty() && !header {
        return Err("no counter and no header");
    }
    Ok(out)
}

// ---------------------------------------------------------------------------
// rpc_stats
// ---------------------------------------------------------------------------

/// A parsed `rpc_stats` file: what the features read of it.
#[derive(Clone, Debug, PartialEq)]
pub struct RpcFile {
    pub start_time: Option<f64>,
    /// [`RPC_LINES`] values, NaN where not printed.
    pub lines: [f64; 4],
    /// Counts at the kept labels: ppr read, ppr write, rif read, rif write.
    pub hist: [f64; HIST_COLUMNS],
}

/// A number after at least one blank, or None.
fn spaced_number(rows: &[u8], at: &mut usize) -> Option<u64> {
    let start = *at;
    *at = skip_ws(rows, *at);
    if *at == start {
        return None;
    }
    number(rows, at)
}

/// The rows of one histogram block, each exactly as Lustre prints it:
/// `LABEL:<TAB><TAB>%10lu %3u %3u   | %10lu %3u %3u` (any runs of spaces and tabs between the
/// fields), lines joined by newlines.  Calls `row(label, read, write)` per row, in order.
///
/// Every such text passes the Python fast path's checks (`_histogram_fast`: 8 fields per line,
/// the 5th `|`, one `:` per line, digits elsewhere) with the same labels and counts; the last
/// line's cum % columns must be 100 where the column has RPCs, else 0, as there.  Other
/// layouts Python may still accept are refused (the device then goes to Python).
fn histogram_rows(rows: &[u8], mut row: impl FnMut(u64, u64, u64) -> Result<(), Refusal>) -> Result<(), Refusal> {
    const REFUSE: Refusal = "a histogram not laid out as Lustre prints it";
    let mut at = 0;
    let (mut any_read, mut any_write) = (false, false);
    loop {
        let label = number(rows, &mut at).ok_or(REFUSE)?;
        if rows.get(at) != Some(&b':') {
            return Err(REFUSE);
        }
        at += 1;
        let mut field = || spaced_number(rows, &mut at).ok_or(REFUSE);
        let (read, _, read_cum) = (field()?, field()?, field()?);
        let start = at;
        at = skip_ws(rows, at);
        if at == start || rows.get(at) != Some(&b'|') {
            return Err(REFUSE);
        }
        at += 1;
        let mut field = || spaced_number(rows, &mut at).ok_or(REFUSE);
        let (write, _, write_cum) = (field()?, field()?, field()?);
        at = skip_ws(rows, at);
        row(label, read, write)?;
        any_read |= read != 0;
        any_write |= write != 0;
        match rows.get(at) {
            None => {
                // The last row reaches cum 100 % in every non-empty column: else rows are missing.
                let full = |any: bool| if any { 100 } else { 0 };
                if read_cum != full(any_read) || write_cum != full(any_write) {
                    return Err(REFUSE);
                }
                return Ok(());
            }
            Some(b'\n') => at += 1,
            Some(_) => return Err(REFUSE),
        }
    }
}

/// ASCII digits from `*at` as u64, `*at` moved past them; None if there are none or beyond u64.
fn number(text: &[u8], at: &mut usize) -> Option<u64> {
    let start = *at;
    let digits = text[start..].iter().take_while(|c| c.is_ascii_digit()).count();
    *at += digits;
    let run = &text[start..start + digits];
    match digits {
        0 => None,
        // 19 digits never overflow a u64 (< 10^19 < 2^64): no check per digit (the common case).
        1..=19 => Some(run.iter().fold(0u64, |value, &c| value * 10 + u64::from(c - b'0'))),
        _ => run.iter().try_fold(0u64, |value, &c| {
            value.checked_mul(10)?.checked_add(u64::from(c - b'0'))
        }),
    }
}

/// Parse `osc.*.rpc_stats` as the Python fast path does; see the module docstring.
pub fn parse_rpc_stats(bytes: &[u8]) -> Result<RpcFile, Refusal> {
    if bytes.contains(&0) {
        return Err("NUL bytes");
    }
    let text = text_of(bytes)?;
    if !text.ends_with('\n') {
        return Err("last line has no newline");
    }
    let parts: Vec<&str> = text.split(COLUMNS_TAIL).collect();
    if parts.len() != TITLES.len() + 1 {
        return Err("not the three histograms of an OSC's rpc_stats");
    }
    let mut out = RpcFile {
        start_time: None,
        lines: [f64::NAN; 4],
        hist: [0.0; HIST_COLUMNS],
    };
    for line in parts[0].split('\n') {
        let (name, value) = line.split_once(':').unwrap_or((line, ""));
        if INSTANT_LINES.iter().any(|l| l.eq_ignore_ascii_case(name)) {
            let value = value.trim_matches([' ', '\t']);
            if !all_digits(value) {
                return Err("an instantaneous line without its number");
            }
            let number = uint64(value)?;
            if let Some(k) = RPC_LINES.iter().position(|l| l.eq_ignore_ascii_case(name)) {
                out.lines[k] = number as f64;
            }
        } else if HEADER_NAMES.iter().any(|h| name.starts_with(h)) {
            let (index, seconds) = header_line(line).ok_or("a header line not in a known form")?;
            if index == 1 {
                out.start_time = Some(seconds);
            }
        } else if !line.is_empty() && line != COLUMNS_LINE {
            return Err("a line before the histograms that is not a header or an instantaneous line");
        }
    }
    let last = TITLES.len() - 1;
    for (k, (title, block)) in TITLES.iter().zip(&parts[1..]).enumerate() {
        let rows = block
            .strip_prefix(title)
            .ok_or("a histogram title not as Lustre prints it")?;
        // The last block ends with the text's final newline.
        let rows = if k == last {
            &rows[..rows.len().saturating_sub(1)]
        } else {
            rows
        };
        if rows.is_empty() {
            return Err("a histogram without rows");
        }
        let hist = &mut out.hist;
        match k {
            0 => histogram_rows(rows.as_bytes(), |label, read, write| {
                let at = PPR_LABELS.iter().position(|&l| l == label).ok_or(BEYOND)?;
                (hist[at], hist[PPR_LABELS.len() + at]) = (read as f64, write as f64);
                Ok(())
            })?,
            1 => histogram_rows(rows.as_bytes(), |label, read, write| {
                let at = usize::try_from(label).ok().filter(|&l| l < RIF_LABELS).ok_or(BEYOND)?;
                let base = 2 * PPR_LABELS.len();
                (hist[base + at], hist[base + RIF_LABELS + at]) = (read as f64, write as f64);
                Ok(())
            })?,
            _ => histogram_rows(rows.as_bytes(), |_, _, _| Ok(()))?, // the offset histogram: checked, not kept
        }
    }
    Ok(out)
}

// ---------------------------------------------------------------------------
// one-line files
// ---------------------------------------------------------------------------

/// A one-line file's value: a decimal integer, or the text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Scalar {
    Int(i64),
    Text(String),
}

/// Python's `parse_scalar`: NULs stripped at the ends, then whitespace; one line, not empty.
pub fn parse_scalar(bytes: &[u8]) -> Result<Scalar, Refusal> {
    let text = text_of(strip_nuls(bytes))?;
    let value = text.trim_matches([' ', '\t', '\n']);
    if value.is_empty() {
        return Err("empty");
    }
    if value.contains('\n') {
        return Err("more than one line");
    }
    if is_int(value) {
        return Ok(Scalar::Int(int64(value)?));
    }
    Ok(Scalar::Text(value.to_string()))
}

// ---------------------------------------------------------------------------
// The reader
// ---------------------------------------------------------------------------

/// What a file of a device is read as.
#[derive(Clone, Debug)]
enum Kind {
    RpcStats,
    Stats,
    /// A one-line file; the index among the table's tunables, if it is one.
    Scalar(Option<usize>),
}

#[derive(Clone, Debug)]
struct FileSpec {
    param: String,
    /// The param's index in [`Reader::param_names`] (names repeat across devices).
    name: usize,
    /// Where the file is: a path, or what the source given to [`Reader::read_with`] reads.
    path: String,
    kind: Kind,
}

/// Counter names seen in one kind of `stats` file: name -> column, stable across reads.
#[derive(Clone, Debug, Default)]
pub struct Vocabulary {
    pub names: Vec<String>,
    index: std::collections::HashMap<String, usize>,
}

impl Vocabulary {
    fn column(&mut self, name: &str) -> usize {
        if let Some(&j) = self.index.get(name) {
            return j;
        }
        self.names.push(name.to_string());
        self.index.insert(name.to_string(), self.names.len() - 1);
        self.names.len() - 1
    }
}

/// One kind of `stats` file of n devices, dense over a vocabulary (`pfstune.lustre.table.StatsTable`).
#[derive(Clone, Debug, Default)]
pub struct StatsRows {
    pub present: Vec<u8>,
    pub start_time: Vec<f64>,
    /// Per device: (column, counter) in file order (a later line of the same name wins).
    pub cells: Vec<Vec<(usize, Counter)>>,
}

/// A `stats` file with its counters numbered by a [`Vocabulary`]: (start_time, cells).
type StatsCells = (Option<f64>, Vec<(usize, Counter)>);

impl StatsRows {
    fn push(&mut self, file: Option<StatsCells>) {
        match file {
            Some((start_time, cells)) => {
                self.present.push(1);
                self.start_time.push(start_time.unwrap_or(f64::NAN));
                self.cells.push(cells);
            }
            None => {
                self.present.push(0);
                self.start_time.push(f64::NAN);
                self.cells.push(Vec::new());
            }
        }
    }

    /// The dense (n, width) arrays: line, samples, valued, min, max, sum.
    #[allow(clippy::type_complexity)]
    pub fn dense(&self, width: usize) -> (Vec<u8>, Vec<i64>, Vec<u8>, Vec<i64>, Vec<i64>, Vec<i64>) {
        let size = self.cells.len() * width;
        let (mut line, mut samples, mut valued) = (vec![0u8; size], vec![0i64; size], vec![0u8; size]);
        let (mut lo, mut hi, mut sum) = (vec![0i64; size], vec![0i64; size], vec![0i64; size]);
        for (row, cells) in self.cells.iter().enumerate() {
            for &(column, counter) in cells {
                let at = row * width + column;
                line[at] = 1;
                samples[at] = counter.samples;
                let (l, h, s, v) = match counter.values {
                    Some((l, h, s)) => (l, h, s, 1),
                    None => (0, 0, 0, 0),
                };
                (lo[at], hi[at], sum[at], valued[at]) = (l, h, s, v);
            }
        }
        (line, samples, valued, lo, hi, sum)
    }
}

/// Everything one read of every device gave.
#[derive(Debug, Default)]
pub struct Reading {
    /// Per device: 0 read, 1 a file refused by the parsers here, 2 a file that could not be read.
    pub status: Vec<u8>,
    /// (device, param, why) for every file refused or unreadable.
    pub refused: Vec<(usize, String, String)>,
    /// Per device: its one-line files, (index in [`Reader::param_names`], value); empty for a
    /// device not read.
    pub scalars: Vec<Vec<(usize, Scalar)>>,
    /// Per OSC device (in device order): the table's tunables, NaN where absent or text.
    pub tunables: Vec<f64>,
    /// (OSC row, tunable) whose value is text: the caller turns the text into a number.
    pub text_cells: Vec<(usize, usize)>,
    pub rpc_present: Vec<u8>,
    pub rpc_start: Vec<f64>,
    pub rpc_lines: Vec<f64>,
    pub hist: Vec<f64>,
    /// `osc.*.stats` per OSC device, `llite.*.stats` per llite device.
    pub osc_stats: StatsRows,
    pub llite_stats: StatsRows,
}

/// The files of a client's devices, read and parsed together (see the module docstring).
pub struct Reader {
    devices: Vec<(bool, Vec<FileSpec>)>,
    param_names: Vec<String>,
    tunables: Vec<String>,
    pub osc_vocabulary: Vocabulary,
    pub llite_vocabulary: Vocabulary,
    buffer: Vec<u8>,
}

/// The most a statistics file may hold. Lustre's are a few KiB (`rpc_stats` of a busy OSC is
/// about 5 KiB); anything larger is not one, such as a link to `/dev/zero` in a copied tree,
/// which would otherwise be read until memory runs out. (The Python reader's
/// `MAX_FILE_BYTES` is the same.)
pub const MAX_FILE_BYTES: usize = 1 << 20;

/// Read a whole file into `buffer` (one open, reads until a read returns 0, close); its length.
/// The buffer is kept between files and only grows, so nothing is cleared or zeroed per file.
/// (A short first read is not taken as the end: a multi-record seq_file may stop a read at a
/// page boundary with more to come.) A file longer than [`MAX_FILE_BYTES`] is an error.
fn read_file(path: &Path, buffer: &mut Vec<u8>) -> std::io::Result<usize> {
    let mut file = File::open(path)?;
    let mut len = 0;
    loop {
        if len == buffer.len() {
            buffer.resize((buffer.len() * 2).max(16384), 0);
        }
        match file.read(&mut buffer[len..]) {
            Ok(0) => return Ok(len),
            Ok(got) if len + got > MAX_FILE_BYTES => {
                let what = format!("longer than {MAX_FILE_BYTES} bytes: not a Lustre statistics file");
                return Err(std::io::Error::new(ErrorKind::InvalidData, what));
            }
            Ok(got) => len += got,
            Err(err) if err.kind() == ErrorKind::Interrupted => continue,
            Err(err) => return Err(err),
        }
    }
}

impl Reader {
    /// `devices`: (is an OSC, [(param, path)]) per device; `rpc_stats` and `stats` are parsed as
    /// such, anything else as a one-line file.  `tunables` names the one-line files whose value
    /// goes into the table's tunables columns, in order.
    pub fn new(devices: Vec<(bool, Vec<(String, String)>)>, tunables: Vec<String>) -> Reader {
        let mut param_names: Vec<String> = Vec::new();
        let devices = devices
            .into_iter()
            .map(|(osc, files)| {
                let specs = files
                    .into_iter()
                    .map(|(param, path)| {
                        let kind = match param.as_str() {
                            "rpc_stats" => Kind::RpcStats,
                            "stats" => Kind::Stats,
                            name => Kind::Scalar(tunables.iter().position(|t| t == name)),
                        };
                        let name = param_names.iter().position(|n| *n == param).unwrap_or_else(|| {
                            param_names.push(param.clone());
                            param_names.len() - 1
                        });
                        FileSpec {
                            param,
                            name,
                            path,
                            kind,
                        }
                    })
                    .collect();
                (osc, specs)
            })
            .collect();
        Reader {
            devices,
            param_names,
            tunables,
            osc_vocabulary: Vocabulary::default(),
            llite_vocabulary: Vocabulary::default(),
            buffer: vec![0; 16384],
        }
    }

    /// The names of the files read, as [`Reading::scalars`] refers to them.
    pub fn param_names(&self) -> &[String] {
        &self.param_names
    }

    /// Read and parse every file of every device.
    pub fn read(&mut self) -> Reading {
        self.read_with(|path, buffer| read_file(Path::new(path), buffer))
    }

    /// Parse every file of every device as `fetch` reads it: `fetch(path, buffer)` puts the
    /// file's bytes at the start of `buffer` (growing it as needed) and returns how many, or the
    /// error of a file that cannot be read. `read` reads files; a simulated client hands over
    /// the text it prints (`pfsim`'s `Simulation.read_stats`), which is then parsed exactly as
    /// a real client's files are.
    pub fn read_with(&mut self, mut fetch: impl FnMut(&str, &mut Vec<u8>) -> std::io::Result<usize>) -> Reading {
        let mut out = Reading::default();
        let width = self.tunables.len();
        let Reader {
            devices,
            osc_vocabulary,
            llite_vocabulary,
            buffer,
            ..
        } = self;
        for (index, (osc, files)) in devices.iter().enumerate() {
            let vocabulary = if *osc {
                &mut *osc_vocabulary
            } else {
                &mut *llite_vocabulary
            };
            let mut status = 0u8;
            let mut scalars = Vec::new();
            let mut tunables = vec![f64::NAN; width];
            let mut texts = Vec::new();
            let (mut rpc, mut stats) = (None, None);
            for spec in files {
                let data = match fetch(&spec.path, buffer) {
                    Ok(len) => &buffer[..len],
                    Err(err) => {
                        out.refused.push((index, spec.param.clone(), err.to_string()));
                        status = 2;
                        break;
                    }
                };
                let refusal = match &spec.kind {
                    Kind::RpcStats => parse_rpc_stats(data).map(|file| rpc = Some(file)).err(),
                    Kind::Stats => parse_stats(data)
                        .map(|file| {
                            let cells = file
                                .counters
                                .iter()
                                .map(|&(name, c)| (vocabulary.column(name), c))
                                .collect();
                            stats = Some((file.start_time, cells));
                        })
                        .err(),
                    Kind::Scalar(column) => match parse_scalar(data) {
                        Ok(value) => {
                            if let Some(j) = *column {
                                match &value {
                                    Scalar::Int(v) => tunables[j] = *v as f64,
                                    Scalar::Text(_) => texts.push(j),
                                }
                            }
                            scalars.push((spec.name, value));
                            None
                        }
                        Err(why) => Some(why),
                    },
                };
                if let Some(why) = refusal {
                    out.refused.push((index, spec.param.clone(), why.to_string()));
                    status = 1;
                    break;
                }
            }
            if status != 0 {
                (scalars, rpc, stats) = (Vec::new(), None, None);
                tunables.fill(f64::NAN);
                texts.clear();
            }
            out.status.push(status);
            out.scalars.push(scalars);
            if *osc {
                let row = out.rpc_present.len();
                out.tunables.extend_from_slice(&tunables);
                out.text_cells.extend(texts.into_iter().map(|j| (row, j)));
                out.rpc_present.push(u8::from(rpc.is_some()));
                out.rpc_start
                    .push(rpc.as_ref().and_then(|r| r.start_time).unwrap_or(f64::NAN));
                out.rpc_lines
                    .extend_from_slice(&rpc.as_ref().map_or([f64::NAN; 4], |r| r.lines));
                out.hist
                    .extend_from_slice(&rpc.as_ref().map_or([0.0; HIST_COLUMNS], |r| r.hist));
                out.osc_stats.push(stats);
            } else {
                out.llite_stats.push(stats);
            }
        }
        out
    }
}

// The expected seconds are written as Lustre prints them (nanoseconds), as Python's float() reads them.
#[allow(clippy::excessive_precision)]
#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::{stats_header, TextStyle};

    const RPC_215: &str = "snapshot_time:            1718000000.123456789 secs.nsecs\n\
start_time:               1717990000.987654321 secs.nsecs\n\
elapsed_time:             9999.135802468 secs.nsecs\n\
read RPCs in flight:  0\n\
write RPCs in flight: 3\n\
pending write pages:  2048\n\
pending read pages:   0\n\
\n\
\t\t\tread\t\t\twrite\n\
pages per rpc         rpcs   % cum % |       rpcs   % cum %\n\
1:\t\t         0   0   0   |          1   0   0\n\
2:\t\t         0   0   0   |          0   0   0\n\
4:\t\t         5 100 100   |        257  99 100\n\
\n\
\t\t\tread\t\t\twrite\n\
rpcs in flight        rpcs   % cum % |       rpcs   % cum %\n\
1:\t\t         5 100 100   |          8   3   3\n\
2:\t\t         0   0 100   |        250  96 100\n\
\n\
\t\t\tread\t\t\twrite\n\
offset                rpcs   % cum % |       rpcs   % cum %\n\
0:\t\t         5 100 100   |        258 100 100\n";

    #[test]
    fn a_file_longer_than_any_lustre_file_is_refused() {
        let dir = std::env::temp_dir().join(format!("pfsim-probe-long-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (small, long) = (dir.join("small"), dir.join("long"));
        std::fs::write(&small, RPC_215).unwrap();
        std::fs::write(&long, vec![b'1'; MAX_FILE_BYTES + 1]).unwrap();
        let mut buffer = Vec::new();
        assert_eq!(read_file(&small, &mut buffer).unwrap(), RPC_215.len());
        let err = read_file(&long, &mut buffer).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidData);
        assert!(buffer.len() <= 2 * MAX_FILE_BYTES + 16384, "the buffer stops growing at the limit");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn rpc_stats_2_15() {
        let rpc = parse_rpc_stats(RPC_215.as_bytes()).unwrap();
        assert_eq!(rpc.start_time, Some(1717990000.987654321));
        assert_eq!(rpc.lines, [0.0, 0.0, 3.0, 2048.0]);
        assert_eq!(rpc.hist[13], 1.0); // ppr write 1
        assert_eq!(rpc.hist[2], 5.0); // ppr read 4
        assert_eq!(rpc.hist[13 + 2], 257.0); // ppr write 4
        assert_eq!(rpc.hist[26 + 1], 5.0); // rif read 1
        assert_eq!(rpc.hist[26 + 32 + 2], 250.0); // rif write 2
        assert_eq!(rpc.hist.iter().sum::<f64>(), 1.0 + 5.0 + 257.0 + 5.0 + 8.0 + 250.0);
    }

    #[test]
    fn rpc_stats_header_styles() {
        let body = &RPC_215[RPC_215.find("read RPCs").unwrap()..];
        for (header, start) in [
            ("snapshot_time            : 1718000000.123456789 secs.nsecs\n", None), // 2.15.0
            ("snapshot_time:         1510950459.802392417 (secs.nsecs)\n", None),   // 2.10
            ("start_time               : 5.000000001 secs.nsecs\n", Some(5.000000001)),
            (
                "start_time:         1510950459.5 (secs.usecs)\n",
                Some(1510950459.000005),
            ),
        ] {
            let rpc = parse_rpc_stats(format!("{header}{body}").as_bytes()).unwrap();
            assert_eq!(rpc.start_time, start, "{header}");
        }
        let garbled = format!("snapshot_timex: 5\n{body}");
        assert!(parse_rpc_stats(garbled.as_bytes()).is_err());
    }

    #[test]
    fn rpc_stats_refusals() {
        let cut = &RPC_215[..RPC_215.len() - 20];
        assert!(parse_rpc_stats(cut.as_bytes()).is_err());
        assert!(parse_rpc_stats(format!("{RPC_215}\0").as_bytes()).is_err());
        // a missing row: the write column of pages per rpc no longer ends at 100 %
        let missing = RPC_215.replace("4:\t\t         5 100 100   |        257  99 100\n", "");
        assert!(parse_rpc_stats(missing.as_bytes()).is_err());
        // a label beyond the kept ones (folded by the Python packer)
        let big = RPC_215.replace("4:\t\t         5 100", "8192:\t\t         5 100");
        assert!(parse_rpc_stats(big.as_bytes()).is_err());
        // vendor block: four histograms
        let vendor = format!("{RPC_215}\n\t\t\tread\t\t\twrite\nRPC latency (us)      rpcs   % cum % |       rpcs   % cum %\n0:\t\t         0   0   0   |          0   0   0\n");
        assert!(parse_rpc_stats(vendor.as_bytes()).is_err());
        let huge = RPC_215.replace(
            "write RPCs in flight: 3",
            "write RPCs in flight: 99999999999999999999999",
        );
        assert!(parse_rpc_stats(huge.as_bytes()).is_err());
        let dio = RPC_215.replace("pending write", "DIO RPCs in flight: 0\npending write");
        assert_eq!(parse_rpc_stats(dio.as_bytes()).unwrap().lines, [0.0, 0.0, 3.0, 2048.0]);
    }

    #[test]
    fn stats_lines() {
        let text = "snapshot_time             1510950459.800864837 secs.nsecs\n\
start_time                1.5 secs.nsecs\n\
req_waittime              7348 samples [usec] 58 6461 2436371 1295087477\n\
req_active                7348 samples [reqs] 1 1 7348\n\
open                      136 samples [regs]\n\
d\t4\tsamples\t[usec]\t5\t6\t-7\t18446744073709551615\n\
\n";
        let stats = parse_stats(text.as_bytes()).unwrap();
        assert_eq!(stats.start_time, Some(1.5));
        let get = |name: &str| stats.counters.iter().find(|(n, _)| *n == name).unwrap().1;
        assert_eq!(
            get("req_waittime"),
            Counter {
                samples: 7348,
                values: Some((58, 6461, 2436371))
            }
        );
        assert_eq!(get("req_active").values, Some((1, 1, 7348)));
        assert_eq!(
            get("open"),
            Counter {
                samples: 136,
                values: None
            }
        );
        assert_eq!(get("d").values, Some((5, 6, -7)));
    }

    #[test]
    fn stats_padding_header_only_and_refusals() {
        let text = "snapshot_time 1.000000000 secs.nsecs\nread_bytes 3 samples [bytes] 1 2 4 6\n";
        let padded = format!("\0\0{text}\0\0\0");
        assert_eq!(parse_stats(padded.as_bytes()), parse_stats(text.as_bytes()));
        assert!(parse_stats(text.replace("1 2 4", "1\x002 4").as_bytes()).is_err());
        let header_only = parse_stats(b"snapshot_time 1.000000000 secs.nsecs\n").unwrap();
        assert!(header_only.counters.is_empty());
        for bad in [
            "",
            "\0\0",
            "8\n",
            "snapshot_time 1.000000000 secs.nsecs\nreq_wait",    // cut
            "read_bytes 3 samples [bytes] 1 2\n",                // two numbers
            "read_bytes 3 samples [bytes] 1 2 3 -4\n",           // signed sumsq
            "read_bytes 99999999999999999999 samples [bytes]\n", // beyond 64 bits
            "read_bytes 3 samples [bytes] 1 2 3\n...\n",         // an elided line
            "read_bytes 3 samples [bytes] 1 2 3\r\n",            // CR
            " read_bytes 3 samples [bytes] 1 2 3\n",             // leading blank
            "read_bytes 3 samples [bytes]1 2 3\n",
        ] {
            assert!(parse_stats(bad.as_bytes()).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn header_forms() {
        for (line, name, value) in [
            (
                "snapshot_time             1718000000.123456789 secs.nsecs",
                0,
                1718000000.123456789,
            ),
            (
                "snapshot_time:            1718000000.123456789 secs.nsecs",
                0,
                1718000000.123456789,
            ),
            (
                "snapshot_time            : 1718000000.123456789 secs.nsecs",
                0,
                1718000000.123456789,
            ),
            (
                "snapshot_time:         1510950459.787901292 (secs.nsecs)",
                0,
                1510950459.787901292,
            ),
            ("snapshot_time: 1790276932.811612826", 0, 1790276932.811612826),
            ("start_time:         1510950459.5 (secs.usecs)", 1, 1510950459.000005),
            ("elapsed_time 86400", 2, 86400.0),
        ] {
            assert_eq!(header_line(line), Some((name, value)), "{line}");
        }
        for line in [
            "snapshot_time",
            "snapshot_time: 5. secs.nsecs",
            "snapshot_time 5 secs",
            "start_timex 5",
        ] {
            assert_eq!(header_line(line), None, "{line}");
        }
        // numbers beyond f64: not a time (the Python reader reports them)
        let huge = "9".repeat(400);
        for line in [format!("start_time: {huge} secs.nsecs"), format!("start_time: {huge}.5 secs.usecs")] {
            assert_eq!(header_line(&line), None, "{line}");
        }
    }

    #[test]
    fn pfsim_headers_parse() {
        for style in [TextStyle::V2_15_0, TextStyle::V2_15_5, TextStyle::V2_15_7] {
            for colon in [false, true] {
                let text = stats_header(style, 5_000_000_001, 1_500_000_000, colon);
                let stats = parse_stats(text.as_bytes()).unwrap();
                assert_eq!(stats.start_time, Some(1.5));
            }
        }
    }

    #[test]
    fn numbers_up_to_u64() {
        let mut at = 0;
        assert_eq!(number(b"18446744073709551615:", &mut at), Some(u64::MAX));
        assert_eq!(at, 20);
        for (text, value) in [
            (&b"0"[..], Some(0)),
            (b"9999999999999999999", Some(9_999_999_999_999_999_999)),
            (b"18446744073709551616", None),
            (b"x", None),
        ] {
            assert_eq!(number(text, &mut 0), value, "{text:?}");
        }
    }

    #[test]
    fn scalars() {
        assert_eq!(parse_scalar(b"8\n"), Ok(Scalar::Int(8)));
        assert_eq!(parse_scalar(b"8\n\0\0"), Ok(Scalar::Int(8)));
        assert_eq!(parse_scalar(b"-0\n"), Ok(Scalar::Int(0)));
        assert_eq!(
            parse_scalar(b"crc32 adler [crc32c] \n"),
            Ok(Scalar::Text("crc32 adler [crc32c]".into()))
        );
        for bad in [
            &b""[..],
            b" \n",
            b"\0",
            b"1\n2\n",
            b"1\x002\n",
            b"99999999999999999999\n",
            b"caf\xc3\xa9\n",
        ] {
            assert!(parse_scalar(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn reader_reads_and_refuses_per_device() {
        let dir = std::env::temp_dir().join(format!("pfsim-probe-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let write = |name: &str, text: &str| {
            let path = dir.join(name);
            std::fs::write(&path, text).unwrap();
            path.to_string_lossy().into_owned()
        };
        let rpc = write("rpc_stats", RPC_215);
        let stats = write(
            "stats",
            "snapshot_time 1.000000000 secs.nsecs\nost_write 2 samples [usec] 1 5 6 26\n",
        );
        let mppr = write("max_pages_per_rpc", "1024\n");
        let kind = write("checksum_type", "crc32 [adler]\n");
        let bad = write("bad_stats", "garbage\n");
        let llite = write(
            "llite_stats",
            "snapshot_time 1.000000000 secs.nsecs\nwrite_bytes 1 samples [bytes] 7 7 7 49\n",
        );
        let files = |extra: Vec<(&str, String)>| -> Vec<(String, String)> {
            let mut out = vec![
                ("rpc_stats".to_string(), rpc.clone()),
                ("max_pages_per_rpc".to_string(), mppr.clone()),
            ];
            out.extend(extra.into_iter().map(|(p, path)| (p.to_string(), path)));
            out
        };
        let mut reader = Reader::new(
            vec![
                (
                    true,
                    files(vec![("stats", stats.clone()), ("max_dirty_mb", kind.clone())]),
                ),
                (true, files(vec![("stats", bad)])),
                (
                    true,
                    files(vec![("stats", dir.join("absent").to_string_lossy().into_owned())]),
                ),
                (false, vec![("stats".to_string(), llite)]),
            ],
            vec!["max_pages_per_rpc".to_string(), "max_dirty_mb".to_string()],
        );
        let got = reader.read();
        assert_eq!(got.status, vec![0, 1, 2, 0]);
        assert_eq!(got.tunables[0], 1024.0);
        assert!(got.tunables[1].is_nan());
        assert_eq!(got.text_cells, vec![(0, 1)]);
        assert_eq!(
            got.scalars[0][1],
            (
                reader.param_names().iter().position(|n| n == "max_dirty_mb").unwrap(),
                Scalar::Text("crc32 [adler]".into())
            )
        );
        assert!(got.scalars[1].is_empty());
        assert_eq!(got.rpc_present, vec![1, 0, 0]);
        assert_eq!(reader.osc_vocabulary.names, vec!["ost_write".to_string()]);
        let (line, samples, valued, _, hi, sum) = got.osc_stats.dense(1);
        assert_eq!((line, samples, valued), (vec![1, 0, 0], vec![2, 0, 0], vec![1, 0, 0]));
        assert_eq!((hi[0], sum[0]), (5, 6));
        assert_eq!(got.llite_stats.present, vec![1]);
        assert_eq!(reader.llite_vocabulary.names, vec!["write_bytes".to_string()]);
        assert_eq!(got.refused.len(), 2);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

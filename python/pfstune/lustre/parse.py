"""Parsers for the text of a Lustre client's statistics and tunable files, one per format.

Each parser reads one format of docs/lustre-client.md §1 and accepts the variants that real
clients print (§0, §B): the 2.10 one-line header ``snapshot_time: ... (secs.nsecs)``, the 2.15.0
``snapshot_time            :`` and the 2.15.2+ ``snapshot_time:`` three-line headers, the units
``usec``/``usecs``/``regs``/..., lines without ``sumsq``, count-only lines, ``sumsq`` printed
unsigned above 2^63 (kept as an exact Python int), the vendor ``DIO RPCs in flight:`` line, vendor
histogram blocks, literal ``%%`` titles and the 2.10 ``0:`` rpcs-in-flight row.

=========================  ===================================================================
:func:`parse_stats`        ``osc.*.stats``, ``llite.*.stats``, ``llite.*.read_ahead_stats``
:func:`parse_rpc_stats`    ``osc.*.rpc_stats``
:func:`parse_import`       ``osc.*.import`` (and the YAML-like ``state`` file)
:func:`parse_scalar`       one-line files: ``max_rpcs_in_flight``, ``checksum_type``, ...
:func:`parse_key_values`   ``name: value`` files: ``max_cached_mb``, ``osc_cached_mb``, ...
:func:`parse_osc_stats`    ``osc.*.osc_stats`` (a header, then ``name<TAB><TAB>value`` lines)
=========================  ===================================================================

Damage is handled so that a number is never wrong:

- A final line without its newline is a file cut off mid-line (every line Lustre prints ends
  with ``\\n``), so it is dropped rather than read: ``... 4096 4194304 652`` would otherwise pass
  for a complete counter with the wrong sum.  :func:`parse_scalar` is the exception: a one-line
  value has no newline in ``lctl get_param`` output, and sysfs reads of it are atomic.
- NUL bytes at the start or end of the text or of a line (buffer padding) are stripped; a line
  with a NUL *between* characters is garbled (it may join two numbers) and is skipped.
- Any other line the format does not allow is skipped.

Every skipped line is described in the optional ``problems`` list a parser is given, so a caller
that must not use partial data (the prober: a stats file missing a line reads as a zero counter)
can leave the file out.  Text that is not the format at all (empty, only garbage, cut before its
first complete record) raises :class:`ParseError`.

The agent's own probe (:meth:`pfstune.lustre.snapshot.Prober.probe_table`) reads with the Rust
extension (``pfsim/src/probe.rs``), whose parsers accept a strict subset of these formats and
give the same numbers on it; a device with anything else comes back to these parsers.

Speed (the agent reads 1,000 OSCs every 0.5 s): text laid out exactly as Lustre prints it goes
through a fast path that scans the whole file with C-level ``str``/``re`` operations and checks
that every line was accounted for; anything else falls back to the line-by-line readers, which
give the same result on clean text (tested) and say what they skipped.  No exception is raised
on the normal path.  Measured with ``timeit`` (best of 9 x 2,000 calls, CPU time), Python 3.11,
on a 2-core machine shared with other jobs (load average ~2, so the ranges are run-to-run spread):

- :func:`parse_stats`: 35-42 µs per call on pfsim 2.15.5 ``osc.*.stats`` of a busy OSC (6
  counter lines), 44-52 µs on the 2.10 fixture (9 lines);
- :func:`parse_rpc_stats`: 100-118 µs per call on pfsim 2.15.5 text (3 histograms, 35 rows),
  130-157 µs on the 2.10 fixture (56 rows); on 2026-11-22, with the text split once at the
  column lines and the histogram labels converted once per layout, 89 µs (was 113 in the same
  run) and 111 µs (was 112);
- :func:`parse_import`: 105-155 µs (41 lines; not in the agent's minimal set).

>>> header, counters = parse_stats(
...     "snapshot_time             1718000000.123456789 secs.nsecs\\n"
...     "ost_write                 259 samples [usec] 9001 15954 3168136 39709227448\\n"
...     "ioctl                     4 samples [reqs]\\n")
>>> header["snapshot_time"], counters["ost_write"]["sum"], counters["ioctl"]["min"]
(1718000000.1234567, 3168136, None)
>>> parse_scalar("8\\n"), parse_scalar("crc32 adler [crc32c] \\n")
(8, 'crc32 adler [crc32c]')
"""

from __future__ import annotations

import math
import re
from typing import Any

from pfstune.errors import PfstuneError
from pfstune.lustre.types import Counter, Header, Histogram, HistogramPair, RpcStats


class ParseError(PfstuneError):
    """Text that is not the format a parser reads at all (empty, garbage, cut before any record).

    ``fmt`` names the format (``"stats"``, ``"rpc_stats"``, ...), ``reason`` says what was wrong,
    ``line`` is the offending line where there is one.
    """

    def __init__(self, fmt: str, reason: str, line: str | None = None) -> None:
        """Describe why the text is not a ``fmt`` file."""
        self.fmt = fmt
        self.reason = reason
        self.line = line
        where = f": {line[:80]!r}" if line is not None else ""
        super().__init__(f"not a Lustre {fmt} file: {reason}{where}")


# --- shared pieces ---------------------------------------------------------------------------
#
# Every pattern is ASCII (Lustre prints ASCII; ``\d`` would take other scripts' digits) and
# never puts two repetitions that can match the same characters side by side (``\s*:?\s*``): on
# a long run of blanks those backtrack in quadratic time, and a damaged file may hold one.

#: ``snapshot_time[ ]*[:] SECS[.FRAC] [secs.nsecs|(secs.nsecs)|(secs.usecs)]``, any header style.
_HEADER = re.compile(
    r"\s*(snapshot_time|start_time|elapsed_time)(?:\s*:)?\s*(\d+)(?:\.(\d+))?(?:\s*(\(?secs\.(?:nsecs|usecs)\)?))?\s*$",
    re.ASCII,
)
_INT = re.compile(r"-?\d+", re.ASCII)
_FLOAT = re.compile(r"-?\d+\.\d+", re.ASCII)


def _split_lines(text: str, problems: list[str]) -> list[str]:
    """The complete lines of ``text``: NUL padding removed, a final line without newline dropped."""
    if "\x00" in text:
        text = _strip_nuls(text, problems)
    lines = text.split("\n")
    last = lines.pop()  # "" when the text ends with a newline
    if last.strip():
        problems.append(f"last line has no newline (file cut off?), ignored: {last[:80]!r}")
    return lines


def _strip_nuls(text: str, problems: list[str]) -> str:
    # Padding NULs (a fixed-size buffer read whole) sit at the ends; a NUL between two
    # characters means the line is garbled, and removing it could join two numbers.
    text = text.strip("\x00")
    if "\x00" not in text:
        return text
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if "\x00" in line:
            inner = line.strip("\x00")
            if "\x00" in inner:
                problems.append(f"NUL byte inside a line, ignored: {line[:80]!r}")
                inner = ""
            lines[i] = inner
    return "\n".join(lines)


def _header_value(match: re.Match[str]) -> float | None:
    """A header line's seconds; None for a number no float holds (garbage, never a time)."""
    whole, frac, unit = match.group(2), match.group(3), match.group(4)
    if frac and unit is not None and "usecs" in unit:
        # Old kernels print "%lu.%lu secs.usecs" without zero padding: ".5" is 5 µs, not 0.5 s.
        value = float(whole) + float(frac) / 1e6
    else:
        value = float(f"{whole}.{frac}") if frac else float(whole)
    return value if math.isfinite(value) else None


def _set_header(header: Header, match: re.Match[str], line: str, problems: list[str]) -> None:
    value = _header_value(match)
    if value is None:
        problems.append(f"header value out of range, ignored: {line[:80]!r}")
    else:
        header[match.group(1)] = value  # type: ignore[literal-required]


def _require_text(fmt: str, text: str) -> None:
    if not text.strip("\x00 \t\r\n"):
        raise ParseError(fmt, "empty")


# --- stats -----------------------------------------------------------------------------------

#: ``NAME COUNT samples [UNIT]`` then nothing, ``MIN MAX SUM`` or ``MIN MAX SUM SUMSQ``.
_COUNTER = re.compile(
    r"(\S+)\s+(\d+)\s+samples\s+\[([^\]\s]*)\](?:\s+(-?\d+)\s+(-?\d+)\s+(-?\d+)(?:\s+(\d+))?)?\s*$", re.ASCII
)


# The fast paths read text laid out exactly as Lustre prints it with one regex scan of the whole
# text (in C) instead of a Python loop over lines.  They give up (return None) on anything else,
# and the line-by-line readers below then parse it tolerantly and say what they skipped.  The
# patterns never match a newline (no \\s), so each match is one whole line, and counting matches
# against newlines proves that every line was read.
_HEADER_FAST = re.compile(
    r"^(snapshot_time|start_time|elapsed_time)(?: *:)? +(\d+\.\d{9}) (?:secs\.nsecs|\(secs\.nsecs\))$", re.M | re.ASCII
)
_COUNTER_FAST = re.compile(r"^(\S+) +(\d+) samples \[(\w*)\](?: (-?\d+) (-?\d+) (-?\d+)(?: (\d+))?)?$", re.M | re.ASCII)


def _stats_fast(text: str) -> tuple[Header, dict[str, Counter]] | None:
    if not text.endswith("\n") or "\x00" in text:
        return None
    found = _COUNTER_FAST.findall(text)
    headers = _HEADER_FAST.findall(text)
    if not found or len(found) + len(headers) != text.count("\n"):
        return None
    header: Header = {}
    for name, value in headers:
        header[name] = float(value)  # type: ignore[literal-required]
    counters: dict[str, Counter] = {}
    for name, count, unit, lo, hi, total, sumsq in found:
        counters[name] = {
            "samples": int(count),
            "unit": unit,
            "min": int(lo) if lo else None,
            "max": int(hi) if hi else None,
            "sum": int(total) if total else None,
            "sumsq": int(sumsq) if sumsq else None,
        }
    return header, counters


def parse_stats(text: str, problems: list[str] | None = None) -> tuple[Header, dict[str, Counter]]:
    """Parse a ``stats``-format file (``osc.*.stats``, ``llite.*.stats``, ``read_ahead_stats``).

    Returns the header (``snapshot_time``, ``start_time``, ``elapsed_time`` as far as printed)
    and the counters by name, in file order.  Lustre does not print zero-count counters, so a
    counter that is absent has count 0.  Lines that are not counters or header lines (vendor
    text, an elided ``...``) are skipped and described in ``problems``.  Raises
    :class:`ParseError` if there is neither a header nor a counter, or no counter but damage.
    """
    fast = _stats_fast(text)
    if fast is not None:
        return fast
    probs: list[str] = [] if problems is None else problems
    _require_text("stats", text)
    start = len(probs)
    header: Header = {}
    counters: dict[str, Counter] = {}
    match_counter = _COUNTER.match
    for line in _split_lines(text, probs):
        m = match_counter(line)
        if m is not None:
            name, count, unit, lo, hi, total, sumsq = m.groups()
            counters[name] = {
                "samples": int(count),
                "unit": unit,
                "min": None if lo is None else int(lo),
                "max": None if hi is None else int(hi),
                "sum": None if total is None else int(total),
                "sumsq": None if sumsq is None else int(sumsq),
            }
            continue
        if not line or line.isspace():
            continue
        h = _HEADER.match(line)
        if h is not None:
            _set_header(header, h, line, probs)
        else:
            probs.append(f"not a counter line, ignored: {line[:80]!r}")
    if not counters and (not header or len(probs) > start):
        raise ParseError("stats", "no counter lines" + (f" ({probs[start]})" if len(probs) > start else ""))
    return header, counters


# --- rpc_stats -------------------------------------------------------------------------------

#: ``LABEL:<TAB><TAB>RPCS PCT CUM | RPCS PCT CUM`` (the two-column row of the three histograms).
_ROW2 = re.compile(r"\s*(\d+):\s+(\d+)\s+(\d+)\s+(\d+)\s+\|\s+(\d+)\s+(\d+)\s+(\d+)\s*$", re.ASCII)
#: ``LABEL:<TAB><TAB>RPCS PCT CUM`` (one-column blocks: mdc ``modify``).
_ROW1 = re.compile(r"\s*(\d+):\s+(\d+)\s+(\d+)\s+(\d+)\s*$", re.ASCII)
#: A block title: ``pages per rpc         rpcs   % cum % |       rpcs   % cum %`` (``%%`` in vendor text).
_TITLE = re.compile(r"([A-Za-z](?:[^|%]*[^|%\s])?)\s+(?:rpcs|count)\s+%{1,2}\s+cum\s+%{1,2}\s*(\|)?", re.ASCII)
#: The ``<TAB><TAB><TAB>read<TAB><TAB><TAB>write`` (or ``modify``) line above a title.
_COLUMNS = re.compile(r"\s*(?:read\s+write|modify)\s*$", re.ASCII)
#: ``read RPCs in flight:  0`` and the other instantaneous lines.
_INSTANT = re.compile(r"([A-Za-z](?:[A-Za-z_ ]*[A-Za-z_])?)\s*:\s*(-?\d+)\s*$", re.ASCII)

_INSTANT_KEYS = {
    "read rpcs in flight": "read_rpcs_in_flight",
    "write rpcs in flight": "write_rpcs_in_flight",
    "dio rpcs in flight": "dio_rpcs_in_flight",
    "pending write pages": "pending_write_pages",
    "pending read pages": "pending_read_pages",
}
_BLOCKS = {"pages per rpc": "pages_per_rpc", "rpcs in flight": "rpcs_in_flight", "offset": "offset"}


class _Block:
    """One two-column histogram being read, with what is needed to check it is complete."""

    __slots__ = ("cum_read", "cum_write", "name", "pair", "total_read", "total_write")

    def __init__(self, name: str) -> None:
        self.name = name
        self.pair: HistogramPair = {"read": {}, "write": {}}
        self.total_read = self.total_write = 0
        self.cum_read = self.cum_write = -1

    def check(self, problems: list[str]) -> None:
        # Lustre prints rows up to the last non-empty bucket of either column, so the last row
        # has cum % == 100 in every non-empty column (pct() of cum == total).  Anything else
        # means rows are missing: the file was cut at a line boundary.
        if not self.pair["read"]:
            problems.append(f"histogram {self.name!r} has no rows")
            return
        for total, cum, column in (
            (self.total_read, self.cum_read, "read"),
            (self.total_write, self.cum_write, "write"),
        ):
            if cum != (100 if total else 0):
                problems.append(f"histogram {self.name!r} {column} column ends at cum {cum}% (rows missing?)")


#: Each block's title line as Lustre prints it (after the ``read``/``write`` column line).
_TITLES_FAST = tuple((key, f"{title:<21} rpcs   % cum % |       rpcs   % cum %\n") for title, key in _BLOCKS.items())
#: What precedes each block: the end of the previous line, a blank line, the column line.
_COLUMNS_TAIL = "\n\n\t\t\tread\t\t\twrite\n"
#: A histogram's label column as printed ("1:2:4:") -> the labels as ints: the same every probe
#: (rows are printed up to the last non-empty bucket), so they are converted once.
_LABELS: dict[str, tuple[int, ...]] = {}


def _histogram_fast(rows: str) -> HistogramPair | None:
    # Rows as printed: "LABEL:<TAB><TAB>%10lu %3u %3u   | %10lu %3u %3u", 8 fields each.  Splitting
    # the whole block at once and slicing columns keeps the loop in C; the checks make sure every
    # line had that shape: a "|" in every 5th field, labels "N:", digits everywhere else.
    fields = rows.split()
    n = rows.count("\n") + 1
    if len(fields) != 8 * n or fields[4::8].count("|") != n or rows.count("|") != n or rows.count(":") != n:
        return None  # (a "|" or ":" inside a number field would pass the digit test below)
    digits = "".join(fields).replace("|", "").replace(":", "")
    if not (digits.isascii() and digits.isdigit()):
        return None
    printed = "".join(fields[0::8])
    keys = _LABELS.get(printed)
    if keys is None:
        labels = printed.split(":")
        if len(labels) != n + 1 or labels[-1] or not all(labels[:-1]):
            return None
        keys = tuple(map(int, labels[:-1]))
        if len(_LABELS) >= 1024:  # bounded: label columns come in few shapes
            _LABELS.clear()
        _LABELS[printed] = keys
    counts = list(map(int, fields[1::4]))  # read, write of row 0, read, write of row 1, ...
    reads, writes = counts[0::2], counts[1::2]
    # The last row reaches cum 100 % in every non-empty column (see _Block.check).
    if int(fields[-5]) != (100 if any(reads) else 0) or int(fields[-1]) != (100 if any(writes) else 0):
        return None
    return {"read": dict(zip(keys, reads, strict=True)), "write": dict(zip(keys, writes, strict=True))}


_HEADER_NAMES = ("snapshot_time", "start_time", "elapsed_time")
_COLUMNS_LINE = "\t\t\tread\t\t\twrite"


def _rpc_stats_fast(text: str) -> RpcStats | None:
    if not text.endswith("\n") or "\x00" in text:
        return None
    # The header and instantaneous lines, then the three blocks, each after a blank line and
    # the column line, in Lustre's order.
    head, *blocks = text.split(_COLUMNS_TAIL)
    if len(blocks) != len(_TITLES_FAST):
        return None
    result: RpcStats = {}
    header: Header = {}
    for line in head.split("\n"):
        name, _, value = line.partition(":")
        key = _INSTANT_KEYS.get(name.lower())
        if key is not None:
            value = value.strip()
            if not (value.isascii() and value.isdigit()):
                return None
            result[key] = int(value)  # type: ignore[literal-required]
        elif name.startswith(_HEADER_NAMES):
            parts = value.split()
            if len(parts) == 2 and parts[1] == "secs.nsecs" and name.rstrip() in _HEADER_NAMES:
                whole, dot, frac = parts[0].partition(".")  # "SECS.NSECS secs.nsecs": as _header_value reads it
                if dot and whole.isascii() and whole.isdigit() and frac.isascii() and frac.isdigit():
                    seconds = float(parts[0])
                    if not math.isfinite(seconds):
                        return None  # the line-by-line reader says why
                    header[name.rstrip()] = seconds  # type: ignore[literal-required]
                    continue
            h = _HEADER.match(line)
            parsed = None if h is None else _header_value(h)
            if h is None or parsed is None:
                return None
            header[h.group(1)] = parsed  # type: ignore[literal-required]
        elif line and line != _COLUMNS_LINE:
            return None
    for i, ((key, title), block) in enumerate(zip(_TITLES_FAST, blocks, strict=True)):
        if not block.startswith(title):
            return None
        rows = block[len(title) : -1 if i == len(blocks) - 1 else None]  # the last ends the text's newline
        pair = _histogram_fast(rows) if rows else None
        if pair is None:
            return None
        result[key] = pair  # type: ignore[literal-required]
    if header:
        result["header"] = header
    return result


def parse_rpc_stats(text: str, problems: list[str] | None = None) -> RpcStats:
    """Parse ``osc.*.rpc_stats``: header, instantaneous lines and the three histograms.

    Histograms map each printed row label (1, 2, 4, ... pages; in-flight count; page offset) to
    its RPC count, zero rows included, for the read and the write column.  Vendor blocks
    (``RPC latency (us)``) and one-column blocks (mdc ``modify``) are recognised and skipped.
    A histogram that is missing, or whose last row does not reach cum 100 %, is reported in
    ``problems`` (rows are missing).  Raises :class:`ParseError` if there is neither an
    instantaneous line nor a histogram.
    """
    fast = _rpc_stats_fast(text)
    if fast is not None:
        return fast
    probs: list[str] = [] if problems is None else problems
    _require_text("rpc_stats", text)
    result: RpcStats = {}
    header: Header = {}
    blocks: dict[str, _Block] = {}
    block: _Block | None = None
    in_block = False  # inside some block, known or not (rows of unknown blocks are skipped)
    one_column = False
    match_row = _ROW2.match
    for line in _split_lines(text, probs):
        m = match_row(line)
        if m is not None:
            if block is not None and not one_column:
                label = int(m.group(1))
                r, w = int(m.group(2)), int(m.group(5))
                block.pair["read"][label] = r
                block.pair["write"][label] = w
                block.total_read += r
                block.total_write += w
                block.cum_read, block.cum_write = int(m.group(4)), int(m.group(7))
            elif not in_block or one_column:
                probs.append(f"histogram row outside a two-column histogram, ignored: {line[:80]!r}")
            continue
        if not line or line.isspace():
            continue
        if _ROW1.match(line) is not None:
            if not (in_block and one_column):
                probs.append(f"one-column row outside a one-column histogram, ignored: {line[:80]!r}")
            continue
        h = _HEADER.match(line)
        if h is not None:
            _set_header(header, h, line, probs)
            continue
        t = _TITLE.match(line)
        if t is not None:
            if block is not None:
                block.check(probs)
            in_block, one_column = True, t.group(2) is None
            key = _BLOCKS.get(t.group(1).strip().lower())
            block = None
            if key is not None and not one_column:
                if key in blocks:
                    probs.append(f"histogram {key!r} printed twice, second one ignored")
                else:
                    block = blocks[key] = _Block(key)
            continue
        i = _INSTANT.match(line)
        if i is not None:
            # An instantaneous line ends the previous histogram (mdc files print them after one).
            if block is not None:
                block.check(probs)
            block, in_block = None, False
            ikey = _INSTANT_KEYS.get(i.group(1).strip().lower())
            if ikey is not None:
                result[ikey] = int(i.group(2))  # type: ignore[literal-required]
            continue
        if _COLUMNS.match(line) is None:
            probs.append(f"not an rpc_stats line, ignored: {line[:80]!r}")
    if block is not None:
        block.check(probs)
    if not blocks and not any(key in result for key in _INSTANT_KEYS.values()):
        raise ParseError("rpc_stats", "no histogram and no 'RPCs in flight' line")
    for key in _BLOCKS.values():
        if key in blocks:
            result[key] = blocks[key].pair  # type: ignore[literal-required]
        else:
            probs.append(f"histogram {key!r} missing (file cut off?)")
    if header:
        result["header"] = header
    return result


def histogram_total(histogram: Histogram) -> int:
    """The number of RPCs a histogram column counts (the sum of its rows)."""
    return sum(histogram.values())


# --- import ----------------------------------------------------------------------------------


def _atom(text: str) -> Any:
    # Decimal integers become ints and "877.46" a float; hex masks ("0x20405af0e3440478"),
    # versions ("2.15.5.0") and values with units ("6054 usec") stay text, as printed.
    if _INT.fullmatch(text):
        return int(text)
    if _FLOAT.fullmatch(text):
        return float(text)
    return text


def _flow_value(text: str) -> Any:
    if text.startswith("["):
        if not text.endswith("]"):
            raise ValueError("list without its closing ']'")
        inner = text[1:-1].strip()
        return [_atom(item.strip()) for item in inner.split(",")] if inner else []
    return _atom(text)


def parse_import(text: str, problems: list[str] | None = None) -> dict[str, Any]:
    """Parse the YAML-like ``osc.*.import`` file into nested dicts (also reads ``state``).

    ``key: value`` lines become dict entries, ``key:`` followed by deeper lines a nested dict
    (or a list if those lines start with ``- ``), ``[ a, b ]`` a list.  Decimal numbers become
    ints (``MB_per_sec: 877.46`` a float); hex masks, versions and values with a unit stay text
    exactly as printed: ``"avg_waittime": "6054 usec"``, ``"idle": "0 sec"`` (use
    :func:`split_unit` for the number; the unit changed from ``usec`` to ``usecs`` in 2.15.7).
    A ``key:`` with nothing under it is None.

    This is a small indentation parser rather than ``yaml.safe_load``: it is ~20x faster (the
    agent reads an import per OSC per tick), it keeps hex masks and versions as printed (YAML
    1.1 would turn ``0x...`` into an int), and it reads vendor or damaged text line by line
    instead of rejecting the whole file on the first line that is not valid YAML.  Lines that
    do not fit are skipped and described in ``problems``; :class:`ParseError` if no entry parses.
    """
    probs: list[str] = [] if problems is None else problems
    _require_text("import", text)
    root: dict[str, Any] = {}
    # Open containers: [owner indent, indent of its children (None until the first), container].
    stack: list[list[Any]] = [[-1, None, root]]
    pending: tuple[int, dict[str, Any], str] | None = None  # a "key:" whose children come next
    for line in _split_lines(text, probs):
        content = line.strip()
        if not content:
            continue
        indent = len(line) - len(line.lstrip())
        is_item = content.startswith("-")
        is_entry = ":" in content and bool(content.partition(":")[0].strip())
        if not (is_item or is_entry):
            # judged before it may close the open containers: a garbage line at a smaller
            # indent would otherwise orphan every line after it
            probs.append(f"not a 'key: value' or '- item' line, ignored: {line[:80]!r}")
            continue
        if pending is not None:
            owner_indent, parent, key = pending
            pending = None
            if indent > owner_indent:
                child: Any = [] if content.startswith("-") else {}
                parent[key] = child
                stack.append([owner_indent, indent, child])
        while stack[-1][0] >= indent:
            stack.pop()
        top = stack[-1]
        if top[1] is None:
            top[1] = indent
        elif indent != top[1]:
            probs.append(f"unexpected indentation, ignored: {line[:80]!r}")
            continue
        container = top[2]
        try:
            if isinstance(container, list):
                if not content.startswith("-"):
                    raise ValueError("not a '- item' line in a list")
                container.append(_flow_value(content[1:].strip()))
                continue
            key, sep, value = content.partition(":")
            key = key.strip()
            if not sep or not key:
                raise ValueError("not a 'key: value' line")
            value = value.strip()
            if value:
                container[key] = _flow_value(value)
            else:
                container[key] = None
                pending = (indent, container, key)
        except ValueError as err:
            probs.append(f"{err}, ignored: {line[:80]!r}")
    if not root:
        raise ParseError("import", "no 'key: value' line" + (f" ({probs[0]})" if probs else ""))
    return root


def split_unit(value: str) -> tuple[int, str] | None:
    """``"6054 usec"`` -> ``(6054, "usec")``; None if ``value`` is not ``NUMBER UNIT``.

    >>> split_unit("6054 usec"), split_unit("FULL")
    ((6054, 'usec'), None)
    """
    number, _, unit = value.partition(" ")
    if not unit or not _INT.fullmatch(number):
        return None
    return int(number), unit.strip()


# --- scalars and name: value files -----------------------------------------------------------


def parse_scalar(text: str) -> int | str:
    """Parse a one-line file: a decimal integer as int, anything else as its stripped text.

    ``"1024\\n"`` -> 1024, ``"crc32 adler [crc32c] \\n"`` -> ``"crc32 adler [crc32c]"``.
    Hex and other text stay strings.  Raises :class:`ParseError` if the text is empty (a write
    in progress), has more than one line, or has a NUL byte between characters.
    """
    value = text.strip("\x00").strip()
    if not value:
        raise ParseError("scalar", "empty")
    if "\n" in value:
        raise ParseError("scalar", "more than one line", value.partition("\n")[0])
    if "\x00" in value:
        raise ParseError("scalar", "NUL byte inside the value", value)
    if _INT.fullmatch(value):
        return int(value)
    return value


#: ``name: value`` (max_cached_mb) or ``name<TAB><TAB>value`` (osc_stats); names may hold spaces.
_KEY_VALUE = re.compile(r"\s*([A-Za-z_](?:[\w ]*\w)?)(?:\s*:\s*|\s+)(-?\d+)\s*$", re.ASCII)


def _key_values(fmt: str, text: str, problems: list[str] | None) -> tuple[Header, dict[str, int]]:
    probs: list[str] = [] if problems is None else problems
    _require_text(fmt, text)
    start = len(probs)
    header: Header = {}
    values: dict[str, int] = {}
    for line in _split_lines(text, probs):
        m = _KEY_VALUE.match(line)
        if m is not None:
            values[m.group(1)] = int(m.group(2))
            continue
        if not line or line.isspace():
            continue
        h = _HEADER.match(line)
        if h is not None:
            _set_header(header, h, line, probs)
        else:
            probs.append(f"not a 'name: number' line, ignored: {line[:80]!r}")
    if not values:
        raise ParseError(fmt, "no 'name: number' line" + (f" ({probs[start]})" if len(probs) > start else ""))
    return header, values


def parse_key_values(text: str, problems: list[str] | None = None) -> dict[str, int]:
    """Parse a file of ``name: value`` lines (``max_cached_mb``, ``osc_cached_mb``, ...).

    Also reads ``name<TAB><TAB>value`` lines and skips a stats header, so it reads the body of
    ``osc_stats`` too.  Names are kept as printed (``statahead total``).  Lines whose value is
    not an integer are skipped and described in ``problems``; :class:`ParseError` if none parses.

    >>> parse_key_values("users: 1\\nmax_cached_mb: 64230\\nused_mb: 1250\\n")
    {'users': 1, 'max_cached_mb': 64230, 'used_mb': 1250}
    """
    return _key_values("name: value", text, problems)[1]


def parse_osc_stats(text: str, problems: list[str] | None = None) -> tuple[Header, dict[str, int]]:
    """Parse ``osc.*.osc_stats``: the header and the ``lockless_*_bytes`` values."""
    return _key_values("osc_stats", text, problems)

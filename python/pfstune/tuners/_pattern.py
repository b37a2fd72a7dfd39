"""Access-pattern detection from one interval's feature row, for tuners that learn per pattern.

Seed 004's bandit keeps one set of arms per access pattern (operation, spatiality, request
size).  At the I/O forwarding layer the offsets of every request are visible; a Lustre client's
statistics only give per-interval sums, so the pattern is inferred from them:

- **operation**: the interval's dominant operation (:func:`pfstune.features.dominant_op`, the
  same rule that picks DIAL's model); an idle interval has no pattern.
- **request size**: the mean application (llite) request of that operation, in three classes:
  ``small`` below 64 KiB, ``medium`` below 1 MiB, ``large`` from 1 MiB.  Without llite
  statistics (debugfs unreadable) the pattern is the operation alone,
  ``<op>/unknown/unknown``: the mean RPC size would stand in for the request size, but the
  configuration under test decides it, and a context that moves with the arm credits the
  arm's reward to another pattern (a bandit then never stops exploring).
- **spatiality**: whether the client merged requests into larger RPCs.  Sequential requests
  are merged (writes in the dirty cache, reads by read-ahead), random ones are not, so a mean
  RPC at least 1.5 times the mean request means ``seq``; a smaller one while the request is
  well below the RPC size limit (so it could have been merged) means ``rand``.  When requests are at
  least as large as the RPC limit neither can be seen (every RPC is full either way); the
  OSC's last detected spatiality is kept, ``seq`` if none was detected yet.

The detection reads only what the interval's configuration does not decide (request sizes,
merging), except in that last case, which is why it falls back to history there.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from pfstune.features import dominant_op

#: Request-size class limits (bytes): below the first "small", below the second "medium".
SIZE_LIMITS = (64 * 1024, 1024 * 1024)
#: A mean RPC this many times the mean request means the client merged requests.
MERGED = 1.5
_PAGE = 4096


def _value(metrics: Mapping[str, float], name: str) -> float:
    value = metrics.get(name)
    return math.nan if value is None else float(value)


def _mean(metrics: Mapping[str, float], prefix: str) -> float:
    total = _value(metrics, f"{prefix}.samples_sum")
    count = _value(metrics, f"{prefix}.no_of_samples")
    return total / count if count > 0 and total > 0 else math.nan


def size_class(request_bytes: float) -> str:
    """``small``, ``medium`` or ``large`` for a mean request of ``request_bytes`` (``unknown``: NaN)."""
    if math.isnan(request_bytes):
        return "unknown"
    if request_bytes < SIZE_LIMITS[0]:
        return "small"
    return "medium" if request_bytes < SIZE_LIMITS[1] else "large"


def access_pattern(metrics: Mapping[str, float], last_spatiality: str | None = None) -> str | None:
    """``"<op>/<seq|rand>/<size class>"`` of the interval, or None when it moved no data.

    ``last_spatiality`` is what was detected for the same OSC before; it is kept when this
    interval cannot tell (see the module docstring).

    >>> access_pattern({"ost_write_rpc_bytes_data.samples_sum": 4194304, "ost_write_rpc_bytes_data.no_of_samples": 1,
    ...                 "ost_read_rpc_bytes_data.samples_sum": 0,
    ...                 "llite_stats_write_bytes.samples_sum": 4194304, "llite_stats_write_bytes.no_of_samples": 512,
    ...                 "osc_rpc_configuration_current.mppr_value": 1024})
    'write/seq/small'
    """
    op = dominant_op(metrics)
    if op is None:
        return None
    rpc = _mean(metrics, f"ost_{op}_rpc_bytes_data")
    request = _mean(metrics, f"llite_stats_{op}_bytes")
    if math.isnan(request):
        return f"{op}/unknown/unknown"  # nothing the configuration does not decide (docstring)
    limit = _value(metrics, "osc_rpc_configuration_current.mppr_value") * _PAGE
    if rpc >= MERGED * request:
        spatiality = "seq"
    elif request * MERGED <= limit:  # could have been merged into larger RPCs, and was not
        spatiality = "rand"
    else:
        spatiality = last_spatiality if last_spatiality in ("seq", "rand") else "seq"
    return f"{op}/{spatiality}/{size_class(request)}"


def spatiality_of(pattern: str) -> str:
    """The ``seq``/``rand`` part of a pattern from :func:`access_pattern`."""
    return pattern.split("/")[1]

"""Saved ``lctl get_param`` output: split it into parameters, and parse it into a snapshot.

``lctl get_param`` prints each parameter as ``name=value`` when the file is one short line and
as ``name=`` followed by the file's lines otherwise (``read_param()``, lustre-client.md §2.2,
§B.5)::

    osc.testfs-OST0000-osc-ffff8881234abcd0.max_rpcs_in_flight=8
    osc.testfs-OST0000-osc-ffff8881234abcd0.rpc_stats=
    snapshot_time:            1718000000.123456789 secs.nsecs
    ...

A multi-line value runs to the next ``name=`` line.  Value lines can hold ``=`` themselves (the
``connect_flags`` file starts ``flags=0x...``) and ``key: value`` text, so a line starts a new
parameter only if what precedes its first ``=`` is a dotted lctl name with no spaces
(``kind.device.param``).  Consequence: dot-less global names (``max_dirty_mb=...``, ``version=``)
are not recognised as names; they name no OSC or llite file, so a snapshot loses nothing.

>>> values = parse_get_param("osc.fs-OST0000-osc-ffff88.max_rpcs_in_flight=8\\n"
...                          "osc.fs-OST0000-osc-ffff88.osc_cached_mb=\\nused_mb: 312\\nbusy_cnt: 0\\n")
>>> values["osc.fs-OST0000-osc-ffff88.max_rpcs_in_flight"], values["osc.fs-OST0000-osc-ffff88.osc_cached_mb"]
('8', 'used_mb: 312\\nbusy_cnt: 0\\n')
"""

from __future__ import annotations

import logging
import re
from typing import Any, cast

from pfstune.lustre.layout import parse_llite_name, parse_osc_name, split_lctl_name
from pfstune.lustre.parse import ParseError
from pfstune.lustre.snapshot import STRUCTURED_FILES, merge_param, parse_param
from pfstune.lustre.types import LliteSnapshot, OscSnapshot, Snapshot

log = logging.getLogger("pfstune.lustre")

#: ``kind.device.param=`` at the start of a line: a dotted name without spaces before the first '='.
# segments cannot hold a dot, so a line without '=' fails in linear time (with [^\s=]+ the
# nested repetition backtracked exponentially on a name of many dots)
_NAME = re.compile(r"([A-Za-z][\w-]*(?:\.[^\s=.]+)+)=", re.ASCII)


def parse_get_param(text: str) -> dict[str, str]:
    """Split saved ``lctl get_param`` output into ``{lctl name: value text}``, in order.

    A one-line value is returned without its newline (``"8"``); a multi-line value is the file
    text with its newlines (the last line keeps whether it had one, so the parsers still notice
    a cut-off file).  Lines before the first name, and lines after a one-line value that are not
    names, belong to no parameter and are ignored.  A name given twice keeps its last value.
    Raises :class:`~pfstune.lustre.parse.ParseError` if there is no ``name=`` line at all.
    """
    values: dict[str, str] = {}
    name: str | None = None
    lines: list[str] = []
    for line in text.splitlines(keepends=True):
        match = _NAME.match(line.lstrip("\x00"))
        if match is None:
            if name is not None:
                lines.append(line)
            continue
        line = line.lstrip("\x00")
        if name is not None:
            values[name] = "".join(lines)
        rest = line[match.end() :].rstrip("\r\n")
        if rest:
            values[match.group(1)] = rest
            name = None
        else:
            name, lines = match.group(1), []
    if name is not None:
        values[name] = "".join(lines)
    if not values:
        raise ParseError("lctl get_param output", "no 'name=value' or 'name=' line")
    return values


def snapshot_from_get_param(text: str, time: float = 0.0) -> Snapshot:
    """Parse saved ``lctl get_param`` output into a snapshot, with the parsers a probe uses.

    Client OSC and llite parameters are routed by their last name component as in
    :func:`pfstune.lustre.snapshot.parse_param`; other devices (mdc, server ``-osc-MDT0000``)
    and multi-line files the snapshot has no place for (``state``, ``unstable_stats``, ...) are
    skipped.  Unlike a probe of a live tree, damaged values keep the lines that are complete
    (saved text is often excerpted), with a warning on the ``pfstune.lustre`` logger; a value
    that is not its format at all is left out with a warning.  Each llite's ``osc`` lists the
    OSCs of the same mount found in the text.
    """
    oscs: dict[str, dict[str, Any]] = {}
    llites: dict[str, dict[str, Any]] = {}
    for name, value in parse_get_param(text).items():
        try:
            kind, device, param = split_lctl_name(name)
        except ValueError:
            continue
        if kind == "osc" and parse_osc_name(device) is not None:
            entry = oscs.setdefault(device, {})
        elif kind == "llite" and parse_llite_name(device) is not None:
            entry = llites.setdefault(device, {})
        else:
            continue
        param = param.rpartition(".")[2]
        if param in STRUCTURED_FILES and "\n" not in value:
            # a stats file of one line given inline (`name=header`: no counter yet, as in a fresh
            # read_ahead_stats); lctl puts it on the next line, hand-saved output may not
            value += "\n"
        if param not in STRUCTURED_FILES and "\n" in value.strip():
            log.debug("%s: a multi-line file with no place in a snapshot; skipped", name)
            continue
        problems: list[str] = []
        try:
            parts = parse_param(param, value, problems)
        except ParseError as err:
            log.warning("%s: %s; left out", name, err)
            continue
        if problems:
            log.warning("%s: %d line(s) skipped (%s)", name, len(problems), problems[0])
        merge_param(entry, parts)
    for llite, entry in llites.items():
        entry["osc"] = [osc for osc in oscs if (dev := parse_osc_name(osc)) is not None and dev.llite == llite]
    return {
        "time": time,
        "osc": {name: cast(OscSnapshot, entry) for name, entry in oscs.items()},
        "llite": {name: cast(LliteSnapshot, entry) for name, entry in llites.items()},
    }

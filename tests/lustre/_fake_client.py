"""A fake Lustre client tree for the actuator and state tests: 2.15 and 2.10 layouts, plain files.

2.15 splits an OSC across sysfs (``max_rpcs_in_flight``, ``max_dirty_mb``, ...) and procfs
(``max_pages_per_rpc``, ``import``), and keeps llite tunables in sysfs; 2.10 keeps all of them
under ``proc/fs/lustre`` (lustre-client.md §2.1).  A server-side ``-osc-MDT0000`` device is
there too, for the tests that check it is never touched.
"""

from __future__ import annotations

from pathlib import Path

OSC = "testfs-OST0000-osc-ffff88105db50000"
OSC2 = "testfs-OST0001-osc-ffff88105db50000"
SERVER_OSC = "testfs-OST0000-osc-MDT0000"
LLITE = "testfs-ffff88105db50000"

IMPORT = """\
import:
    name: {device}
    target: testfs-OST0000_UUID
    state: FULL
    connect_flags: [ write_grant, server_lock, version, request_portal, max_byte_per_rpc, grant_param ]
    connect_data:
       flags: 0x20405af0e3440478
       instance: 3
       target_version: 2.15.5.0
       initial_grant: 8437760
       max_brw_size: {brw_size}
       grant_block_size: {grant_block_size}
       grant_inode_size: 4096
       grant_max_extent_size: 67108864
       grant_extent_tax: 24576
       cksum_types: 0xf7
       max_object_bytes: 17592186040320
    import_flags: [ replayable, pingable, connect_tried ]
"""

OSC_SYSFS = {"max_rpcs_in_flight": "8\n", "max_dirty_mb": "2000\n", "short_io_bytes": "16384\n", "checksums": "1\n"}
OSC_PROCFS = {"max_pages_per_rpc": "1024\n"}
LLITE_FILES = {"max_read_ahead_mb": "1024\n", "max_read_ahead_per_file_mb": "256\n", "max_read_ahead_whole_mb": "4\n"}


def build_tree(
    root: Path,
    layout: str = "2.15",
    *,
    brw_size: int = 4 << 20,
    grant_block_size: int = 4096,
    osc_values: dict[str, str] | None = None,
) -> Path:
    """Lay out a client with two OSCs, one server OSC and one llite instance under ``root``."""
    sysfs = root / ("sys/fs/lustre" if layout == "2.15" else "proc/fs/lustre")
    procfs = root / "proc/fs/lustre"
    for device in (OSC, OSC2, SERVER_OSC):
        files = {**OSC_SYSFS, **(osc_values or {})}
        if layout == "2.10":
            files.pop("short_io_bytes", None)  # 2.10 has no short I/O
        for name, text in files.items():
            if name not in OSC_PROCFS:
                _write(sysfs / "osc" / device / name, text)
        _write(procfs / "osc" / device / "max_pages_per_rpc", files.get("max_pages_per_rpc", "1024\n"))
        _write(
            procfs / "osc" / device / "import",
            IMPORT.format(device=device, brw_size=brw_size, grant_block_size=grant_block_size),
        )
    for name, text in LLITE_FILES.items():
        _write(sysfs / "llite" / LLITE / name, text)
    return root


def tree_bytes(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` and its bytes, to show that nothing changed."""
    return {str(path.relative_to(root)): path.read_bytes() for path in sorted(root.rglob("*")) if path.is_file()}


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="ascii")

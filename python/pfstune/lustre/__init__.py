"""Reading and writing a real Lustre client: file layout, parsers, snapshots, the safe actuator.

- :mod:`pfstune.lustre.types`: the shape of a parsed snapshot (what ``pfstune lustre snapshot
  --json`` prints and what :mod:`pfstune.features` reads).
- :mod:`pfstune.lustre.layout`: where each parameter file lives (2.10 procfs-only and 2.15
  sysfs/procfs/debugfs layouts), device names, lctl names, discovery of client devices.
- :mod:`pfstune.lustre.parse`: one parser per file format.
- :mod:`pfstune.lustre.snapshot`: one probe of a client tree into a snapshot, or (what the
  agent reads, through the Rust extension) into a table.
- :mod:`pfstune.lustre.table`: parsed statistics as arrays, one row per device: what the
  features read of a probe.
- :mod:`pfstune.lustre.actuator`: allow-listed, range-checked, verified, restorable writes.
"""

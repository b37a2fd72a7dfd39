"""Where the agent reads statistics and applies configurations: a real client or pfsim.

:class:`pfstune.backends._base.Backend` is the interface; :mod:`pfstune.backends.lustre` reads
and writes a client tree (``/`` or a ``pfstune sim serve`` directory); :mod:`pfstune.backends.sim`
drives an in-process simulation, faster than real time.
"""

"""The benchmark harness: scenarios x tuners x seeds on the simulator, and the report.

- :mod:`pfstune.bench.runs`: one run with its time series (what a worker executes);
- :mod:`pfstune.bench.harness`: planning, execution on local processes or Dask, aggregation;
- :mod:`pfstune.bench.report`: JSON, CSV, Markdown and plots.
"""

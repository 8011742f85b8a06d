"""Sweeps: one scenario over a grid of overrides and seeds, and the folders they write.

:mod:`mpsim.sweeping.engine` plans a sweep and runs it on local processes or Dask
(:func:`mpsim.sweep`); :mod:`mpsim.sweeping.store` is the sweep folder, a Parquet dataset
that grows run by run and is read with DuckDB (:func:`mpsim.load_sweep`, :func:`mpsim.query`).
Neither imports :mod:`mpsim.api`, which re-exports their public functions.
"""

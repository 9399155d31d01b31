"""The ground floor: what every other package may use and which knows nothing of CUDA,
cases or runs. Bounded readers of recorded files (``recorded``), versions and archs
(``versions``), TOML files read with a size limit and unknown keys named (``tomlfile``,
``keys``), folder locks and removal, the commit under test (``revision``) and the ledger of
what a run read, which says whether its results still stand (``up_to_date``).

May import: ``cudamatrix.errors`` only.
"""

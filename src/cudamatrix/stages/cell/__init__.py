"""What every stage shares about one cell: the job it was given (``job``), the prepared
toolkit as it sees it (``environment``), the process environment every process of a cell
gets (``cell_environment``: an allow list, credentials out), the record a stage leaves
(``result``) and the names of the files in its folder (``files``). Plain data that
crosses from the run's process into a cell's worker as JSON.

May import: ``common``, ``errors``; nothing else of ``stages`` (every other group imports
this one).
"""

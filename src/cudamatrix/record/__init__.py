"""What a run records and how it is judged: a cell's result and the run's record
(``results``, ``schema/``), the verdict against the case's expectations (``verdict``), the
named cause of a non-pass (``diagnose``, ``rules.toml``), a run against a baseline
(``baseline``, ``resource_changes``, ``time_changes``), kernel-time budgets between toolkits
(``slowdowns``), shards merged into one record (``merge``), a record judged again
(``rejudge``) and the runs kept beside it (``history``).

May import: ``config``, ``stages``, ``common``, ``errors``; never ``providers`` (its sibling),
``orchestrator`` or ``reports``.
"""

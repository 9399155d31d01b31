"""What a run records and how it is judged: a cell's result and the run's record
(``results``, ``schema/``, the outcome words in ``outcomes``), the verdict, decided in
``verdict`` alone (a cell against its case's expectations, judged again for
``report --rejudge``, then the run-level rules every command ends with; its rules that read
outcomes alone in ``verdict_rules``, below the record), the named cause of
a non-pass (``diagnose``, ``rules.toml``), a run against a baseline (``baseline``,
``resource_changes``, ``time_changes``), how much slower a kernel is than on another
toolkit (``slowdowns``), shards merged into one record (``merge``) and the runs kept beside
it (``history``).

May import: ``config``, ``stages``, ``common``, ``errors``; never ``providers`` (its sibling),
``orchestrator`` or ``reports``.
"""

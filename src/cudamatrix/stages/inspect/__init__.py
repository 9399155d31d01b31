"""The inspect stage (``stage``): is the built module what the case says it must be? Its
parts: what each artifact check reads (``artifact_text``), the resource budget against the
compiler's figures (``budgets``), a kernel named as C++ writes it found among a module's
entries (``kernel_names``).

May import: ``cell``, ``process``, ``binaries``, ``common``, ``errors``; never ``compile``,
whose parts name kernels with ``kernel_names`` (import-linter keeps the one direction).
"""

"""What a built file holds, read without running it: ELF sections and fatbins (``elf``),
each embedded module's SASS and PTX images and what GPU they can serve (``facts``), a
wheel's members streamed one at a time (``inputs``), and a module loaded by the driver
(``measure``). Used by the cell side (a build case's modules) and by ``cudamatrix audit``.

May import: ``common``, ``errors``.
"""

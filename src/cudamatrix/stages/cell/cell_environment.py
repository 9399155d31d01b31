"""The one place a cell's processes get their environment from: an allow list, credentials out.

A cell runs code the tool did not write (a case's build commands, its test, its kernels'
host code, the compilers), and what those print is recorded: a build that printed its
environment put the index token of ``PIP_INDEX_URL`` into results.json, every report and
the console (issue 79). So no process a cell starts inherits the run's environment whole:
the worker processes (the fork server, a GPU's server), every compiler, build and test
they start, and the toolkits' own programs the run asks for their version get
`cell_environment`'s answer, and nothing else (tests/unit/test_cell_environment.py walks
the package for every process started otherwise). The tool's own preparations (pip
installing a toolkit, gpgv, dpkg-deb) keep the run's environment: they may need the
index's credentials, and what they print is masked (errors.without_credentials).

Kept from the run's environment is what a build needs to run as this machine runs it, each
name with its reason below; a case that needs more declares it (``[variant.build] env``),
where the record keeps it and ``cudamatrix repro`` sets it again. Of what is kept, a name
that says it holds a credential is dropped and a URL's userinfo is removed from every
value: a build's pip asks the same index without the credentials (docs/security.md says
why not PyPI instead).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import NewType

from ...errors import without_userinfo

# A process environment made by `cell_environment`, and only there: a function that
# starts a cell's process takes this type, so that mypy finds a caller handing it
# os.environ or a dict of its own making.
CellEnvironment = NewType("CellEnvironment", dict[str, str])

# Names kept whole, each for what a build or a cell's process needs it for.
KEPT_NAMES: dict[str, str] = {
    "PATH": "where a build finds its programs (the cell's toolkit is put first on it)",
    "HOME": "where compilers, CMake and pip keep a user's state; tools fail without it",
    "USER": "build systems name the user (getpass); no secret",
    "LOGNAME": "as USER",
    "LANG": "the locale compilers print their messages in (the diagnosis reads them)",
    "LANGUAGE": "as LANG",
    "TZ": "the time zone a build stamps its files with",
    "TMPDIR": "where compilers write their temporary files (a small /tmp fails builds)",
    "TMP": "as TMPDIR, for tools that read this name",
    "TEMP": "as TMPDIR, for tools that read this name",
    "SOURCE_DATE_EPOCH": "a reproducible build's time stamp",
    "LD_LIBRARY_PATH": "where a host toolkit's and the cell's libraries are loaded from",
    "LIBRARY_PATH": "the linker's search path (the compile key hashes it)",
    "CPATH": "the compilers' include path (the compile key hashes it)",
    "C_INCLUDE_PATH": "as CPATH (the compile key hashes it)",
    "CPLUS_INCLUDE_PATH": "as CPATH (the compile key hashes it)",
    "GCC_EXEC_PREFIX": "where GCC finds its own programs (the compile key hashes it)",
    "COMPILER_PATH": "as GCC_EXEC_PREFIX (the compile key hashes it)",
    "PKG_CONFIG_PATH": "where a build's pkg-config finds this machine's libraries",
    "VIRTUAL_ENV": "the Python environment the run's interpreter is in",
    "CONDA_PREFIX": "the conda environment the run's interpreter is in",
    "CC": "the C compiler a user chose, where the cell names no host compiler",
    "CXX": "as CC, for C++",
    "CUDAHOSTCXX": "as CXX, for CMake's CUDA language",
    "CUDACXX": "the nvcc CMake takes, where the cell's toolkit sets none",
    "CUDAARCHS": "CMake's archs (the cell sets its own over it)",
    "CUDAToolkit_ROOT": "CMake's toolkit (the cell sets its own over it)",
    "TORCH_CUDA_ARCH_LIST": "PyTorch's archs (the cell sets its own over it)",
    "SSL_CERT_FILE": "the certificates a build's downloads trust (public, no secret)",
    "SSL_CERT_DIR": "as SSL_CERT_FILE",
    "REQUESTS_CA_BUNDLE": "as SSL_CERT_FILE, for requests (pip)",
    "CURL_CA_BUNDLE": "as SSL_CERT_FILE, for curl",
    "HTTP_PROXY": "the proxy a build's downloads go through (its userinfo removed)",
    "HTTPS_PROXY": "as HTTP_PROXY",
    "ALL_PROXY": "as HTTP_PROXY",
    "NO_PROXY": "the hosts reached without the proxy",
    "http_proxy": "as HTTP_PROXY, the name curl and pip read first",
    "https_proxy": "as HTTP_PROXY",
    "all_proxy": "as HTTP_PROXY",
    "no_proxy": "as NO_PROXY",
    "XDG_CACHE_HOME": "where pip and compilers keep their caches, as the user set it",
    "XDG_CONFIG_HOME": "where tools read a user's settings, as the user set it",
    "XDG_DATA_HOME": "as XDG_CONFIG_HOME",
}

# Name prefixes kept, each for what it holds.
KEPT_PREFIXES: dict[str, str] = {
    "LC_": "the locale, as LANG",
    "CUDA_": "the toolkit and the driver (CUDA_HOME, CUDA_VISIBLE_DEVICES, the hermetic "
             "CUDA_CACHE_DISABLE)",
    "NVIDIA_": "the container runtime's devices and capabilities",
    "NVCC_": "nvcc's own flags and host compiler (the compile key hashes them)",
    "CUDAMATRIX_": "the tool's own, to its cell processes (the run's deadline, the parent "
                   "worker, plugin frontends, the preloaded NVRTC)",
    "PYTHON": "the interpreter's settings (PYTHONPATH: a worker imports cudamatrix from a "
              "source tree; a build's tools and the cell's library)",
    "PIP_": "a build's pip settings: the index (its userinfo removed), trusted hosts, "
            "certificates, timeouts",
}

# Words in a name that say it holds a credential: dropped whatever the allow list keeps
# (PIP_PASSWORD, CUDAMATRIX_TOKEN), with the names that hold one without saying so.
_CREDENTIAL_WORDS = ("TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH",
                     "APIKEY", "API_KEY")
_CREDENTIAL_NAMES = frozenset({"NETRC", "PIP_CLIENT_CERT", "PIP_KEYRING_PROVIDER"})


def holds_credential(name: str) -> bool:
    """Whether a variable's name says it holds a credential (a token, a key, a password,
    a netrc or a client certificate)."""
    upper = name.upper()
    return (upper in _CREDENTIAL_NAMES or upper.endswith("_KEY")
            or any(word in upper for word in _CREDENTIAL_WORDS))


def kept(name: str) -> bool:
    """Whether a variable of the run's environment reaches a cell's processes."""
    if holds_credential(name):
        return False
    return name in KEPT_NAMES or any(name.startswith(p) for p in KEPT_PREFIXES)


def cell_environment(cell: Mapping[str, str] | None = None,
                     inherited: Mapping[str, str] | None = None) -> CellEnvironment:
    """The environment of a process a cell starts: what `inherited` (this process's, by
    default) may hand on, with the `cell`'s own variables (the tool's for this cell, the
    case's declared ones) set over it; of both, no name that holds a credential and no
    URL's userinfo. Inside a cell's worker, whose own environment was made here, it gives
    that environment back unchanged."""
    source = os.environ if inherited is None else inherited
    variables = {name: value for name, value in source.items() if kept(name)}
    variables.update(cell or {})
    # A credential is out whoever set it: a case's declared variable too (it is recorded).
    return CellEnvironment({name: without_userinfo(value) for name, value in variables.items()
                            if not holds_credential(name)})

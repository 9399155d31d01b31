from __future__ import annotations

import pytest

from cudamatrix.common.versions import Arch, axis_matches


def test_arch_ordering_and_virtual_arch() -> None:
    assert Arch.parse("sm_75") < Arch.parse("sm_80") < Arch.parse("sm_90") < Arch.parse("sm_90a")
    assert Arch.parse("sm_90a").compute == "compute_90a"
    with pytest.raises(ValueError, match="not a GPU architecture"):
        Arch.parse("compute_80")


@pytest.mark.parametrize(("spec", "arch", "expected"), [
    ("<sm_80", "sm_75", True),
    ("<sm_80", "sm_80", False),
    (">=sm_90", "sm_90a", True),
    ("sm_90", "sm_90a", False),  # a bare name is exact: sm_90 is not sm_90a
    ("sm_90a", "sm_90a", True),
    (">=sm_80,<sm_90", "sm_86", True),
    (["sm_90a", "sm_100a"], "sm_100a", True),
])
def test_arch_specifiers(spec: str | list[str], arch: str, expected: bool) -> None:
    assert axis_matches("arch", spec, arch) is expected


@pytest.mark.parametrize(("spec", "version", "expected"), [
    (">=12.4,<12.7", "12.6", True),
    (">=12.4,<12.7", "12.8", False),
    ("13.0", "13.0", True),
    (">=13.1", "13.0", False),
    ("<590", "580.159.04", True),
])
def test_version_specifiers(spec: str, version: str, expected: bool) -> None:
    assert axis_matches("toolkit", spec, version) is expected


def test_missing_axis_never_matches() -> None:
    assert not axis_matches("driver", "<590", None)

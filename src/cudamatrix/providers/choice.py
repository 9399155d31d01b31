"""Which provider a run takes: the one named, or ``auto``'s choice, said in one line."""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import EnvironmentUnavailable, UserError
from .docker import BASE_TAG, CUDA_COMPAT_IN_IMAGE, engine, image_exists
from .toolkits import Notes


def choose_provider(provider: str, flavour: str, cuda_compat: bool,
                    progress: Notes, previous: str = "",
                    local_frontends: Sequence[str] = ()) -> tuple[str, str]:
    """The provider to run with and how it was chosen, said in one short line. ``auto``:
    containers where a Docker engine and its base image are ready, else wheels; but the
    provider of the last run into the same folder (`previous`) where it can still serve,
    since an engine that came up between two runs would otherwise change every verdict's
    environment silently (and compile everything again); and never containers for a
    selection with cells of `local_frontends` (a project's own build runs on this machine:
    in containers those cells became skips when an engine happened to answer)."""
    if cuda_compat and (provider != "docker" or flavour != "nvidia"):
        raise UserError("--cuda-compat needs --provider docker --docker-flavour nvidia: only "
                        f"NVIDIA's images carry the forward-compatibility libraries "
                        f"({CUDA_COMPAT_IN_IMAGE}); PyPI has no wheel of them")
    if provider == "docker":
        try:
            engine()
        except EnvironmentUnavailable as exc:
            raise UserError(f"--provider docker: {exc}") from None
        chosen, why = "docker", "named (--provider docker)"
    elif provider != "auto":
        chosen, why = provider, f"named (--provider {provider})"
    else:
        try:
            client = engine()
        except EnvironmentUnavailable:
            chosen, why = "wheels", "auto: no Docker engine answers"
        else:
            if flavour == "wheels" and not image_exists(client, BASE_TAG):
                chosen, why = "wheels", (f"auto: the Docker engine lacks the base image "
                                         f"{BASE_TAG}")
            elif local_frontends:
                chosen, why = "wheels", (f"auto: the selection's {', '.join(local_frontends)} "
                                         "cells run on this machine, not in containers "
                                         "(--provider docker runs the others there)")
            else:
                chosen, why = "docker", "auto: a Docker engine and its images are ready"
        if previous == "wheels" and chosen == "docker":
            chosen, why = "wheels", ("auto: kept from the last run here; a Docker engine "
                                     "answers now (--provider docker to use it)")
        elif previous and previous != chosen and previous in ("wheels", "docker"):
            why += f"; the last run here used {previous} (--provider pins one)"
    progress.note(f"provider: {chosen} ({why})")
    return chosen, why

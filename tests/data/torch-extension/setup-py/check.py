"""Imports the built extension with the torch that built it and checks one call."""

import torch  # first: the extension needs torch's libraries loaded

# isort: split
import scale_ext

x = torch.arange(8.0, device="cuda")
got = scale_ext.scale(x, 2.5).cpu()
assert torch.equal(got, torch.arange(8.0) * 2.5), got
print(f"scale_ext with torch {torch.__version__}: {got.tolist()}")

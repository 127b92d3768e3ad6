"""Suite-wide set-up: on a machine without a GPU, Triton kernels run in its interpreter.

TRITON_INTERPRET is read when triton is first imported, so it is set here, before any test
module (or torch.utils.flop_counter, which imports triton) can import it.
"""

from __future__ import annotations

import os

if not os.path.exists("/dev/nvidiactl"):
    os.environ.setdefault("TRITON_INTERPRET", "1")

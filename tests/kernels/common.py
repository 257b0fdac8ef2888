"""Constants shared by the kernel tests."""

import torch

SMALL = (16, 16, 16)  # blocks that cross several tile edges on the odd shapes of the tests
UNIT_ROUNDOFF = {torch.float32: 2.0**-24, torch.bfloat16: 2.0**-8, torch.float16: 2.0**-11}

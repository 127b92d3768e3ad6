"""A candidate file whose class has the wrong name."""

import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, y):
        return x

import torch
import torch.nn as nn
import torch.nn.functional as F

INT_INPUTS = [2]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, pred, target, labels, logits, click):
        mse = F.mse_loss(pred, target)
        ce = F.cross_entropy(logits, labels)
        bce = F.binary_cross_entropy_with_logits(pred, click)
        return mse + 0.5 * ce + bce


def get_inputs():
    return [
        torch.randn(8, 10),
        torch.randn(8, 10),
        torch.randint(0, 7, (8,)),
        torch.randn(8, 7),
        torch.rand(8, 10),
    ]


def get_init_inputs():
    return []


def get_test_inputs():
    return [
        [
            torch.randn(3, 10),
            torch.randn(3, 10),
            torch.randint(0, 7, (3,)),
            torch.randn(3, 7),
            torch.rand(3, 10),
        ]
    ]

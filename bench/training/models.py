"""Models that only the benchmarks train, registered with oracle.py so that
run.py builds, exports and feeds them as it does the oracle's own.

gpt2-small: oracle.TinyGPT at GPT-2 small's shape (12 pre-norm blocks of
width 768 with 12 heads, sequence 128; 85 M parameters in the blocks) over
the character vocabulary of oracle/text.py, so its embedding and tied output
layer are small: the work is the blocks', as in GPT-2's.

unet-bench, unet-transposed-bench (#43): the e2e oracles' two U-Nets
(oracle.UNet, upsampling by ONNX Resize; conv_models.TransposedUNet, by
ConvTranspose) at twice their widths, 16 and 32 channels at 28 x 28 and
14 x 14, so that the convolutions, not the launch of small kernels, take
the step.
"""

import torch
import torch.nn as nn

import oracle


def gpt2_small():
    return oracle.TinyGPT(length=128, width=768, heads=12, layers=12)


class BenchUNet(nn.Module):
    """oracle.UNet's graph with `width` channels where it has 8 (2 * width
    where it has 16): conv at 28x28, max pool, conv, a max pool brought back
    by nearest upsampling and added, bilinear upsampling (half_pixel) to
    28x28, the skip concatenated, conv, global average pool, linear head."""

    def __init__(self, width=16):
        super().__init__()
        self.enc = nn.Conv2d(1, width, 3, padding=1)
        self.mid = nn.Conv2d(width, 2 * width, 3, padding=1)
        self.dec = nn.Conv2d(3 * width, 2 * width, 3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(2 * width, 10)

    def forward(self, x):
        f = nn.functional
        e = torch.relu(self.enc(x))
        m = torch.relu(self.mid(self.pool(e)))
        m = m + f.interpolate(self.pool(m), scale_factor=2, mode="nearest")
        u = f.interpolate(m, scale_factor=2, mode="bilinear",
                          align_corners=False)
        d = torch.relu(self.dec(torch.cat([u, e], dim=1)))
        return self.fc(torch.flatten(f.adaptive_avg_pool2d(d, 1), 1))


class BenchTransposedUNet(nn.Module):
    """conv_models.TransposedUNet's graph with `width` channels where it has
    8 (2 * width where it has 16): strided convs down to 7x7, a grouped
    transposed conv (stride 2, output_padding 1) back to 14x14 added to the
    encoder's map, a transposed conv (kernel 2, stride 2) to 28x28
    concatenated with the first map, conv, global average pool, linear."""

    def __init__(self, width=16):
        super().__init__()
        self.enc = nn.Conv2d(1, width, 3, padding=1)
        self.down1 = nn.Conv2d(width, 2 * width, 3, stride=2, padding=1)
        self.down2 = nn.Conv2d(2 * width, 2 * width, 3, stride=2, padding=1)
        self.up2 = nn.ConvTranspose2d(2 * width, 2 * width, 3, stride=2,
                                      padding=1, output_padding=1, groups=4)
        self.up1 = nn.ConvTranspose2d(2 * width, width, 2, stride=2)
        self.dec = nn.Conv2d(2 * width, width, 3, padding=1)
        self.fc = nn.Linear(width, 10)

    def forward(self, x):
        e = torch.relu(self.enc(x))
        d = torch.relu(self.down1(e))
        m = torch.relu(self.down2(d))
        u = torch.relu(self.up2(m)) + d
        u = torch.relu(self.up1(u))
        h = torch.relu(self.dec(torch.cat([u, e], dim=1)))
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(h, 1),
                                     1))


BENCH_MODELS = {"gpt2-small": gpt2_small, "unet-bench": BenchUNet,
                "unet-transposed-bench": BenchTransposedUNet}
oracle.EXTRA_MODELS.update(BENCH_MODELS)

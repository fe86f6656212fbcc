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

import conv_models
import oracle


def gpt2_small():
    return oracle.TinyGPT(length=128, width=768, heads=12, layers=12)


def bench_unet():
    return oracle.UNet(width=16)


def bench_transposed_unet():
    return conv_models.TransposedUNet(width=16)


BENCH_MODELS = {"gpt2-small": gpt2_small, "unet-bench": bench_unet,
                "unet-transposed-bench": bench_transposed_unet}
oracle.EXTRA_MODELS.update(BENCH_MODELS)

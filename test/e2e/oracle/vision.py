"""torchvision's classifiers as the oracle trains them (oracle.py's "tv-NAME"
models).

Each is torchvision's own architecture with 10 classes, built by
torchvision.models.NAME, for 3-channel square images (Fashion-MNIST upscaled
and repeated over the channels, see `adapt_inputs`). So that dpc and PyTorch
train the same function, randomness is switched off where the two would draw
differently: every Dropout gets p = 0 (exported still, as ONNX Dropout with
ratio 0 in training mode, so dpc's dropout path is exercised), and
EfficientNet's stochastic depth has probability 0 (torch.onnx cannot export
its Bernoulli draw). GoogLeNet and Inception-v3 are built without their
auxiliary classifiers, which a training export would otherwise return as
extra outputs.
"""

import os

import numpy as np
import torch.nn as nn

# The side of the square input each model is trained on: 64 where the model
# allows. AlexNet's and VGG's adaptive average pools to 6x6 and 7x7 export
# only when the feature map is a multiple of that size, which takes a
# 224-pixel input; Inception-v3 needs at least 75 pixels.
INPUT_SIDE = {"alexnet": 224, "vgg11": 224, "vgg16": 224, "inception_v3": 75}

# The models the e2e tests and bench/training know, in the order,
# then more of torchvision.
NAMES = ["resnet18", "resnet50", "vgg16", "alexnet", "mobilenet_v2",
         "densenet121", "squeezenet1_0", "shufflenet_v2_x1_0", "googlenet",
         "inception_v3", "vgg11", "mobilenet_v3_small", "efficientnet_b0",
         "mnasnet0_5", "regnet_y_400mf", "resnext50_32x4d", "convnext_tiny",
         "vit_mini", "convnext_mini", "swin_mini"]

# Small configurations of torchvision's VisionTransformer and ConvNeXt
# classes, for tests on two cores: torchvision's own vit_b_16 and
# convnext_tiny are too large for that. "vit_mini" is two encoder layers of
# two heads on 32-pixel images cut into 8-pixel patches (class token, learned
# position embedding, LayerNorm, GELU MLPs); "convnext_mini" is two stages of
# one CNBlock each (depthwise 7x7 convolution, LayerNorm over channels,
# GELU, layer scale) on 32-pixel images; "swin_mini" is torchvision's
# SwinTransformer with 4-pixel patches on 32-pixel images, two stages of two
# blocks (embedding 16, 2 and 4 heads, 4x4 windows: the 8x8 map of the first
# stage has four windows and its second block shifts them, so the shifted
# window mask and the relative position bias table are both exercised).
# The names are dpc's, not torchvision's.
def _small(name):
    from torchvision.models import VisionTransformer
    from torchvision.models.convnext import CNBlockConfig, ConvNeXt
    from torchvision.models.swin_transformer import SwinTransformer
    if name == "swin_mini":
        return SwinTransformer(patch_size=[4, 4], embed_dim=16,
                               depths=[2, 2], num_heads=[2, 4],
                               window_size=[4, 4], stochastic_depth_prob=0.0,
                               num_classes=10)
    if name == "vit_mini":
        return VisionTransformer(image_size=32, patch_size=8, num_layers=2,
                                 num_heads=2, hidden_dim=32, mlp_dim=64,
                                 num_classes=10)
    return ConvNeXt([CNBlockConfig(8, 16, 1), CNBlockConfig(16, None, 1)],
                    stochastic_depth_prob=0.0, num_classes=10)


SMALL = ("vit_mini", "convnext_mini", "swin_mini")
INPUT_SIDE.update({name: 32 for name in SMALL})


def build(name):
    """torchvision.models.NAME for 10 classes, without randomness (see the
    module's docstring), with `input_shape` and `opset` set for oracle.py."""
    import torchvision
    options = {"num_classes": 10}
    if name in ("googlenet", "inception_v3"):
        options.update(aux_logits=False, init_weights=True)
    if name.startswith(("efficientnet", "convnext")):
        options["stochastic_depth_prob"] = 0.0
    model = (_small(name) if name in SMALL else
             getattr(torchvision.models, name)(**options))
    for module in model.modules():
        if isinstance(module, nn.Dropout):
            module.p = 0.0
    side = INPUT_SIDE.get(name, 64)
    model.input_shape = (3, side, side)
    # Opset 17 exports layer normalization as one LayerNormalization node.
    model.opset = 17 if name.startswith(("convnext", "vit", "swin")) else 14
    # Exported for training as the user does, also where no batch
    # normalization or dropout asks for it (ConvNeXt): an eval-mode export
    # would merge its zero biases and unit LayerNorm scales into one
    # initializer each.
    model.export_training = True
    return model


def adapt_inputs(x, input_shape):
    """Fashion-MNIST images [N, 1, 28, 28] as a model's [N, C, S, S] input:
    bilinear upscaling (align_corners=False, antialias off) and the gray
    channel repeated C times. A sequence model's [N, C, L] input, or a
    volume model's [N, C, D, H, W] (784 elements a sample), is each image's
    pixels in row-major order."""
    if len(input_shape) != 3:
        return x.reshape(x.shape[0], *input_shape).contiguous()
    channels, height, width = input_shape
    if x.shape[1:] == tuple(input_shape):
        return x
    resized = nn.functional.interpolate(x, size=(height, width),
                                        mode="bilinear", align_corners=False)
    return resized.repeat(1, channels, 1, 1).contiguous()


def training_data(x, y, input_shape, directory, stem, spec):
    """The inputs a model of `input_shape` trains on and dpc's --data spec
    for them: `x` and `spec` themselves for Fashion-MNIST's shape; else the
    adapted images and labels, saved as DIRECTORY/STEM.train_inputs.npy and
    .train_labels.npy (the same float32 bytes PyTorch trains on), and their
    npy: spec."""
    inputs = adapt_inputs(x, input_shape)
    if inputs is x:
        return x, spec
    files = [os.path.abspath(os.path.join(directory, f"{stem}.{part}.npy"))
             for part in ("train_inputs", "train_labels")]
    np.save(files[0], inputs.numpy())
    np.save(files[1], y.numpy())
    return inputs, "npy:" + ",".join(files)

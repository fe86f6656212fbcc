"""Convolution models for the oracle (#43): a U-Net whose decoder upsamples
with transposed convolutions, a U-Net normalized by GroupNorm, a 1-D convolutional classifier of sequences
[N, C, L] (an audio model's shape) and a 3-D one of volumes [N, C, D, H,
W], and a small AlexNet-style net with local response normalization (ONNX
LRN). All train on Fashion-MNIST: the U-Net on the images, the others on
each image's 784 pixels read as 4 channels of 196 samples or as a volume of
4 x 14 x 14 (vision.adapt_inputs). oracle.py adds
MODELS_BY_NAME to its EXTRA_MODELS."""

import torch
import torch.nn as nn


class TransposedUNet(nn.Module):
    """A U-Net-shaped classifier whose decoder is nn.ConvTranspose2d, ONNX
    ConvTranspose: conv 1->8 at 28x28, strided convs down to 16x14x14 and
    16x7x7, a grouped transposed conv (4 groups, stride 2, padding 1,
    output_padding 1) back to 14x14 added to the encoder's map, a transposed
    conv (kernel 2, stride 2, with a bias) to 8x28x28 concatenated with the
    first map, conv 16->8, global average pool and a linear head. `width`
    scales the channels (8 and 16 are width and 2 * width): bench/training
    trains it at 16."""

    def __init__(self, width=8):
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


class Conv1dClassifier(nn.Module):
    """An audio-style classifier of [N, 4, 196] sequences: nn.Conv1d with a
    stride, then a dilated and grouped Conv1d, a strided grouped Conv1d, an
    nn.ConvTranspose1d back up to 98 samples added to the dilated conv's
    output, the mean over time and a linear head."""

    input_shape = (4, 196)

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv1d(4, 16, 5, stride=2, padding=2)
        self.c2 = nn.Conv1d(16, 16, 3, padding=2, dilation=2, groups=4)
        self.c3 = nn.Conv1d(16, 32, 3, stride=2, padding=1, groups=2)
        self.up = nn.ConvTranspose1d(32, 16, 4, stride=2, padding=1)
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        h = torch.relu(self.c1(x))
        h = torch.relu(self.c2(h))
        u = torch.relu(self.up(torch.relu(self.c3(h)))) + h
        return self.fc(u.mean(dim=2))


class Conv3dClassifier(nn.Module):
    """A volume classifier of [N, 1, 4, 14, 14] inputs (a video's frames, or
    a scan's slices): nn.Conv3d, a strided and grouped nn.Conv3d down to
    8x2x7x7, an nn.ConvTranspose3d back to 4x4x14x14, the mean over the
    volume and a linear head."""

    input_shape = (1, 4, 14, 14)

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv3d(1, 8, 3, padding=1)
        self.c2 = nn.Conv3d(8, 8, 3, stride=2, padding=1, groups=2)
        self.up = nn.ConvTranspose3d(8, 4, 2, stride=2)
        self.fc = nn.Linear(4, 10)

    def forward(self, x):
        h = torch.relu(self.c2(torch.relu(self.c1(x))))
        return self.fc(torch.relu(self.up(h)).mean(dim=(2, 3, 4)))


class GroupNormUNet(nn.Module):
    """oracle.py's unet (conv at 28x28, max pool, conv, a max pool brought
    back by nearest upsampling and added, bilinear upsampling to 28x28, the
    skip concatenated, conv, global average pool, linear head) with
    nn.GroupNorm(4 groups) after each convolution, as diffusion U-Nets
    normalize; torch.onnx (opset 14) writes each GroupNorm as Reshape,
    InstanceNormalization and Reshape, then the affine Mul and Add. The
    upsamplings are given their output sizes, which the training-mode
    export computes from Shape (integers the importer folds)."""

    # An eval-mode export would merge the fresh GroupNorms' equal weights
    # into one initializer and fold them into constants.
    export_training = True

    def __init__(self, width=8, groups=4):
        super().__init__()
        self.enc = nn.Conv2d(1, width, 3, padding=1)
        self.mid = nn.Conv2d(width, 2 * width, 3, padding=1)
        self.dec = nn.Conv2d(3 * width, 2 * width, 3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(2 * width, 10)
        self.n_enc = nn.GroupNorm(groups, width)
        self.n_mid = nn.GroupNorm(groups, 2 * width)
        self.n_dec = nn.GroupNorm(groups, 2 * width)

    def forward(self, x):
        f = nn.functional
        e = torch.relu(self.n_enc(self.enc(x)))
        m = torch.relu(self.n_mid(self.mid(self.pool(e))))
        m = m + f.interpolate(self.pool(m), size=m.shape[2:], mode="nearest")
        u = f.interpolate(m, size=e.shape[2:], mode="bilinear",
                          align_corners=False)
        d = torch.relu(self.n_dec(self.dec(torch.cat([u, e], dim=1))))
        return self.fc(torch.flatten(f.adaptive_avg_pool2d(d, 1), 1))


class _LocalResponseNorm(torch.autograd.Function):
    """torch's local_response_norm (its forward and, by autograd, its
    backward) that torch.onnx writes as one ONNX LRN node: torch exports
    nn.LocalResponseNorm as a padded average pooling of the squares. For an
    odd size the two agree; for an even one ONNX's window reaches a channel
    further up, so the model below uses odd sizes only."""

    @staticmethod
    def symbolic(g, x, size, alpha, beta, k):
        return g.op("LRN", x, size_i=size, alpha_f=alpha, beta_f=beta,
                    bias_f=k)

    @staticmethod
    def forward(ctx, x, size, alpha, beta, k):
        ctx.save_for_backward(x)
        ctx.settings = (size, alpha, beta, k)
        return nn.functional.local_response_norm(x, size, alpha, beta, k)

    @staticmethod
    def backward(ctx, dy):
        (x,) = ctx.saved_tensors
        with torch.enable_grad():
            x = x.detach().requires_grad_()
            y = nn.functional.local_response_norm(x, *ctx.settings)
            (dx,) = torch.autograd.grad(y, x, dy)
        return dx, None, None, None, None


class LrnNet(nn.Module):
    """A small AlexNet-style classifier (Krizhevsky et al.'s normalization
    after the first two convolutions, as Caffe's AlexNet and GoogLeNet in
    the ONNX model zoo have it): conv 1->16 5x5, ReLU, LRN over 5 channels,
    max pool; conv 16->32 3x3, ReLU, LRN over 3 channels, max pool; a
    linear head. The alphas are larger than AlexNet's 1e-4 so that the
    normalization changes the activations (and the gradients) visibly."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 5, padding=2)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.fc = nn.Linear(32 * 7 * 7, 10)

    def forward(self, x):
        lrn, pool = _LocalResponseNorm.apply, nn.functional.max_pool2d
        h = pool(lrn(torch.relu(self.conv1(x)), 5, 0.5, 0.75, 2.0), 2)
        h = pool(lrn(torch.relu(self.conv2(h)), 3, 0.2, 0.75, 1.0), 2)
        return self.fc(torch.flatten(h, 1))


MODELS_BY_NAME = {"unet-transposed": TransposedUNet,
                  "unet-groupnorm": GroupNormUNet,
                  "conv1d": Conv1dClassifier, "conv3d": Conv3dClassifier,
                  "lrn-net": LrnNet}

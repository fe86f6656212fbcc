//===- ImageTransforms.h - Crops, resizes and flips of images ---*- C++ -*-===//
//
// Private to lib/runtime. The imagefolder: source's augmentation and
// evaluation transforms, written to give the pixels torchvision 0.14's
// transforms give on PIL images: RandomResizedCrop's parameters (ten tries,
// then the center crop of the clamped aspect ratio), center crops at
// Python's round-half-even offsets, PIL's bilinear resize (Resample.c: a
// triangle filter widened by the downscale factor, so that downscaling
// averages every source pixel, weights fixed-point in 22 bits, a horizontal
// pass rounded to bytes, then a vertical one), and convert('L')'s luma.
// The pixels are PIL's exactly; only the random draws are dpc's own
// (SplitMix64 keyed by seed, epoch and sample, Random.h), not torch's.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_LIB_RUNTIME_IMAGETRANSFORMS_H
#define DPC_LIB_RUNTIME_IMAGETRANSFORMS_H

#include "ImageDecode.h"
#include "Random.h"

namespace dpc::runtime::image {

/// A window of an image: rows [top, top + height), columns [left, left +
/// width); a center crop larger than its image reaches outside it (zeros).
struct CropBox {
  int top = 0, left = 0, height = 0, width = 0;
};

/// RandomResizedCrop.get_params: up to ten draws of an area fraction in
/// [scaleLo, scaleHi] and a log-uniform aspect ratio in [ratioLo, ratioHi]
/// whose rounded box fits; otherwise the whole image cut to the nearest
/// allowed ratio, centered.
CropBox randomResizedCrop(int height, int width, detail::SplitMix64 &random,
                          double scaleLo = 0.08, double scaleHi = 1.0,
                          double ratioLo = 3.0 / 4.0,
                          double ratioHi = 4.0 / 3.0);

/// torchvision's center_crop offsets: round((size - crop) / 2) with ties
/// to even, negative when the crop is larger.
CropBox centerCrop(int height, int width, int cropHeight, int cropWidth);

/// torchvision's Resize(N) of an int: the shorter side becomes N, the
/// longer int(N * longer / shorter). Returns {height, width}.
std::pair<int, int> shorterSideTo(int height, int width, int size);

/// The window `box` of `image`; pixels outside the image are 0.
Image crop(const Image &image, const CropBox &box);

/// PIL's Image.resize(size, BILINEAR) of 8-bit images, bit for bit.
Image resizeBilinear(const Image &image, int height, int width);

/// Mirrors the columns in place.
void flipHorizontal(Image &image);

/// To `channels`: gray to RGB repeats the gray value; RGB to gray is PIL's
/// convert('L'), (299 R + 587 G + 114 B) / 1000 in 16-bit fixed point
/// ((19595 R + 38470 G + 7471 B + 32768) >> 16).
Image convertChannels(Image image, int channels);

} // namespace dpc::runtime::image

#endif // DPC_LIB_RUNTIME_IMAGETRANSFORMS_H

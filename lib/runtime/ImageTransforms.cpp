//===- ImageTransforms.cpp - Crops, resizes and flips of images -----------===//
//
// The resize follows PIL's algorithm (ImagingResample, 8 bits a channel) so
// closely that the pixels match bit for bit: the same coefficient bounds,
// the same double weights normalized per output pixel, the same rounding to
// 22-bit integers, the same intermediate image of bytes between the passes
// and its rows limited to those the vertical pass reads. The lit test
// imagefolder-pil.test compares against PIL on generated files.
//
//===----------------------------------------------------------------------===//

#include "ImageTransforms.h"

#include "dpc/runtime/Error.h"

#include <algorithm>
#include <cmath>

namespace dpc::runtime::image {

/// Python's round() of a double: halves to even.
static int roundHalfEven(double x) { return int(std::nearbyint(x)); }

/// Uniform in [lo, hi).
static double uniform(detail::SplitMix64 &random, double lo, double hi) {
  double u = double(random.next() >> 11) * 0x1p-53;
  return lo + (hi - lo) * u;
}

CropBox randomResizedCrop(int height, int width, detail::SplitMix64 &random,
                          double scaleLo, double scaleHi, double ratioLo,
                          double ratioHi) {
  const double area = double(height) * double(width);
  const double logLo = std::log(ratioLo), logHi = std::log(ratioHi);
  for (int attempt = 0; attempt < 10; ++attempt) {
    double target = area * uniform(random, scaleLo, scaleHi);
    double ratio = std::exp(uniform(random, logLo, logHi));
    int w = roundHalfEven(std::sqrt(target * ratio));
    int h = roundHalfEven(std::sqrt(target / ratio));
    if (w > 0 && w <= width && h > 0 && h <= height) {
      int top = int(random.below(uint64_t(height - h + 1)));
      int left = int(random.below(uint64_t(width - w + 1)));
      return {top, left, h, w};
    }
  }
  double inRatio = double(width) / double(height);
  int w = width, h = height;
  if (inRatio < ratioLo)
    h = roundHalfEven(double(w) / ratioLo);
  else if (inRatio > ratioHi)
    w = roundHalfEven(double(h) * ratioHi);
  return {(height - h) / 2, (width - w) / 2, h, w};
}

CropBox centerCrop(int height, int width, int cropHeight, int cropWidth) {
  return {roundHalfEven((height - cropHeight) / 2.0),
          roundHalfEven((width - cropWidth) / 2.0), cropHeight, cropWidth};
}

std::pair<int, int> shorterSideTo(int height, int width, int size) {
  if (width <= height)
    return {int(int64_t(size) * height / width), size};
  return {size, int(int64_t(size) * width / height)};
}

Image crop(const Image &image, const CropBox &box) {
  Image out;
  out.width = box.width;
  out.height = box.height;
  out.channels = image.channels;
  out.pixels.assign(
      size_t(box.width) * size_t(box.height) * size_t(image.channels), 0);
  const size_t c = size_t(image.channels);
  for (int y = 0; y < box.height; ++y) {
    int sy = box.top + y;
    if (sy < 0 || sy >= image.height)
      continue;
    int x0 = std::max(0, -box.left);
    int x1 = std::min(box.width, image.width - box.left);
    if (x1 <= x0)
      continue;
    std::copy_n(&image.pixels[(size_t(sy) * size_t(image.width) +
                               size_t(box.left + x0)) *
                              c],
                size_t(x1 - x0) * c,
                &out.pixels[(size_t(y) * size_t(box.width) + size_t(x0)) * c]);
  }
  return out;
}

namespace {

constexpr int kPrecisionBits = 32 - 8 - 2;

/// One axis's coefficients: for output pixel i, `count[i]` weights from
/// source index `first[i]`, `size` slots a pixel.
struct Coefficients {
  int size = 0;
  std::vector<int> first, count;
  std::vector<int32_t> weights;
};

double triangle(double x) {
  x = std::fabs(x);
  return x < 1.0 ? 1.0 - x : 0.0;
}

Coefficients coefficients(int inSize, int outSize) {
  Coefficients k;
  double scale = double(inSize) / double(outSize);
  double filterScale = std::max(scale, 1.0);
  double support = 1.0 * filterScale;
  k.size = int(std::ceil(support)) * 2 + 1;
  k.first.resize(size_t(outSize));
  k.count.resize(size_t(outSize));
  k.weights.assign(size_t(outSize) * size_t(k.size), 0);
  std::vector<double> w(size_t(k.size));
  for (int xx = 0; xx < outSize; ++xx) {
    double center = (xx + 0.5) * scale;
    double ss = 1.0 / filterScale;
    int xmin = std::max(int(center - support + 0.5), 0);
    int xmax = std::min(int(center + support + 0.5), inSize) - xmin;
    double total = 0.0;
    for (int x = 0; x < xmax; ++x) {
      w[size_t(x)] = triangle((x + xmin - center + 0.5) * ss);
      total += w[size_t(x)];
    }
    for (int x = 0; x < xmax; ++x) {
      double v = total != 0.0 ? w[size_t(x)] / total : w[size_t(x)];
      double fixed = v * double(1 << kPrecisionBits);
      k.weights[size_t(xx) * size_t(k.size) + size_t(x)] =
          int32_t(v < 0 ? -0.5 + fixed : 0.5 + fixed);
    }
    k.first[size_t(xx)] = xmin;
    k.count[size_t(xx)] = xmax;
  }
  return k;
}

uint8_t clip8(int32_t sum) {
  int32_t v = sum >> kPrecisionBits;
  return uint8_t(v < 0 ? 0 : v > 255 ? 255 : v);
}

/// Rows [rowBegin, rowBegin + rows) of `in`, each resampled to k's width.
Image horizontalPass(const Image &in, int rowBegin, int rows, int width,
                     const Coefficients &k) {
  Image out;
  out.width = width;
  out.height = rows;
  out.channels = in.channels;
  out.pixels.resize(size_t(width) * size_t(rows) * size_t(in.channels));
  for (int y = 0; y < rows; ++y)
    for (int x = 0; x < width; ++x) {
      const int32_t *w = &k.weights[size_t(x) * size_t(k.size)];
      for (int c = 0; c < in.channels; ++c) {
        int32_t sum = 1 << (kPrecisionBits - 1);
        for (int i = 0; i < k.count[size_t(x)]; ++i)
          sum += int32_t(in.at(rowBegin + y, k.first[size_t(x)] + i, c)) * w[i];
        out.pixels[(size_t(y) * size_t(width) + size_t(x)) *
                       size_t(in.channels) +
                   size_t(c)] = clip8(sum);
      }
    }
  return out;
}

/// Every column of `in` resampled to `height` rows, k's first rows
/// counted from `rowOffset`.
Image verticalPass(const Image &in, int height, int rowOffset,
                   const Coefficients &k) {
  Image out;
  out.width = in.width;
  out.height = height;
  out.channels = in.channels;
  out.pixels.resize(size_t(in.width) * size_t(height) * size_t(in.channels));
  for (int y = 0; y < height; ++y) {
    const int32_t *w = &k.weights[size_t(y) * size_t(k.size)];
    int first = k.first[size_t(y)] - rowOffset;
    for (int x = 0; x < in.width; ++x)
      for (int c = 0; c < in.channels; ++c) {
        int32_t sum = 1 << (kPrecisionBits - 1);
        for (int i = 0; i < k.count[size_t(y)]; ++i)
          sum += int32_t(in.at(first + i, x, c)) * w[i];
        out.pixels[(size_t(y) * size_t(in.width) + size_t(x)) *
                       size_t(in.channels) +
                   size_t(c)] = clip8(sum);
      }
  }
  return out;
}

} // namespace

Image resizeBilinear(const Image &image, int height, int width) {
  if (height <= 0 || width <= 0 || image.width <= 0 || image.height <= 0)
    throw Error("resize: an empty image or size");
  const bool horizontal = width != image.width;
  const bool vertical = height != image.height;
  if (!horizontal && !vertical)
    return image;
  Coefficients kx = coefficients(image.width, width);
  Coefficients ky = coefficients(image.height, height);
  if (!horizontal)
    return verticalPass(image, height, 0, ky);
  // Only the rows the vertical pass reads go through the horizontal one.
  int firstRow = ky.first[0];
  int lastRow = ky.first[size_t(height - 1)] + ky.count[size_t(height - 1)];
  if (!vertical)
    return horizontalPass(image, 0, image.height, width, kx);
  Image rows = horizontalPass(image, firstRow, lastRow - firstRow, width, kx);
  return verticalPass(rows, height, firstRow, ky);
}

void flipHorizontal(Image &image) {
  const size_t c = size_t(image.channels);
  for (int y = 0; y < image.height; ++y) {
    uint8_t *row = &image.pixels[size_t(y) * size_t(image.width) * c];
    for (int l = 0, r = image.width - 1; l < r; ++l, --r)
      for (size_t k = 0; k < c; ++k)
        std::swap(row[size_t(l) * c + k], row[size_t(r) * c + k]);
  }
}

Image convertChannels(Image image, int channels) {
  if (image.channels == channels)
    return image;
  Image out;
  out.width = image.width;
  out.height = image.height;
  out.channels = channels;
  const size_t n = size_t(image.width) * size_t(image.height);
  out.pixels.resize(n * size_t(channels));
  if (image.channels == 1 && channels == 3) {
    for (size_t i = 0; i < n; ++i)
      out.pixels[3 * i] = out.pixels[3 * i + 1] = out.pixels[3 * i + 2] =
          image.pixels[i];
    return out;
  }
  if (image.channels == 3 && channels == 1) {
    for (size_t i = 0; i < n; ++i) {
      const uint8_t *p = &image.pixels[3 * i];
      out.pixels[i] =
          uint8_t((p[0] * 19595 + p[1] * 38470 + p[2] * 7471 + 0x8000) >> 16);
    }
    return out;
  }
  throw Error("image: cannot convert " + std::to_string(image.channels) +
              " channels to " + std::to_string(channels));
}

} // namespace dpc::runtime::image

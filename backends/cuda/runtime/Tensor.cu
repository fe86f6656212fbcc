//===- Tensor.cu - Transposes, boxes, gather, resize, window copies -------===//
//===//
//
// Data movement: transpose with adjacent dimensions merged, the strided boxes
// of backends/common/Box.h (dpc_slice, dpc_insert: slice, its gradient,
// concat and constant pad), gather and its gradient (a thread per column, the
// indices in order), resize and its gradient (a thread per output, or per
// input element gathering the outputs that read it; backends/common/
// Resize.h), and the window copy that pads and crops the inputs of the cuDNN
// convolutions (launchWindowCopy).
//
//===----------------------------------------------------------------------===//

#include "backends/cuda/runtime/Kernels.cuh"

#include "backends/common/Box.h"
#include "backends/common/Resize.h"

#include <cmath>

using namespace dpc::cuda;

//===----------------------------------------------------------------------===//
// Transposes and strided boxes
//===----------------------------------------------------------------------===//

namespace dpc::cuda {
namespace {

// y[i] = x[offset of y's index i walked with x's permuted strides].
struct TransposeArgs {
  int rank;
  int64_t sizes[kMaxRank], strides[kMaxRank];
};

__global__ void transposeKernel(const float *x, float *y, int64_t count,
                                TransposeArgs args) {
  GRID_STRIDE(i, count) {
    y[i] = x[offsetOf(i, args.sizes, args.strides, args.rank)];
  }
}

// Element i of a strided box is element base + offsetOf(i, box sizes,
// whole strides times steps) of the whole tensor.
__global__ void sliceKernel(const float *whole, float *box, int64_t count,
                            int64_t base, TransposeArgs args) {
  GRID_STRIDE(i, count) {
    box[i] = whole[base + offsetOf(i, args.sizes, args.strides, args.rank)];
  }
}

__global__ void insertKernel(const float *box, float *whole, int64_t count,
                             int64_t base, TransposeArgs args) {
  GRID_STRIDE(i, count) {
    whole[base + offsetOf(i, args.sizes, args.strides, args.rank)] = box[i];
  }
}

__global__ void fillKernel(float *x, int64_t count, float value) {
  GRID_STRIDE(i, count) { x[i] = value; }
}

} // namespace
} // namespace dpc::cuda

extern "C" {

void dpc_transpose(const float *x, const int64_t *x_shape, float *y,
                   const int64_t *perm, int64_t rank) {
  TransposePlan plan = planTranspose(x_shape, perm, rank);
  if (plan.count == 0)
    return;
  if (plan.sizes.size() > size_t(kMaxRank))
    fail("dpc_transpose: more than " + std::to_string(kMaxRank) +
         " dimensions after merging");
  TransposeArgs args{};
  args.rank = int(plan.sizes.size());
  std::copy(plan.sizes.begin(), plan.sizes.end(), args.sizes);
  std::copy(plan.strides.begin(), plan.strides.end(), args.strides);
  transposeKernel<<<blocksFor(plan.count), kThreads, 0, stream()>>>(
      x, y, plan.count, args);
  checkLaunch("transpose");
}

// The launch arguments of a strided box (dpc_slice, dpc_insert; the layout
// from backends/common/Box.h); the box's element count in `count` and its
// first element's offset in `base`.
static TransposeArgs boxArgs(const char *kernel, const int64_t *whole,
                             const int64_t *box, int64_t rank,
                             const int64_t *offsets, const int64_t *steps,
                             int64_t &count, int64_t &base) {
  if (rank > kMaxRank)
    fail(std::string(kernel) + ": more than " + std::to_string(kMaxRank) +
         " dimensions");
  TransposeArgs args{};
  args.rank = int(rank);
  int64_t bad =
      dpc::box::layout(whole, box, rank, offsets, steps, args.strides, base);
  if (bad >= 0)
    fail(std::string(kernel) + ": the box leaves the tensor in dimension " +
         std::to_string(bad));
  std::copy(box, box + rank, args.sizes);
  count = dpc::box::elements(box, rank);
  return args;
}

void dpc_slice(const float *whole, const int64_t *whole_shape, float *box,
               const int64_t *box_shape, int64_t rank, const int64_t *offsets,
               const int64_t *steps) {
  int64_t count, base;
  TransposeArgs args = boxArgs("dpc_slice", whole_shape, box_shape, rank,
                               offsets, steps, count, base);
  if (count == 0)
    return;
  sliceKernel<<<blocksFor(count), kThreads, 0, stream()>>>(whole, box, count,
                                                           base, args);
  checkLaunch("slice");
}

void dpc_insert(const float *box, const int64_t *box_shape, float *whole,
                const int64_t *whole_shape, int64_t rank,
                const int64_t *offsets, const int64_t *steps, int64_t fill_rest,
                float fill_value) {
  int64_t count, base;
  TransposeArgs args = boxArgs("dpc_insert", whole_shape, box_shape, rank,
                               offsets, steps, count, base);
  if (fill_rest) {
    int64_t total = dpc::box::elements(whole_shape, rank);
    if (total > 0) {
      fillKernel<<<blocksFor(total), kThreads, 0, stream()>>>(whole, total,
                                                              fill_value);
      checkLaunch("insert fill");
    }
  }
  if (count == 0)
    return;
  insertKernel<<<blocksFor(count), kThreads, 0, stream()>>>(box, whole, count,
                                                            base, args);
  checkLaunch("insert");
}

} // extern "C"

//===----------------------------------------------------------------------===//
// Gather
//===----------------------------------------------------------------------===//

namespace dpc::cuda {
namespace {

// One thread per element of the result; a row read from outside the table
// is NaN, which the loss carries to the executor's non-finite check.
__global__ void gatherKernel(const float *table, const int64_t *indices,
                             int64_t rows, int64_t width, int64_t count,
                             float *out) {
  for (int64_t k = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; k < count;
       k += int64_t(gridDim.x) * blockDim.x) {
    int64_t index = indices[k / width];
    if (index < 0)
      index += rows;
    out[k] =
        index >= 0 && index < rows ? table[index * width + k % width] : NAN;
  }
}

// One thread per column walks the indices in order, so every row's sum is
// taken in the same order on every run.
__global__ void gatherGradColumns(const float *dy, const int64_t *indices,
                                  int64_t rows, int64_t width, int64_t n,
                                  float *dtable) {
  for (int64_t j = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; j < width;
       j += int64_t(gridDim.x) * blockDim.x)
    for (int64_t i = 0; i < n; ++i) {
      int64_t index = indices[i];
      if (index < 0)
        index += rows;
      if (index >= 0 && index < rows)
        dtable[index * width + j] += dy[i * width + j];
    }
}

} // namespace
} // namespace dpc::cuda

extern "C" {

void dpc_gather(const float *table, const int64_t *indices, int64_t rows,
                int64_t width, int64_t n, float *out) {
  int64_t count = n * width;
  if (count <= 0)
    return;
  gatherKernel<<<blocksFor(count), kThreads, 0, stream()>>>(
      table, indices, rows, width, count, out);
  checkLaunch("gather");
}

void dpc_gather_grad(const float *dy, const int64_t *indices, int64_t rows,
                     int64_t width, int64_t n, float *dtable) {
  if (rows * width <= 0)
    return;
  check(cudaMemsetAsync(dtable, 0, size_t(rows * width) * sizeof(float),
                        stream()),
        "dpc_gather_grad: clearing the table gradient");
  if (n <= 0)
    return;
  gatherGradColumns<<<blocksFor(width), kThreads, 0, stream()>>>(
      dy, indices, rows, width, n, dtable);
  checkLaunch("gather_grad");
}

} // extern "C"

//===----------------------------------------------------------------------===//
// Window copies: padding and cropping for the convolutions
//===----------------------------------------------------------------------===//

namespace dpc::cuda {
namespace {

__global__ void windowCopy(const float *src, int64_t planes, int64_t sh,
                           int64_t sw, float *dst, int64_t dh, int64_t dw,
                           int64_t offH, int64_t offW) {
  GRID_STRIDE(i, planes * dh * dw) {
    int64_t w = i % dw, h = (i / dw) % dh, plane = i / (dw * dh);
    int64_t hs = h + offH, ws = w + offW;
    dst[i] = hs >= 0 && hs < sh && ws >= 0 && ws < sw
                 ? src[(plane * sh + hs) * sw + ws]
                 : 0.0f;
  }
}

} // namespace

void launchWindowCopy(const float *src, int64_t n, int64_t c, int64_t sh,
                      int64_t sw, float *dst, int64_t dh, int64_t dw,
                      int64_t offH, int64_t offW) {
  int64_t count = n * c * dh * dw;
  if (count == 0)
    return;
  windowCopy<<<blocksFor(count), kThreads, 0, stream()>>>(
      src, n * c, sh, sw, dst, dh, dw, offH, offW);
  checkLaunch("windowCopy");
}

} // namespace dpc::cuda

//===----------------------------------------------------------------------===//
// Resize (backends/common/Resize.h)
//===----------------------------------------------------------------------===//

namespace dpc::cuda {
namespace {

__global__ void resizeKernel(const float *x, float *y, dpc::resize::Geometry g,
                             int64_t count) {
  int64_t in = dpc::resize::inputPlane(g), out = dpc::resize::outputPlane(g);
  GRID_STRIDE(i, count) {
    y[i] = dpc::resize::value(x + (i / out) * in, g, i % out);
  }
}

/// Gathers: each input element sums the outputs that read it (no atomics).
__global__ void resizeGradKernel(const float *dy, float *dx,
                                 dpc::resize::Geometry g, int64_t count) {
  int64_t in = dpc::resize::inputPlane(g), out = dpc::resize::outputPlane(g);
  GRID_STRIDE(i, count) {
    dx[i] = dpc::resize::gradient(dy + (i / in) * out, g, i % in);
  }
}

dpc::resize::Geometry resizeGeometry(const char *kernel, const int64_t *x_shape,
                                     const int64_t *y_shape, int64_t rank,
                                     const dpc_resize_params *p) {
  dpc::resize::Geometry g;
  if (!dpc::resize::makeGeometry(x_shape, y_shape, rank, *p, g))
    fail(std::string(kernel) + ": cannot resize these shapes");
  return g;
}

} // namespace
} // namespace dpc::cuda

extern "C" {

void dpc_resize(const float *x, const int64_t *x_shape, float *y,
                const int64_t *y_shape, int64_t rank,
                const dpc_resize_params *params) {
  dpc::resize::Geometry g =
      resizeGeometry("dpc_resize", x_shape, y_shape, rank, params);
  int64_t count = g.planes * dpc::resize::outputPlane(g);
  if (count == 0)
    return;
  resizeKernel<<<blocksFor(count), kThreads, 0, stream()>>>(x, y, g, count);
  checkLaunch("resize");
}

void dpc_resize_grad(const float *dy, const int64_t *dy_shape, float *dx,
                     const int64_t *dx_shape, int64_t rank,
                     const dpc_resize_params *params) {
  dpc::resize::Geometry g =
      resizeGeometry("dpc_resize_grad", dx_shape, dy_shape, rank, params);
  int64_t count = g.planes * dpc::resize::inputPlane(g);
  if (count == 0)
    return;
  resizeGradKernel<<<blocksFor(count), kThreads, 0, stream()>>>(dy, dx, g,
                                                                count);
  checkLaunch("resize_grad");
}

} // extern "C"

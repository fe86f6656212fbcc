/*===- Abi.h - The C ABI between generated code and the runtime ----*- C
 *-*-===//
 *
 * A rank executable is the object file `dpc compile` generates for one
 * pipeline stage, linked with the runtime library. The generated object
 * defines the segment functions and the rank manifest; the runtime defines
 * everything else declared here. This header is the whole contract: the
 * generated code includes nothing else, and the runtime never includes MLIR.
 * It is C (C99 and later) as well as C++.
 *
 * The runtime's functions are the rows of Abi.def, one table from which this
 * header's prototypes and lower-to-runtime's declarations and typed calls
 * are both expanded: a new entry point is a row there (and its definitions
 * in the runtime or each kernel library), nothing here.
 *
 * Conventions:
 *  - Tensors are dense, row-major, contiguous buffers: float32 for
 *    activations, parameters and gradients; int64 for labels.
 *  - A segment function runs one schedule instruction (Forward, Backward,
 *    BackwardInput, BackwardWeight, OptimizerStep) for the microbatch the
 *    executor has made current in the context.
 *  - Buffers from dpc_alloc live until the segment function returns.
 *    Buffers returned by dpc_input/dpc_labels/dpc_recv/dpc_restore are owned
 *    by the runtime and must not be written.
 *  - Identifiers (param ids, transfer tags, stash keys) are small
 *    non-negative integers assigned by the compiler and listed in the
 *    manifest.
 *
 *===----------------------------------------------------------------------===*/

#ifndef DPC_RUNTIME_ABI_H
#define DPC_RUNTIME_ABI_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct dpc_context dpc_context;

/*===------------------------------------------------------------------------===
 * Defined by the generated object
 *===------------------------------------------------------------------------===*/

/* The rank manifest, a NUL-terminated JSON document (format "dpc-rank",
 * described in docs/RUNTIME.md): stage, shapes, parameters, transfers,
 * stashes and which segment functions exist. */
extern const char dpc_rank_manifest[];

/* Segment functions. Every rank defines dpc_segment_forward and
 * dpc_segment_optimizer; dpc_segment_backward runs the whole backward of a
 * microbatch, dpc_segment_backward_input and dpc_segment_backward_weight its
 * two halves (zero-bubble schedules). A segment with nothing to do is still
 * defined. */
void dpc_segment_forward(dpc_context *ctx);
void dpc_segment_backward(dpc_context *ctx);
void dpc_segment_backward_input(dpc_context *ctx);
void dpc_segment_backward_weight(dpc_context *ctx);
void dpc_segment_optimizer(dpc_context *ctx);

/*===------------------------------------------------------------------------===
 * Types and codes of the kernels' arguments
 *===------------------------------------------------------------------------===*/

/* Activations a CPU build keeps channel-blocked (propagate-layouts): an
 * (N, C, H, W) tensor stored as (N, C/16, H, W, 16), oneDNN's nChw16c, C a
 * multiple of 16. Values are unchanged; only where they are in memory. */
#define DPC_CHANNEL_BLOCK 16

/* The parameter structs below are int64_t fields only, so that each has the
 * layout of an int64_t array of its field count (which the size checks
 * hold them to): generated code passes constant i64 arrays, and the
 * kernels read the fields by name. */
#ifdef __cplusplus
#define DPC_ABI_INT64_FIELDS(TYPE, COUNT)                                      \
  static_assert(sizeof(TYPE) == (COUNT) * sizeof(int64_t),                     \
                #TYPE " is " #COUNT " int64_t fields")
#else
#define DPC_ABI_INT64_FIELDS(TYPE, COUNT)                                      \
  typedef char dpc_abi_check_##TYPE[sizeof(TYPE) == (COUNT) * sizeof(int64_t) \
                                        ? 1                                    \
                                        : -1]
#endif

/* conv2d's params, and its gradients' and variants'. Shapes are NCHW /
 * OIHW; `layouts` says which activations are channel-blocked: bit 0
 * (DPC_CONV_BLOCKED_X) the input side (x, or dx), bit 1
 * (DPC_CONV_BLOCKED_Y) the output side (y, or dy); and bit 2
 * (DPC_CONV_ACCUMULATE_DW, filter gradients only) that dw is added to what
 * the buffer holds (a gradient accumulator, dpc_grad_accumulator) rather
 * than overwritten. The CPU takes every bit; the CUDA kernels take the
 * last only. */
typedef struct dpc_conv_params {
  int64_t stride_h, stride_w;
  int64_t pad_top, pad_left, pad_bottom, pad_right;
  int64_t dilation_h, dilation_w;
  int64_t groups;
  int64_t layouts; /* dpc_conv_layouts bits */
} dpc_conv_params;
DPC_ABI_INT64_FIELDS(dpc_conv_params, 10);

enum dpc_conv_layouts {
  DPC_CONV_BLOCKED_X = 1,
  DPC_CONV_BLOCKED_Y = 2,
  DPC_CONV_ACCUMULATE_DW = 4,
};

/* conv3d's params, and its gradients' and conv_transpose3d's: shapes are
 * NCDHW / OIDHW (transposed: CinCoutDHW), activations plain; `layouts` may
 * hold DPC_CONV_ACCUMULATE_DW for a filter gradient only. */
typedef struct dpc_conv3d_params {
  int64_t stride_d, stride_h, stride_w;
  int64_t pad_front, pad_top, pad_left, pad_back, pad_bottom, pad_right;
  int64_t dilation_d, dilation_h, dilation_w;
  int64_t groups;
  int64_t layouts; /* dpc_conv_layouts bits */
} dpc_conv3d_params;
DPC_ABI_INT64_FIELDS(dpc_conv3d_params, 14);

/* max_pool2d's params, its window: kernel, strides and pads. */
typedef struct dpc_pool_params {
  int64_t kernel_h, kernel_w;
  int64_t stride_h, stride_w;
  int64_t pad_top, pad_left, pad_bottom, pad_right;
} dpc_pool_params;
DPC_ABI_INT64_FIELDS(dpc_pool_params, 8);

/* avg_pool2d's params: the window, and whether the divisor counts the
 * padding (0 or 1). */
typedef struct dpc_avg_pool_params {
  dpc_pool_params window;
  int64_t count_include_pad;
} dpc_avg_pool_params;
DPC_ABI_INT64_FIELDS(dpc_avg_pool_params, 9);

/* Binary elementwise functions, by code. */
enum dpc_binary_fn {
  DPC_BINARY_ADD = 0,
  DPC_BINARY_SUB = 1,
  DPC_BINARY_MUL = 2,
  DPC_BINARY_DIV = 3,
};

/* Element types of the mask kernels' operands: float32, int64 and bool (one
 * byte, 0 or 1). */
enum dpc_dtype {
  DPC_DTYPE_F32 = 0,
  DPC_DTYPE_I64 = 1,
  DPC_DTYPE_BOOL = 2,
};

/* Comparisons and boolean logic, by code: == < > <= >= on numbers, and, or,
 * xor on booleans. */
enum dpc_compare_fn {
  DPC_COMPARE_EQ = 0,
  DPC_COMPARE_LT = 1,
  DPC_COMPARE_GT = 2,
  DPC_COMPARE_LE = 3,
  DPC_COMPARE_GE = 4,
  DPC_COMPARE_AND = 5,
  DPC_COMPARE_OR = 6,
  DPC_COMPARE_XOR = 7,
};

/* Elementwise functions, by code: one per row of UnaryFunctions.def, which
 * also gives each one's math and gradient. */
enum dpc_unary_fn {
#define DPC_UNARY_FUNCTION(CODE, ...) DPC_UNARY_##CODE,
#include "dpc/runtime/UnaryFunctions.def"
};

/* dpc_resize's parameters: ONNX Resize's mode, coordinate transformation
 * and nearest rounding rule as codes, and one scale per spatial dimension,
 * in order (entries past the input's rank - 2 unused), as the exact
 * fraction scale_num / scale_den of the model's float; 0 / 1 where the
 * output's size was given instead. backends/common/Resize.h says what each
 * code computes. */
enum dpc_resize_mode {
  DPC_RESIZE_NEAREST = 0,
  DPC_RESIZE_LINEAR = 1,
};
enum dpc_resize_coordinates {
  DPC_RESIZE_HALF_PIXEL = 0,
  DPC_RESIZE_PYTORCH_HALF_PIXEL = 1,
  DPC_RESIZE_ALIGN_CORNERS = 2,
  DPC_RESIZE_ASYMMETRIC = 3,
  DPC_RESIZE_TF_HALF_PIXEL_FOR_NN = 4,
};
enum dpc_resize_rounding {
  DPC_RESIZE_ROUND_PREFER_FLOOR = 0,
  DPC_RESIZE_ROUND_PREFER_CEIL = 1,
  DPC_RESIZE_FLOOR = 2,
  DPC_RESIZE_CEIL = 3,
};
typedef struct dpc_resize_params {
  int64_t mode;         /* dpc_resize_mode */
  int64_t coordinates;  /* dpc_resize_coordinates */
  int64_t nearest_mode; /* dpc_resize_rounding */
  int64_t scale_num[3], scale_den[3];
} dpc_resize_params;
DPC_ABI_INT64_FIELDS(dpc_resize_params, 9);

/*===------------------------------------------------------------------------===
 * Defined by the runtime: the prototypes of Abi.def's rows
 *===------------------------------------------------------------------------===*/

#define DPC_ABI_FUNCTION(RESULT, NAME, PARAMS) RESULT NAME PARAMS;
#include "dpc/runtime/Abi.def"

#ifdef __cplusplus
}
#endif

#endif /* DPC_RUNTIME_ABI_H */

/*===- Abi.h - The C ABI between generated code and the runtime ----*- C
 *-*-===//
 *
 * A rank executable is the object file `dpc compile` generates for one
 * pipeline stage, linked with the runtime library. The generated object
 * defines the segment functions and the rank manifest; the runtime defines
 * everything else declared here. This header is the whole contract: the
 * generated code includes nothing else, and the runtime never includes MLIR.
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
 * Context: data, parameters, transfers, stashes (defined by the runtime)
 *===------------------------------------------------------------------------===*/

/* The model chunk the running segment function is called for. A rank of an
 * interleaved schedule holds several chunks (manifest "chunks"); its segment
 * functions dispatch on this. Always 0 otherwise. */
int64_t dpc_chunk(dpc_context *ctx);

/* The shape bucket of the running microbatch: its index into the manifest's
 * "buckets" (dpc compile --seq-buckets). A bucketed rank's segment functions
 * dispatch on it to that bucket's code. Always 0 otherwise. */
int64_t dpc_bucket(dpc_context *ctx);

/* The current microbatch's data input `index` (manifest "inputs"): float32
 * values, or int64 token ids for an input of dtype "i64". */
const void *dpc_input(dpc_context *ctx, int64_t index);
/* The current microbatch's labels (manifest "labels"): int64 class ids, or
 * float32 targets when the labels' dtype is "f32" (--loss mse), which the
 * generated code reads as floats through the same pointer. */
const int64_t *dpc_labels(dpc_context *ctx);
/* The scale of a loss that leaves out labels (manifest "labels"
 * "ignore_index"): 1 / the labels that are not ignored in the step's
 * minibatch (in the microbatch for pipedream and evaluation), so that the
 * microbatch losses sum to torch's mean. inf when the step has none. */
float dpc_loss_scale(dpc_context *ctx);

/* Scratch memory for the running segment, 64-byte aligned, valid until the
 * segment returns. */
void *dpc_alloc(dpc_context *ctx, int64_t bytes);

/* The current value of parameter `param` (manifest "params"). Only the
 * optimizer step writes parameters, through dpc_sgd_step or dpc_adam_step
 * (and a forward kernel its running statistics, through dpc_param_state). */
const float *dpc_param(dpc_context *ctx, int64_t param);

/* Whether the running pass trains (1) or only evaluates (0): batch
 * normalization uses batch statistics while training, its running
 * statistics otherwise. */
int64_t dpc_training(dpc_context *ctx);

/* The live buffer of parameter `param`, which a forward kernel updates in
 * place: the running statistics of batch_norm_stats, the only parameters
 * written outside the optimizer step. */
float *dpc_param_state(dpc_context *ctx, int64_t param);

/* Adds `grad` (the parameter's element count) to the parameter's gradient
 * accumulator; the optimizer step consumes and clears it. */
void dpc_grad_accumulate(dpc_context *ctx, int64_t param, const float *grad);
/* The parameter's gradient accumulator itself, for a kernel that adds its
 * gradient there directly (a filter gradient with DPC_CONV_ACCUMULATE_DW)
 * instead of writing a buffer that dpc_grad_accumulate then adds. Same
 * segments as dpc_grad_accumulate. */
float *dpc_grad_accumulator(dpc_context *ctx, int64_t param);

/* One torch.optim.SGD step on `param` from its accumulated gradient g:
 * g += weight_decay * p; v = momentum * v + g; p -= lr * v; then the
 * accumulator is cleared. */
void dpc_sgd_step(dpc_context *ctx, int64_t param, float lr, float momentum,
                  float weight_decay);

/* One torch.optim.Adam step (no AMSGrad) on `param` from its accumulated
 * gradient g, as update t (the rank's OptimizerStep count, 1 first):
 * g += weight_decay * p; m = beta1 * m + (1 - beta1) * g;
 * v = beta2 * v + (1 - beta2) * g^2;
 * p -= lr * (m / (1 - beta1^t)) / (sqrt(v / (1 - beta2^t)) + eps);
 * then the accumulator is cleared. */
void dpc_adam_step(dpc_context *ctx, int64_t param, float lr, float beta1,
                   float beta2, float eps, float weight_decay);

/* Hands the value for transfer `tag` (manifest "sends") of the current
 * microbatch to the runtime, which copies it; the schedule's SendStart posts
 * it. */
void dpc_send(dpc_context *ctx, int64_t tag, const void *data);
/* The received value for transfer `tag` (manifest "recvs") of the current
 * microbatch; the schedule's RecvFinish has completed it. */
const void *dpc_recv(dpc_context *ctx, int64_t tag);

/* Keeps a copy of `data` under stash `key` (manifest "stashes") for the
 * current microbatch, until its backward restores it. */
void dpc_stash(dpc_context *ctx, int64_t key, const void *data);
/* The value stashed under `key` for the current microbatch. The slot is
 * released when the microbatch's backward has finished. */
const void *dpc_restore(dpc_context *ctx, int64_t key);

/* Last stage: the current microbatch's (already scaled) loss and its model
 * output, for the progress line, metrics and evaluation accuracy. */
void dpc_report_loss(dpc_context *ctx, const float *loss);
void dpc_report_output(dpc_context *ctx, const float *output);

/* Profiling builds (`dpc profile`) bracket each kernel call with the id of
 * the op it computes (manifest "profile"); the runtime sums the time per id. */
void dpc_profile_begin(dpc_context *ctx, int64_t op);
void dpc_profile_end(dpc_context *ctx, int64_t op);

/*===------------------------------------------------------------------------===
 * Kernels (defined by the target's kernel library; CPU: oneDNN and loops)
 *
 * Shapes are passed as int64 arrays; `params` arrays are documented per
 * kernel. Outputs are overwritten, never accumulated into.
 *===------------------------------------------------------------------------===*/

/* Activations a CPU build keeps channel-blocked (propagate-layouts): an
 * (N, C, H, W) tensor stored as (N, C/16, H, W, 16), oneDNN's nChw16c, C a
 * multiple of 16. Values are unchanged; only where they are in memory. */
#define DPC_CHANNEL_BLOCK 16
/* Converts x (N, C, H, W; C a multiple of DPC_CHANNEL_BLOCK) from plain to
 * channel-blocked (to_blocked = 1) or back (0) into y. */
void dpc_relayout(const float *x, const int64_t *shape, int64_t to_blocked,
                  float *y);

/* conv2d params: stride_h, stride_w, pad_top, pad_left, pad_bottom,
 * pad_right, dilation_h, dilation_w, groups, layouts. Shapes are NCHW /
 * OIHW; `layouts` says which activations are channel-blocked: bit 0
 * (DPC_CONV_BLOCKED_X) the input side (x, or dx), bit 1
 * (DPC_CONV_BLOCKED_Y) the output side (y, or dy); and bit 2
 * (DPC_CONV_ACCUMULATE_DW, filter gradients only) that dw is added to what
 * the buffer holds (a gradient accumulator, dpc_grad_accumulator) rather
 * than overwritten. The CPU takes every bit; the CUDA kernels take the
 * last only. */
enum dpc_conv_layouts {
  DPC_CONV_BLOCKED_X = 1,
  DPC_CONV_BLOCKED_Y = 2,
  DPC_CONV_ACCUMULATE_DW = 4,
};
void dpc_conv2d(const float *x, const int64_t *x_shape, const float *w,
                const int64_t *w_shape, const float *bias /* nullable */,
                float *y, const int64_t *y_shape, const int64_t *params);
void dpc_conv2d_grad_input(const float *dy, const int64_t *dy_shape,
                           const float *w, const int64_t *w_shape, float *dx,
                           const int64_t *dx_shape, const int64_t *params);
void dpc_conv2d_grad_filter(const float *dy, const int64_t *dy_shape,
                            const float *x, const int64_t *x_shape, float *dw,
                            const int64_t *dw_shape, const int64_t *params);
/* The same in bf16 mixed precision (dpc compile --precision bf16): the
 * inputs (x and w; dy and w; dy and x) are read as bfloat16, rounded to
 * nearest even, and the f32 output is accumulated in f32. Buffers stay f32.
 * Where dpc_bf16_native() is 0 they compute in f32. */
void dpc_conv2d_bf16(const float *x, const int64_t *x_shape, const float *w,
                     const int64_t *w_shape, const float *bias /* nullable */,
                     float *y, const int64_t *y_shape, const int64_t *params);
void dpc_conv2d_grad_input_bf16(const float *dy, const int64_t *dy_shape,
                                const float *w, const int64_t *w_shape,
                                float *dx, const int64_t *dx_shape,
                                const int64_t *params);
void dpc_conv2d_grad_filter_bf16(const float *dy, const int64_t *dy_shape,
                                 const float *x, const int64_t *x_shape,
                                 float *dw, const int64_t *dw_shape,
                                 const int64_t *params);
/* The same computed by Winograd's F(4x4, 3x3) (dpc compile
 * --conv-algorithm, select-conv-algorithm): f32, a 3x3 filter, strides and
 * dilations of 1, one group, the same pad of 0 or 1 on every side. Results
 * differ from the direct kernels' by float rounding of the tile
 * transforms. Other convolutions run on the direct kernels, and so does
 * every one, after a warning, where the target has no Winograd kernel. */
void dpc_conv2d_winograd(const float *x, const int64_t *x_shape, const float *w,
                         const int64_t *w_shape,
                         const float *bias /* nullable */, float *y,
                         const int64_t *y_shape, const int64_t *params);
void dpc_conv2d_grad_input_winograd(const float *dy, const int64_t *dy_shape,
                                    const float *w, const int64_t *w_shape,
                                    float *dx, const int64_t *dx_shape,
                                    const int64_t *params);
void dpc_conv2d_grad_filter_winograd(const float *dy, const int64_t *dy_shape,
                                     const float *x, const int64_t *x_shape,
                                     float *dw, const int64_t *dw_shape,
                                     const int64_t *params);
/* Sums dy (N, C, H, W) over N, H, W into db (C). */
void dpc_conv2d_grad_bias(const float *dy, const int64_t *dy_shape, float *db);

/* batch independent products y[b] = op(a[b]) x op(b[b]), op = transpose when
 * the flag is set; y[b] is M x N, op(a[b]) is M x K, op(b[b]) is K x N.
 * a_stride/b_stride are the element distances between batches (0: the same
 * matrix for every batch). With `accumulate`, y[b] for all b are summed
 * into one M x N result instead (the gradient of a shared weight). */
void dpc_matmul(const float *a, const float *b, float *y, int64_t batch,
                int64_t m, int64_t n, int64_t k, int64_t transpose_a,
                int64_t transpose_b, int64_t a_stride, int64_t b_stride,
                int64_t accumulate);
/* dpc_matmul with a and b read as bfloat16 and y accumulated in f32 (dpc
 * compile --precision bf16); f32 where dpc_bf16_native() is 0. */
void dpc_matmul_bf16(const float *a, const float *b, float *y, int64_t batch,
                     int64_t m, int64_t n, int64_t k, int64_t transpose_a,
                     int64_t transpose_b, int64_t a_stride, int64_t b_stride,
                     int64_t accumulate);
/* 1 when the target computes the _bf16 kernels in bf16 (CPU: oneDNN sees
 * AVX512-BF16 or AMX, which DNNL_MAX_CPU_ISA may lower), 0 when they fall
 * back to f32. */
int64_t dpc_bf16_native(void);

/* Binary elementwise functions, by code. */
enum dpc_binary_fn {
  DPC_BINARY_ADD = 0,
  DPC_BINARY_SUB = 1,
  DPC_BINARY_MUL = 2,
  DPC_BINARY_DIV = 3,
};

/* y = a fn b (+, -, *, /) with numpy broadcasting; all three shapes have
 * rank `rank` (the compiler pads missing leading dimensions with 1). */
void dpc_binary(int64_t fn, const float *a, const int64_t *a_shape,
                const float *b, const int64_t *b_shape, float *y,
                const int64_t *y_shape, int64_t rank);
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

/* y = a fn b as bytes 0 or 1, a and b of element type `dtype` with numpy
 * broadcasting; all three shapes have rank `rank`. */
void dpc_compare(int64_t fn, int64_t dtype, const void *a,
                 const int64_t *a_shape, const void *b, const int64_t *b_shape,
                 uint8_t *y, const int64_t *y_shape, int64_t rank);
/* y = !x over count booleans. */
void dpc_not(const uint8_t *x, uint8_t *y, int64_t count);
/* y = x converted from element type `from` to `to` over count elements: to
 * bool is x != 0, from bool 0 or 1, float to int64 truncates. */
void dpc_cast(int64_t from, int64_t to, const void *x, void *y, int64_t count);
/* y = c ? a : b with numpy broadcasting of all four shapes (rank `rank`). */
void dpc_where(const uint8_t *c, const int64_t *c_shape, const float *a,
               const int64_t *a_shape, const float *b, const int64_t *b_shape,
               float *y, const int64_t *y_shape, int64_t rank);
/* dx = (c == branch) ? dy : 0, c broadcast to dy's shape (rank `rank`). */
void dpc_where_grad(const uint8_t *c, const int64_t *c_shape, const float *dy,
                    float *dx, const int64_t *dy_shape, int64_t rank,
                    int64_t branch);
/* Sums x over the dimensions where y has size 1 (same rank), times scale. */
void dpc_sum_to_shape(const float *x, const int64_t *x_shape, float *y,
                      const int64_t *y_shape, int64_t rank, float scale);
/* y = scale * x, stretched over the dimensions where x has size 1 (same
 * rank). */
void dpc_broadcast_to(const float *x, const int64_t *x_shape, float *y,
                      const int64_t *y_shape, int64_t rank, float scale);
/* y = x with its dimensions permuted: y's dimension i is x's perm[i]. */
void dpc_transpose(const float *x, const int64_t *x_shape, float *y,
                   const int64_t *perm, int64_t rank);

/* Strided boxes, for nn.slice (and Split) and nn.concat: element i (a
 * multi-index over `box_shape`) of the box is element offsets + i * steps of
 * the whole tensor (one offset and one positive step per dimension).
 * dpc_slice copies the box out of `whole` into `box`; dpc_insert copies
 * `box` into `whole`, leaving the rest of `whole` as it was, or setting it
 * to `fill_value` when `fill_rest` is set (the slice's gradient: 0; a
 * constant pad: its value). */
void dpc_slice(const float *whole, const int64_t *whole_shape, float *box,
               const int64_t *box_shape, int64_t rank, const int64_t *offsets,
               const int64_t *steps);
void dpc_insert(const float *box, const int64_t *box_shape, float *whole,
                const int64_t *whole_shape, int64_t rank,
                const int64_t *offsets, const int64_t *steps, int64_t fill_rest,
                float fill_value);

/* Dropout. dpc_random_key gives the key of op `op`'s mask (the op's number
 * in the model) for the microbatch being run: a function of the run's seed,
 * the step and the microbatch, the same in its forward and backward
 * segments and on every stage split; -1 while the executor evaluates or
 * predicts. dpc_dropout computes y = x * keep / (1 - ratio), keep drawn per
 * element from Philox under the key (backends/common/Random.h), and y = x
 * for a negative key; applied to dy with the same key it is the gradient. */
int64_t dpc_random_key(dpc_context *ctx, int64_t op);
void dpc_dropout(const float *x, float *y, int64_t count, float ratio,
                 int64_t key);

/* y = min(max(x, lo), hi); dx = dy where lo <= x <= hi, else 0. */
void dpc_clip(const float *x, float *y, int64_t count, float lo, float hi);
void dpc_clip_grad(const float *dy, const float *x, float *dx, int64_t count,
                   float lo, float hi);

/* softmax (log_softmax when `log` is set) along the middle dimension of x
 * viewed as outer x n x inner. */
void dpc_softmax(const float *x, float *y, int64_t outer, int64_t n,
                 int64_t inner, int64_t log);
/* Its input gradient from the forward result y: softmax
 * dx = y (dy - sum(dy y)), log_softmax dx = dy - exp(y) sum(dy), the sums
 * along the same dimension. */
void dpc_softmax_grad(const float *dy, const float *y, float *dx, int64_t outer,
                      int64_t n, int64_t inner, int64_t log);

void dpc_relu(const float *x, float *y, int64_t count);
/* dx = dy where y > 0, else 0. */
void dpc_relu_grad(const float *dy, const float *y, float *dx, int64_t count);

/* Elementwise functions, by code: one per row of UnaryFunctions.def, which
 * also gives each one's math and gradient. */
enum dpc_unary_fn {
#define DPC_UNARY_FUNCTION(CODE, ...) DPC_UNARY_##CODE,
#include "dpc/runtime/UnaryFunctions.def"
};
/* y = f(x); a and b are the row's attributes (LeakyRelu's alpha, ...), or
 * ignored. */
void dpc_unary(int64_t fn, float a, float b, const float *x, float *y,
               int64_t count);
/* dx = dy * f'(x), from `saved`: the forward result y or the input x, as
 * the function's row says. Not for a row whose SAVED is None (neg). */
void dpc_unary_grad(int64_t fn, float a, float b, const float *dy,
                    const float *saved, float *dx, int64_t count);

/* max_pool2d params: kernel_h, kernel_w, stride_h, stride_w, pad_top,
 * pad_left, pad_bottom, pad_right. Shapes NCHW. The gradient routes to the
 * first maximum of each window, as PyTorch does. */
void dpc_max_pool2d(const float *x, const int64_t *x_shape, float *y,
                    const int64_t *y_shape, const int64_t *params);
void dpc_max_pool2d_grad(const float *dy, const int64_t *dy_shape,
                         const float *x, const int64_t *x_shape, float *dx,
                         const int64_t *params);

/* avg_pool2d params: the max_pool2d params, then count_include_pad (0 or
 * 1). The divisor follows PyTorch: the window clipped to the padded input
 * with count_include_pad, to the input itself without. */
void dpc_avg_pool2d(const float *x, const int64_t *x_shape, float *y,
                    const int64_t *y_shape, const int64_t *params);
void dpc_avg_pool2d_grad(const float *dy, const int64_t *dy_shape, float *dx,
                         const int64_t *dx_shape, const int64_t *params);

/* Mean of each of `planes` planes of `size` elements; the gradient spreads
 * dy[p] / size over plane p. */
void dpc_global_avg_pool(const float *x, int64_t planes, int64_t size,
                         float *y);
void dpc_global_avg_pool_grad(const float *dy, int64_t planes, int64_t size,
                              float *dx);

/* Batch normalization of x viewed as (n, c, s): c channels, s the product
 * of the spatial dimensions; with `block` DPC_CHANNEL_BLOCK rather than 1,
 * x, y, dy and dx are channel-blocked, (n, c/block, s, block) in memory.
 * `stats` is 2 x c: the mean row, then the biased variance row.
 * dpc_batch_norm_stats, training: stats = the statistics of x over n and s;
 *   running_* = momentum * running_* + (1 - momentum) * batch, with the
 *   unbiased variance for running_var. Not training: stats = the running
 *   statistics, which stay unchanged.
 * dpc_batch_norm: y = scale * (x - mean) / sqrt(var + epsilon) + bias.
 * dpc_batch_norm_grad_input: dx of training-mode batch normalization, the
 *   statistics being those of x.
 * dpc_batch_norm_grad_scale: dscale = sum over n and s of dy * xhat.
 * dpc_batch_norm_grad_bias: dbias = sum over n and s of dy. */
void dpc_batch_norm_stats(const float *x, int64_t n, int64_t c, int64_t s,
                          int64_t block, float *running_mean,
                          float *running_var, float momentum, int64_t training,
                          float *stats);
void dpc_batch_norm(const float *x, const float *stats, const float *scale,
                    const float *bias, int64_t n, int64_t c, int64_t s,
                    int64_t block, float epsilon, float *y);
void dpc_batch_norm_grad_input(const float *dy, const float *x,
                               const float *stats, const float *scale,
                               int64_t n, int64_t c, int64_t s, int64_t block,
                               float epsilon, float *dx);
void dpc_batch_norm_grad_scale(const float *dy, const float *x,
                               const float *stats, int64_t n, int64_t c,
                               int64_t s, int64_t block, float epsilon,
                               float *dscale);
void dpc_batch_norm_grad_bias(const float *dy, int64_t n, int64_t c, int64_t s,
                              int64_t block, float *dbias);

/* Layer normalization of x viewed as rows x size: each row is normalized
 * by its own mean and biased variance. `scale` and `bias` (size each) may
 * be null, meaning 1 and 0. The gradients recompute each row's statistics
 * from x.
 * dpc_layer_norm: y = scale * (x - mean) / sqrt(var + epsilon) + bias.
 * dpc_layer_norm_grad_input: dx, with g = dy * scale,
 *   (g - mean(g) - xhat * mean(g * xhat)) / sqrt(var + epsilon).
 * dpc_layer_norm_grad_scale: dscale = sum over the rows of dy * xhat.
 * The bias gradient is dpc_sum_to_shape of dy. */
void dpc_layer_norm(const float *x, const float *scale, const float *bias,
                    int64_t rows, int64_t size, float epsilon, float *y);
void dpc_layer_norm_grad_input(const float *dy, const float *x,
                               const float *scale, int64_t rows, int64_t size,
                               float epsilon, float *dx);
void dpc_layer_norm_grad_scale(const float *dy, const float *x, int64_t rows,
                               int64_t size, float epsilon, float *dscale);

/* Embedding rows: out[i, :] = table[indices[i], :] for the n indices, rows
 * of `width` floats from a table of `rows` rows; a negative index counts
 * from the end. The CPU kernel stops the run on an index outside
 * [-rows, rows); the CUDA kernel writes NaN into that row, which stops it
 * at the loss.
 * dpc_gather_grad: dtable = 0, then dtable[indices[i], :] += dy[i, :] in
 * the order of i, so the sums do not depend on threads. */
void dpc_gather(const float *table, const int64_t *indices, int64_t rows,
                int64_t width, int64_t n, float *out);
void dpc_gather_grad(const float *dy, const int64_t *indices, int64_t rows,
                     int64_t width, int64_t n, float *dtable);

/* One forward LSTM layer (nn.lstm), gates in ONNX's order i, o, f, c:
 * x is steps x batch x input, w 4H x input, r 4H x H, bias 8H (null: none),
 * h0 and c0 batch x H. Per step, z = x[t] w^T + h[t-1] r^T + bias[:4H] +
 * bias[4H:]; states[t] (batch x 6H) receives, per sample, h[t], c[t] and
 * the activated gates sigmoid(z_i), sigmoid(z_o), sigmoid(z_f), tanh(z_c).
 * dpc_lstm_grad: the recurrence backwards from dstates (the h and c parts
 * are read, the gates' ignored) and the forward's states: out[t]
 * (batch x 5H) receives the gradients of z (4H) and of c[t] (H). */
void dpc_lstm(const float *x, const float *w, const float *r, const float *bias,
              const float *h0, const float *c0, int64_t steps, int64_t batch,
              int64_t input, int64_t hidden, float *states);
void dpc_lstm_grad(const float *dstates, const float *states, const float *r,
                   const float *c0, int64_t steps, int64_t batch,
                   int64_t hidden, float *out);

/* loss = scale * sum_i -log softmax(logits[i])[labels[i]], logits n x c. */
void dpc_softmax_cross_entropy(const float *logits, const int64_t *labels,
                               int64_t n, int64_t c, float scale, float *loss);
/* dlogits = scale * (softmax(logits) - onehot(labels)). */
void dpc_softmax_cross_entropy_grad(const float *logits, const int64_t *labels,
                                    int64_t n, int64_t c, float scale,
                                    float *dlogits);
/* The same leaving out the rows labelled `ignore_index`: they add nothing
 * to the loss and their gradient is 0. */
void dpc_softmax_cross_entropy_ignore(const float *logits,
                                      const int64_t *labels, int64_t n,
                                      int64_t c, int64_t ignore_index,
                                      float scale, float *loss);
void dpc_softmax_cross_entropy_ignore_grad(const float *logits,
                                           const int64_t *labels, int64_t n,
                                           int64_t c, int64_t ignore_index,
                                           float scale, float *dlogits);
/* With label smoothing e (torch's CrossEntropyLoss(label_smoothing=e)): a
 * row's loss is (1 - e) * -log p[label] + e * mean_j -log p[j], its gradient
 * scale * (p - (1 - e) * onehot(label) - e / c); with `has_ignore`, rows
 * labelled `ignore_index` add nothing and get a 0 gradient. */
void dpc_softmax_cross_entropy_smoothed(const float *logits,
                                        const int64_t *labels, int64_t n,
                                        int64_t c, int64_t has_ignore,
                                        int64_t ignore_index, float smoothing,
                                        float scale, float *loss);
void dpc_softmax_cross_entropy_smoothed_grad(const float *logits,
                                             const int64_t *labels, int64_t n,
                                             int64_t c, int64_t has_ignore,
                                             int64_t ignore_index,
                                             float smoothing, float scale,
                                             float *dlogits);

/* loss = scale * sum_i (prediction[i] - target[i])^2 over n elements
 * (torch's MSELoss with scale = 1/n). */
void dpc_mse_loss(const float *prediction, const float *target, int64_t n,
                  float scale, float *loss);
/* dprediction = 2 * scale * (prediction - target). */
void dpc_mse_loss_grad(const float *prediction, const float *target, int64_t n,
                       float scale, float *dprediction);

/* Copies `bytes` bytes (a reshape that cannot alias). */
void dpc_copy(const void *src, void *dst, int64_t bytes);

#ifdef __cplusplus
}
#endif

#endif /* DPC_RUNTIME_ABI_H */

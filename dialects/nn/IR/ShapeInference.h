//===- ShapeInference.h - Shape rules of nn ops -----------------*- C++ -*-===//
//
// The shape rules of the nn ops as plain functions, shared by the op
// verifiers, the ONNX importer (which builds result types with them) and the
// passes that create ops. Each takes an `emitError` callback so that the
// caller decides where a diagnostic is attached (an op, or an ONNX node's
// location).
//
//===----------------------------------------------------------------------===//

#ifndef DPC_DIALECTS_NN_IR_SHAPEINFERENCE_H
#define DPC_DIALECTS_NN_IR_SHAPEINFERENCE_H

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Value.h"
#include "mlir/Support/LogicalResult.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>

namespace mlir::dpc::nn {

using EmitErrorFn = llvm::function_ref<InFlightDiagnostic()>;
using Shape = llvm::SmallVector<int64_t, 4>;

/// Checks the attributes of a convolution of `spatial` (2 or 3) dimensions
/// (`spatial` positive strides and dilations, 2 x `spatial` non-negative
/// pads, positive groups) and returns the result shape of a convolution of
/// `input` (N C H W) with `filter` (O C/groups KH KW); conv3d's input is
/// N C D H W, its filter O C/groups KD KH KW, its pads [front, top, left,
/// back, bottom, right].
FailureOr<Shape> inferConvShape(size_t spatial, ArrayRef<int64_t> input,
                                ArrayRef<int64_t> filter,
                                ArrayRef<int64_t> strides,
                                ArrayRef<int64_t> pads,
                                ArrayRef<int64_t> dilations, int64_t groups,
                                EmitErrorFn emitError);

/// Checks the attributes of a transposed convolution of `spatial` (2 or 3)
/// dimensions (those of the convolution, and one output_padding value per
/// dimension in [0, stride)) and returns the result shape of ONNX
/// ConvTranspose of `input` (N Cin D...) by `filter` (Cin Cout/groups
/// K...): each spatial size is (in - 1) * stride - pad_begin - pad_end +
/// dilation * (k - 1) + 1 + output_padding, the shape whose convolution by
/// the same filter and attributes gives `input` back.
FailureOr<Shape>
inferConvTransposeShape(size_t spatial, ArrayRef<int64_t> input,
                        ArrayRef<int64_t> filter, ArrayRef<int64_t> strides,
                        ArrayRef<int64_t> pads, ArrayRef<int64_t> dilations,
                        ArrayRef<int64_t> outputPadding, int64_t groups,
                        EmitErrorFn emitError);

/// Whether Winograd's F(4x4, 3x3) tiles compute a convolution of these
/// attributes as the CPU backend's kernels do it right: a 3x3 `filter`
/// (O C KH KW), unit strides and dilations, one group and the same pad of 0
/// or 1 on every side. The `winograd` algorithm's verifier and
/// select-conv-algorithm both ask this (the element type, f32, apart).
bool winogradFits(ArrayRef<int64_t> filter, ArrayRef<int64_t> strides,
                  ArrayRef<int64_t> pads, ArrayRef<int64_t> dilations,
                  int64_t groups);

/// Result shape of 2-D pooling of `input` (N C H W).
FailureOr<Shape> inferPool2dShape(ArrayRef<int64_t> input,
                                  ArrayRef<int64_t> kernel,
                                  ArrayRef<int64_t> strides,
                                  ArrayRef<int64_t> pads, bool ceilMode,
                                  EmitErrorFn emitError);

/// Result shape of resizing `input` (N C D1..Dk, 1 <= k <= 3) over its
/// spatial axes: axis i becomes floor(Di * scales[i]) where that scale is
/// positive (ONNX Resize's rule) and sizes[i] where it is 0 (`sizes` may
/// then be empty only if no scale is 0).
FailureOr<Shape> inferResizeShape(ArrayRef<int64_t> input,
                                  ArrayRef<double> scales,
                                  ArrayRef<int64_t> sizes,
                                  EmitErrorFn emitError);

/// nn.resize's string attributes as the runtime's codes
/// (backends/common/Resize.h): mode nearest 0, linear 1; coordinates
/// half_pixel 0, pytorch_half_pixel 1, align_corners 2, asymmetric 3,
/// tf_half_pixel_for_nn 4; nearest_mode round_prefer_floor 0,
/// round_prefer_ceil 1, floor 2, ceil 3.
struct ResizeCodes {
  int64_t mode, coordinates, nearestMode;
};
FailureOr<ResizeCodes> resizeCodes(StringRef mode, StringRef coordinates,
                                   StringRef nearestMode,
                                   EmitErrorFn emitError);

/// Result shape of global average pooling of `input` (N C D1..Dk, k >= 1):
/// the spatial dimensions become 1.
FailureOr<Shape> inferGlobalAvgPoolShape(ArrayRef<int64_t> input,
                                         EmitErrorFn emitError);

/// Shape of the batch-normalization statistics of `input` (N C D1..Dk,
/// k >= 0): 2 x C, the mean and the variance of each channel.
FailureOr<Shape> inferBatchNormStatsShape(ArrayRef<int64_t> input,
                                          EmitErrorFn emitError);

/// Shape of layer normalization's scale and bias on `input`, normalized
/// over dimensions [axis, rank) (a negative `axis` counts from the end):
/// input[axis:], which is also the shape each statistic is taken over.
FailureOr<Shape> inferLayerNormWeightShape(ArrayRef<int64_t> input,
                                           int64_t axis, EmitErrorFn emitError);

/// Result shape of `lhs` x `rhs` with optional transposes of the last two
/// dimensions; batch dimensions must match, or `rhs` is rank 2.
FailureOr<Shape> inferMatmulShape(ArrayRef<int64_t> lhs, ArrayRef<int64_t> rhs,
                                  bool transposeLhs, bool transposeRhs,
                                  EmitErrorFn emitError);

/// The numpy broadcast of two shapes.
FailureOr<Shape> inferBroadcastShape(ArrayRef<int64_t> lhs,
                                     ArrayRef<int64_t> rhs,
                                     EmitErrorFn emitError);

/// `axis` of a tensor of rank `rank` counted from the front (a negative axis
/// counts from the end), or an error when it is out of range.
FailureOr<int64_t> normalizeAxis(int64_t axis, size_t rank,
                                 EmitErrorFn emitError);

/// Result shape of permuting the dimensions of `input` by `perm` (result
/// dimension i is input dimension perm[i]).
FailureOr<Shape> inferTransposeShape(ArrayRef<int64_t> input,
                                     ArrayRef<int64_t> perm,
                                     EmitErrorFn emitError);

/// The shape of `value`, a ranked tensor (as every nn operand and result is).
ArrayRef<int64_t> shapeOf(Value value);

/// The shape of `value`, or none where it is null (an optional operand the
/// op goes without).
std::optional<ArrayRef<int64_t>> shapeOfOptional(Value value);

/// Number of elements of a static shape.
int64_t getNumElements(ArrayRef<int64_t> shape);

/// Bytes of a statically shaped tensor value (its buffer at run time).
int64_t getSizeInBytes(Value tensor);
/// Bytes `tensor` takes when it crosses a stage boundary: f32 travels as
/// bf16 (half) in a bf16 mixed-precision build, everything else as is.
int64_t getTransferBytes(Value tensor, bool bf16);

/// Writes a shape as "2x3x4" ("scalar" for rank 0) for diagnostics.
std::string formatShape(ArrayRef<int64_t> shape);

/// Result shape of concatenating `inputs` (at least one, of one rank, equal
/// in every dimension but `axis`) along `axis`, in [0, rank).
FailureOr<Shape> inferConcatShape(ArrayRef<ArrayRef<int64_t>> inputs,
                                  int64_t axis, EmitErrorFn emitError);

/// Result shape of padding `input` with `pads` (before each dimension, then
/// after each; non-negative).
FailureOr<Shape> inferPadShape(ArrayRef<int64_t> input, ArrayRef<int64_t> pads,
                               EmitErrorFn emitError);

/// Result shape of gathering rows of `table` (rank >= 1) by `indices`:
/// indices' shape followed by a row's, table[1:].
FailureOr<Shape> inferGatherShape(ArrayRef<int64_t> table,
                                  ArrayRef<int64_t> indices,
                                  EmitErrorFn emitError);

/// Checks that a box of `box` elements read from `input` at `offsets` with
/// `steps` (one each per dimension, steps positive, offsets non-negative)
/// lies inside `input`.
LogicalResult verifySliceBox(ArrayRef<int64_t> input, ArrayRef<int64_t> box,
                             ArrayRef<int64_t> offsets, ArrayRef<int64_t> steps,
                             EmitErrorFn emitError);

/// Result shape of one forward LSTM layer (nn.lstm): `input` T x B x I,
/// `weight` 4H x I, `recurrence` 4H x H, `bias` 8H when given (none
/// otherwise), `initialH` and `initialC` B x H; the state sequence,
/// T x B x 6H (h, c and the four activated gates per step).
FailureOr<Shape> inferLstmShape(ArrayRef<int64_t> input,
                                ArrayRef<int64_t> weight,
                                ArrayRef<int64_t> recurrence,
                                std::optional<ArrayRef<int64_t>> bias,
                                ArrayRef<int64_t> initialH,
                                ArrayRef<int64_t> initialC,
                                EmitErrorFn emitError);

/// Result shape of nn.lstm_grad from the forward's `states` (T x B x 6H),
/// `recurrence` (4H x H) and `initialC` (B x H): T x B x 5H, the gate
/// pre-activation gradients and the cell gradient per step.
FailureOr<Shape> inferLstmGradShape(ArrayRef<int64_t> states,
                                    ArrayRef<int64_t> recurrence,
                                    ArrayRef<int64_t> initialC,
                                    EmitErrorFn emitError);

/// Result shape of one GRU layer (nn.gru): `input` T x B x I, `weight`
/// 3H x I, `recurrence` 3H x H, `bias` 6H when given (none otherwise),
/// `initialH` B x H; the state sequence, T x B x 5H.
FailureOr<Shape> inferGruShape(ArrayRef<int64_t> input,
                               ArrayRef<int64_t> weight,
                               ArrayRef<int64_t> recurrence,
                               std::optional<ArrayRef<int64_t>> bias,
                               ArrayRef<int64_t> initialH,
                               EmitErrorFn emitError);

/// Result shape of nn.gru_grad from the forward's `states` (T x B x 5H),
/// `recurrence` (3H x H) and `initialH` (B x H): T x B x 5H.
FailureOr<Shape> inferGruGradShape(ArrayRef<int64_t> states,
                                   ArrayRef<int64_t> recurrence,
                                   ArrayRef<int64_t> initialH,
                                   EmitErrorFn emitError);

} // namespace mlir::dpc::nn

#endif // DPC_DIALECTS_NN_IR_SHAPEINFERENCE_H

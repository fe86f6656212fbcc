//===- ShapeInference.cpp - Shape rules of nn ops -------------------------===//

#include "dialects/nn/IR/ShapeInference.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/STLExtras.h"

#include <cmath>
#include <string>

namespace mlir::dpc::nn {

ArrayRef<int64_t> shapeOf(Value value) {
  return cast<RankedTensorType>(value.getType()).getShape();
}

std::optional<ArrayRef<int64_t>> shapeOfOptional(Value value) {
  if (!value)
    return std::nullopt;
  return shapeOf(value);
}

int64_t getNumElements(ArrayRef<int64_t> shape) {
  int64_t count = 1;
  for (int64_t dim : shape)
    count *= dim;
  return count;
}

int64_t getSizeInBytes(Value tensor) {
  auto type = cast<RankedTensorType>(tensor.getType());
  return getNumElements(type.getShape()) *
         ((type.getElementTypeBitWidth() + 7) / 8);
}

int64_t getTransferBytes(Value tensor, bool bf16) {
  auto type = cast<RankedTensorType>(tensor.getType());
  if (bf16 && type.getElementType().isF32())
    return getNumElements(type.getShape()) * 2;
  return getSizeInBytes(tensor);
}

std::string formatShape(ArrayRef<int64_t> shape) {
  if (shape.empty())
    return "scalar";
  std::string text;
  for (auto [i, dim] : llvm::enumerate(shape)) {
    if (i)
      text += "x";
    text += std::to_string(dim);
  }
  return text;
}

static bool allPositive(ArrayRef<int64_t> values) {
  return llvm::all_of(values, [](int64_t v) { return v > 0; });
}

static bool allNonNegative(ArrayRef<int64_t> values) {
  return llvm::all_of(values, [](int64_t v) { return v >= 0; });
}

// Output extent of one spatial dimension of a sliding window.
static int64_t windowOutputSize(int64_t input, int64_t window, int64_t stride,
                                int64_t padBegin, int64_t padEnd,
                                int64_t dilation, bool ceilMode) {
  int64_t span = dilation * (window - 1) + 1;
  int64_t room = input + padBegin + padEnd - span;
  if (room < 0)
    return 0;
  int64_t steps = ceilMode ? (room + stride - 1) / stride : room / stride;
  // As in ONNX and PyTorch, with ceil_mode the last window must start inside
  // the input or its begin padding.
  if (ceilMode && steps * stride >= input + padBegin)
    --steps;
  return steps + 1;
}

// Checks the window attributes of `spatial` (2 or 3) dimensions: positive
// strides and dilations, non-negative pads, all begins before all ends.
static LogicalResult checkWindowAttrs(ArrayRef<int64_t> strides,
                                      ArrayRef<int64_t> pads,
                                      ArrayRef<int64_t> dilations,
                                      EmitErrorFn emitError,
                                      size_t spatial = 2) {
  if (strides.size() != spatial || !allPositive(strides))
    return emitError() << "expects " << spatial << " positive strides";
  if (pads.size() != 2 * spatial || !allNonNegative(pads))
    return emitError() << "expects " << 2 * spatial << " non-negative pads "
                       << (spatial == 2 ? "[top, left, bottom, right]"
                                        : "[front, top, left, back, bottom, "
                                          "right]");
  if (dilations.size() != spatial || !allPositive(dilations))
    return emitError() << "expects " << spatial << " positive dilations";
  return success();
}

// The input and filter ranks of a convolution of `spatial` dimensions.
static LogicalResult checkConvRanks(ArrayRef<int64_t> input,
                                    ArrayRef<int64_t> filter, size_t spatial,
                                    bool transposed, EmitErrorFn emitError) {
  if (input.size() != spatial + 2)
    return emitError() << "expects a rank-" << spatial + 2
                       << (spatial == 2 ? " NCHW" : " NCDHW") << " input, got "
                       << formatShape(input);
  if (filter.size() != spatial + 2)
    return emitError() << "expects a rank-" << spatial + 2 << " filter ("
                       << (transposed ? "Cin x Cout/groups" : "O x C/groups")
                       << (spatial == 2 ? " x KH x KW" : " x KD x KH x KW")
                       << "), got " << formatShape(filter);
  return success();
}

FailureOr<Shape> inferConvShape(size_t spatial, ArrayRef<int64_t> input,
                                ArrayRef<int64_t> filter,
                                ArrayRef<int64_t> strides,
                                ArrayRef<int64_t> pads,
                                ArrayRef<int64_t> dilations, int64_t groups,
                                EmitErrorFn emitError) {
  if (failed(checkConvRanks(input, filter, spatial, false, emitError)) ||
      failed(checkWindowAttrs(strides, pads, dilations, emitError, spatial)))
    return failure();
  if (groups < 1)
    return emitError() << "expects groups >= 1, got " << groups;
  if (input[1] % groups != 0 || filter[0] % groups != 0)
    return emitError() << "expects input channels (" << input[1]
                       << ") and output channels (" << filter[0]
                       << ") divisible by groups (" << groups << ")";
  if (filter[1] * groups != input[1])
    return emitError() << "expects filter input channels (" << filter[1]
                       << ") x groups (" << groups
                       << ") to equal the input channels (" << input[1] << ")";
  Shape result = {input[0], filter[0]};
  for (size_t i = 0; i < spatial; ++i) {
    int64_t size =
        windowOutputSize(input[2 + i], filter[2 + i], strides[i], pads[i],
                         pads[spatial + i], dilations[i], /*ceilMode=*/false);
    if (size < 1)
      return emitError() << "expects the filter window to fit in the padded "
                            "input, got input "
                         << formatShape(input) << " and filter "
                         << formatShape(filter);
    result.push_back(size);
  }
  return result;
}

FailureOr<Shape>
inferConvTransposeShape(size_t spatial, ArrayRef<int64_t> input,
                        ArrayRef<int64_t> filter, ArrayRef<int64_t> strides,
                        ArrayRef<int64_t> pads, ArrayRef<int64_t> dilations,
                        ArrayRef<int64_t> outputPadding, int64_t groups,
                        EmitErrorFn emitError) {
  if (failed(checkConvRanks(input, filter, spatial, true, emitError)) ||
      failed(checkWindowAttrs(strides, pads, dilations, emitError, spatial)))
    return failure();
  if (groups < 1)
    return emitError() << "expects groups >= 1, got " << groups;
  if (filter[0] != input[1] || input[1] % groups != 0)
    return emitError() << "expects filter input channels (" << filter[0]
                       << ") equal to the input channels (" << input[1]
                       << ") and divisible by groups (" << groups << ")";
  if (outputPadding.size() != spatial)
    return emitError() << "expects " << spatial << " output_padding values";
  Shape result = {input[0], filter[1] * groups};
  for (size_t i = 0; i < spatial; ++i) {
    // Below the stride, the rows and columns added are ones that the
    // convolution back (the gradient) drops: the two stay adjoint.
    if (outputPadding[i] < 0 || outputPadding[i] >= strides[i])
      return emitError() << "expects output_padding in [0, stride), got "
                         << formatShape(outputPadding) << " with strides "
                         << formatShape(strides);
    int64_t size = (input[2 + i] - 1) * strides[i] - pads[i] -
                   pads[spatial + i] + dilations[i] * (filter[2 + i] - 1) + 1 +
                   outputPadding[i];
    if (size < 1)
      return emitError() << "expects pads to leave a non-empty output, got "
                            "input "
                         << formatShape(input) << ", filter "
                         << formatShape(filter) << " and pads "
                         << formatShape(pads);
    result.push_back(size);
  }
  return result;
}

bool winogradFits(ArrayRef<int64_t> filter, ArrayRef<int64_t> strides,
                  ArrayRef<int64_t> pads, ArrayRef<int64_t> dilations,
                  int64_t groups) {
  auto isOnes = [](ArrayRef<int64_t> values) {
    return llvm::all_of(values, [](int64_t v) { return v == 1; });
  };
  bool samePads = !pads.empty() && llvm::all_equal(pads) && pads[0] <= 1;
  return filter.size() == 4 && filter[2] == 3 && filter[3] == 3 &&
         isOnes(strides) && isOnes(dilations) && groups == 1 && samePads;
}

FailureOr<Shape> inferPool2dShape(ArrayRef<int64_t> input,
                                  ArrayRef<int64_t> kernel,
                                  ArrayRef<int64_t> strides,
                                  ArrayRef<int64_t> pads, bool ceilMode,
                                  EmitErrorFn emitError) {
  if (input.size() != 4)
    return emitError() << "expects a rank-4 NCHW input, got "
                       << formatShape(input);
  if (kernel.size() != 2 || !allPositive(kernel))
    return emitError() << "expects a kernel_shape of 2 positive sizes";
  int64_t unitDilations[] = {1, 1};
  if (failed(checkWindowAttrs(strides, pads, unitDilations, emitError)))
    return failure();
  for (int i = 0; i < 2; ++i)
    if (pads[i] >= kernel[i] || pads[2 + i] >= kernel[i])
      return emitError() << "expects pads smaller than the kernel";
  Shape result = {input[0], input[1]};
  for (int i = 0; i < 2; ++i) {
    int64_t size = windowOutputSize(input[2 + i], kernel[i], strides[i],
                                    pads[i], pads[2 + i], 1, ceilMode);
    if (size < 1)
      return emitError() << "expects the pooling window to fit in the padded "
                            "input, got input "
                         << formatShape(input);
    result.push_back(size);
  }
  return result;
}

FailureOr<Shape> inferResizeShape(ArrayRef<int64_t> input,
                                  ArrayRef<double> scales,
                                  ArrayRef<int64_t> sizes,
                                  EmitErrorFn emitError) {
  if (input.size() < 3 || input.size() > 5)
    return emitError() << "expects an input of rank 3 to 5 (N x C x 1 to 3 "
                          "spatial dimensions), got "
                       << formatShape(input);
  size_t axes = input.size() - 2;
  if (scales.size() != axes)
    return emitError() << "expects " << axes
                       << " scales, one per spatial dimension, got "
                       << scales.size();
  Shape result = {input[0], input[1]};
  for (size_t i = 0; i < axes; ++i) {
    double scale = scales[i];
    if (!(scale >= 0) || std::isinf(scale))
      return emitError() << "expects non-negative finite scales, got " << scale;
    if (scale == 0 && i >= sizes.size())
      return emitError() << "expects a size for spatial dimension " << i
                         << ", whose scale is 0";
    double size =
        scale > 0 ? std::floor(double(input[2 + i]) * scale) : double(sizes[i]);
    if (size < 1 || size > double(int64_t(1) << 40))
      return emitError() << "expects every resized dimension in [1, 2^40], "
                            "got "
                         << int64_t(std::min(size, 9e18))
                         << " for spatial dimension " << i;
    result.push_back(int64_t(size));
  }
  return result;
}

FailureOr<ResizeCodes> resizeCodes(StringRef mode, StringRef coordinates,
                                   StringRef nearestMode,
                                   EmitErrorFn emitError) {
  static const char *const kModes[] = {"nearest", "linear"};
  static const char *const kCoordinates[] = {"half_pixel", "pytorch_half_pixel",
                                             "align_corners", "asymmetric",
                                             "tf_half_pixel_for_nn"};
  static const char *const kRoundings[] = {
      "round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
  auto find = [](ArrayRef<const char *> names, StringRef name) -> int64_t {
    for (auto [i, known] : llvm::enumerate(names))
      if (name == known)
        return int64_t(i);
    return -1;
  };
  auto refuse = [&](StringRef what, StringRef got,
                    ArrayRef<const char *> names) -> LogicalResult {
    InFlightDiagnostic diag = emitError();
    diag << "expects " << what << " ";
    llvm::interleave(
        names, diag, [&](const char *n) { diag << "'" << n << "'"; }, ", ");
    diag << ", got '" << got << "'";
    return failure();
  };
  ResizeCodes codes{find(kModes, mode), find(kCoordinates, coordinates),
                    find(kRoundings, nearestMode)};
  if (codes.mode < 0)
    return refuse("mode", mode, kModes);
  if (codes.coordinates < 0)
    return refuse("coordinate transformation mode", coordinates, kCoordinates);
  if (codes.nearestMode < 0)
    return refuse("nearest mode", nearestMode, kRoundings);
  return codes;
}

FailureOr<Shape> inferGlobalAvgPoolShape(ArrayRef<int64_t> input,
                                         EmitErrorFn emitError) {
  if (input.size() < 3)
    return emitError() << "expects an input of rank >= 3 (N x C x spatial), "
                          "got "
                       << formatShape(input);
  Shape result(input.begin(), input.begin() + 2);
  result.append(input.size() - 2, 1);
  return result;
}

FailureOr<Shape> inferBatchNormStatsShape(ArrayRef<int64_t> input,
                                          EmitErrorFn emitError) {
  if (input.size() < 2)
    return emitError() << "expects an input of rank >= 2 (N x C x ...), got "
                       << formatShape(input);
  return Shape{2, input[1]};
}

FailureOr<Shape> inferLayerNormWeightShape(ArrayRef<int64_t> input,
                                           int64_t axis,
                                           EmitErrorFn emitError) {
  FailureOr<int64_t> first = normalizeAxis(axis, input.size(), emitError);
  if (failed(first))
    return failure();
  return Shape(input.drop_front(*first));
}

FailureOr<Shape> inferMatmulShape(ArrayRef<int64_t> lhs, ArrayRef<int64_t> rhs,
                                  bool transposeLhs, bool transposeRhs,
                                  EmitErrorFn emitError) {
  if (lhs.size() < 2 || rhs.size() < 2)
    return emitError() << "expects operands of rank >= 2, got "
                       << formatShape(lhs) << " and " << formatShape(rhs);
  size_t lr = lhs.size(), rr = rhs.size();
  if (rr != 2 && rr != lr)
    return emitError() << "expects rhs of rank 2 or of the lhs rank, got "
                       << formatShape(lhs) << " and " << formatShape(rhs);
  if (rr == lr && lhs.drop_back(2) != rhs.drop_back(2))
    return emitError() << "expects equal batch dimensions, got "
                       << formatShape(lhs) << " and " << formatShape(rhs);
  int64_t m = transposeLhs ? lhs[lr - 1] : lhs[lr - 2];
  int64_t kl = transposeLhs ? lhs[lr - 2] : lhs[lr - 1];
  int64_t kr = transposeRhs ? rhs[rr - 1] : rhs[rr - 2];
  int64_t n = transposeRhs ? rhs[rr - 2] : rhs[rr - 1];
  if (kl != kr)
    return emitError() << "expects matching contraction sizes, got " << kl
                       << " and " << kr;
  Shape result(lhs.drop_back(2));
  result.push_back(m);
  result.push_back(n);
  return result;
}

FailureOr<Shape> inferBroadcastShape(ArrayRef<int64_t> lhs,
                                     ArrayRef<int64_t> rhs,
                                     EmitErrorFn emitError) {
  size_t rank = std::max(lhs.size(), rhs.size());
  Shape result(rank);
  for (size_t i = 0; i < rank; ++i) {
    // Align from the trailing dimension; missing leading dims are 1.
    int64_t l = i < rank - lhs.size() ? 1 : lhs[i - (rank - lhs.size())];
    int64_t r = i < rank - rhs.size() ? 1 : rhs[i - (rank - rhs.size())];
    if (l != r && l != 1 && r != 1)
      return emitError() << "expects broadcast-compatible shapes, got "
                         << formatShape(lhs) << " and " << formatShape(rhs);
    result[i] = l == 1 ? r : l;
  }
  return result;
}

FailureOr<int64_t> normalizeAxis(int64_t axis, size_t rank,
                                 EmitErrorFn emitError) {
  int64_t r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r)
    return emitError() << "expects an axis in [" << -r << ", " << r
                       << ") for rank " << r << ", got " << axis;
  return axis < 0 ? axis + r : axis;
}

FailureOr<Shape> inferTransposeShape(ArrayRef<int64_t> input,
                                     ArrayRef<int64_t> perm,
                                     EmitErrorFn emitError) {
  auto notAPermutation = [&] {
    return emitError() << "expects a permutation of the " << input.size()
                       << " dimensions of " << formatShape(input) << ", got ["
                       << perm << "]";
  };
  if (perm.size() != input.size())
    return notAPermutation();
  std::vector<bool> seen(input.size(), false);
  Shape result;
  for (int64_t p : perm) {
    if (p < 0 || p >= static_cast<int64_t>(input.size()) || seen[p])
      return notAPermutation();
    seen[p] = true;
    result.push_back(input[p]);
  }
  return result;
}

FailureOr<Shape> inferConcatShape(ArrayRef<ArrayRef<int64_t>> inputs,
                                  int64_t axis, EmitErrorFn emitError) {
  if (inputs.empty())
    return emitError() << "expects at least one input";
  int64_t rank = static_cast<int64_t>(inputs.front().size());
  if (axis < 0 || axis >= rank)
    return emitError() << "expects an axis in [0, " << rank << "), got "
                       << axis;
  Shape result(inputs.front().begin(), inputs.front().end());
  result[axis] = 0;
  for (ArrayRef<int64_t> input : inputs) {
    bool same = static_cast<int64_t>(input.size()) == rank;
    for (int64_t d = 0; same && d < rank; ++d)
      same = d == axis || input[d] == result[d];
    if (!same)
      return emitError() << "expects inputs equal but along axis " << axis
                         << ", got " << formatShape(inputs.front()) << " and "
                         << formatShape(input);
    result[axis] += input[axis];
  }
  return result;
}

FailureOr<Shape> inferGatherShape(ArrayRef<int64_t> table,
                                  ArrayRef<int64_t> indices,
                                  EmitErrorFn emitError) {
  if (table.empty())
    return emitError() << "expects a table of rank >= 1, got a scalar";
  Shape result(indices.begin(), indices.end());
  result.append(table.begin() + 1, table.end());
  return result;
}

FailureOr<Shape> inferPadShape(ArrayRef<int64_t> input, ArrayRef<int64_t> pads,
                               EmitErrorFn emitError) {
  size_t rank = input.size();
  if (pads.size() != 2 * rank)
    return emitError() << "expects " << 2 * rank << " pads for "
                       << formatShape(input) << ", got " << pads.size();
  Shape result(input.begin(), input.end());
  for (size_t d = 0; d < rank; ++d) {
    if (pads[d] < 0 || pads[rank + d] < 0)
      return emitError() << "expects non-negative pads, got " << pads[d]
                         << " and " << pads[rank + d] << " in dimension " << d;
    result[d] += pads[d] + pads[rank + d];
  }
  return result;
}

LogicalResult verifySliceBox(ArrayRef<int64_t> input, ArrayRef<int64_t> box,
                             ArrayRef<int64_t> offsets, ArrayRef<int64_t> steps,
                             EmitErrorFn emitError) {
  if (box.size() != input.size() || offsets.size() != input.size() ||
      steps.size() != input.size())
    return emitError() << "expects one offset and one step per dimension of "
                       << formatShape(input) << " and a result of its rank";
  for (size_t d = 0; d < input.size(); ++d) {
    if (steps[d] < 1 || offsets[d] < 0)
      return emitError() << "expects non-negative offsets and positive steps";
    if (box[d] > 0 && offsets[d] + (box[d] - 1) * steps[d] >= input[d])
      return emitError() << "reads past dimension " << d << " of "
                         << formatShape(input) << " (offset " << offsets[d]
                         << ", " << box[d] << " elements, step " << steps[d]
                         << ")";
  }
  return success();
}

// The hidden size H of the recurrence weight (gates*H x H) of a recurrent
// layer of `gates` gates, or an error naming its shape.
static FailureOr<int64_t> inferHiddenSize(ArrayRef<int64_t> recurrence,
                                          int64_t gates,
                                          EmitErrorFn emitError) {
  if (recurrence.size() != 2 || recurrence[1] < 1 ||
      recurrence[0] != gates * recurrence[1])
    return emitError() << "expects a recurrence weight of shape " << gates
                       << "H x H, got " << formatShape(recurrence);
  return recurrence[1];
}

// Checks the input (T x B x I), the weight (gates*H x I), the recurrence and
// the bias (2*gates*H, when given) of a layer of `gates` gates; returns H.
static FailureOr<int64_t>
checkRecurrentLayer(ArrayRef<int64_t> input, ArrayRef<int64_t> weight,
                    ArrayRef<int64_t> recurrence,
                    std::optional<ArrayRef<int64_t>> bias, int64_t gates,
                    EmitErrorFn emitError) {
  if (input.size() != 3 || input[0] < 1)
    return emitError() << "expects an input of shape T x B x I with T >= 1, "
                          "got "
                       << formatShape(input);
  FailureOr<int64_t> hidden = inferHiddenSize(recurrence, gates, emitError);
  if (failed(hidden))
    return failure();
  int64_t h = *hidden;
  if (weight != ArrayRef<int64_t>{gates * h, input[2]})
    return emitError() << "expects a weight of shape "
                       << formatShape({gates * h, input[2]}) << " (" << gates
                       << "H x I), got " << formatShape(weight);
  if (bias && *bias != ArrayRef<int64_t>{2 * gates * h})
    return emitError() << "expects a bias of shape " << 2 * gates * h << " ("
                       << 2 * gates << "H), got " << formatShape(*bias);
  return h;
}

// Checks a recurrent layer's state sequence (T x B x `width`*H), for its
// gradient.
static LogicalResult checkStates(ArrayRef<int64_t> states, int64_t width,
                                 int64_t h, EmitErrorFn emitError) {
  if (states.size() != 3 || states[2] != width * h)
    return emitError() << "expects states of shape T x B x " << width * h
                       << " (" << width << "H), got " << formatShape(states);
  return success();
}

FailureOr<Shape> inferLstmShape(ArrayRef<int64_t> input,
                                ArrayRef<int64_t> weight,
                                ArrayRef<int64_t> recurrence,
                                std::optional<ArrayRef<int64_t>> bias,
                                ArrayRef<int64_t> initialH,
                                ArrayRef<int64_t> initialC,
                                EmitErrorFn emitError) {
  FailureOr<int64_t> hidden = checkRecurrentLayer(input, weight, recurrence,
                                                  bias, /*gates=*/4, emitError);
  if (failed(hidden))
    return failure();
  int64_t h = *hidden, batch = input[1];
  for (ArrayRef<int64_t> state : {initialH, initialC})
    if (state != ArrayRef<int64_t>{batch, h})
      return emitError() << "expects initial states of shape "
                         << formatShape({batch, h}) << " (B x H), got "
                         << formatShape(state);
  return Shape{input[0], batch, 6 * h};
}

FailureOr<Shape> inferLstmGradShape(ArrayRef<int64_t> states,
                                    ArrayRef<int64_t> recurrence,
                                    ArrayRef<int64_t> initialC,
                                    EmitErrorFn emitError) {
  FailureOr<int64_t> hidden =
      inferHiddenSize(recurrence, /*gates=*/4, emitError);
  if (failed(hidden) ||
      failed(checkStates(states, /*width=*/6, *hidden, emitError)))
    return failure();
  int64_t h = *hidden;
  if (initialC != ArrayRef<int64_t>{states[1], h})
    return emitError() << "expects an initial cell of shape "
                       << formatShape({states[1], h}) << " (B x H), got "
                       << formatShape(initialC);
  return Shape{states[0], states[1], 5 * h};
}

FailureOr<Shape> inferGruShape(ArrayRef<int64_t> input,
                               ArrayRef<int64_t> weight,
                               ArrayRef<int64_t> recurrence,
                               std::optional<ArrayRef<int64_t>> bias,
                               ArrayRef<int64_t> initialH,
                               EmitErrorFn emitError) {
  FailureOr<int64_t> hidden = checkRecurrentLayer(input, weight, recurrence,
                                                  bias, /*gates=*/3, emitError);
  if (failed(hidden))
    return failure();
  int64_t h = *hidden, batch = input[1];
  if (initialH != ArrayRef<int64_t>{batch, h})
    return emitError() << "expects an initial state of shape "
                       << formatShape({batch, h}) << " (B x H), got "
                       << formatShape(initialH);
  return Shape{input[0], batch, 5 * h};
}

FailureOr<Shape> inferGruGradShape(ArrayRef<int64_t> states,
                                   ArrayRef<int64_t> recurrence,
                                   ArrayRef<int64_t> initialH,
                                   EmitErrorFn emitError) {
  FailureOr<int64_t> hidden =
      inferHiddenSize(recurrence, /*gates=*/3, emitError);
  if (failed(hidden) ||
      failed(checkStates(states, /*width=*/5, *hidden, emitError)))
    return failure();
  int64_t h = *hidden;
  if (initialH != ArrayRef<int64_t>{states[1], h})
    return emitError() << "expects an initial state of shape "
                       << formatShape({states[1], h}) << " (B x H), got "
                       << formatShape(initialH);
  return Shape{states[0], states[1], 5 * h};
}

} // namespace mlir::dpc::nn

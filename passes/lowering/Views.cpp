//===- Views.cpp - Reshapes, broadcasts, slices, gathers, resizes ---------===//
//
// Ops that move elements without arithmetic (but for the sums of
// sum_to_shape, the scale of broadcast_to and the interpolation of resize):
// a reshape aliases its input, the others copy into a new buffer with the
// layout kernels, as a relayout does between an activation's plain and
// channel-blocked layouts. Transposes, slices and concats of integer ids
// run the same kernels on the ids' 32-bit words.
//
//===----------------------------------------------------------------------===//

#include "passes/lowering/RuntimeLowering.h"

#include "dialects/nn/IR/NNOps.h"
#include "dialects/nn/IR/ShapeInference.h"

#include <cmath>

using namespace mlir;
using namespace mlir::dpc;
using namespace mlir::dpc::lowering;

namespace {

// The kernels read indices as int64; the importer widens int32 ids.
LogicalResult expectI64Indices(Operation *op, Value indices) {
  if (cast<ShapedType>(indices.getType()).getElementType().isInteger(64))
    return success();
  return op->emitOpError(
             "expects int64 indices for the runtime's kernels, got ")
         << indices.getType();
}

// Integer ids move through the kernels of float activations as 32-bit
// words, bit for bit: an int64 element is two words, so a box, a join or a
// permutation of int64 tensors of shape S is the same of f32 tensors of
// shape S x 2 whose last dimension goes whole. `list` (a shape, offsets,
// steps or a permutation of `tensor`'s dimensions) gets `word` appended for
// that dimension when `tensor` holds 64-bit elements; 32-bit ones are one
// word each and keep it as it is.
SmallVector<int64_t> inWords(ArrayRef<int64_t> list, Value tensor,
                             int64_t word) {
  SmallVector<int64_t> words(list);
  if (cast<ShapedType>(tensor.getType()).getElementTypeBitWidth() == 64)
    words.push_back(word);
  return words;
}

// The dimensions of `tensor` in words (above).
SmallVector<int64_t> wordShape(Value tensor) {
  return inWords(shapeOf(tensor), tensor, 2);
}

// A scale as the exact fraction num / den of the double (of an ONNX float)
// that nn.resize holds.
void exactFraction(double scale, int64_t &num, int64_t &den) {
  int exponent;
  double mantissa = std::frexp(scale, &exponent);
  num = int64_t(std::ldexp(mantissa, 53));
  int shift = 53 - exponent;
  for (; shift > 0 && num % 2 == 0; --shift)
    num /= 2;
  for (; shift < 0; ++shift)
    num *= 2;
  assert(shift < 63 && "a scale too small for a resize of any output");
  den = int64_t(1) << shift;
}

// nn.resize's attributes as dpc_resize_params.
template <typename ResizeOp>
Ptr resizeParams(ResizeOp op, RuntimeLowering &rt) {
  static_assert(DPC_RESIZE_LINEAR == 1 &&
                    DPC_RESIZE_TF_HALF_PIXEL_FOR_NN == 4 &&
                    DPC_RESIZE_CEIL == 3,
                "the codes nn::resizeCodes gives");
  FailureOr<nn::ResizeCodes> codes =
      nn::resizeCodes(op.getMode(), op.getCoordinates(), op.getNearestMode(),
                      [&] { return op.emitOpError(); });
  assert(succeeded(codes) && "verified");
  dpc_resize_params params{codes->mode,
                           codes->coordinates,
                           codes->nearestMode,
                           {0, 0, 0},
                           {1, 1, 1}};
  for (auto [i, scale] : llvm::enumerate(op.getScales()))
    if (scale > 0)
      exactFraction(scale, params.scale_num[i], params.scale_den[i]);
  return rt.constParams(params);
}

} // namespace

void lowering::populateViewLowerings(RuntimeLoweringTable &table) {
  table.add<nn::ReshapeOp>([](nn::ReshapeOp reshape, RuntimeLowering &rt) {
    rt.define(reshape, rt.ptrOf(reshape.getInput()));
  });
  table.add<nn::RelayoutOp>([](nn::RelayoutOp relayout, RuntimeLowering &rt) {
    Ptr y = rt.alloc(relayout);
    rt.call<abi::dpc_relayout>(
        {rt.ptrOf(relayout.getInput()), rt.shape(relayout),
         rt.i64(nn::isChannelBlocked(relayout.getResult())), y});
    rt.define(relayout, y);
  });
  table.add<nn::SumToShapeOp>([](nn::SumToShapeOp sum, RuntimeLowering &rt) {
    size_t rank = shapeOf(sum.getInput()).size();
    Ptr y = rt.alloc(sum);
    rt.call<abi::dpc_sum_to_shape>(
        {rt.ptrOf(sum.getInput()), rt.shape(sum.getInput()), y,
         rt.constArray(padShape(shapeOf(sum), rank)), rt.i64(rank),
         rt.f32(sum.getScale().convertToFloat())});
    rt.define(sum, y);
  });
  table.add<nn::BroadcastToOp>(
      [](nn::BroadcastToOp broadcast, RuntimeLowering &rt) {
        size_t rank = shapeOf(broadcast).size();
        Ptr y = rt.alloc(broadcast);
        rt.call<abi::dpc_broadcast_to>(
            {rt.ptrOf(broadcast.getInput()),
             rt.constArray(padShape(shapeOf(broadcast.getInput()), rank)), y,
             rt.shape(broadcast), rt.i64(rank),
             rt.f32(broadcast.getScale().convertToFloat())});
        rt.define(broadcast, y);
      });
  table.add<nn::TransposeOp>([](nn::TransposeOp transpose,
                                RuntimeLowering &rt) {
    Value x = transpose.getInput();
    SmallVector<int64_t> perm =
        inWords(transpose.getPerm(), x, transpose.getPerm().size());
    Ptr y = rt.alloc(transpose);
    rt.call<abi::dpc_transpose>({rt.ptrOf(x), rt.constArray(wordShape(x)), y,
                                 rt.constArray(perm), rt.i64(perm.size())});
    rt.define(transpose, y);
  });
  table.add<nn::SliceOp>([](nn::SliceOp slice, RuntimeLowering &rt) {
    Value x = slice.getInput();
    SmallVector<int64_t> box = wordShape(slice);
    Ptr y = rt.alloc(slice);
    rt.call<abi::dpc_slice>({rt.ptrOf(x), rt.constArray(wordShape(x)), y,
                             rt.constArray(box), rt.i64(box.size()),
                             rt.constArray(inWords(slice.getOffsets(), x, 0)),
                             rt.constArray(inWords(slice.getSteps(), x, 1))});
    rt.define(slice, y);
  });
  table.add<nn::SliceGradOp>([](nn::SliceGradOp grad, RuntimeLowering &rt) {
    Ptr dx = rt.alloc(grad);
    rt.call<abi::dpc_insert>(
        {rt.ptrOf(grad.getResultGrad()), rt.shape(grad.getResultGrad()), dx,
         rt.shape(grad), rt.i64(shapeOf(grad).size()),
         rt.constArray(grad.getOffsets()), rt.constArray(grad.getSteps()),
         rt.i64(1), rt.f32(0.0f)});
    rt.define(grad, dx);
  });
  table.add<nn::ConcatOp>([](nn::ConcatOp concat, RuntimeLowering &rt) {
    // Each input into its place along the axis.
    Ptr y = rt.alloc(concat);
    SmallVector<int64_t> whole = wordShape(concat);
    int64_t rank = int64_t(whole.size());
    SmallVector<int64_t> offsets(rank, 0), steps(rank, 1);
    for (Value input : concat.getInputs()) {
      rt.call<abi::dpc_insert>(
          {rt.ptrOf(input), rt.constArray(wordShape(input)), y,
           rt.constArray(whole), rt.i64(rank), rt.constArray(offsets),
           rt.constArray(steps), rt.i64(0), rt.f32(0.0f)});
      offsets[concat.getAxis()] += shapeOf(input)[concat.getAxis()];
    }
    rt.define(concat, y);
  });
  table.add<nn::PadOp>([](nn::PadOp pad, RuntimeLowering &rt) {
    // The input into its place, the border set to the pad value.
    Ptr y = rt.alloc(pad);
    int64_t rank = int64_t(shapeOf(pad).size());
    SmallVector<int64_t> steps(rank, 1);
    rt.call<abi::dpc_insert>(
        {rt.ptrOf(pad.getInput()), rt.shape(pad.getInput()), y, rt.shape(pad),
         rt.i64(rank), rt.constArray(pad.getPads().take_front(rank)),
         rt.constArray(steps), rt.i64(1),
         rt.f32(pad.getValue().convertToFloat())});
    rt.define(pad, y);
  });
  table.add<nn::GatherOp>(
      [](nn::GatherOp gather, RuntimeLowering &rt) -> LogicalResult {
        if (failed(expectI64Indices(gather, gather.getIndices())))
          return failure();
        ArrayRef<int64_t> rows = shapeOf(gather.getTable());
        Ptr y = rt.alloc(gather);
        rt.call<abi::dpc_gather>(
            {rt.ptrOf(gather.getTable()), rt.ptrOf(gather.getIndices()),
             rt.i64(rows[0]), rt.i64(nn::getNumElements(rows.drop_front())),
             rt.i64(nn::getNumElements(shapeOf(gather.getIndices()))), y});
        rt.define(gather, y);
        return success();
      });
  table.add<nn::GatherGradOp>(
      [](nn::GatherGradOp grad, RuntimeLowering &rt) -> LogicalResult {
        if (failed(expectI64Indices(grad, grad.getIndices())))
          return failure();
        ArrayRef<int64_t> rows = shapeOf(grad.getTableGrad());
        Ptr dtable = rt.alloc(grad);
        rt.call<abi::dpc_gather_grad>(
            {rt.ptrOf(grad.getResultGrad()), rt.ptrOf(grad.getIndices()),
             rt.i64(rows[0]), rt.i64(nn::getNumElements(rows.drop_front())),
             rt.i64(nn::getNumElements(shapeOf(grad.getIndices()))), dtable});
        rt.define(grad, dtable);
        return success();
      });
  table.add<nn::ResizeOp>([](nn::ResizeOp resize, RuntimeLowering &rt) {
    Ptr y = rt.alloc(resize);
    rt.call<abi::dpc_resize>({rt.ptrOf(resize.getInput()),
                              rt.shape(resize.getInput()), y, rt.shape(resize),
                              rt.i64(shapeOf(resize).size()),
                              resizeParams(resize, rt)});
    rt.define(resize, y);
  });
  table.add<nn::ResizeGradOp>([](nn::ResizeGradOp grad, RuntimeLowering &rt) {
    Ptr dx = rt.alloc(grad);
    rt.call<abi::dpc_resize_grad>(
        {rt.ptrOf(grad.getResultGrad()), rt.shape(grad.getResultGrad()), dx,
         rt.shape(grad), rt.i64(shapeOf(grad).size()), resizeParams(grad, rt)});
    rt.define(grad, dx);
  });
}

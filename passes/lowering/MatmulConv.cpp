//===- MatmulConv.cpp - Convolutions, matmuls, LSTMs and GRUs -------------===//
//
// The ops that do most of a model's arithmetic, and the ones a bf16 build
// runs in bf16 (`RuntimeLowering::kernel`). Each gradient is the forward
// kernel with other operands and transposes, or a kernel of its own.
//
//===----------------------------------------------------------------------===//

#include "passes/lowering/RuntimeLowering.h"

#include "dialects/nn/IR/NNOps.h"
#include "dialects/nn/IR/ShapeInference.h"
#include "dialects/pipe/IR/PipeOps.h"
#include "dpc/runtime/Abi.h"

using namespace mlir;
using namespace mlir::dpc;
using namespace mlir::dpc::lowering;

namespace {

// Window attributes in the order the ABI's `params` arrays use, then which
// activations are channel-blocked: `x` the input side (x or dx), `y` the
// output side (y or dy).
template <typename ConvLikeOp>
dpc_conv_params convParams(ConvLikeOp op, Value x, Value y,
                           bool accumulate = false) {
  ArrayRef<int64_t> dilations = op.getDilations();
  dpc_conv_params p;
  setStridesAndPads(p, op.getStrides(), op.getPads());
  p.dilation_h = dilations[0];
  p.dilation_w = dilations[1];
  p.groups = op.getGroups();
  p.layouts = (nn::isChannelBlocked(x) ? DPC_CONV_BLOCKED_X : 0) |
              (nn::isChannelBlocked(y) ? DPC_CONV_BLOCKED_Y : 0) |
              (accumulate ? DPC_CONV_ACCUMULATE_DW : 0);
  return p;
}

// A 3-D convolution's attributes as the ABI's params (plain layouts).
template <typename ConvLikeOp>
dpc_conv3d_params conv3dParams(ConvLikeOp op, bool accumulate = false) {
  ArrayRef<int64_t> s = op.getStrides(), p = op.getPads(),
                    d = op.getDilations();
  return {s[0],           s[1],
          s[2],           p[0],
          p[1],           p[2],
          p[3],           p[4],
          p[5],           d[0],
          d[1],           d[2],
          op.getGroups(), accumulate ? int64_t(DPC_CONV_ACCUMULATE_DW) : 0};
}

// The ABI kernel of a convolution pass: its _winograd form for that
// algorithm (f32 only: select-conv-algorithm leaves a bf16 build direct),
// else the precision's.
std::string convKernel(const RuntimeLowering &rt, StringRef name,
                       StringRef algorithm) {
  return algorithm == "winograd" ? (name + "_winograd").str() : rt.kernel(name);
}

// The dimensions of a (batched) matmul as the forward op sees them.
struct MatmulDims {
  int64_t batch, m, n, k, aStride, bStride;
  bool sharedRhs;
};

MatmulDims matmulDims(ArrayRef<int64_t> lhs, ArrayRef<int64_t> rhs, bool tA,
                      bool tB) {
  MatmulDims d;
  int64_t l0 = lhs.end()[-2], l1 = lhs.back();
  int64_t r0 = rhs.end()[-2], r1 = rhs.back();
  d.m = tA ? l1 : l0;
  d.k = tA ? l0 : l1;
  d.n = tB ? r0 : r1;
  d.batch = nn::getNumElements(lhs.drop_back(2));
  d.aStride = l0 * l1;
  d.sharedRhs = rhs.size() == 2;
  d.bStride = d.sharedRhs ? 0 : r0 * r1;
  return d;
}

// Convolutions of 2 and 3 spatial dimensions, transposed ones, and their
// gradients.
void addConvLowerings(RuntimeLoweringTable &table) {
  table.add<nn::Conv2dOp>([](nn::Conv2dOp conv, RuntimeLowering &rt) {
    Ptr y = rt.alloc(conv);
    rt.callAs<abi::dpc_conv2d>(
        convKernel(rt, "dpc_conv2d", conv.getAlgorithm()),
        {rt.ptrOf(conv.getInput()), rt.shape(conv.getInput()),
         rt.ptrOf(conv.getFilter()), rt.shape(conv.getFilter()),
         conv.getBias() ? rt.ptrOf(conv.getBias()) : rt.nullPtr(), y,
         rt.shape(conv),
         rt.constParams(convParams(conv, conv.getInput(), conv.getResult()))});
    rt.define(conv, y);
  });
  table.add<nn::Conv2dGradInputOp>(
      [](nn::Conv2dGradInputOp grad, RuntimeLowering &rt) {
        Ptr dx = rt.alloc(grad);
        rt.callAs<abi::dpc_conv2d_grad_input>(
            convKernel(rt, "dpc_conv2d_grad_input", grad.getAlgorithm()),
            {rt.ptrOf(grad.getResultGrad()), rt.shape(grad.getResultGrad()),
             rt.ptrOf(grad.getFilter()), rt.shape(grad.getFilter()), dx,
             rt.shape(grad),
             rt.constParams(
                 convParams(grad, grad.getResult(), grad.getResultGrad()))});
        rt.define(grad, dx);
      });
  table.add<nn::Conv2dGradFilterOp>([](nn::Conv2dGradFilterOp grad,
                                       RuntimeLowering &rt) {
    // Into its parameter's gradient accumulator, or a buffer.
    Ptr dw;
    auto acc = cast_or_null<pipe::AccumulateGradOp>(accumulatedByKernel(grad));
    if (acc) {
      auto read = acc.getParam().getDefiningOp<nn::ParamOp>();
      int64_t id = rt.manifest.paramId(read);
      dw = rt.call<abi::dpc_grad_accumulator>({rt.context, rt.i64(id)});
    } else {
      dw = rt.alloc(grad);
    }
    rt.callAs<abi::dpc_conv2d_grad_filter>(
        convKernel(rt, "dpc_conv2d_grad_filter", grad.getAlgorithm()),
        {rt.ptrOf(grad.getResultGrad()), rt.shape(grad.getResultGrad()),
         rt.ptrOf(grad.getInput()), rt.shape(grad.getInput()), dw,
         rt.shape(grad),
         rt.constParams(convParams(grad, grad.getInput(), grad.getResultGrad(),
                                   bool(acc)))});
    rt.define(grad, dw);
  });
  table.add<nn::ConvTranspose2dOp>([](nn::ConvTranspose2dOp conv,
                                      RuntimeLowering &rt) {
    Ptr y = rt.alloc(conv);
    rt.call<abi::dpc_conv_transpose2d>(
        {rt.ptrOf(conv.getInput()), rt.shape(conv.getInput()),
         rt.ptrOf(conv.getFilter()), rt.shape(conv.getFilter()),
         conv.getBias() ? rt.ptrOf(conv.getBias()) : rt.nullPtr(), y,
         rt.shape(conv),
         rt.constParams(convParams(conv, conv.getResult(), conv.getInput()))});
    rt.define(conv, y);
  });
  table.add<nn::Conv3dOp>([](nn::Conv3dOp conv, RuntimeLowering &rt) {
    Ptr y = rt.alloc(conv);
    rt.call<abi::dpc_conv3d>(
        {rt.ptrOf(conv.getInput()), rt.shape(conv.getInput()),
         rt.ptrOf(conv.getFilter()), rt.shape(conv.getFilter()),
         conv.getBias() ? rt.ptrOf(conv.getBias()) : rt.nullPtr(), y,
         rt.shape(conv), rt.constParams(conv3dParams(conv))});
    rt.define(conv, y);
  });
  table.add<nn::Conv3dGradInputOp>(
      [](nn::Conv3dGradInputOp grad, RuntimeLowering &rt) {
        Ptr dx = rt.alloc(grad);
        rt.call<abi::dpc_conv3d_grad_input>(
            {rt.ptrOf(grad.getResultGrad()), rt.shape(grad.getResultGrad()),
             rt.ptrOf(grad.getFilter()), rt.shape(grad.getFilter()), dx,
             rt.shape(grad), rt.constParams(conv3dParams(grad))});
        rt.define(grad, dx);
      });
  table.add<nn::Conv3dGradFilterOp>(
      [](nn::Conv3dGradFilterOp grad, RuntimeLowering &rt) {
        Ptr dw = rt.alloc(grad);
        rt.call<abi::dpc_conv3d_grad_filter>(
            {rt.ptrOf(grad.getResultGrad()), rt.shape(grad.getResultGrad()),
             rt.ptrOf(grad.getInput()), rt.shape(grad.getInput()), dw,
             rt.shape(grad), rt.constParams(conv3dParams(grad))});
        rt.define(grad, dw);
      });
  table.add<nn::ConvTranspose3dOp>(
      [](nn::ConvTranspose3dOp conv, RuntimeLowering &rt) {
        Ptr y = rt.alloc(conv);
        rt.call<abi::dpc_conv_transpose3d>(
            {rt.ptrOf(conv.getInput()), rt.shape(conv.getInput()),
             rt.ptrOf(conv.getFilter()), rt.shape(conv.getFilter()),
             conv.getBias() ? rt.ptrOf(conv.getBias()) : rt.nullPtr(), y,
             rt.shape(conv), rt.constParams(conv3dParams(conv))});
        rt.define(conv, y);
      });
  table.add<nn::Conv2dGradBiasOp>([](nn::Conv2dGradBiasOp grad,
                                     RuntimeLowering &rt) {
    Ptr db = rt.alloc(grad);
    Value dy = grad.getResultGrad();
    if (nn::isChannelBlocked(dy)) {
      // The same per-channel sums as batch normalization's bias gradient.
      ArrayRef<int64_t> shape = shapeOf(dy);
      rt.call<abi::dpc_batch_norm_grad_bias>(
          {rt.ptrOf(dy), rt.i64(shape[0]), rt.i64(shape[1]),
           rt.i64(shape[2] * shape[3]), rt.i64(nn::kChannelBlock), db});
    } else if (shapeOf(dy).size() == 5) {
      // A 3-D convolution's: depth and height summed as one dimension.
      ArrayRef<int64_t> s = shapeOf(dy);
      rt.call<abi::dpc_conv2d_grad_bias>(
          {rt.ptrOf(dy), rt.constArray({s[0], s[1], s[2] * s[3], s[4]}), db});
    } else {
      rt.call<abi::dpc_conv2d_grad_bias>({rt.ptrOf(dy), rt.shape(dy), db});
    }
    rt.define(grad, db);
  });
}

// Matrix products and their gradients.
void addMatmulLowerings(RuntimeLoweringTable &table) {
  table.add<nn::MatmulOp>([](nn::MatmulOp mm, RuntimeLowering &rt) {
    MatmulDims d = matmulDims(shapeOf(mm.getLhs()), shapeOf(mm.getRhs()),
                              mm.getTransposeLhs(), mm.getTransposeRhs());
    Ptr y = rt.alloc(mm);
    rt.callAs<abi::dpc_matmul>(rt.kernel("dpc_matmul"),
                               {rt.ptrOf(mm.getLhs()), rt.ptrOf(mm.getRhs()), y,
                                rt.i64(d.batch), rt.i64(d.m), rt.i64(d.n),
                                rt.i64(d.k), rt.i64(mm.getTransposeLhs()),
                                rt.i64(mm.getTransposeRhs()), rt.i64(d.aStride),
                                rt.i64(d.bStride), rt.i64(0)});
    rt.define(mm, y);
  });
  table.add<nn::MatmulGradLhsOp>([](nn::MatmulGradLhsOp grad,
                                    RuntimeLowering &rt) {
    bool tA = grad.getTransposeLhs(), tB = grad.getTransposeRhs();
    MatmulDims d =
        matmulDims(shapeOf(grad.getLhsGrad()), shapeOf(grad.getRhs()), tA, tB);
    Ptr da = rt.alloc(grad);
    Ptr dy = rt.ptrOf(grad.getResultGrad()), b = rt.ptrOf(grad.getRhs());
    int64_t dyStride = d.m * d.n;
    if (!tA) // da = dy . op(b)^T
      rt.callAs<abi::dpc_matmul>(rt.kernel("dpc_matmul"),
                                 {dy, b, da, rt.i64(d.batch), rt.i64(d.m),
                                  rt.i64(d.k), rt.i64(d.n), rt.i64(0),
                                  rt.i64(!tB), rt.i64(dyStride),
                                  rt.i64(d.bStride), rt.i64(0)});
    else // da (stored K x M) = op(b) . dy^T
      rt.callAs<abi::dpc_matmul>(rt.kernel("dpc_matmul"),
                                 {b, dy, da, rt.i64(d.batch), rt.i64(d.k),
                                  rt.i64(d.m), rt.i64(d.n), rt.i64(tB),
                                  rt.i64(1), rt.i64(d.bStride),
                                  rt.i64(dyStride), rt.i64(0)});
    rt.define(grad, da);
  });
  table.add<nn::MatmulGradRhsOp>([](nn::MatmulGradRhsOp grad,
                                    RuntimeLowering &rt) {
    bool tA = grad.getTransposeLhs(), tB = grad.getTransposeRhs();
    MatmulDims d =
        matmulDims(shapeOf(grad.getLhs()), shapeOf(grad.getRhsGrad()), tA, tB);
    Ptr db = rt.alloc(grad);
    Ptr dy = rt.ptrOf(grad.getResultGrad()), a = rt.ptrOf(grad.getLhs());
    int64_t dyStride = d.m * d.n;
    // A rank-2 rhs shared by every batch gets the sum over the batch.
    int64_t accumulate = d.sharedRhs && d.batch > 1;
    if (!tB) // db = op(a)^T . dy
      rt.callAs<abi::dpc_matmul>(rt.kernel("dpc_matmul"),
                                 {a, dy, db, rt.i64(d.batch), rt.i64(d.k),
                                  rt.i64(d.n), rt.i64(d.m), rt.i64(!tA),
                                  rt.i64(0), rt.i64(d.aStride),
                                  rt.i64(dyStride), rt.i64(accumulate)});
    else // db (stored N x K) = dy^T . op(a)
      rt.callAs<abi::dpc_matmul>(rt.kernel("dpc_matmul"),
                                 {dy, a, db, rt.i64(d.batch), rt.i64(d.n),
                                  rt.i64(d.k), rt.i64(d.m), rt.i64(1),
                                  rt.i64(tA), rt.i64(dyStride),
                                  rt.i64(d.aStride), rt.i64(accumulate)});
    rt.define(grad, db);
  });
}

// LSTM and GRU layers and their gradients.
void addRecurrentLowerings(RuntimeLoweringTable &table) {
  table.add<nn::LstmOp>([](nn::LstmOp lstm, RuntimeLowering &rt) {
    ArrayRef<int64_t> x = shapeOf(lstm.getInput());
    int64_t hidden = shapeOf(lstm.getInitialH())[1];
    Ptr states = rt.alloc(lstm);
    rt.call<abi::dpc_lstm>(
        {rt.ptrOf(lstm.getInput()), rt.ptrOf(lstm.getWeight()),
         rt.ptrOf(lstm.getRecurrence()),
         lstm.getBias() ? rt.ptrOf(lstm.getBias()) : rt.nullPtr(),
         rt.ptrOf(lstm.getInitialH()), rt.ptrOf(lstm.getInitialC()),
         rt.i64(x[0]), rt.i64(x[1]), rt.i64(x[2]), rt.i64(hidden),
         rt.i64(lstm.getReverse()), states});
    rt.define(lstm, states);
  });
  table.add<nn::LstmGradOp>([](nn::LstmGradOp grad, RuntimeLowering &rt) {
    ArrayRef<int64_t> states = shapeOf(grad.getStates());
    Ptr out = rt.alloc(grad);
    rt.call<abi::dpc_lstm_grad>(
        {rt.ptrOf(grad.getStatesGrad()), rt.ptrOf(grad.getStates()),
         rt.ptrOf(grad.getRecurrence()), rt.ptrOf(grad.getInitialC()),
         rt.i64(states[0]), rt.i64(states[1]), rt.i64(states[2] / 6),
         rt.i64(grad.getReverse()), out});
    rt.define(grad, out);
  });
  table.add<nn::GruOp>([](nn::GruOp gru, RuntimeLowering &rt) {
    ArrayRef<int64_t> x = shapeOf(gru.getInput());
    int64_t hidden = shapeOf(gru.getInitialH())[1];
    Ptr states = rt.alloc(gru);
    rt.call<abi::dpc_gru>(
        {rt.ptrOf(gru.getInput()), rt.ptrOf(gru.getWeight()),
         rt.ptrOf(gru.getRecurrence()),
         gru.getBias() ? rt.ptrOf(gru.getBias()) : rt.nullPtr(),
         rt.ptrOf(gru.getInitialH()), rt.i64(x[0]), rt.i64(x[1]), rt.i64(x[2]),
         rt.i64(hidden), rt.i64(gru.getLinearBeforeReset()),
         rt.i64(gru.getReverse()), states});
    rt.define(gru, states);
  });
  table.add<nn::GruGradOp>([](nn::GruGradOp grad, RuntimeLowering &rt) {
    ArrayRef<int64_t> states = shapeOf(grad.getStates());
    Ptr out = rt.alloc(grad);
    rt.call<abi::dpc_gru_grad>(
        {rt.ptrOf(grad.getStatesGrad()), rt.ptrOf(grad.getStates()),
         rt.ptrOf(grad.getRecurrence()), rt.ptrOf(grad.getInitialH()),
         rt.i64(states[0]), rt.i64(states[1]), rt.i64(states[2] / 5),
         rt.i64(grad.getLinearBeforeReset()), rt.i64(grad.getReverse()), out});
    rt.define(grad, out);
  });
}

} // namespace

void lowering::populateMatmulConvLowerings(RuntimeLoweringTable &table) {
  addConvLowerings(table);
  addMatmulLowerings(table);
  addRecurrentLowerings(table);
}

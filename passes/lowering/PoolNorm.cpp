//===- PoolNorm.cpp - Softmax, pooling and normalization ------------------===//
//
// Ops that reduce over windows, channels or an axis: the tensor is viewed as
// the few dimensions the kernel loops over (outer x n x inner for softmax,
// N x C x spatial for pooling, batch norm and LRN, rows x size for layer
// norm).
//
//===----------------------------------------------------------------------===//

#include "passes/lowering/RuntimeLowering.h"

#include "dialects/nn/IR/NNOps.h"
#include "dialects/nn/IR/ShapeInference.h"
#include "dpc/runtime/Abi.h"

using namespace mlir;
using namespace mlir::dpc;
using namespace mlir::dpc::lowering;

namespace {

// A softmax's tensor as outer x n x inner around its (verified) axis.
struct SoftmaxDims {
  int64_t outer = 1, n = 1, inner = 1;
};
SoftmaxDims softmaxDims(ArrayRef<int64_t> shape, int64_t axis) {
  if (axis < 0)
    axis += int64_t(shape.size());
  SoftmaxDims d;
  d.outer = nn::getNumElements(shape.take_front(axis));
  d.n = shape[axis];
  d.inner = nn::getNumElements(shape.drop_front(axis + 1));
  return d;
}

// A layer_norm's tensor as rows x size around its (verified) axis.
struct LayerNormDims {
  int64_t rows = 1, size = 1;
};
LayerNormDims layerNormDims(ArrayRef<int64_t> shape, int64_t axis) {
  if (axis < 0)
    axis += int64_t(shape.size());
  return {nn::getNumElements(shape.take_front(axis)),
          nn::getNumElements(shape.drop_front(axis))};
}

// A tensor N x C x D1..Dk viewed as (n, c, s), s the product of D1..Dk.
struct ChannelDims {
  int64_t n, c, s;
};

ChannelDims channelDims(ArrayRef<int64_t> shape) {
  return {shape[0], shape[1], nn::getNumElements(shape.drop_front(2))};
}

// Batch normalization's `block`: its activations are all plain or all
// channel-blocked (propagate-layouts), as `x` is.
int64_t channelBlock(Value x) {
  static_assert(nn::kChannelBlock == DPC_CHANNEL_BLOCK,
                "the compiler's channel block is the kernels'");
  return nn::isChannelBlocked(x) ? nn::kChannelBlock : 1;
}

// A pooling op's window.
template <typename PoolOp> dpc_pool_params poolParams(PoolOp op) {
  ArrayRef<int64_t> kernel = op.getKernelShape();
  dpc_pool_params p;
  p.kernel_h = kernel[0];
  p.kernel_w = kernel[1];
  setStridesAndPads(p, op.getStrides(), op.getPads());
  return p;
}

// avg_pool2d and its gradient: the window and count_include_pad.
template <typename AvgPoolOp> dpc_avg_pool_params avgPoolParams(AvgPoolOp op) {
  dpc_avg_pool_params p;
  p.window = poolParams(op);
  p.count_include_pad = op.getCountIncludePad();
  return p;
}

// Softmax and log-softmax, with their gradients.
void addSoftmaxLowerings(RuntimeLoweringTable &table) {
  table.add<nn::SoftmaxOp, nn::LogSoftmaxOp>([](auto softmax,
                                                RuntimeLowering &rt) {
    SoftmaxDims d = softmaxDims(shapeOf(softmax), softmax.getAxis());
    Ptr y = rt.alloc(softmax);
    rt.call<abi::dpc_softmax>({rt.ptrOf(softmax.getInput()), y, rt.i64(d.outer),
                               rt.i64(d.n), rt.i64(d.inner),
                               rt.i64(isa<nn::LogSoftmaxOp>(softmax))});
    rt.define(softmax, y);
  });
  table.add<nn::SoftmaxGradOp, nn::LogSoftmaxGradOp>(
      [](auto grad, RuntimeLowering &rt) {
        SoftmaxDims d = softmaxDims(shapeOf(grad), grad.getAxis());
        Ptr dx = rt.alloc(grad);
        rt.call<abi::dpc_softmax_grad>(
            {rt.ptrOf(grad.getResultGrad()), rt.ptrOf(grad.getResult()), dx,
             rt.i64(d.outer), rt.i64(d.n), rt.i64(d.inner),
             rt.i64(isa<nn::LogSoftmaxGradOp>(grad))});
        rt.define(grad, dx);
      });
}

// Max, average and global average pooling, with their gradients.
void addPoolingLowerings(RuntimeLoweringTable &table) {
  table.add<nn::MaxPool2dOp>([](nn::MaxPool2dOp pool, RuntimeLowering &rt) {
    Ptr y = rt.alloc(pool);
    rt.call<abi::dpc_max_pool2d>({rt.ptrOf(pool.getInput()),
                                  rt.shape(pool.getInput()), y, rt.shape(pool),
                                  rt.constParams(poolParams(pool))});
    rt.define(pool, y);
  });
  table.add<nn::MaxPool2dGradOp>(
      [](nn::MaxPool2dGradOp grad, RuntimeLowering &rt) {
        Ptr dx = rt.alloc(grad);
        rt.call<abi::dpc_max_pool2d_grad>(
            {rt.ptrOf(grad.getResultGrad()), rt.shape(grad.getResultGrad()),
             rt.ptrOf(grad.getInput()), rt.shape(grad.getInput()), dx,
             rt.constParams(poolParams(grad))});
        rt.define(grad, dx);
      });
  table.add<nn::AvgPool2dOp>([](nn::AvgPool2dOp pool, RuntimeLowering &rt) {
    Ptr y = rt.alloc(pool);
    rt.call<abi::dpc_avg_pool2d>({rt.ptrOf(pool.getInput()),
                                  rt.shape(pool.getInput()), y, rt.shape(pool),
                                  rt.constParams(avgPoolParams(pool))});
    rt.define(pool, y);
  });
  table.add<nn::AvgPool2dGradOp>(
      [](nn::AvgPool2dGradOp grad, RuntimeLowering &rt) {
        Ptr dx = rt.alloc(grad);
        rt.call<abi::dpc_avg_pool2d_grad>(
            {rt.ptrOf(grad.getResultGrad()), rt.shape(grad.getResultGrad()), dx,
             rt.shape(grad), rt.constParams(avgPoolParams(grad))});
        rt.define(grad, dx);
      });
  table.add<nn::GlobalAvgPoolOp>(
      [](nn::GlobalAvgPoolOp pool, RuntimeLowering &rt) {
        ChannelDims d = channelDims(shapeOf(pool.getInput()));
        Ptr y = rt.alloc(pool);
        rt.call<abi::dpc_global_avg_pool>(
            {rt.ptrOf(pool.getInput()), rt.i64(d.n * d.c), rt.i64(d.s), y});
        rt.define(pool, y);
      });
  table.add<nn::GlobalAvgPoolGradOp>([](nn::GlobalAvgPoolGradOp grad,
                                        RuntimeLowering &rt) {
    ChannelDims d = channelDims(shapeOf(grad));
    Ptr dx = rt.alloc(grad);
    rt.call<abi::dpc_global_avg_pool_grad>(
        {rt.ptrOf(grad.getResultGrad()), rt.i64(d.n * d.c), rt.i64(d.s), dx});
    rt.define(grad, dx);
  });
}

// Batch normalization: statistics, normalization and gradients.
void addBatchNormLowerings(RuntimeLoweringTable &table) {
  table.add<nn::BatchNormStatsOp>(
      [](nn::BatchNormStatsOp stats, RuntimeLowering &rt) {
        SmallVector<Ptr, 2> running;
        for (Value operand : {stats.getRunningMean(), stats.getRunningVar()}) {
          auto read = operand.getDefiningOp<nn::ParamOp>();
          int64_t id = rt.manifest.paramId(read);
          running.push_back(
              rt.call<abi::dpc_param_state>({rt.context, rt.i64(id)}));
        }
        ChannelDims d = channelDims(shapeOf(stats.getInput()));
        Ptr out = rt.alloc(stats);
        auto training = rt.call<abi::dpc_training>({rt.context});
        rt.call<abi::dpc_batch_norm_stats>(
            {rt.ptrOf(stats.getInput()), rt.i64(d.n), rt.i64(d.c), rt.i64(d.s),
             rt.i64(channelBlock(stats.getInput())), running[0], running[1],
             rt.f32(stats.getMomentum().convertToFloat()), training, out});
        rt.define(stats, out);
      });
  table.add<nn::BatchNormOp>([](nn::BatchNormOp norm, RuntimeLowering &rt) {
    ChannelDims d = channelDims(shapeOf(norm.getInput()));
    Ptr y = rt.alloc(norm);
    rt.call<abi::dpc_batch_norm>(
        {rt.ptrOf(norm.getInput()), rt.ptrOf(norm.getStats()),
         rt.ptrOf(norm.getScale()), rt.ptrOf(norm.getBias()), rt.i64(d.n),
         rt.i64(d.c), rt.i64(d.s), rt.i64(channelBlock(norm.getInput())),
         rt.f32(norm.getEpsilon().convertToFloat()), y});
    rt.define(norm, y);
  });
  table.add<nn::BatchNormGradInputOp>(
      [](nn::BatchNormGradInputOp grad, RuntimeLowering &rt) {
        ChannelDims d = channelDims(shapeOf(grad.getInput()));
        Ptr dx = rt.alloc(grad);
        rt.call<abi::dpc_batch_norm_grad_input>(
            {rt.ptrOf(grad.getResultGrad()), rt.ptrOf(grad.getInput()),
             rt.ptrOf(grad.getStats()), rt.ptrOf(grad.getScale()), rt.i64(d.n),
             rt.i64(d.c), rt.i64(d.s), rt.i64(channelBlock(grad.getInput())),
             rt.f32(grad.getEpsilon().convertToFloat()), dx});
        rt.define(grad, dx);
      });
  table.add<nn::BatchNormGradScaleOp>(
      [](nn::BatchNormGradScaleOp grad, RuntimeLowering &rt) {
        ChannelDims d = channelDims(shapeOf(grad.getInput()));
        Ptr dscale = rt.alloc(grad);
        rt.call<abi::dpc_batch_norm_grad_scale>(
            {rt.ptrOf(grad.getResultGrad()), rt.ptrOf(grad.getInput()),
             rt.ptrOf(grad.getStats()), rt.i64(d.n), rt.i64(d.c), rt.i64(d.s),
             rt.i64(channelBlock(grad.getInput())),
             rt.f32(grad.getEpsilon().convertToFloat()), dscale});
        rt.define(grad, dscale);
      });
  table.add<nn::BatchNormGradBiasOp>(
      [](nn::BatchNormGradBiasOp grad, RuntimeLowering &rt) {
        ChannelDims d = channelDims(shapeOf(grad.getResultGrad()));
        Ptr dbias = rt.alloc(grad);
        rt.call<abi::dpc_batch_norm_grad_bias>(
            {rt.ptrOf(grad.getResultGrad()), rt.i64(d.n), rt.i64(d.c),
             rt.i64(d.s), rt.i64(channelBlock(grad.getResultGrad())), dbias});
        rt.define(grad, dbias);
      });
}

// Layer normalization and its gradients.
void addLayerNormLowerings(RuntimeLoweringTable &table) {
  table.add<nn::LayerNormOp>([](nn::LayerNormOp norm, RuntimeLowering &rt) {
    LayerNormDims d = layerNormDims(shapeOf(norm), norm.getAxis());
    Ptr y = rt.alloc(norm);
    rt.call<abi::dpc_layer_norm>(
        {rt.ptrOf(norm.getInput()),
         norm.getScale() ? rt.ptrOf(norm.getScale()) : rt.nullPtr(),
         norm.getBias() ? rt.ptrOf(norm.getBias()) : rt.nullPtr(),
         rt.i64(d.rows), rt.i64(d.size),
         rt.f32(norm.getEpsilon().convertToFloat()), y});
    rt.define(norm, y);
  });
  table.add<nn::LayerNormGradInputOp>(
      [](nn::LayerNormGradInputOp grad, RuntimeLowering &rt) {
        LayerNormDims d = layerNormDims(shapeOf(grad), grad.getAxis());
        Ptr dx = rt.alloc(grad);
        rt.call<abi::dpc_layer_norm_grad_input>(
            {rt.ptrOf(grad.getResultGrad()), rt.ptrOf(grad.getInput()),
             grad.getScale() ? rt.ptrOf(grad.getScale()) : rt.nullPtr(),
             rt.i64(d.rows), rt.i64(d.size),
             rt.f32(grad.getEpsilon().convertToFloat()), dx});
        rt.define(grad, dx);
      });
  table.add<nn::LayerNormGradScaleOp>([](nn::LayerNormGradScaleOp grad,
                                         RuntimeLowering &rt) {
    LayerNormDims d = layerNormDims(shapeOf(grad.getInput()), grad.getAxis());
    Ptr dscale = rt.alloc(grad);
    rt.call<abi::dpc_layer_norm_grad_scale>(
        {rt.ptrOf(grad.getResultGrad()), rt.ptrOf(grad.getInput()),
         rt.i64(d.rows), rt.i64(d.size),
         rt.f32(grad.getEpsilon().convertToFloat()), dscale});
    rt.define(grad, dscale);
  });
}

// Local response normalization across channels, and its gradient.
void addLrnLowerings(RuntimeLoweringTable &table) {
  table.add<nn::LrnOp>([](nn::LrnOp lrn, RuntimeLowering &rt) {
    ChannelDims d = channelDims(shapeOf(lrn.getInput()));
    Ptr y = rt.alloc(lrn);
    rt.call<abi::dpc_lrn>({rt.ptrOf(lrn.getInput()), rt.i64(d.n), rt.i64(d.c),
                           rt.i64(d.s), rt.i64(lrn.getSize()),
                           rt.f32(lrn.getAlpha().convertToFloat()),
                           rt.f32(lrn.getBeta().convertToFloat()),
                           rt.f32(lrn.getBias().convertToFloat()), y});
    rt.define(lrn, y);
  });
  table.add<nn::LrnGradOp>([](nn::LrnGradOp grad, RuntimeLowering &rt) {
    ChannelDims d = channelDims(shapeOf(grad.getInput()));
    Ptr dx = rt.alloc(grad);
    rt.call<abi::dpc_lrn_grad>(
        {rt.ptrOf(grad.getResultGrad()), rt.ptrOf(grad.getInput()), rt.i64(d.n),
         rt.i64(d.c), rt.i64(d.s), rt.i64(grad.getSize()),
         rt.f32(grad.getAlpha().convertToFloat()),
         rt.f32(grad.getBeta().convertToFloat()),
         rt.f32(grad.getBias().convertToFloat()), dx});
    rt.define(grad, dx);
  });
}

} // namespace

void lowering::populatePoolNormLowerings(RuntimeLoweringTable &table) {
  addSoftmaxLowerings(table);
  addPoolingLowerings(table);
  addBatchNormLowerings(table);
  addLayerNormLowerings(table);
  addLrnLowerings(table);
}

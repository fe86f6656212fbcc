//===- LowerToRuntime.cpp - Segments to runtime calls in the LLVM dialect -===//
//
// One stage's segment functions become LLVM functions whose bodies are calls
// into the C ABI of include/dpc/runtime/Abi.h. Tensors are pointers: a
// compute op's result gets a dpc_alloc'ed buffer and the op becomes a kernel
// call; data, parameters, transfers and stashes are context calls. The
// manifest the runtime needs is collected on the way and emitted as a
// string constant.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialects/nn/IR/NNOps.h"
#include "dialects/nn/IR/ShapeInference.h"
#include "dialects/pipe/IR/PipeOps.h"
#include "dpc/runtime/Abi.h"
#include "dpc/runtime/Manifest.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/ADT/TypeSwitch.h"

#include <map>
#include <type_traits>

namespace mlir::dpc {
#define GEN_PASS_DEF_LOWERTORUNTIMEPASS
#include "passes/Passes.h.inc"
} // namespace mlir::dpc

using namespace mlir;
using namespace mlir::dpc;
namespace runtime = ::dpc::runtime;

namespace {

constexpr StringLiteral kSegments[] = {"forward", "backward", "backward_input",
                                       "backward_weight", "optimizer"};

ArrayRef<int64_t> shapeOf(Value value) {
  return cast<RankedTensorType>(value.getType()).getShape();
}

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

// dpc_binary's function code of a broadcasting binary op.
int64_t binaryCode(Operation *op) {
  if (isa<nn::SubOp>(op))
    return DPC_BINARY_SUB;
  if (isa<nn::MulOp>(op))
    return DPC_BINARY_MUL;
  if (isa<nn::DivOp>(op))
    return DPC_BINARY_DIV;
  assert(isa<nn::AddOp>(op) && "not a binary op");
  return DPC_BINARY_ADD;
}

// The runtime's dpc_dtype of a mask kernel's operand (verified: f32, i64 or
// i1).
int64_t dtypeCode(Value value) {
  Type type = cast<ShapedType>(value.getType()).getElementType();
  if (type.isInteger(1))
    return DPC_DTYPE_BOOL;
  return type.isInteger(64) ? DPC_DTYPE_I64 : DPC_DTYPE_F32;
}

// dpc_compare's function code of nn.compare and nn.logical.
int64_t compareCode(StringRef name) {
  return llvm::StringSwitch<int64_t>(name)
      .Case("eq", DPC_COMPARE_EQ)
      .Case("lt", DPC_COMPARE_LT)
      .Case("gt", DPC_COMPARE_GT)
      .Case("le", DPC_COMPARE_LE)
      .Case("ge", DPC_COMPARE_GE)
      .Case("and", DPC_COMPARE_AND)
      .Case("or", DPC_COMPARE_OR)
      .Default(DPC_COMPARE_XOR);
}

std::vector<int64_t> toVector(ArrayRef<int64_t> shape) {
  return std::vector<int64_t>(shape.begin(), shape.end());
}

// What the runtime must know about the rank, gathered while lowering and
// written by the runtime's own writer (include/dpc/runtime/Manifest.h).
struct Manifest {
  // The rank (= its first virtual stage), the ranks, the chunks per rank.
  int64_t stage = 0;
  int64_t stages = 1;
  int64_t chunks = 1;
  // name -> shape; shapes are copied because the segments are erased before
  // the manifest is written.
  llvm::MapVector<std::string, SmallVector<int64_t>,
                  std::map<std::string, unsigned>>
      params;
  std::map<int64_t, runtime::ManifestTensor> inputs;
  std::optional<SmallVector<int64_t>> labels;
  // Class ids (i64) or, for mse, float targets (f32).
  bool floatLabels = false;
  // The label the loss leaves out; the runtime then counts the others.
  std::optional<int64_t> ignoreIndex;
  std::optional<SmallVector<int64_t>> output;
  std::map<int64_t, runtime::ManifestTransfer> sends, recvs;
  llvm::StringMap<int64_t> stashKeys; // key -> id
  std::map<int64_t, runtime::ManifestStash> stashes;
  int64_t microbatchSize = 0;
  // A forward-only build (`pipe.inference`): the ranks predict, not train.
  bool inference = false;
  // A bf16 mixed-precision build (`pipe.precision`): the rank's kernels and
  // transfers say so, and the runtime checks the CPU at start-up.
  bool bf16 = false;
  // The optimizer of the stage's updates, which decides the state the
  // runtime keeps per parameter; none without updates.
  std::optional<runtime::Optimizer> optimizer;
  // Profiled ops: (node, phase) per id.
  std::vector<runtime::ManifestProfileOp> profile;

  int64_t paramId(StringRef name, Value read) {
    auto [it, inserted] =
        params.insert({name.str(), SmallVector<int64_t>(shapeOf(read))});
    return std::distance(params.begin(), it);
  }
  int64_t stashId(StringRef key, Value value, int64_t stage) {
    auto [it, inserted] = stashKeys.insert({key, stashKeys.size()});
    if (inserted)
      stashes[it->second] = {it->second, key.str(), stage,
                             nn::getSizeInBytes(value)};
    return it->second;
  }
  void noteBatch(ArrayRef<int64_t> shape) {
    if (!shape.empty() && microbatchSize == 0)
      microbatchSize = shape[0];
  }

  std::string toJson() const {
    runtime::RankManifest m;
    m.rank = m.stage = stage;
    m.stages = stages;
    m.chunks = chunks;
    m.schedule = "schedule.json";
    m.weights = "weights/stage" + std::to_string(stage) + ".safetensors";
    m.microbatchSize = microbatchSize;
    for (const auto &[index, input] : inputs)
      m.inputs.push_back(input);
    if (labels)
      m.labelsShape = toVector(*labels);
    m.floatLabels = floatLabels;
    m.ignoreIndex = ignoreIndex;
    for (auto [i, entry] : llvm::enumerate(params))
      m.params.push_back({int64_t(i), entry.first, toVector(entry.second)});
    for (const auto &[tag, send] : sends)
      m.sends.push_back(send);
    for (const auto &[tag, recv] : recvs)
      m.recvs.push_back(recv);
    for (const auto &[key, stash] : stashes)
      m.stashes.push_back(stash);
    if (output)
      m.outputShape = toVector(*output);
    m.inference = inference;
    m.bf16 = bf16;
    m.namesOptimizer = optimizer.has_value();
    m.optimizer = optimizer.value_or(runtime::Optimizer::Sgd);
    m.segments.assign(std::begin(kSegments), std::end(kSegments));
    m.profile = profile;
    return runtime::writeManifest(m);
  }
};

// The kernels read indices as int64; the importer widens int32 ids.
static LogicalResult expectI64Indices(Operation *op, Value indices) {
  if (cast<ShapedType>(indices.getType()).getElementType().isInteger(64))
    return success();
  return op->emitOpError(
             "expects int64 indices for the runtime's kernels, got ")
         << indices.getType();
}

class Lowering {
public:
  Lowering(ModuleOp module, bool profile)
      : module(module), profiling(profile), ctx(module.getContext()),
        builder(ctx), ptrType(LLVM::LLVMPointerType::get(ctx)),
        i64Type(builder.getI64Type()), f32Type(builder.getF32Type()) {}

  LogicalResult run();

private:
  // The ABI kernel for `name`: its _bf16 form in a bf16 build (convolutions
  // and matmuls only).
  std::string kernel(StringRef name) const {
    return manifest.bf16 ? (name + "_bf16").str() : name.str();
  }
  LogicalResult lowerSegment(func::FuncOp func, LLVM::LLVMFuncOp target,
                             StringRef segment);
  // Defines `target` to call chunks[dpc_chunk(ctx)].
  void dispatchByChunk(LLVM::LLVMFuncOp target,
                       ArrayRef<LLVM::LLVMFuncOp> chunks);
  LogicalResult lowerOp(Operation *op);
  // The optimizer step of parameter `id` (an i64 value).
  void lowerUpdate(nn::SgdUpdateOp update, Value id);
  void lowerUpdate(nn::AdamUpdateOp update, Value id);
  // Whether `op` becomes a kernel call (what a profile times).
  static bool isKernel(Operation *op) {
    return isa<nn::NNDialect>(op->getDialect()) &&
           !isa<nn::ParamOp, nn::ReshapeOp, nn::OptimizerUpdateOpInterface>(op);
  }

  // Declares (once) an external function of the ABI.
  LLVM::LLVMFuncOp declare(StringRef name, Type result, ArrayRef<Type> params);
  Value call(StringRef name, Type result, ArrayRef<Value> args);
  void callVoid(StringRef name, ArrayRef<Value> args);
  Value i64(int64_t value);
  Value f32(float value);
  Value nullPtr();
  // A private constant i64 array, shared between equal contents.
  Value constArray(ArrayRef<int64_t> values);
  Value alloc(Value like);
  Value ptrOf(Value tensor) { return values.lookup(tensor); }

  ModuleOp module;
  bool profiling;
  MLIRContext *ctx;
  OpBuilder builder;
  Type ptrType, i64Type, f32Type;
  Location loc = UnknownLoc::get(ctx);
  Value context;
  // The (virtual) stage of the segment being lowered.
  int64_t stage = 0;
  // The segment's scratch arena, when plan-memory planned one.
  Value arena;
  llvm::DenseMap<Value, Value> values;
  std::map<std::vector<int64_t>, std::string> arrays;
  Manifest manifest;
};

void Lowering::lowerUpdate(nn::SgdUpdateOp update, Value id) {
  callVoid("dpc_sgd_step", {context, id, f32(update.getLr().convertToFloat()),
                            f32(update.getMomentum().convertToFloat()),
                            f32(update.getWeightDecay().convertToFloat())});
}

void Lowering::lowerUpdate(nn::AdamUpdateOp update, Value id) {
  callVoid("dpc_adam_step", {context, id, f32(update.getLr().convertToFloat()),
                             f32(update.getBeta1().convertToFloat()),
                             f32(update.getBeta2().convertToFloat()),
                             f32(update.getEps().convertToFloat()),
                             f32(update.getWeightDecay().convertToFloat())});
}

LLVM::LLVMFuncOp Lowering::declare(StringRef name, Type result,
                                   ArrayRef<Type> params) {
  if (auto existing = module.lookupSymbol<LLVM::LLVMFuncOp>(name))
    return existing;
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointToStart(module.getBody());
  return builder.create<LLVM::LLVMFuncOp>(
      loc, name, LLVM::LLVMFunctionType::get(result, params));
}

Value Lowering::call(StringRef name, Type result, ArrayRef<Value> args) {
  SmallVector<Type> types;
  for (Value arg : args)
    types.push_back(arg.getType());
  LLVM::LLVMFuncOp callee = declare(name, result, types);
  return builder.create<LLVM::CallOp>(loc, callee, args).getResult();
}

void Lowering::callVoid(StringRef name, ArrayRef<Value> args) {
  SmallVector<Type> types;
  for (Value arg : args)
    types.push_back(arg.getType());
  LLVM::LLVMFuncOp callee = declare(name, LLVM::LLVMVoidType::get(ctx), types);
  builder.create<LLVM::CallOp>(loc, callee, args);
}

Value Lowering::i64(int64_t value) {
  return builder.create<LLVM::ConstantOp>(loc, i64Type,
                                          builder.getI64IntegerAttr(value));
}

Value Lowering::f32(float value) {
  return builder.create<LLVM::ConstantOp>(loc, f32Type,
                                          builder.getF32FloatAttr(value));
}

Value Lowering::nullPtr() { return builder.create<LLVM::ZeroOp>(loc, ptrType); }

Value Lowering::constArray(ArrayRef<int64_t> values) {
  std::vector<int64_t> key(values.begin(), values.end());
  if (key.empty())
    key.push_back(0); // a valid pointer for rank-0 shapes
  auto it = arrays.find(key);
  if (it == arrays.end()) {
    std::string name = "__dpc_const_" + std::to_string(arrays.size());
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointToStart(module.getBody());
    auto type = LLVM::LLVMArrayType::get(i64Type, key.size());
    auto data = DenseElementsAttr::get(
        RankedTensorType::get({static_cast<int64_t>(key.size())}, i64Type),
        ArrayRef<int64_t>(key));
    builder.create<LLVM::GlobalOp>(loc, type, /*isConstant=*/true,
                                   LLVM::Linkage::Private, name, data);
    it = arrays.emplace(key, name).first;
  }
  return builder.create<LLVM::AddressOfOp>(loc, ptrType, it->second);
}

Value Lowering::alloc(Value like) {
  // plan-memory placed the buffer in the segment's arena.
  if (auto offset =
          like.getDefiningOp()->getAttrOfType<IntegerAttr>("pipe.offset"))
    // An i64 index: a constant GEP index is 32 bits, and arenas of large
    // models pass 2 GiB.
    return builder.create<LLVM::GEPOp>(
        loc, ptrType, builder.getI8Type(), arena,
        ArrayRef<LLVM::GEPArg>{i64(offset.getInt())});
  return call("dpc_alloc", ptrType, {context, i64(nn::getSizeInBytes(like))});
}

// Window attributes in the order the ABI's `params` arrays use.
SmallVector<int64_t> convParams(ArrayRef<int64_t> strides,
                                ArrayRef<int64_t> pads,
                                ArrayRef<int64_t> dilations, int64_t groups) {
  SmallVector<int64_t> params(strides);
  params.append(pads.begin(), pads.end());
  params.append(dilations.begin(), dilations.end());
  params.push_back(groups);
  return params;
}

SmallVector<int64_t> poolParams(ArrayRef<int64_t> kernel,
                                ArrayRef<int64_t> strides,
                                ArrayRef<int64_t> pads) {
  SmallVector<int64_t> params(kernel);
  params.append(strides.begin(), strides.end());
  params.append(pads.begin(), pads.end());
  return params;
}

// avg_pool2d and its gradient: the pool params, then count_include_pad.
template <typename AvgPoolOp> SmallVector<int64_t> avgPoolParams(AvgPoolOp op) {
  SmallVector<int64_t> params =
      poolParams(op.getKernelShape(), op.getStrides(), op.getPads());
  params.push_back(op.getCountIncludePad());
  return params;
}

// Shape padded with leading ones to `rank`.
SmallVector<int64_t> padShape(ArrayRef<int64_t> shape, size_t rank) {
  SmallVector<int64_t> padded(rank - shape.size(), 1);
  padded.append(shape.begin(), shape.end());
  return padded;
}

// A tensor N x C x D1..Dk viewed as (n, c, s), s the product of D1..Dk.
struct ChannelDims {
  int64_t n, c, s;
};

ChannelDims channelDims(ArrayRef<int64_t> shape) {
  return {shape[0], shape[1], nn::getNumElements(shape.drop_front(2))};
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

LogicalResult Lowering::lowerOp(Operation *op) {
  loc = op->getLoc();
  auto define = [&](Value result, Value ptr) { values[result] = ptr; };
  auto shape = [&](Value v) { return constArray(shapeOf(v)); };
  LogicalResult status = success();
  llvm::TypeSwitch<Operation *>(op)
      .Case([&](nn::ParamOp read) {
        int64_t id = manifest.paramId(read.getName(), read.getResult());
        define(read, call("dpc_param", ptrType, {context, i64(id)}));
      })
      .Case([&](pipe::InputOp input) {
        int64_t index = input.getIndexAttr().getInt();
        bool integer = isa<IntegerType>(
            cast<ShapedType>(input.getType()).getElementType());
        manifest.inputs[index] = {"input" + std::to_string(index),
                                  toVector(shapeOf(input)), integer};
        manifest.noteBatch(shapeOf(input));
        define(input, call("dpc_input", ptrType, {context, i64(index)}));
      })
      .Case([&](pipe::LabelsOp labels) {
        manifest.labels = SmallVector<int64_t>(shapeOf(labels));
        manifest.floatLabels =
            isa<FloatType>(cast<ShapedType>(labels.getType()).getElementType());
        manifest.noteBatch(shapeOf(labels));
        define(labels, call("dpc_labels", ptrType, {context}));
      })
      .Case([&](pipe::RecvOp recv) {
        int64_t tag = recv.getTagAttr().getInt();
        int64_t peer = recv.getPeerAttr().getInt();
        manifest.recvs[tag] = {tag,
                               stage,
                               peer,
                               peer < stage ? runtime::TransferKind::Activation
                                            : runtime::TransferKind::Gradient,
                               nn::getSizeInBytes(recv),
                               nn::getTransferBytes(recv, manifest.bf16) !=
                                   nn::getSizeInBytes(recv)};
        define(recv, call("dpc_recv", ptrType, {context, i64(tag)}));
      })
      .Case([&](pipe::SendOp send) {
        int64_t tag = send.getTagAttr().getInt();
        int64_t peer = send.getPeerAttr().getInt();
        manifest.sends[tag] = {
            tag,
            stage,
            peer,
            peer > stage ? runtime::TransferKind::Activation
                         : runtime::TransferKind::Gradient,
            nn::getSizeInBytes(send.getValue()),
            nn::getTransferBytes(send.getValue(), manifest.bf16) !=
                nn::getSizeInBytes(send.getValue())};
        callVoid("dpc_send", {context, i64(tag), ptrOf(send.getValue())});
      })
      .Case([&](pipe::StashOp stash) {
        int64_t id = manifest.stashId(stash.getKey(), stash.getValue(), stage);
        callVoid("dpc_stash", {context, i64(id), ptrOf(stash.getValue())});
      })
      .Case([&](pipe::RestoreOp restore) {
        int64_t id =
            manifest.stashId(restore.getKey(), restore.getResult(), stage);
        define(restore, call("dpc_restore", ptrType, {context, i64(id)}));
      })
      .Case([&](pipe::ReportLossOp report) {
        callVoid("dpc_report_loss", {context, ptrOf(report.getLoss())});
      })
      .Case([&](pipe::ReportOutputOp report) {
        Value output = report.getOutput();
        manifest.output = SmallVector<int64_t>(shapeOf(output));
        Value data = ptrOf(output);
        // Predictions are float32: a boolean or integer output (a mask, a
        // comparison) is reported as its values converted to float.
        if (int64_t dtype = dtypeCode(output); dtype != DPC_DTYPE_F32) {
          int64_t count = nn::getNumElements(shapeOf(output));
          Value converted =
              call("dpc_alloc", ptrType,
                   {context, i64(count * int64_t(sizeof(float)))});
          callVoid("dpc_cast", {i64(dtype), i64(DPC_DTYPE_F32), data, converted,
                                i64(count)});
          data = converted;
        }
        callVoid("dpc_report_output", {context, data});
      })
      .Case([&](pipe::AccumulateGradOp acc) {
        auto read = acc.getParam().getDefiningOp<nn::ParamOp>();
        int64_t id = manifest.paramId(read.getName(), read.getResult());
        callVoid("dpc_grad_accumulate",
                 {context, i64(id), ptrOf(acc.getGrad())});
      })
      .Case([&](pipe::AccumulatedGradOp acc) {
        // The runtime applies the accumulator itself; no buffer is passed.
        define(acc, nullPtr());
      })
      .Case<nn::SgdUpdateOp, nn::AdamUpdateOp>([&](auto update) {
        auto read = update.getParam().template getDefiningOp<nn::ParamOp>();
        if (!update.getGrad()
                 .template getDefiningOp<pipe::AccumulatedGradOp>()) {
          status = update.emitOpError(
              "expects its gradient from pipe.accumulated_grad (run "
              "--dpc-outline-stages first)");
          return;
        }
        runtime::Optimizer kind = isa<nn::AdamUpdateOp>(*update)
                                      ? runtime::Optimizer::Adam
                                      : runtime::Optimizer::Sgd;
        if (manifest.optimizer && *manifest.optimizer != kind) {
          status = update.emitOpError("mixes optimizers on one stage: ")
                   << runtime::optimizerName(*manifest.optimizer) << " and "
                   << runtime::optimizerName(kind);
          return;
        }
        manifest.optimizer = kind;
        int64_t id = manifest.paramId(read.getName(), read.getResult());
        lowerUpdate(update, i64(id));
      })
      .Case([&](nn::ReshapeOp reshape) {
        define(reshape, ptrOf(reshape.getInput()));
      })
      .Case([&](nn::Conv2dOp conv) {
        Value y = alloc(conv);
        callVoid(
            kernel("dpc_conv2d"),
            {ptrOf(conv.getInput()), shape(conv.getInput()),
             ptrOf(conv.getFilter()), shape(conv.getFilter()),
             conv.getBias() ? ptrOf(conv.getBias()) : nullPtr(), y, shape(conv),
             constArray(convParams(conv.getStrides(), conv.getPads(),
                                   conv.getDilations(), conv.getGroups()))});
        define(conv, y);
      })
      .Case([&](nn::Conv2dGradInputOp grad) {
        Value dx = alloc(grad);
        callVoid(
            kernel("dpc_conv2d_grad_input"),
            {ptrOf(grad.getResultGrad()), shape(grad.getResultGrad()),
             ptrOf(grad.getFilter()), shape(grad.getFilter()), dx, shape(grad),
             constArray(convParams(grad.getStrides(), grad.getPads(),
                                   grad.getDilations(), grad.getGroups()))});
        define(grad, dx);
      })
      .Case([&](nn::Conv2dGradFilterOp grad) {
        Value dw = alloc(grad);
        callVoid(
            kernel("dpc_conv2d_grad_filter"),
            {ptrOf(grad.getResultGrad()), shape(grad.getResultGrad()),
             ptrOf(grad.getInput()), shape(grad.getInput()), dw, shape(grad),
             constArray(convParams(grad.getStrides(), grad.getPads(),
                                   grad.getDilations(), grad.getGroups()))});
        define(grad, dw);
      })
      .Case([&](nn::Conv2dGradBiasOp grad) {
        Value db = alloc(grad);
        callVoid("dpc_conv2d_grad_bias", {ptrOf(grad.getResultGrad()),
                                          shape(grad.getResultGrad()), db});
        define(grad, db);
      })
      .Case([&](nn::MatmulOp mm) {
        MatmulDims d = matmulDims(shapeOf(mm.getLhs()), shapeOf(mm.getRhs()),
                                  mm.getTransposeLhs(), mm.getTransposeRhs());
        Value y = alloc(mm);
        callVoid(kernel("dpc_matmul"),
                 {ptrOf(mm.getLhs()), ptrOf(mm.getRhs()), y, i64(d.batch),
                  i64(d.m), i64(d.n), i64(d.k), i64(mm.getTransposeLhs()),
                  i64(mm.getTransposeRhs()), i64(d.aStride), i64(d.bStride),
                  i64(0)});
        define(mm, y);
      })
      .Case([&](nn::MatmulGradLhsOp grad) {
        bool tA = grad.getTransposeLhs(), tB = grad.getTransposeRhs();
        MatmulDims d = matmulDims(shapeOf(grad.getLhsGrad()),
                                  shapeOf(grad.getRhs()), tA, tB);
        Value da = alloc(grad);
        Value dy = ptrOf(grad.getResultGrad()), b = ptrOf(grad.getRhs());
        int64_t dyStride = d.m * d.n;
        if (!tA) // da = dy . op(b)^T
          callVoid(kernel("dpc_matmul"),
                   {dy, b, da, i64(d.batch), i64(d.m), i64(d.k), i64(d.n),
                    i64(0), i64(!tB), i64(dyStride), i64(d.bStride), i64(0)});
        else // da (stored K x M) = op(b) . dy^T
          callVoid(kernel("dpc_matmul"),
                   {b, dy, da, i64(d.batch), i64(d.k), i64(d.m), i64(d.n),
                    i64(tB), i64(1), i64(d.bStride), i64(dyStride), i64(0)});
        define(grad, da);
      })
      .Case([&](nn::MatmulGradRhsOp grad) {
        bool tA = grad.getTransposeLhs(), tB = grad.getTransposeRhs();
        MatmulDims d = matmulDims(shapeOf(grad.getLhs()),
                                  shapeOf(grad.getRhsGrad()), tA, tB);
        Value db = alloc(grad);
        Value dy = ptrOf(grad.getResultGrad()), a = ptrOf(grad.getLhs());
        int64_t dyStride = d.m * d.n;
        // A rank-2 rhs shared by every batch gets the sum over the batch.
        int64_t accumulate = d.sharedRhs && d.batch > 1;
        if (!tB) // db = op(a)^T . dy
          callVoid(kernel("dpc_matmul"),
                   {a, dy, db, i64(d.batch), i64(d.k), i64(d.n), i64(d.m),
                    i64(!tA), i64(0), i64(d.aStride), i64(dyStride),
                    i64(accumulate)});
        else // db (stored N x K) = dy^T . op(a)
          callVoid(kernel("dpc_matmul"),
                   {dy, a, db, i64(d.batch), i64(d.n), i64(d.k), i64(d.m),
                    i64(1), i64(tA), i64(dyStride), i64(d.aStride),
                    i64(accumulate)});
        define(grad, db);
      })
      .Case<nn::AddOp, nn::SubOp, nn::MulOp, nn::DivOp>([&](auto binary) {
        size_t rank = shapeOf(binary).size();
        Value y = alloc(binary);
        callVoid("dpc_binary",
                 {i64(binaryCode(binary)), ptrOf(binary.getLhs()),
                  constArray(padShape(shapeOf(binary.getLhs()), rank)),
                  ptrOf(binary.getRhs()),
                  constArray(padShape(shapeOf(binary.getRhs()), rank)), y,
                  shape(binary), i64(rank)});
        define(binary, y);
      })
      .Case([&](nn::SumToShapeOp sum) {
        size_t rank = shapeOf(sum.getInput()).size();
        Value y = alloc(sum);
        callVoid("dpc_sum_to_shape",
                 {ptrOf(sum.getInput()), shape(sum.getInput()), y,
                  constArray(padShape(shapeOf(sum), rank)), i64(rank),
                  f32(sum.getScale().convertToFloat())});
        define(sum, y);
      })
      .Case([&](nn::BroadcastToOp broadcast) {
        size_t rank = shapeOf(broadcast).size();
        Value y = alloc(broadcast);
        callVoid("dpc_broadcast_to",
                 {ptrOf(broadcast.getInput()),
                  constArray(padShape(shapeOf(broadcast.getInput()), rank)), y,
                  shape(broadcast), i64(rank),
                  f32(broadcast.getScale().convertToFloat())});
        define(broadcast, y);
      })
      .Case([&](nn::TransposeOp transpose) {
        Value y = alloc(transpose);
        callVoid("dpc_transpose",
                 {ptrOf(transpose.getInput()), shape(transpose.getInput()), y,
                  constArray(transpose.getPerm()),
                  i64(transpose.getPerm().size())});
        define(transpose, y);
      })
      .Case([&](nn::SliceOp slice) {
        Value y = alloc(slice);
        callVoid("dpc_slice", {ptrOf(slice.getInput()), shape(slice.getInput()),
                               y, shape(slice), i64(shapeOf(slice).size()),
                               constArray(slice.getOffsets()),
                               constArray(slice.getSteps())});
        define(slice, y);
      })
      .Case([&](nn::SliceGradOp grad) {
        Value dx = alloc(grad);
        callVoid("dpc_insert",
                 {ptrOf(grad.getResultGrad()), shape(grad.getResultGrad()), dx,
                  shape(grad), i64(shapeOf(grad).size()),
                  constArray(grad.getOffsets()), constArray(grad.getSteps()),
                  i64(1), f32(0.0f)});
        define(grad, dx);
      })
      .Case([&](nn::ConcatOp concat) {
        // Each input into its place along the axis.
        Value y = alloc(concat);
        int64_t rank = int64_t(shapeOf(concat).size());
        SmallVector<int64_t> offsets(rank, 0), steps(rank, 1);
        for (Value input : concat.getInputs()) {
          callVoid("dpc_insert",
                   {ptrOf(input), shape(input), y, shape(concat), i64(rank),
                    constArray(offsets), constArray(steps), i64(0), f32(0.0f)});
          offsets[concat.getAxis()] += shapeOf(input)[concat.getAxis()];
        }
        define(concat, y);
      })
      .Case([&](nn::PadOp pad) {
        // The input into its place, the border set to the pad value.
        Value y = alloc(pad);
        int64_t rank = int64_t(shapeOf(pad).size());
        SmallVector<int64_t> steps(rank, 1);
        callVoid("dpc_insert",
                 {ptrOf(pad.getInput()), shape(pad.getInput()), y, shape(pad),
                  i64(rank), constArray(pad.getPads().take_front(rank)),
                  constArray(steps), i64(1),
                  f32(pad.getValue().convertToFloat())});
        define(pad, y);
      })
      .Case<nn::DropoutOp, nn::DropoutGradOp>([&](auto dropout) {
        // The mask's key for this microbatch, then the kernel; the gradient
        // is the same kernel on the result's gradient.
        Value out = alloc(dropout);
        Value key = call("dpc_random_key", i64Type,
                         {context, i64(dropout.getMaskId())});
        callVoid("dpc_dropout",
                 {ptrOf(dropout->getOperand(0)), out,
                  i64(nn::getNumElements(shapeOf(dropout))),
                  f32(dropout.getRatio().convertToFloat()), key});
        define(dropout, out);
      })
      .Case<nn::CompareOp, nn::LogicalOp>([&](auto compare) {
        size_t rank = shapeOf(compare).size();
        StringRef name = [&] {
          if constexpr (std::is_same_v<decltype(compare), nn::CompareOp>)
            return compare.getPredicate();
          else
            return compare.getKind();
        }();
        Value y = alloc(compare);
        callVoid("dpc_compare",
                 {i64(compareCode(name)), i64(dtypeCode(compare.getLhs())),
                  ptrOf(compare.getLhs()),
                  constArray(padShape(shapeOf(compare.getLhs()), rank)),
                  ptrOf(compare.getRhs()),
                  constArray(padShape(shapeOf(compare.getRhs()), rank)), y,
                  shape(compare), i64(rank)});
        define(compare, y);
      })
      .Case([&](nn::NotOp negation) {
        Value y = alloc(negation);
        callVoid("dpc_not", {ptrOf(negation.getInput()), y,
                             i64(nn::getNumElements(shapeOf(negation)))});
        define(negation, y);
      })
      .Case([&](nn::CastOp conversion) {
        Value y = alloc(conversion);
        callVoid("dpc_cast", {i64(dtypeCode(conversion.getInput())),
                              i64(dtypeCode(conversion.getResult())),
                              ptrOf(conversion.getInput()), y,
                              i64(nn::getNumElements(shapeOf(conversion)))});
        define(conversion, y);
      })
      .Case([&](nn::WhereOp where) {
        size_t rank = shapeOf(where).size();
        Value y = alloc(where);
        callVoid("dpc_where",
                 {ptrOf(where.getCondition()),
                  constArray(padShape(shapeOf(where.getCondition()), rank)),
                  ptrOf(where.getLhs()),
                  constArray(padShape(shapeOf(where.getLhs()), rank)),
                  ptrOf(where.getRhs()),
                  constArray(padShape(shapeOf(where.getRhs()), rank)), y,
                  shape(where), i64(rank)});
        define(where, y);
      })
      .Case([&](nn::WhereGradOp grad) {
        size_t rank = shapeOf(grad).size();
        Value dx = alloc(grad);
        callVoid("dpc_where_grad",
                 {ptrOf(grad.getCondition()),
                  constArray(padShape(shapeOf(grad.getCondition()), rank)),
                  ptrOf(grad.getResultGrad()), dx, shape(grad), i64(rank),
                  i64(grad.getBranch())});
        define(grad, dx);
      })
      .Case([&](nn::ClipOp clip) {
        Value y = alloc(clip);
        callVoid("dpc_clip", {ptrOf(clip.getInput()), y,
                              i64(nn::getNumElements(shapeOf(clip))),
                              f32(clip.getMin().convertToFloat()),
                              f32(clip.getMax().convertToFloat())});
        define(clip, y);
      })
      .Case([&](nn::ClipGradOp grad) {
        Value dx = alloc(grad);
        callVoid("dpc_clip_grad",
                 {ptrOf(grad.getResultGrad()), ptrOf(grad.getInput()), dx,
                  i64(nn::getNumElements(shapeOf(grad))),
                  f32(grad.getMin().convertToFloat()),
                  f32(grad.getMax().convertToFloat())});
        define(grad, dx);
      })
      .Case<nn::SoftmaxOp, nn::LogSoftmaxOp>([&](auto softmax) {
        SoftmaxDims d = softmaxDims(shapeOf(softmax), softmax.getAxis());
        Value y = alloc(softmax);
        callVoid("dpc_softmax",
                 {ptrOf(softmax.getInput()), y, i64(d.outer), i64(d.n),
                  i64(d.inner), i64(isa<nn::LogSoftmaxOp>(softmax))});
        define(softmax, y);
      })
      .Case<nn::SoftmaxGradOp, nn::LogSoftmaxGradOp>([&](auto grad) {
        SoftmaxDims d = softmaxDims(shapeOf(grad), grad.getAxis());
        Value dx = alloc(grad);
        callVoid("dpc_softmax_grad",
                 {ptrOf(grad.getResultGrad()), ptrOf(grad.getResult()), dx,
                  i64(d.outer), i64(d.n), i64(d.inner),
                  i64(isa<nn::LogSoftmaxGradOp>(grad))});
        define(grad, dx);
      })
      .Case([&](nn::ReluOp relu) {
        Value y = alloc(relu);
        callVoid("dpc_relu", {ptrOf(relu.getInput()), y,
                              i64(nn::getNumElements(shapeOf(relu)))});
        define(relu, y);
      })
      .Case([&](nn::ReluGradOp grad) {
        Value dx = alloc(grad);
        callVoid("dpc_relu_grad",
                 {ptrOf(grad.getResultGrad()), ptrOf(grad.getResult()), dx,
                  i64(nn::getNumElements(shapeOf(grad)))});
        define(grad, dx);
      })
      .Case([&](nn::UnaryFunctionOpInterface unary) {
        // dpc_unary(fn, a, b, x, y, n) or
        // dpc_unary_grad(fn, a, b, dy, saved, dx, n).
        Value result = unary->getResult(0);
        Value out = alloc(result);
        std::array<float, 2> params = nn::unaryParameterValues(unary);
        SmallVector<Value> args = {i64(unary.getUnaryFunction()),
                                   f32(params[0]), f32(params[1])};
        for (Value operand : unary->getOperands())
          args.push_back(ptrOf(operand));
        args.append({out, i64(nn::getNumElements(shapeOf(result)))});
        callVoid(unary.isUnaryGradient() ? "dpc_unary_grad" : "dpc_unary",
                 args);
        define(result, out);
      })
      .Case([&](nn::MaxPool2dOp pool) {
        Value y = alloc(pool);
        callVoid("dpc_max_pool2d",
                 {ptrOf(pool.getInput()), shape(pool.getInput()), y,
                  shape(pool),
                  constArray(poolParams(pool.getKernelShape(),
                                        pool.getStrides(), pool.getPads()))});
        define(pool, y);
      })
      .Case([&](nn::MaxPool2dGradOp grad) {
        Value dx = alloc(grad);
        callVoid("dpc_max_pool2d_grad",
                 {ptrOf(grad.getResultGrad()), shape(grad.getResultGrad()),
                  ptrOf(grad.getInput()), shape(grad.getInput()), dx,
                  constArray(poolParams(grad.getKernelShape(),
                                        grad.getStrides(), grad.getPads()))});
        define(grad, dx);
      })
      .Case([&](nn::AvgPool2dOp pool) {
        Value y = alloc(pool);
        callVoid("dpc_avg_pool2d",
                 {ptrOf(pool.getInput()), shape(pool.getInput()), y,
                  shape(pool), constArray(avgPoolParams(pool))});
        define(pool, y);
      })
      .Case([&](nn::AvgPool2dGradOp grad) {
        Value dx = alloc(grad);
        callVoid("dpc_avg_pool2d_grad",
                 {ptrOf(grad.getResultGrad()), shape(grad.getResultGrad()), dx,
                  shape(grad), constArray(avgPoolParams(grad))});
        define(grad, dx);
      })
      .Case([&](nn::GlobalAvgPoolOp pool) {
        ChannelDims d = channelDims(shapeOf(pool.getInput()));
        Value y = alloc(pool);
        callVoid("dpc_global_avg_pool",
                 {ptrOf(pool.getInput()), i64(d.n * d.c), i64(d.s), y});
        define(pool, y);
      })
      .Case([&](nn::GlobalAvgPoolGradOp grad) {
        ChannelDims d = channelDims(shapeOf(grad));
        Value dx = alloc(grad);
        callVoid("dpc_global_avg_pool_grad",
                 {ptrOf(grad.getResultGrad()), i64(d.n * d.c), i64(d.s), dx});
        define(grad, dx);
      })
      .Case([&](nn::BatchNormStatsOp stats) {
        SmallVector<Value, 2> running;
        for (Value operand : {stats.getRunningMean(), stats.getRunningVar()}) {
          auto read = operand.getDefiningOp<nn::ParamOp>();
          int64_t id = manifest.paramId(read.getName(), read.getResult());
          running.push_back(
              call("dpc_param_state", ptrType, {context, i64(id)}));
        }
        ChannelDims d = channelDims(shapeOf(stats.getInput()));
        Value out = alloc(stats);
        Value training = call("dpc_training", i64Type, {context});
        callVoid("dpc_batch_norm_stats",
                 {ptrOf(stats.getInput()), i64(d.n), i64(d.c), i64(d.s),
                  running[0], running[1],
                  f32(stats.getMomentum().convertToFloat()), training, out});
        define(stats, out);
      })
      .Case([&](nn::BatchNormOp norm) {
        ChannelDims d = channelDims(shapeOf(norm.getInput()));
        Value y = alloc(norm);
        callVoid("dpc_batch_norm",
                 {ptrOf(norm.getInput()), ptrOf(norm.getStats()),
                  ptrOf(norm.getScale()), ptrOf(norm.getBias()), i64(d.n),
                  i64(d.c), i64(d.s), f32(norm.getEpsilon().convertToFloat()),
                  y});
        define(norm, y);
      })
      .Case([&](nn::BatchNormGradInputOp grad) {
        ChannelDims d = channelDims(shapeOf(grad.getInput()));
        Value dx = alloc(grad);
        callVoid("dpc_batch_norm_grad_input",
                 {ptrOf(grad.getResultGrad()), ptrOf(grad.getInput()),
                  ptrOf(grad.getStats()), ptrOf(grad.getScale()), i64(d.n),
                  i64(d.c), i64(d.s), f32(grad.getEpsilon().convertToFloat()),
                  dx});
        define(grad, dx);
      })
      .Case([&](nn::BatchNormGradScaleOp grad) {
        ChannelDims d = channelDims(shapeOf(grad.getInput()));
        Value dscale = alloc(grad);
        callVoid("dpc_batch_norm_grad_scale",
                 {ptrOf(grad.getResultGrad()), ptrOf(grad.getInput()),
                  ptrOf(grad.getStats()), i64(d.n), i64(d.c), i64(d.s),
                  f32(grad.getEpsilon().convertToFloat()), dscale});
        define(grad, dscale);
      })
      .Case([&](nn::BatchNormGradBiasOp grad) {
        ChannelDims d = channelDims(shapeOf(grad.getResultGrad()));
        Value dbias = alloc(grad);
        callVoid("dpc_conv2d_grad_bias",
                 {ptrOf(grad.getResultGrad()), constArray({d.n, d.c, d.s, 1}),
                  dbias});
        define(grad, dbias);
      })
      .Case([&](nn::LayerNormOp norm) {
        LayerNormDims d = layerNormDims(shapeOf(norm), norm.getAxis());
        Value y = alloc(norm);
        callVoid("dpc_layer_norm",
                 {ptrOf(norm.getInput()),
                  norm.getScale() ? ptrOf(norm.getScale()) : nullPtr(),
                  norm.getBias() ? ptrOf(norm.getBias()) : nullPtr(),
                  i64(d.rows), i64(d.size),
                  f32(norm.getEpsilon().convertToFloat()), y});
        define(norm, y);
      })
      .Case([&](nn::LayerNormGradInputOp grad) {
        LayerNormDims d = layerNormDims(shapeOf(grad), grad.getAxis());
        Value dx = alloc(grad);
        callVoid("dpc_layer_norm_grad_input",
                 {ptrOf(grad.getResultGrad()), ptrOf(grad.getInput()),
                  grad.getScale() ? ptrOf(grad.getScale()) : nullPtr(),
                  i64(d.rows), i64(d.size),
                  f32(grad.getEpsilon().convertToFloat()), dx});
        define(grad, dx);
      })
      .Case([&](nn::LayerNormGradScaleOp grad) {
        LayerNormDims d =
            layerNormDims(shapeOf(grad.getInput()), grad.getAxis());
        Value dscale = alloc(grad);
        callVoid("dpc_layer_norm_grad_scale",
                 {ptrOf(grad.getResultGrad()), ptrOf(grad.getInput()),
                  i64(d.rows), i64(d.size),
                  f32(grad.getEpsilon().convertToFloat()), dscale});
        define(grad, dscale);
      })
      .Case([&](nn::LstmOp lstm) {
        ArrayRef<int64_t> x = shapeOf(lstm.getInput());
        int64_t hidden = shapeOf(lstm.getInitialH())[1];
        Value states = alloc(lstm);
        callVoid("dpc_lstm",
                 {ptrOf(lstm.getInput()), ptrOf(lstm.getWeight()),
                  ptrOf(lstm.getRecurrence()),
                  lstm.getBias() ? ptrOf(lstm.getBias()) : nullPtr(),
                  ptrOf(lstm.getInitialH()), ptrOf(lstm.getInitialC()),
                  i64(x[0]), i64(x[1]), i64(x[2]), i64(hidden), states});
        define(lstm, states);
      })
      .Case([&](nn::LstmGradOp grad) {
        ArrayRef<int64_t> states = shapeOf(grad.getStates());
        Value out = alloc(grad);
        callVoid("dpc_lstm_grad",
                 {ptrOf(grad.getStatesGrad()), ptrOf(grad.getStates()),
                  ptrOf(grad.getRecurrence()), ptrOf(grad.getInitialC()),
                  i64(states[0]), i64(states[1]), i64(states[2] / 6), out});
        define(grad, out);
      })
      .Case([&](nn::GatherOp gather) {
        if (failed(expectI64Indices(gather, gather.getIndices())))
          return;
        ArrayRef<int64_t> table = shapeOf(gather.getTable());
        Value y = alloc(gather);
        callVoid("dpc_gather",
                 {ptrOf(gather.getTable()), ptrOf(gather.getIndices()),
                  i64(table[0]), i64(nn::getNumElements(table.drop_front())),
                  i64(nn::getNumElements(shapeOf(gather.getIndices()))), y});
        define(gather, y);
      })
      .Case([&](nn::GatherGradOp grad) {
        if (failed(expectI64Indices(grad, grad.getIndices())))
          return;
        ArrayRef<int64_t> table = shapeOf(grad.getTableGrad());
        Value dtable = alloc(grad);
        callVoid("dpc_gather_grad",
                 {ptrOf(grad.getResultGrad()), ptrOf(grad.getIndices()),
                  i64(table[0]), i64(nn::getNumElements(table.drop_front())),
                  i64(nn::getNumElements(shapeOf(grad.getIndices()))), dtable});
        define(grad, dtable);
      })
      .Case([&](nn::SoftmaxCrossEntropyOp loss) {
        // Logits .. x C: every position but the last dimension is a row.
        ArrayRef<int64_t> logits = shapeOf(loss.getLogits());
        Value out = alloc(loss);
        if (std::optional<int64_t> ignored = loss.getIgnoreIndex()) {
          manifest.ignoreIndex = *ignored;
          callVoid("dpc_softmax_cross_entropy_ignore",
                   {ptrOf(loss.getLogits()), ptrOf(loss.getLabels()),
                    i64(nn::getNumElements(logits.drop_back())),
                    i64(logits.back()), i64(*ignored),
                    call("dpc_loss_scale", f32Type, {context}), out});
          define(loss, out);
          return;
        }
        callVoid("dpc_softmax_cross_entropy",
                 {ptrOf(loss.getLogits()), ptrOf(loss.getLabels()),
                  i64(nn::getNumElements(logits.drop_back())),
                  i64(logits.back()), f32(loss.getScale().convertToFloat()),
                  out});
        define(loss, out);
      })
      .Case([&](nn::SoftmaxCrossEntropyGradOp grad) {
        ArrayRef<int64_t> logits = shapeOf(grad.getLogits());
        Value out = alloc(grad);
        if (std::optional<int64_t> ignored = grad.getIgnoreIndex()) {
          manifest.ignoreIndex = *ignored;
          callVoid("dpc_softmax_cross_entropy_ignore_grad",
                   {ptrOf(grad.getLogits()), ptrOf(grad.getLabels()),
                    i64(nn::getNumElements(logits.drop_back())),
                    i64(logits.back()), i64(*ignored),
                    call("dpc_loss_scale", f32Type, {context}), out});
          define(grad, out);
          return;
        }
        callVoid("dpc_softmax_cross_entropy_grad",
                 {ptrOf(grad.getLogits()), ptrOf(grad.getLabels()),
                  i64(nn::getNumElements(logits.drop_back())),
                  i64(logits.back()), f32(grad.getScale().convertToFloat()),
                  out});
        define(grad, out);
      })
      .Case([&](nn::MseLossOp loss) {
        Value out = alloc(loss);
        callVoid("dpc_mse_loss",
                 {ptrOf(loss.getPrediction()), ptrOf(loss.getTarget()),
                  i64(nn::getNumElements(shapeOf(loss.getPrediction()))),
                  f32(loss.getScale().convertToFloat()), out});
        define(loss, out);
      })
      .Case([&](nn::MseLossGradOp grad) {
        Value out = alloc(grad);
        callVoid("dpc_mse_loss_grad",
                 {ptrOf(grad.getPrediction()), ptrOf(grad.getTarget()),
                  i64(nn::getNumElements(shapeOf(grad.getPrediction()))),
                  f32(grad.getScale().convertToFloat()), out});
        define(grad, out);
      })
      .Default([&](Operation *other) {
        status = other->emitOpError("has no lowering to runtime calls");
      });
  return status;
}

LogicalResult Lowering::lowerSegment(func::FuncOp func, LLVM::LLVMFuncOp target,
                                     StringRef segment) {
  Block *entry = target.addEntryBlock(builder);
  builder.setInsertionPointToStart(entry);
  context = entry->getArgument(0);
  values.clear();
  arena = nullptr;
  if (func)
    stage = pipe::getStage(func).value_or(0);
  if (func) {
    if (auto bytes = func->getAttrOfType<IntegerAttr>("pipe.arena_bytes"))
      if (bytes.getInt() > 0)
        arena = call("dpc_alloc", ptrType, {context, i64(bytes.getInt())});
  }
  // The halves of the backward repeat its ops; profiles time the whole.
  bool timed = profiling && (segment == "forward" || segment == "backward");
  if (func) {
    for (Operation &op : func.getBody().front().without_terminator()) {
      std::optional<int64_t> id;
      if (timed && isKernel(&op)) {
        auto node = op.getAttrOfType<StringAttr>("nn.node");
        id = manifest.profile.size();
        manifest.profile.push_back(
            {*id, node ? node.str() : op.getName().getStringRef().str(),
             segment.str()});
        loc = op.getLoc();
        callVoid("dpc_profile_begin", {context, i64(*id)});
      }
      if (failed(lowerOp(&op)))
        return failure();
      if (id)
        callVoid("dpc_profile_end", {context, i64(*id)});
    }
  }
  builder.create<LLVM::ReturnOp>(target.getLoc(), ValueRange());
  return success();
}

void Lowering::dispatchByChunk(LLVM::LLVMFuncOp target,
                               ArrayRef<LLVM::LLVMFuncOp> chunks) {
  loc = target.getLoc();
  Block *entry = target.addEntryBlock(builder);
  context = entry->getArgument(0);
  Block *done = builder.createBlock(&target.getBody());
  SmallVector<APInt> cases;
  SmallVector<Block *> blocks;
  for (auto [chunk, callee] : llvm::enumerate(chunks)) {
    blocks.push_back(builder.createBlock(done));
    builder.create<LLVM::CallOp>(loc, callee, ValueRange{context});
    builder.create<LLVM::BrOp>(loc, done);
    cases.push_back(APInt(64, chunk));
  }
  builder.setInsertionPointToEnd(done);
  builder.create<LLVM::ReturnOp>(loc, ValueRange());
  builder.setInsertionPointToEnd(entry);
  Value chunk = call("dpc_chunk", i64Type, {context});
  SmallVector<ValueRange> noOperands(blocks.size(), ValueRange());
  builder.create<LLVM::SwitchOp>(loc, chunk, done, ValueRange(), cases, blocks,
                                 noOperands);
}

LogicalResult Lowering::run() {
  manifest.bf16 = pipe::isBf16(module);
  // A schedule program is compile-time data; the runtime reads schedule.json.
  for (auto program :
       llvm::make_early_inc_range(module.getOps<pipe::ScheduleOp>()))
    program.erase();
  // The segments of this rank: one stage, or with model chunks the virtual
  // stages r, r + ranks, r + 2 ranks, ...
  std::map<int64_t, llvm::StringMap<func::FuncOp>> stages;
  for (auto func : llvm::make_early_inc_range(module.getOps<func::FuncOp>())) {
    auto segment =
        func->getAttrOfType<StringAttr>(pipe::PipeDialect::kSegmentAttrName);
    std::optional<int64_t> funcStage = pipe::getStage(func);
    if (!segment || !funcStage)
      return func.emitError("expects segment functions from "
                            "--dpc-outline-stages");
    stages[*funcStage][segment.getValue()] = func;
  }
  if (stages.empty())
    return module.emitError("expects segment functions to lower");
  int64_t numStages = stages.rbegin()->first + 1;
  if (auto count = module->getAttrOfType<IntegerAttr>(
          pipe::PipeDialect::kNumStagesAttrName))
    numStages = count.getInt();
  manifest.chunks = pipe::getNumChunks(module);
  manifest.stages = numStages / manifest.chunks;
  manifest.stage = stages.begin()->first;
  if (numStages % manifest.chunks != 0 ||
      int64_t(stages.size()) != manifest.chunks ||
      manifest.stage >= manifest.stages)
    return module.emitError("expects the segments of one rank: ")
           << manifest.chunks << " chunk(s) of a " << numStages
           << "-stage pipeline, found " << stages.size() << " stage(s)";
  for (auto [chunk, entry] : llvm::enumerate(stages))
    if (entry.first != manifest.stage + int64_t(chunk) * manifest.stages)
      return module.emitError("expects chunk ")
             << chunk << " of rank " << manifest.stage << " to be stage "
             << manifest.stage + int64_t(chunk) * manifest.stages
             << ", found stage " << entry.first;
  if (auto size = module->getAttrOfType<IntegerAttr>(
          pipe::PipeDialect::kMicrobatchSizeAttrName))
    manifest.microbatchSize = size.getInt();
  manifest.inference = module->hasAttr(pipe::PipeDialect::kInferenceAttrName);

  // With one chunk the segments are the ABI's functions; with several, each
  // chunk's are private and the ABI's dispatch on dpc_chunk.
  Type voidType = LLVM::LLVMVoidType::get(ctx);
  auto segmentType = LLVM::LLVMFunctionType::get(voidType, {ptrType});
  bool dispatch = manifest.chunks > 1;
  for (StringRef segment : kSegments) {
    SmallVector<LLVM::LLVMFuncOp> perChunk;
    for (auto [chunk, entry] : llvm::enumerate(stages)) {
      builder.setInsertionPointToEnd(module.getBody());
      std::string name =
          dispatch ? "dpc_chunk" + std::to_string(chunk) + "_" + segment.str()
                   : "dpc_segment_" + segment.str();
      auto target =
          builder.create<LLVM::LLVMFuncOp>(module.getLoc(), name, segmentType);
      if (dispatch)
        target.setLinkage(LLVM::Linkage::Internal);
      if (failed(lowerSegment(entry.second.lookup(segment), target, segment)))
        return failure();
      perChunk.push_back(target);
    }
    if (dispatch) {
      builder.setInsertionPointToEnd(module.getBody());
      auto target = builder.create<LLVM::LLVMFuncOp>(
          module.getLoc(), ("dpc_segment_" + segment).str(), segmentType);
      dispatchByChunk(target, perChunk);
    }
  }
  for (auto &[stage, segments] : stages)
    for (auto &entry : segments)
      entry.second.erase();

  std::string json = manifest.toJson();
  json.push_back('\0');
  builder.setInsertionPointToEnd(module.getBody());
  builder.create<LLVM::GlobalOp>(
      module.getLoc(),
      LLVM::LLVMArrayType::get(builder.getI8Type(), json.size()),
      /*isConstant=*/true, LLVM::Linkage::External, "dpc_rank_manifest",
      builder.getStringAttr(json));
  return success();
}

struct LowerToRuntimePass
    : public mlir::dpc::impl::LowerToRuntimePassBase<LowerToRuntimePass> {
  using LowerToRuntimePassBase::LowerToRuntimePassBase;

  void runOnOperation() override {
    if (failed(Lowering(getOperation(), profile).run()))
      signalPassFailure();
  }
};

} // namespace

//===- RuntimeLowering.cpp - What lower-to-runtime's op lowerings share ---===//

#include "passes/lowering/RuntimeLowering.h"

#include "dialects/nn/IR/ShapeInference.h"
#include "dpc/runtime/Abi.h"

using namespace mlir;
using namespace mlir::dpc;
using namespace mlir::dpc::lowering;

SmallVector<int64_t> lowering::padShape(ArrayRef<int64_t> shape, size_t rank) {
  SmallVector<int64_t> padded(rank - shape.size(), 1);
  padded.append(shape.begin(), shape.end());
  return padded;
}

int64_t lowering::dtypeCode(Value value) {
  Type type = cast<ShapedType>(value.getType()).getElementType();
  if (type.isInteger(1))
    return DPC_DTYPE_BOOL;
  return type.isInteger(64) ? DPC_DTYPE_I64 : DPC_DTYPE_F32;
}

//===----------------------------------------------------------------------===//
// RankManifestBuilder
//===----------------------------------------------------------------------===//

int64_t RankManifestBuilder::paramId(nn::ParamOp read) {
  auto [it, inserted] =
      params.insert({read.getName().str(), shapeOf(read.getResult()).vec()});
  return std::distance(params.begin(), it);
}

int64_t RankManifestBuilder::stashId(StringRef key, Value value,
                                     int64_t stage) {
  auto [it, inserted] = stashKeys.insert({key, stashKeys.size()});
  if (inserted)
    stashes[it->second] = {it->second, key.str(), stage,
                           nn::getSizeInBytes(value)};
  return it->second;
}

void RankManifestBuilder::noteBatch(ArrayRef<int64_t> shape) {
  if (!shape.empty() && microbatchSize == 0)
    microbatchSize = shape[0];
}

std::string RankManifestBuilder::toJson() const {
  runtime::RankManifest m;
  m.rank = m.stage = stage;
  m.stages = stages;
  m.chunks = chunks;
  m.schedule = "schedule.json";
  m.weights = "weights/stage" + std::to_string(stage) + ".safetensors";
  m.microbatchSize = microbatchSize;
  for (const auto &[index, input] : inputs)
    m.inputs.push_back(input);
  m.labelsShape = labels;
  m.floatLabels = floatLabels;
  m.ignoreIndex = ignoreIndex;
  for (auto [i, entry] : llvm::enumerate(params))
    m.params.push_back({int64_t(i), entry.first, entry.second});
  for (const auto &[tag, send] : sends)
    m.sends.push_back(send);
  for (const auto &[tag, recv] : recvs)
    m.recvs.push_back(recv);
  for (const auto &[key, stash] : stashes)
    m.stashes.push_back(stash);
  m.outputShape = output;
  m.inference = inference;
  m.bf16 = bf16;
  m.namesOptimizer = optimizer.has_value();
  m.optimizer = optimizer.value_or(runtime::Optimizer::Sgd);
  m.segments.assign(std::begin(kSegments), std::end(kSegments));
  m.profile = profile;
  return runtime::writeManifest(m);
}

//===----------------------------------------------------------------------===//
// RuntimeLowering
//===----------------------------------------------------------------------===//

RuntimeLowering::RuntimeLowering(ModuleOp module)
    : module(module), ctx(module.getContext()), builder(ctx),
      ptrType(LLVM::LLVMPointerType::get(ctx)), i64Type(builder.getI64Type()),
      f32Type(builder.getF32Type()), loc(UnknownLoc::get(ctx)) {}

void RuntimeLowering::reportNoRow(StringRef entry, StringRef callee) {
  llvm::report_fatal_error("lower-to-runtime: " + Twine(callee) +
                           " is called as " + entry +
                           " but is no row of Abi.def with its signature");
}

Operation *RuntimeLowering::emitCall(StringRef callee,
                                     LLVM::LLVMFunctionType type,
                                     ArrayRef<Value> args) {
  auto function = module.lookupSymbol<LLVM::LLVMFuncOp>(callee);
  if (!function) {
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointToStart(module.getBody());
    function = builder.create<LLVM::LLVMFuncOp>(loc, callee, type);
  } else if (function.getFunctionType() != type) {
    llvm::report_fatal_error("lower-to-runtime: " + Twine(callee) +
                             " is declared with another signature than its "
                             "row in Abi.def");
  }
  return builder.create<LLVM::CallOp>(loc, function, args);
}

void RuntimeLowering::callGenerated(StringRef name, ArrayRef<Value> args) {
  auto function = module.lookupSymbol<LLVM::LLVMFuncOp>(name);
  if (!function) {
    SmallVector<Type> types;
    for (Value arg : args)
      types.push_back(arg.getType());
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointToStart(module.getBody());
    function = builder.create<LLVM::LLVMFuncOp>(
        loc, name,
        LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx), types));
  }
  builder.create<LLVM::CallOp>(loc, function, args);
}

I64 RuntimeLowering::i64(int64_t value) {
  return I64(builder.create<LLVM::ConstantOp>(
      loc, i64Type, builder.getI64IntegerAttr(value)));
}

F32 RuntimeLowering::f32(float value) {
  return F32(builder.create<LLVM::ConstantOp>(loc, f32Type,
                                              builder.getF32FloatAttr(value)));
}

Ptr RuntimeLowering::nullPtr() {
  return Ptr(builder.create<LLVM::ZeroOp>(loc, ptrType));
}

Ptr RuntimeLowering::constArray(ArrayRef<int64_t> values) {
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
  return Ptr(builder.create<LLVM::AddressOfOp>(loc, ptrType, it->second));
}

Ptr RuntimeLowering::alloc(Value like) {
  // plan-memory placed the buffer in the segment's arena.
  if (auto offset =
          like.getDefiningOp()->getAttrOfType<IntegerAttr>("pipe.offset"))
    // An i64 index: a constant GEP index is 32 bits, and arenas of large
    // models pass 2 GiB.
    return Ptr(builder.create<LLVM::GEPOp>(
        loc, ptrType, builder.getI8Type(), arena,
        ArrayRef<LLVM::GEPArg>{Value(i64(offset.getInt()))}));
  return call<abi::dpc_alloc>({context, i64(nn::getSizeInBytes(like))});
}

//===----------------------------------------------------------------------===//
// RuntimeLoweringTable
//===----------------------------------------------------------------------===//

const OpLowering *RuntimeLoweringTable::lookup(Operation *op) const {
  auto it = byOp.find(op->getName().getTypeID());
  if (it != byOp.end())
    return &it->second;
  for (const auto &[implements, lowering] : byInterface)
    if (implements(op))
      return &lowering;
  return nullptr;
}

void lowering::populateRuntimeLowerings(RuntimeLoweringTable &table) {
  populateTransferLowerings(table);
  populateOptimizerLowerings(table);
  populateViewLowerings(table);
  populateElementwiseLowerings(table);
  populateMatmulConvLowerings(table);
  populatePoolNormLowerings(table);
  populateLossLowerings(table);
}

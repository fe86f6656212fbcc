//===- LowerToRuntime.cpp - Segments to runtime calls in the LLVM dialect -===//
//
// One stage's segment functions become LLVM functions whose bodies are calls
// into the C ABI of include/dpc/runtime/Abi.h. Tensors are pointers: a
// compute op's result gets a dpc_alloc'ed buffer and the op becomes a kernel
// call; data, parameters, transfers and stashes are context calls. The
// manifest the runtime needs is collected on the way and emitted as a
// string constant.
//
// This file is the walk: which segments a rank has, one LLVM function per
// segment (and per chunk), profiling brackets, the manifest global. How each
// op is lowered is looked up in a table that the op families under
// passes/lowering/ populate (Transfers.cpp, Optimizer.cpp, Views.cpp,
// Elementwise.cpp, MatmulConv.cpp, PoolNorm.cpp, Losses.cpp; Fused.cpp for
// nn.fused regions, whose loops it generates).
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialects/nn/IR/NNOps.h"
#include "dialects/pipe/IR/PipeOps.h"
#include "passes/lowering/Fused.h"
#include "passes/lowering/RuntimeLowering.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringMap.h"

#include <map>
#include <string>
#include <vector>

namespace mlir::dpc {
#define GEN_PASS_DEF_LOWERTORUNTIMEPASS
#include "passes/Passes.h.inc"
} // namespace mlir::dpc

using namespace mlir;
using namespace mlir::dpc;
using namespace mlir::dpc::lowering;

namespace {

class Lowering {
public:
  Lowering(ModuleOp module, bool profile)
      : module(module), profiling(profile), rt(module) {
    populateRuntimeLowerings(table);
    populateFusedLowerings(table);
  }

  LogicalResult run();

private:
  LogicalResult lowerSegment(func::FuncOp func, LLVM::LLVMFuncOp target,
                             StringRef segment);
  // Defines `target` to call chunks[dpc_chunk(ctx)].
  void dispatchByChunk(LLVM::LLVMFuncOp target,
                       ArrayRef<LLVM::LLVMFuncOp> chunks);
  LogicalResult lowerOp(Operation *op);
  // Whether `op` becomes a kernel call (what a profile times).
  static bool isKernel(Operation *op) {
    return isa<nn::NNDialect>(op->getDialect()) &&
           !isa<nn::ParamOp, nn::ReshapeOp, nn::OptimizerUpdateOpInterface>(op);
  }

  // The nodes a timed call of `op` is for, each with its part of the call's
  // time: the op's own node, or for a fused region the nodes of its ops in
  // the proportions of their analytic costs (equal parts without any).
  static std::vector<std::pair<std::string, double>>
  profiledNodes(Operation *op);

  ModuleOp module;
  bool profiling;
  RuntimeLowering rt;
  RuntimeLoweringTable table;
};

std::vector<std::pair<std::string, double>>
Lowering::profiledNodes(Operation *op) {
  auto nodeOf = [](Operation *op) {
    auto node = op->getAttrOfType<StringAttr>("nn.node");
    return node ? node.str() : op->getName().getStringRef().str();
  };
  auto fused = dyn_cast<nn::FusedOp>(op);
  if (!fused)
    return {{nodeOf(op), 1.0}};
  std::vector<std::pair<std::string, double>> nodes;
  std::vector<int64_t> counts;
  double total = 0;
  for (Operation &member : fused.getBody().front().without_terminator()) {
    double ms = 0;
    if (auto cost = member.getAttrOfType<DictionaryAttr>("nn.cost"))
      if (auto time = dyn_cast_or_null<FloatAttr>(cost.get("time_ms")))
        ms = time.getValueAsDouble();
    std::string node = nodeOf(&member);
    auto it =
        llvm::find_if(nodes, [&](const auto &n) { return n.first == node; });
    if (it == nodes.end()) {
      nodes.push_back({node, 0.0});
      counts.push_back(0);
      it = std::prev(nodes.end());
    }
    it->second += ms;
    ++counts[it - nodes.begin()];
    total += ms;
  }
  int64_t ops = 0;
  for (int64_t count : counts)
    ops += count;
  for (auto [entry, count] : llvm::zip(nodes, counts))
    entry.second = total > 0 ? entry.second / total : double(count) / ops;
  return nodes;
}

LogicalResult Lowering::lowerOp(Operation *op) {
  rt.loc = op->getLoc();
  const OpLowering *lowering = table.lookup(op);
  if (!lowering)
    return op->emitOpError("has no lowering to runtime calls");
  return (*lowering)(op, rt);
}

LogicalResult Lowering::lowerSegment(func::FuncOp func, LLVM::LLVMFuncOp target,
                                     StringRef segment) {
  Block *entry = target.addEntryBlock(rt.builder);
  rt.builder.setInsertionPointToStart(entry);
  rt.context = Ctx(entry->getArgument(0));
  rt.values.clear();
  rt.arena = Ptr();
  if (func)
    rt.stage = pipe::getStage(func).value_or(0);
  if (func) {
    if (auto bytes = func->getAttrOfType<IntegerAttr>("pipe.arena_bytes"))
      if (bytes.getInt() > 0)
        rt.arena =
            rt.call<abi::dpc_alloc>({rt.context, rt.i64(bytes.getInt())});
  }
  // The halves of the backward repeat its ops; profiles time the whole.
  bool timed = profiling && (segment == "forward" || segment == "backward");
  if (func) {
    for (Operation &op : func.getBody().front().without_terminator()) {
      SmallVector<int64_t> ids;
      if (timed && isKernel(&op)) {
        rt.loc = op.getLoc();
        for (const auto &[node, share] : profiledNodes(&op)) {
          ids.push_back(rt.manifest.profile.size());
          rt.manifest.profile.push_back(
              {ids.back(), node, segment.str(), share});
          rt.call<abi::dpc_profile_begin>({rt.context, rt.i64(ids.back())});
        }
      }
      if (failed(lowerOp(&op)))
        return failure();
      for (int64_t id : ids)
        rt.call<abi::dpc_profile_end>({rt.context, rt.i64(id)});
    }
  }
  rt.builder.create<LLVM::ReturnOp>(target.getLoc(), ValueRange());
  return success();
}

void Lowering::dispatchByChunk(LLVM::LLVMFuncOp target,
                               ArrayRef<LLVM::LLVMFuncOp> chunks) {
  OpBuilder &builder = rt.builder;
  rt.loc = target.getLoc();
  Block *entry = target.addEntryBlock(builder);
  rt.context = Ctx(entry->getArgument(0));
  Block *done = builder.createBlock(&target.getBody());
  SmallVector<APInt> cases;
  SmallVector<Block *> blocks;
  for (auto [chunk, callee] : llvm::enumerate(chunks)) {
    blocks.push_back(builder.createBlock(done));
    builder.create<LLVM::CallOp>(rt.loc, callee, ValueRange{rt.context});
    builder.create<LLVM::BrOp>(rt.loc, done);
    cases.push_back(APInt(64, chunk));
  }
  builder.setInsertionPointToEnd(done);
  builder.create<LLVM::ReturnOp>(rt.loc, ValueRange());
  builder.setInsertionPointToEnd(entry);
  auto chunk = rt.call<abi::dpc_chunk>({rt.context});
  SmallVector<ValueRange> noOperands(blocks.size(), ValueRange());
  builder.create<LLVM::SwitchOp>(rt.loc, chunk, done, ValueRange(), cases,
                                 blocks, noOperands);
}

LogicalResult Lowering::run() {
  RankManifestBuilder &manifest = rt.manifest;
  OpBuilder &builder = rt.builder;
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
  Type voidType = LLVM::LLVMVoidType::get(rt.ctx);
  auto segmentType = LLVM::LLVMFunctionType::get(voidType, {rt.ptrType});
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

  // nn.fused regions become kernels built from these and converted to the
  // LLVM dialect by a nested pipeline (lowering/Fused.cpp).
  void getDependentDialects(DialectRegistry &registry) const override {
    LowerToRuntimePassBase::getDependentDialects(registry);
    registry.insert<arith::ArithDialect, cf::ControlFlowDialect,
                    func::FuncDialect, math::MathDialect, memref::MemRefDialect,
                    scf::SCFDialect, vector::VectorDialect>();
  }

  void runOnOperation() override {
    if (failed(Lowering(getOperation(), profile).run()) ||
        failed(lowerFusedKernels(getOperation(),
                                 [&](OpPassManager &pm, Operation *op) {
                                   return runPipeline(pm, op);
                                 })))
      signalPassFailure();
  }
};

} // namespace

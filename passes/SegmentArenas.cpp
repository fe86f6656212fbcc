//===- SegmentArenas.cpp - Each segment's scratch arena -------------------===//
//
// Lifetimes are intervals over a segment's op order; offsets come from a
// first-fit allocator over the free ranges of the arena. The plain
// algorithm (planArena) knows nothing of MLIR. plan-memory writes the
// offsets into the segments; build-schedule and verify-schedule count the
// arenas' bytes toward each rank's peak while a segment runs, before
// fusion (which only shrinks them).
//
//===----------------------------------------------------------------------===//

#include "passes/StageInfo.h"

#include "dialects/nn/IR/NNOps.h"
#include "dialects/nn/IR/ShapeInference.h"
#include "dialects/pipe/IR/PipeOps.h"
#include "passes/lowering/RuntimeLowering.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"

using namespace mlir;
using namespace mlir::dpc;
namespace schedule = ::dpc::schedule;

namespace {

constexpr int64_t kAlignment = 64;

int64_t alignUp(int64_t bytes) {
  return (bytes + kAlignment - 1) / kAlignment * kAlignment;
}

// A buffer live from op `first` to op `last` (inclusive) in segment order.
struct Interval {
  int64_t first, last, bytes;
};

// First-fit placement: walks the ops in order, placing buffers created at
// each op before freeing those last read there (an op never writes into its
// own inputs). Returns the offsets and sets `arenaBytes`.
std::vector<int64_t> planArena(const std::vector<Interval> &intervals,
                               int64_t &arenaBytes) {
  std::vector<int64_t> offsets(intervals.size(), -1);
  std::map<int64_t, int64_t> freeRanges; // offset -> size
  arenaBytes = 0;
  int64_t lastOp = 0;
  for (const Interval &interval : intervals)
    lastOp = std::max(lastOp, interval.last);
  for (int64_t op = 0; op <= lastOp; ++op) {
    for (size_t i = 0; i < intervals.size(); ++i) {
      if (intervals[i].first != op)
        continue;
      int64_t size = alignUp(intervals[i].bytes);
      auto fit = llvm::find_if(
          freeRanges, [&](auto &range) { return range.second >= size; });
      if (fit != freeRanges.end()) {
        offsets[i] = fit->first;
        int64_t rest = fit->second - size;
        int64_t restOffset = fit->first + size;
        freeRanges.erase(fit);
        if (rest > 0)
          freeRanges[restOffset] = rest;
      } else {
        offsets[i] = arenaBytes;
        arenaBytes += size;
      }
    }
    for (size_t i = 0; i < intervals.size(); ++i) {
      if (intervals[i].last != op)
        continue;
      int64_t offset = offsets[i], size = alignUp(intervals[i].bytes);
      // Merge with the neighbouring free ranges.
      auto next = freeRanges.lower_bound(offset);
      if (next != freeRanges.end() && next->first == offset + size) {
        size += next->second;
        freeRanges.erase(next);
      }
      auto prev = freeRanges.lower_bound(offset);
      if (prev != freeRanges.begin()) {
        --prev;
        if (prev->first + prev->second == offset) {
          offset = prev->first;
          size += prev->second;
          freeRanges.erase(prev);
        }
      }
      freeRanges[offset] = size;
    }
  }
  return offsets;
}

// Ops whose results lower-to-runtime writes into scratch memory; the others
// read runtime-owned buffers, alias their input or add into a gradient
// accumulator.
bool allocates(Operation *op) {
  return isa<nn::NNDialect>(op->getDialect()) &&
         !isa<nn::ParamOp, nn::ReshapeOp, nn::OptimizerUpdateOpInterface>(op) &&
         op->getNumResults() == 1 && !lowering::accumulatedByKernel(op);
}

int64_t planSegment(func::FuncOp func, bool annotate) {
  llvm::DenseMap<Operation *, int64_t> position;
  int64_t index = 0;
  for (Operation &op : func.getBody().front())
    position[&op] = index++;

  std::vector<Interval> intervals;
  std::vector<Operation *> owners;
  for (Operation &op : func.getBody().front()) {
    if (!allocates(&op))
      continue;
    // The last reader, following reshapes, which alias the buffer.
    int64_t last = position[&op];
    SmallVector<Value> worklist = {op.getResult(0)};
    while (!worklist.empty()) {
      Value value = worklist.pop_back_val();
      for (Operation *user : value.getUsers()) {
        last = std::max(last, position[user]);
        if (isa<nn::ReshapeOp>(user))
          worklist.push_back(user->getResult(0));
      }
    }
    intervals.push_back(
        {position[&op], last, nn::getSizeInBytes(op.getResult(0))});
    owners.push_back(&op);
  }
  int64_t arenaBytes = 0;
  std::vector<int64_t> offsets = planArena(intervals, arenaBytes);
  if (!annotate)
    return arenaBytes;
  Builder b(func.getContext());
  for (auto [op, offset] : llvm::zip(owners, offsets))
    op->setAttr("pipe.offset", b.getI64IntegerAttr(offset));
  func->setAttr("pipe.arena_bytes", b.getI64IntegerAttr(arenaBytes));
  return arenaBytes;
}

// The segment function a schedule instruction calls, if any.
std::optional<StringRef> segmentOf(schedule::Op op) {
  switch (op) {
  case schedule::Op::Forward:
    return StringRef("forward");
  case schedule::Op::Backward:
    return StringRef("backward");
  case schedule::Op::BackwardInput:
    return StringRef("backward_input");
  case schedule::Op::BackwardWeight:
    return StringRef("backward_weight");
  case schedule::Op::OptimizerStep:
    return StringRef("optimizer");
  default:
    return std::nullopt;
  }
}

} // namespace

SegmentArenas mlir::dpc::planSegmentArenas(ModuleOp module, bool annotate) {
  SegmentArenas arenas;
  for (auto func : module.getOps<func::FuncOp>()) {
    std::optional<int64_t> stage = pipe::getStage(func);
    auto segment =
        func->getAttrOfType<StringAttr>(pipe::PipeDialect::kSegmentAttrName);
    if (stage && segment)
      arenas[*stage][segment.str()] = planSegment(func, annotate);
  }
  return arenas;
}

std::function<double(int, const schedule::Instruction &)>
mlir::dpc::arenaScratch(SegmentArenas arenas) {
  return [arenas = std::move(arenas)](int stage,
                                      const schedule::Instruction &inst) {
    std::optional<StringRef> segment = segmentOf(inst.op);
    auto found = arenas.find(stage);
    if (!segment || found == arenas.end())
      return 0.0;
    auto it = found->second.find(segment->str());
    return it == found->second.end() ? 0.0 : double(it->second);
  };
}

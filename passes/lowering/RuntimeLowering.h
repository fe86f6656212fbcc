//===- RuntimeLowering.h - Shared by the op lowerings -----------*- C++ -*-===//
//
// lower-to-runtime (passes/LowerToRuntime.cpp) turns each op of a rank's
// segment functions into calls of the C ABI (include/dpc/runtime/Abi.h).
// How each op does so lives in one file per op family in this folder, each
// a populate...Lowerings function that registers the family's handlers in a
// RuntimeLoweringTable keyed by op, as MLIR's conversion patterns are
// populated into a pattern set. This header is what they share: the builder
// helpers that emit ABI calls, constants and buffers, the pointer that holds
// each lowered tensor, and the manifest gathered on the way.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_PASSES_LOWERING_RUNTIMELOWERING_H
#define DPC_PASSES_LOWERING_RUNTIMELOWERING_H

#include "dialects/nn/IR/NNOps.h"
#include "dialects/nn/IR/ShapeInference.h"
#include "dpc/runtime/Manifest.h"
#include "passes/lowering/AbiCalls.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringMap.h"

#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

namespace mlir::dpc::lowering {

namespace runtime = ::dpc::runtime;

/// The segments every rank object defines, in the manifest's order.
constexpr StringLiteral kSegments[] = {"forward", "backward", "backward_input",
                                       "backward_weight", "optimizer"};

using nn::shapeOf;

/// `shape` padded with leading ones to `rank`, as the broadcasting kernels
/// take their operands' shapes.
SmallVector<int64_t> padShape(ArrayRef<int64_t> shape, size_t rank);
/// Sets the strides and pads (top, left, bottom, right) of a window's
/// parameter struct (dpc_conv_params, dpc_pool_params) from an op's.
template <typename Params>
void setStridesAndPads(Params &p, ArrayRef<int64_t> strides,
                       ArrayRef<int64_t> pads) {
  p.stride_h = strides[0];
  p.stride_w = strides[1];
  p.pad_top = pads[0];
  p.pad_left = pads[1];
  p.pad_bottom = pads[2];
  p.pad_right = pads[3];
}
/// The runtime's dpc_dtype of a tensor (verified: f32, i64 or i1).
int64_t dtypeCode(Value value);

/// What the runtime must know about the rank, gathered while lowering and
/// written by the runtime's own writer (include/dpc/runtime/Manifest.h).
struct RankManifestBuilder {
  // The rank (= its first virtual stage), the ranks, the chunks per rank.
  int64_t stage = 0;
  int64_t stages = 1;
  int64_t chunks = 1;
  // name -> shape; shapes are copied because the segments are erased before
  // the manifest is written.
  llvm::MapVector<std::string, std::vector<int64_t>,
                  std::map<std::string, unsigned>>
      params;
  std::map<int64_t, runtime::ManifestTensor> inputs;
  std::optional<std::vector<int64_t>> labels;
  // Class ids (i64) or, for mse, float targets (f32).
  bool floatLabels = false;
  // The label the loss leaves out; the runtime then counts the others.
  std::optional<int64_t> ignoreIndex;
  std::optional<std::vector<int64_t>> output;
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

  /// The id of the parameter `read` reads; new names get the next.
  int64_t paramId(nn::ParamOp read);
  /// The id of stash key `key`, stashed by `stage`; new keys get the next.
  int64_t stashId(StringRef key, Value value, int64_t stage);
  /// Takes the microbatch size from a data tensor's leading dimension,
  /// unless it is known.
  void noteBatch(ArrayRef<int64_t> shape);
  /// The manifest's text.
  std::string toJson() const;
};

/// The state of lowering one rank: the builder, positioned in the LLVM
/// function of the segment being lowered, the pointer of every tensor lowered
/// so far, and the manifest.
struct RuntimeLowering {
  explicit RuntimeLowering(ModuleOp module);

  /// Calls ABI function `Entry` (abi::NAME, a row of Abi.def) at `loc`,
  /// declaring it once from its prototype; returns its result as its kind
  /// (Ptr, I64, F32), if it has one. The arguments, in braces, are the
  /// row's parameters, each of its kind, or the call does not compile:
  ///   rt.call<abi::dpc_relu>({rt.ptrOf(x), y, rt.i64(count)});
  /// (In braces they are built in order, so constants and arrays are
  /// emitted in the order they are written.)
  template <typename Entry> auto call(abi::ArgumentsOf<Entry> args) {
    return callAs<Entry>(Entry::name, args);
  }
  /// The same calling `callee` instead, the row of the same signature that
  /// the build chooses (dpc_conv2d_bf16 for dpc_conv2d); an internal error
  /// names it if no such row exists.
  template <typename Entry>
  auto callAs(StringRef callee, abi::ArgumentsOf<Entry> args) {
    using Signature = abi::Signature<typename Entry::type>;
    if (callee != Entry::name && !abi::hasRow<typename Entry::type>(callee))
      reportNoRow(Entry::name, callee);
    SmallVector<Value> values = std::apply(
        [](auto... arg) { return SmallVector<Value>{Value(arg)...}; }, args);
    Operation *call = emitCall(callee, functionType(Signature{}), values);
    using Result = abi::KindOfT<typename Signature::Result>;
    if constexpr (!std::is_void_v<Result>)
      return Result(call->getResult(0));
  }
  /// Calls `name`, a function the rank object defines itself (a fused
  /// kernel), not the runtime: declared from the arguments.
  void callGenerated(StringRef name, ArrayRef<Value> args);
  I64 i64(int64_t value);
  F32 f32(float value);
  Ptr nullPtr();
  /// A private constant i64 array, shared between equal contents.
  Ptr constArray(ArrayRef<int64_t> values);
  /// A kernel's parameter struct (dpc_conv_params, ...: int64_t fields
  /// only, Abi.h checks) as the constant i64 array of its fields.
  template <typename Params> Ptr constParams(const Params &params) {
    static_assert(sizeof(Params) % sizeof(int64_t) == 0 &&
                      std::is_trivially_copyable_v<Params>,
                  "a parameter struct of int64_t fields");
    int64_t fields[sizeof(Params) / sizeof(int64_t)];
    std::memcpy(fields, &params, sizeof(Params));
    return constArray(fields);
  }
  /// The shape of `tensor` as a constant array.
  Ptr shape(Value tensor) { return constArray(shapeOf(tensor)); }
  /// A buffer for `like`: its place in the segment's arena when plan-memory
  /// gave it one, else dpc_alloc'ed.
  Ptr alloc(Value like);
  /// The pointer that holds `tensor`, once its op is lowered.
  Ptr ptrOf(Value tensor) const { return Ptr(values.lookup(tensor)); }
  void define(Value tensor, Value ptr) { values[tensor] = ptr; }
  /// The ABI kernel for `name`: its _bf16 form in a bf16 build
  /// (convolutions and matmuls only).
  std::string kernel(StringRef name) const {
    return manifest.bf16 ? (name + "_bf16").str() : name.str();
  }

  ModuleOp module;
  MLIRContext *ctx;
  OpBuilder builder;
  Type ptrType, i64Type, f32Type;
  /// Where the calls are: the op being lowered.
  Location loc;
  /// The segment function's dpc_context argument.
  Ctx context;
  /// The (virtual) stage of the segment being lowered.
  int64_t stage = 0;
  /// The segment's scratch arena, when plan-memory planned one.
  Ptr arena;
  /// The pointer of each tensor of the segment lowered so far.
  llvm::DenseMap<Value, Value> values;
  RankManifestBuilder manifest;

private:
  /// The LLVM type of the C function type of a row.
  template <typename R, typename... Params>
  LLVM::LLVMFunctionType functionType(abi::Signature<R(Params...)>) {
    return LLVM::LLVMFunctionType::get(llvmType<R>(), {llvmType<Params>()...});
  }
  template <typename T> Type llvmType() {
    using Kind = abi::KindOfT<T>;
    if constexpr (std::is_void_v<Kind>)
      return LLVM::LLVMVoidType::get(ctx);
    else if constexpr (std::is_same_v<Kind, I64>)
      return i64Type;
    else if constexpr (std::is_same_v<Kind, F32>)
      return f32Type;
    else
      return ptrType;
  }
  /// Declares `callee` (once) with `type`, its row's, and calls it with
  /// `args`.
  Operation *emitCall(StringRef callee, LLVM::LLVMFunctionType type,
                      ArrayRef<Value> args);
  [[noreturn]] static void reportNoRow(StringRef entry, StringRef callee);

  std::map<std::vector<int64_t>, std::string> arrays;
};

/// Lowers one op: emits its calls with `rt` and defines its results, or
/// emits an error and fails.
using OpLowering = std::function<LogicalResult(Operation *, RuntimeLowering &)>;

/// The lowering of every op lower-to-runtime knows, keyed by op; ops without
/// an entry of their own fall back to the first interface they implement.
class RuntimeLoweringTable {
public:
  /// Lowers ops of each type in `OpTys` with `fn(OpTy, RuntimeLowering &)`,
  /// which returns a LogicalResult, or nothing if it cannot fail.
  template <typename... OpTys, typename Fn> void add(Fn fn) {
    (addOne<OpTys>(fn), ...);
  }
  /// Lowers the ops that implement `Interface` and have no entry of their
  /// own with `fn(Interface, RuntimeLowering &)`.
  template <typename Interface, typename Fn> void addInterface(Fn fn) {
    byInterface.emplace_back([](Operation *op) { return isa<Interface>(op); },
                             wrap<Interface>(std::move(fn)));
  }
  /// The lowering of `op`, or null if there is none.
  const OpLowering *lookup(Operation *op) const;

private:
  template <typename T, typename Fn> static OpLowering wrap(Fn fn) {
    return [fn](Operation *op, RuntimeLowering &rt) -> LogicalResult {
      if constexpr (std::is_void_v<decltype(fn(cast<T>(op), rt))>) {
        fn(cast<T>(op), rt);
        return success();
      } else {
        return fn(cast<T>(op), rt);
      }
    };
  }
  template <typename OpTy, typename Fn> void addOne(Fn fn) {
    [[maybe_unused]] bool added =
        byOp.try_emplace(TypeID::get<OpTy>(), wrap<OpTy>(fn)).second;
    assert(added && "an op lowered twice");
  }

  llvm::DenseMap<TypeID, OpLowering> byOp;
  std::vector<std::pair<bool (*)(Operation *), OpLowering>> byInterface;
};

/// The pipe.accumulate_grad that `op`'s kernel does itself, or null: a
/// filter gradient (nn.conv2d_grad_filter) whose one use is the
/// accumulation of its parameter's gradient adds into the accumulator
/// (dpc_grad_accumulator, DPC_CONV_ACCUMULATE_DW) instead of writing a
/// buffer, so the accumulation lowers to nothing and plan-memory gives the
/// gradient no place.
Operation *accumulatedByKernel(Operation *op);

/// Parameters, data and labels, transfers, stashes and reports: the
/// context functions of the ABI (Transfers.cpp).
void populateTransferLowerings(RuntimeLoweringTable &table);
/// Gradient accumulation and SGD/Adam steps (Optimizer.cpp).
void populateOptimizerLowerings(RuntimeLoweringTable &table);
/// Reshapes, broadcasts, transposes, slices, concats, pads and gathers
/// (Views.cpp).
void populateViewLowerings(RuntimeLoweringTable &table);
/// Broadcasting arithmetic and comparisons, masks, casts, clips, relu,
/// dropout and the functions of UnaryFunctions.def (Elementwise.cpp).
void populateElementwiseLowerings(RuntimeLoweringTable &table);
/// Convolutions, matmuls and LSTMs, with their gradients (MatmulConv.cpp).
void populateMatmulConvLowerings(RuntimeLoweringTable &table);
/// Softmax, pooling, batch and layer normalization, with their gradients
/// (PoolNorm.cpp).
void populatePoolNormLowerings(RuntimeLoweringTable &table);
/// Softmax cross-entropy and mean squared error, with their gradients
/// (Losses.cpp).
void populateLossLowerings(RuntimeLoweringTable &table);

/// Every family's lowerings.
void populateRuntimeLowerings(RuntimeLoweringTable &table);

} // namespace mlir::dpc::lowering

#endif // DPC_PASSES_LOWERING_RUNTIMELOWERING_H

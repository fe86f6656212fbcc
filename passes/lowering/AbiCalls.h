//===- AbiCalls.h - Typed calls of the runtime's C ABI ----------*- C++ -*-===//
//
// The lowering's view of include/dpc/runtime/Abi.def: one type abi::NAME
// per row, whose C signature (the prototype Abi.h expands from the same row)
// gives the LLVM declaration, and the kinds of value the lowering passes
// through the boundary as distinct C++ types: Ptr (a buffer or array), I64,
// F32 and Ctx (the dpc_context). RuntimeLowering::call<abi::NAME>({...})
// takes exactly the row's parameters, each of its kind, or does not
// compile:
//
//   rt.call<abi::dpc_relu>({rt.ptrOf(x), y, rt.i64(count)});
//
//===----------------------------------------------------------------------===//

#ifndef DPC_PASSES_LOWERING_ABICALLS_H
#define DPC_PASSES_LOWERING_ABICALLS_H

#include "dpc/runtime/Abi.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/StringRef.h"

#include <cassert>
#include <cstddef>
#include <tuple>
#include <type_traits>

namespace mlir::dpc::lowering {

/// What a value crossing the ABI is, as its C type says.
enum class AbiKind { Ptr, I64, F32, Ctx };

/// An SSA value of kind `K`. Built only by RuntimeLowering's helpers (or
/// explicitly, which checks the value's LLVM type), so that a call cannot
/// pass an i64 where the callee takes a pointer.
template <AbiKind K> class AbiValue {
public:
  AbiValue() = default;
  explicit AbiValue(Value value) : value(value) {
    assert((!value || matches(value.getType())) &&
           "a value of another kind than the ABI parameter's");
  }
  operator Value() const { return value; }
  explicit operator bool() const { return bool(value); }
  Type getType() const { return value.getType(); }

  static bool matches(Type type) {
    if constexpr (K == AbiKind::I64)
      return type.isInteger(64);
    else if constexpr (K == AbiKind::F32)
      return type.isF32();
    else
      return isa<LLVM::LLVMPointerType>(type);
  }

private:
  Value value;
};

using Ptr = AbiValue<AbiKind::Ptr>;
using I64 = AbiValue<AbiKind::I64>;
using F32 = AbiValue<AbiKind::F32>;
using Ctx = AbiValue<AbiKind::Ctx>;

namespace abi {

/// The value type the lowering passes for, or gets back from, C type `T`.
template <typename T, typename = void> struct KindOf {
  static_assert(sizeof(T) == 0, "an ABI type the lowering cannot pass: "
                                "use pointers, int64_t or float");
};
template <> struct KindOf<dpc_context *> {
  using type = Ctx;
};
template <typename T>
struct KindOf<T *, std::enable_if_t<!std::is_same_v<T, dpc_context>>> {
  using type = Ptr;
};
template <> struct KindOf<int64_t> {
  using type = I64;
};
template <> struct KindOf<float> {
  using type = F32;
};
template <> struct KindOf<void> {
  using type = void;
};
template <typename T> using KindOfT = typename KindOf<T>::type;

/// The arguments of a call of a row: its parameters' kinds, in order. A
/// braced list of other kinds or of another length does not convert.
template <typename FunctionType> struct Arguments;
template <typename R, typename... Params> struct Arguments<R(Params...)> {
  using type = std::tuple<KindOfT<Params>...>;
};
template <typename Entry>
using ArgumentsOf = typename Arguments<typename Entry::type>::type;

/// The C function type of a row, as a value to match on.
template <typename FunctionType> struct Signature;
template <typename R, typename... Params> struct Signature<R(Params...)> {
  using Result = R;
};

// One type per row of Abi.def: abi::dpc_conv2d::name is "dpc_conv2d" and
// abi::dpc_conv2d::type the C function type void(const float *, ...).
#define DPC_ABI_FUNCTION(RESULT, NAME, PARAMS)                                 \
  struct NAME {                                                                \
    static constexpr llvm::StringLiteral name = #NAME;                         \
    using type = decltype(::NAME);                                             \
  };
#include "dpc/runtime/Abi.def"

/// Whether `name` is a row of Abi.def with C function type `Type` (a
/// variant of a kernel called by the name a build chooses, as
/// dpc_conv2d_bf16 for dpc_conv2d).
template <typename Type> bool hasRow(llvm::StringRef name) {
#define DPC_ABI_FUNCTION(RESULT, NAME, PARAMS)                                 \
  if (name == #NAME)                                                           \
    return std::is_same_v<Type, decltype(::NAME)>;
#include "dpc/runtime/Abi.def"
  return false;
}

} // namespace abi
} // namespace mlir::dpc::lowering

#endif // DPC_PASSES_LOWERING_ABICALLS_H

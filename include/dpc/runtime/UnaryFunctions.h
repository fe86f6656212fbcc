//===- UnaryFunctions.h - The function table for the compiler ---*- C++ -*-===//
//
// The rows of UnaryFunctions.def as data for the compiler: the importer's
// op types, autodiff's saved tensor and the cost model's flops, by ABI code.
// The math itself is in backends/common/ElementwiseMath.h.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_RUNTIME_UNARYFUNCTIONS_H
#define DPC_RUNTIME_UNARYFUNCTIONS_H

#include "dpc/runtime/Abi.h"

#include <cstdint>

namespace dpc::runtime {

/// The forward tensor an elementwise function's gradient reads.
enum class UnarySaved { Result, Input, None };

struct UnaryFunctionInfo {
  int64_t code;       // DPC_UNARY_*
  const char *onnxOp; // ONNX op type
  int64_t since;      // since-version of the schema imported
  UnarySaved saved;
  int64_t flops;     // per element, forward
  int64_t gradFlops; // per element, the input gradient
  // The ONNX attributes the function reads as `a` and `b` ("" for none),
  // which the nn ops carry as f32 attributes of the same names, and their
  // ONNX defaults.
  const char *params[2] = {"", ""};
  float defaults[2] = {0.0f, 0.0f};
};

inline constexpr UnaryFunctionInfo kUnaryFunctions[] = {
#define DPC_UNARY_FUNCTION(CODE, NAME, SINCE, SAVED, VALUE, GRAD, FLOPS,       \
                           GRAD_FLOPS)                                         \
  {DPC_UNARY_##CODE, #NAME, SINCE, UnarySaved::SAVED, FLOPS, GRAD_FLOPS},
#define DPC_UNARY_FUNCTION_WITH_PARAMS(CODE, NAME, SINCE, SAVED, A, A_DEFAULT, \
                                       B, B_DEFAULT, VALUE, GRAD, FLOPS,       \
                                       GRAD_FLOPS)                             \
  {DPC_UNARY_##CODE,                                                           \
   #NAME,                                                                      \
   SINCE,                                                                      \
   UnarySaved::SAVED,                                                          \
   FLOPS,                                                                      \
   GRAD_FLOPS,                                                                 \
   {A, B},                                                                     \
   {A_DEFAULT, B_DEFAULT}},
#include "dpc/runtime/UnaryFunctions.def"
};

/// The row of ABI code `code`, or nullptr for a code no row has.
inline const UnaryFunctionInfo *lookupUnaryFunction(int64_t code) {
  for (const UnaryFunctionInfo &info : kUnaryFunctions)
    if (info.code == code)
      return &info;
  return nullptr;
}

} // namespace dpc::runtime

#endif // DPC_RUNTIME_UNARYFUNCTIONS_H

//===- UnaryReferences.h - Double references of dpc_unary -------*- C++ -*-===//
//
// What each function of include/dpc/runtime/UnaryFunctions.def should
// compute, written independently of it in double precision, for the kernel
// conformance suite (kernels/ConformanceTest.cpp, run on every target),
// which walks the table with forEachUnaryFunction and so fails for a row
// that has no reference here.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_TEST_UNITTESTS_UNARYREFERENCES_H
#define DPC_TEST_UNITTESTS_UNARYREFERENCES_H

#include "dpc/runtime/UnaryFunctions.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <vector>

namespace dpc::testing {

struct UnaryReference {
  double (*f)(double);
  double (*df)(double); // f', away from the kinks; null for neg (no kernel)
  float lo, hi;         // the domain sampled
  std::vector<double> kinks = {}; // where f' jumps (PyTorch picks a side)
  float a = 0.0f, b = 0.0f;       // the attributes f and df are written for
};

/// The reference of ABI code `code`, or nullptr.
inline const UnaryReference *findUnaryReference(int64_t code) {
  static const std::map<int64_t, UnaryReference> references = {
      {DPC_UNARY_TANH,
       {[](double v) { return std::tanh(v); },
        [](double v) { return 1 - std::tanh(v) * std::tanh(v); }, -3, 3}},
      {DPC_UNARY_SIGMOID,
       {[](double v) { return 1 / (1 + std::exp(-v)); },
        [](double v) { return std::exp(-v) / std::pow(1 + std::exp(-v), 2); },
        -30, 3}},
      {DPC_UNARY_EXP,
       {[](double v) { return std::exp(v); },
        [](double v) { return std::exp(v); }, -3, 3}},
      {DPC_UNARY_LOG,
       {[](double v) { return std::log(v); }, [](double v) { return 1 / v; },
        0.05f, 30}},
      {DPC_UNARY_SQRT,
       {[](double v) { return std::sqrt(v); },
        [](double v) { return 1 / (2 * std::sqrt(v)); }, 0.05f, 30}},
      {DPC_UNARY_NEG, {[](double v) { return -v; }, nullptr, -3, 3}},
      {DPC_UNARY_ERF,
       {[](double v) { return std::erf(v); },
        [](double v) { return 2 / std::sqrt(M_PI) * std::exp(-v * v); }, -3,
        3}},
      {DPC_UNARY_ABS,
       {[](double v) { return std::fabs(v); },
        [](double v) { return v > 0 ? 1.0 : -1.0; },
        -3,
        3,
        {0.0}}},
      {DPC_UNARY_RECIPROCAL,
       {[](double v) { return 1 / v; }, [](double v) { return -1 / (v * v); },
        0.2f, 3}},
      {DPC_UNARY_SIN,
       {[](double v) { return std::sin(v); },
        [](double v) { return std::cos(v); }, -4, 4}},
      {DPC_UNARY_COS,
       {[](double v) { return std::cos(v); },
        [](double v) { return -std::sin(v); }, -4, 4}},
      {DPC_UNARY_SOFTPLUS,
       {[](double v) { return std::log1p(std::exp(v)); },
        [](double v) { return 1 / (1 + std::exp(-v)); }, -30, 30}},
      {DPC_UNARY_SOFTSIGN,
       {[](double v) { return v / (1 + std::fabs(v)); },
        [](double v) { return 1 / std::pow(1 + std::fabs(v), 2); }, -4, 4}},
      {DPC_UNARY_HARD_SWISH,
       {[](double v) { return v * std::min(std::max(v + 3, 0.0), 6.0) / 6; },
        [](double v) { return v < -3   ? 0.0
                              : v <= 3 ? v / 3 + 0.5
                                       : 1.0; },
        -5,
        5,
        {-3.0, 3.0}}},
      {DPC_UNARY_TAN,
       {[](double v) { return std::tan(v); },
        [](double v) { return 1 / std::pow(std::cos(v), 2); }, -1.1f, 1.1f}},
      {DPC_UNARY_ASIN,
       {[](double v) { return std::asin(v); },
        [](double v) { return 1 / std::sqrt(1 - v * v); }, -0.9f, 0.9f}},
      {DPC_UNARY_ACOS,
       {[](double v) { return std::acos(v); },
        [](double v) { return -1 / std::sqrt(1 - v * v); }, -0.9f, 0.9f}},
      {DPC_UNARY_ATAN,
       {[](double v) { return std::atan(v); },
        [](double v) { return 1 / (1 + v * v); }, -4, 4}},
      {DPC_UNARY_SINH,
       {[](double v) { return std::sinh(v); },
        [](double v) { return std::cosh(v); }, -3, 3}},
      {DPC_UNARY_COSH,
       {[](double v) { return std::cosh(v); },
        [](double v) { return std::sinh(v); }, -3, 3}},
      {DPC_UNARY_ASINH,
       {[](double v) { return std::asinh(v); },
        [](double v) { return 1 / std::sqrt(v * v + 1); }, -4, 4}},
      {DPC_UNARY_ACOSH,
       {[](double v) { return std::acosh(v); },
        [](double v) { return 1 / std::sqrt(v * v - 1); }, 1.2f, 4}},
      {DPC_UNARY_ATANH,
       {[](double v) { return std::atanh(v); },
        [](double v) { return 1 / (1 - v * v); }, -0.8f, 0.8f}},
      // The attributed functions at values other than ONNX's defaults.
      {DPC_UNARY_LEAKY_RELU,
       {[](double v) { return v > 0 ? v : 0.1 * v; },
        [](double v) { return v > 0 ? 1.0 : 0.1; },
        -3,
        3,
        {0.0},
        0.1f}},
      {DPC_UNARY_ELU,
       {[](double v) { return v > 0 ? v : 0.5 * std::expm1(v); },
        [](double v) { return v > 0 ? 1.0 : 0.5 * std::exp(v); },
        -4,
        3,
        {0.0},
        0.5f}},
      {DPC_UNARY_SELU,
       {[](double v) { return 1.05 * (v > 0 ? v : 1.7 * std::expm1(v)); },
        [](double v) { return 1.05 * (v > 0 ? 1.0 : 1.7 * std::exp(v)); },
        -4,
        3,
        {0.0},
        1.7f,
        1.05f}},
      {DPC_UNARY_CELU,
       {[](double v) { return v > 0 ? v : 2 * std::expm1(v / 2); },
        [](double v) { return v > 0 ? 1.0 : std::exp(v / 2); },
        -4,
        3,
        {0.0},
        2.0f}},
      {DPC_UNARY_THRESHOLDED_RELU,
       {[](double v) { return v > 0.5 ? v : 0.0; },
        [](double v) { return v > 0.5 ? 1.0 : 0.0; },
        -3,
        3,
        {0.5},
        0.5f}},
      {DPC_UNARY_HARD_SIGMOID,
       {[](double v) { return std::clamp(0.25 * v + 0.4, 0.0, 1.0); },
        [](double v) {
          double t = 0.25 * v + 0.4;
          return t > 0 && t < 1 ? 0.25 : 0.0;
        },
        -5,
        5,
        {-1.6, 2.4},
        0.25f,
        0.4f}},
      {DPC_UNARY_SHRINK,
       {[](double v) { return v < -0.7  ? v + 0.2
                              : v > 0.7 ? v - 0.2
                                        : 0.0; },
        [](double v) { return std::fabs(v) > 0.7 ? 1.0 : 0.0; },
        -3,
        3,
        {-0.7, 0.7},
        0.2f,
        0.7f}},
  };
  auto found = references.find(code);
  return found == references.end() ? nullptr : &found->second;
}

/// Calls `check(fn, ref)` for every row of UnaryFunctions.def with its
/// reference, under a trace naming the function; a row without a reference
/// fails the calling test.
template <typename Check> void forEachUnaryFunction(Check check) {
  for (const runtime::UnaryFunctionInfo &fn : runtime::kUnaryFunctions) {
    SCOPED_TRACE(fn.onnxOp);
    const UnaryReference *ref = findUnaryReference(fn.code);
    ASSERT_NE(ref, nullptr) << "no reference for " << fn.onnxOp;
    check(fn, ref);
  }
}

} // namespace dpc::testing

#endif // DPC_TEST_UNITTESTS_UNARYREFERENCES_H

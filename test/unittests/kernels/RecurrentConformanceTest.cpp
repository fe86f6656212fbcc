//===- RecurrentConformanceTest.cpp - GRU and reverse layers --------------===//
//
// Part of the kernel conformance suite (ConformanceTest.cpp says how it runs
// on each target): dpc_gru and dpc_gru_grad against the double reference of
// RecurrentReference.h and its central differences, with and without
// linear_before_reset and in both directions, and the reverse LSTM against
// the forward one on the time-reversed sequence.
//
//===----------------------------------------------------------------------===//

#include "test/unittests/kernels/RecurrentReference.h"
#include "test/unittests/kernels/TargetDevice.h"

#include "dpc/runtime/Abi.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

using namespace dpc::testing;

namespace {

// The bounds of the LSTM's check in ConformanceTest.cpp.
Tolerance recurrentTolerance() {
#ifdef DPC_TEST_TARGET_CUDA
  return {Tolerance::RelativeToRms, 1e-4};
#else
  return {Tolerance::Relative, 1e-5};
#endif
}

struct GruConfig {
  const char *name;
  bool linearBeforeReset, reverse;
};

class Gru : public TargetKernelTest,
            public ::testing::WithParamInterface<GruConfig> {};

// The forward against the reference; the backward's result, turned into
// every operand's gradient as nn.gru's gradient rule does, against central
// differences of the reference under sum(h * dstates_h).
TEST_P(Gru, ForwardAndGradientsMatchFiniteDifferences) {
  GruSizes n;
  n.linearBeforeReset = GetParam().linearBeforeReset;
  n.reverse = GetParam().reverse;
  int64_t T = n.steps, B = n.batch, I = n.input, H = n.hidden;
  Floats x = randomFloats(size_t(T * B * I), 61, -1, 1);
  Floats w = randomFloats(size_t(3 * H * I), 62, -0.8f, 0.8f);
  Floats r = randomFloats(size_t(3 * H * H), 63, -0.8f, 0.8f);
  Floats bias = randomFloats(size_t(6 * H), 64, -0.5f, 0.5f);
  Floats h0 = randomFloats(size_t(B * H), 65, -1, 1);
  Buffer<float> dX(x), dW(w), dR(r), dBias(bias), dH0(h0),
      dStates(size_t(T * B * 5 * H));
  dpc_gru(dX.get(), dW.get(), dR.get(), dBias.get(), dH0.get(), T, B, I, H,
          n.linearBeforeReset, n.reverse, dStates.get());
  Floats states = dStates.host();
  std::vector<Doubles> operands = {toDoubles(x), toDoubles(w), toDoubles(r),
                                   toDoubles(bias), toDoubles(h0)};
  auto reference = [&] {
    return gru(n, operands[0], operands[1], operands[2], operands[3],
               operands[4]);
  };
  expectClose(states, reference(), recurrentTolerance());

  Floats dstates = randomFloats(states.size(), 67, -1, 1);
  auto loss = [&] {
    Doubles s = reference();
    double sum = 0;
    for (size_t e = 0; e < s.size(); ++e)
      if (int64_t(e) % (5 * H) < H)
        sum += s[e] * dstates[e];
    return sum;
  };
  Buffer<float> dDstates(dstates), dOut(size_t(T * B * 5 * H));
  dpc_gru_grad(dDstates.get(), dStates.get(), dR.get(), dH0.get(), T, B, H,
               n.linearBeforeReset, n.reverse, dOut.get());
  Floats out = dOut.host();
  auto at = [&](int64_t t, int64_t b, int64_t g) {
    return double(out[size_t((t * B + b) * 5 * H + g)]);
  };
  // h[t-1] of the step at t (h[t+1] in reverse), and what Rh multiplies.
  auto hPrev = [&](int64_t t, int64_t b, int64_t k) {
    int64_t p = n.reverse ? t + 1 : t - 1;
    return p < 0 || p >= T ? double(h0[size_t(b * H + k)])
                           : double(states[size_t((p * B + b) * 5 * H + k)]);
  };
  auto resetInput = [&](int64_t t, int64_t b, int64_t k) {
    return n.linearBeforeReset
               ? hPrev(t, b, k)
               : double(states[size_t((t * B + b) * 5 * H + 4 * H + k)]);
  };
  std::vector<Doubles> grads(5);
  for (size_t o = 0; o < 5; ++o)
    grads[o].assign(operands[o].size(), 0.0);
  int64_t first = n.reverse ? T - 1 : 0;
  for (int64_t t = 0; t < T; ++t)
    for (int64_t b = 0; b < B; ++b) {
      for (int64_t g = 0; g < 3 * H; ++g) {
        for (int64_t k = 0; k < I; ++k) {
          grads[0][size_t((t * B + b) * I + k)] +=
              at(t, b, g) * w[size_t(g * I + k)];
          grads[1][size_t(g * I + k)] +=
              at(t, b, g) * x[size_t((t * B + b) * I + k)];
        }
        grads[3][size_t(g)] += at(t, b, g);
      }
      for (int64_t g = 0; g < 3 * H; ++g) {
        // [dz, dr] for Rz, Rr; dq for Rh.
        double d = g < 2 * H ? at(t, b, g) : at(t, b, H + g);
        for (int64_t k = 0; k < H; ++k)
          grads[2][size_t(g * H + k)] +=
              d * (g < 2 * H ? hPrev(t, b, k) : resetInput(t, b, k));
        grads[3][size_t(3 * H + g)] += d;
      }
      if (t == first)
        for (int64_t j = 0; j < H; ++j)
          grads[4][size_t(b * H + j)] = at(t, b, 4 * H + j);
    }
  for (size_t o = 0; o < 5; ++o)
    for (size_t e = 0; e < operands[o].size(); ++e) {
      double numeric = centralDifference(operands[o], e, loss);
      EXPECT_NEAR(grads[o][e], numeric, 1e-4 * std::max(1.0, std::abs(numeric)))
          << "operand " << o << ", element " << e;
    }
}

INSTANTIATE_TEST_SUITE_P(
    Layers, Gru,
    ::testing::Values(GruConfig{"linear_before_reset", true, false},
                      GruConfig{"reset_before_linear", false, false},
                      GruConfig{"reverse", true, true},
                      GruConfig{"reverse_reset_before_linear", false, true}),
    [](const auto &info) { return std::string(info.param.name); });

class GruBias : public TargetKernelTest {};

TEST_F(GruBias, AbsentIsZero) {
  GruSizes n;
  int64_t T = n.steps, B = n.batch, I = n.input, H = n.hidden;
  Buffer<float> x(randomFloats(size_t(T * B * I), 71)),
      w(randomFloats(size_t(3 * H * I), 72)),
      r(randomFloats(size_t(3 * H * H), 73)), zero(Floats(size_t(6 * H), 0.0f)),
      h0(randomFloats(size_t(B * H), 74)), a(size_t(T * B * 5 * H)),
      b(size_t(T * B * 5 * H));
  for (int64_t lbr : {0, 1}) {
    dpc_gru(x.get(), w.get(), r.get(), nullptr, h0.get(), T, B, I, H, lbr, 0,
            a.get());
    dpc_gru(x.get(), w.get(), r.get(), zero.get(), h0.get(), T, B, I, H, lbr, 0,
            b.get());
    EXPECT_EQ(a.host(), b.host()) << "linear_before_reset " << lbr;
  }
}

// Steps t of a T x B x width sequence in reverse order.
Floats reversedSteps(const Floats &v, int64_t steps) {
  Floats out(v.size());
  size_t row = v.size() / size_t(steps);
  for (int64_t t = 0; t < steps; ++t)
    std::copy_n(v.begin() + long(size_t(t) * row), row,
                out.begin() + long(size_t(steps - 1 - t) * row));
  return out;
}

class LstmReverse : public TargetKernelTest {};

// A reverse layer is the forward layer on the reversed sequence, forward
// and backward, with the states reversed back.
TEST_F(LstmReverse, IsTheForwardLayerOnTheReversedSequence) {
  int64_t T = 4, B = 2, I = 3, H = 2;
  Floats x = randomFloats(size_t(T * B * I), 81);
  Buffer<float> dX(x), dXr(reversedSteps(x, T)),
      w(randomFloats(size_t(4 * H * I), 82)),
      r(randomFloats(size_t(4 * H * H), 83)),
      bias(randomFloats(size_t(8 * H), 84)),
      h0(randomFloats(size_t(B * H), 85)), c0(randomFloats(size_t(B * H), 86)),
      reverse(size_t(T * B * 6 * H)), forward(size_t(T * B * 6 * H));
  dpc_lstm(dX.get(), w.get(), r.get(), bias.get(), h0.get(), c0.get(), T, B, I,
           H, 1, reverse.get());
  dpc_lstm(dXr.get(), w.get(), r.get(), bias.get(), h0.get(), c0.get(), T, B, I,
           H, 0, forward.get());
  Floats states = reverse.host();
  expectClose(states, toDoubles(reversedSteps(forward.host(), T)),
              recurrentTolerance());

  Floats dstates = randomFloats(states.size(), 87);
  Buffer<float> dS(dstates), dSr(reversedSteps(dstates, T)),
      gradReverse(size_t(T * B * 5 * H)), gradForward(size_t(T * B * 5 * H));
  dpc_lstm_grad(dS.get(), reverse.get(), r.get(), c0.get(), T, B, H, 1,
                gradReverse.get());
  dpc_lstm_grad(dSr.get(), forward.get(), r.get(), c0.get(), T, B, H, 0,
                gradForward.get());
  expectClose(gradReverse.host(),
              toDoubles(reversedSteps(gradForward.host(), T)),
              recurrentTolerance());
}

} // namespace

//===- TorchOptim.h - torch.optim's updates by hand, for tests --*- C++ -*-===//
//
// The references the executor's optimizer tests hold the runtime's updates
// against: torch.optim.SGD in float, as the runtime computes it, and
// torch.optim.Adam in double. Every element's accumulated gradient is `g`.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_TEST_UNITTESTS_RUNTIME_TORCHOPTIM_H
#define DPC_TEST_UNITTESTS_RUNTIME_TORCHOPTIM_H

#include <cmath>
#include <vector>

namespace dpc::runtime {

/// torch.optim.SGD without dampening or Nesterov; `v` starts at zero.
inline void torchSgdStep(std::vector<float> &w, std::vector<float> &v, float g,
                         float lr, float momentum, float weightDecay) {
  for (size_t k = 0; k < w.size(); ++k) {
    float d = g + weightDecay * w[k];
    v[k] = momentum * v[k] + d;
    w[k] -= lr * v[k];
  }
}

/// torch.optim.Adam without AMSGrad; the moments start at zero.
struct TorchAdam {
  double lr, beta1, beta2, eps, weightDecay;
  std::vector<double> m, v;

  /// Update number t (1 for the first) of `w`.
  void step(std::vector<double> &w, double g, int t) {
    m.resize(w.size(), 0.0);
    v.resize(w.size(), 0.0);
    for (size_t k = 0; k < w.size(); ++k) {
      double d = g + weightDecay * w[k];
      m[k] = beta1 * m[k] + (1 - beta1) * d;
      v[k] = beta2 * v[k] + (1 - beta2) * d * d;
      double mHat = m[k] / (1 - std::pow(beta1, t));
      double vHat = v[k] / (1 - std::pow(beta2, t));
      w[k] -= lr * mHat / (std::sqrt(vHat) + eps);
    }
  }
};

} // namespace dpc::runtime

#endif // DPC_TEST_UNITTESTS_RUNTIME_TORCHOPTIM_H

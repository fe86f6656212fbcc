//===- SoloCommunicator.h - A one-rank job for in-process tests -*- C++ -*-===//
//
// One rank, no peers: the executor never transfers on a one-stage pipeline,
// so every transfer is an error and the collectives do nothing.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_TEST_UNITTESTS_RUNTIME_SOLOCOMMUNICATOR_H
#define DPC_TEST_UNITTESTS_RUNTIME_SOLOCOMMUNICATOR_H

#include "dpc/runtime/Communicator.h"
#include "dpc/runtime/Error.h"

#include <memory>
#include <string>

namespace dpc::runtime {

class SoloCommunicator : public Communicator {
public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  Request isend(const void *, size_t, int, int) override {
    throw Error("no peers");
  }
  Request irecv(void *, size_t, int, int) override { throw Error("no peers"); }
  void wait(Request &) override {}
  bool test(Request &) override { return true; }
  void allreduceSum(float *, size_t) override {}
  void barrier() override {}
  std::unique_ptr<Communicator> split(int, int) override {
    return std::make_unique<SoloCommunicator>();
  }
  [[noreturn]] void abort(const std::string &message, int) override {
    throw Error("abort: " + message);
  }
};

} // namespace dpc::runtime

#endif // DPC_TEST_UNITTESTS_RUNTIME_SOLOCOMMUNICATOR_H

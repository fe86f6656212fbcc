//===- MessagesOnly.h - A test communicator without collectives -*- C++ -*-===//
//
// The fake communicators of the executor's unit tests move messages only:
// this base gives them the collectives as no-ops and an abort that throws.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_TEST_UNITTESTS_RUNTIME_MESSAGESONLY_H
#define DPC_TEST_UNITTESTS_RUNTIME_MESSAGESONLY_H

#include "dpc/runtime/Communicator.h"
#include "dpc/runtime/Error.h"

#include <memory>
#include <string>

namespace dpc::runtime {

class MessagesOnlyCommunicator : public Communicator {
public:
  void allreduceSum(float *, size_t) override {}
  void barrier() override {}
  std::unique_ptr<Communicator> split(int, int) override { return nullptr; }
  [[noreturn]] void abort(const std::string &message, int) override {
    throw Error(message);
  }
};

} // namespace dpc::runtime

#endif // DPC_TEST_UNITTESTS_RUNTIME_MESSAGESONLY_H

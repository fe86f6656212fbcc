//===- TargetDevice.cpp - The device the kernel tests run on --------------===//

#include "test/unittests/kernels/TargetDevice.h"

#include "dpc/runtime/Error.h"

#include <memory>

namespace dpc::testing {

namespace {

struct Target {
  bool tried = false;
  std::unique_ptr<runtime::Device> device;
  std::string missing;
};

Target &target() {
  static auto *state = new Target;
  return *state;
}

/// Destroys the device after the last test.
class TargetEnvironment : public ::testing::Environment {
  void TearDown() override { target().device.reset(); }
};

[[maybe_unused]] ::testing::Environment *const environment =
    ::testing::AddGlobalTestEnvironment(new TargetEnvironment);

} // namespace

runtime::Device *targetDevice() {
  Target &t = target();
  if (!t.tried) {
    t.tried = true;
    try {
      t.device = runtime::createTargetDevice();
    } catch (const runtime::Error &e) {
      t.missing = std::string("the kernels' target cannot run here: ") +
                  e.what() + "; every kernel test skips";
    }
  }
  return t.device.get();
}

const std::string &targetDeviceMissing() { return target().missing; }

} // namespace dpc::testing

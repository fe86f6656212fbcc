//===- SafetensorsFuzzer.cpp - libFuzzer target for safetensors -----------===//
//
// Weights and checkpoints (runtime/Safetensors.h): a bad file must throw
// runtime::Error; any other exception, a crash or a sanitizer report is a
// bug. A file that parses must serialise and parse back.
//
//===----------------------------------------------------------------------===//

#include "dpc/runtime/Error.h"
#include "dpc/runtime/Safetensors.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using namespace dpc::runtime;
  std::vector<uint8_t> bytes(data, data + size);
  TensorFile file;
  try {
    file = parseSafetensors(bytes, "fuzz.safetensors");
  } catch (const Error &) {
    return 0;
  }
  try {
    (void)parseSafetensors(serializeSafetensors(file), "round trip");
  } catch (const Error &) {
    std::abort(); // what dpc wrote, dpc must read
  }
  return 0;
}

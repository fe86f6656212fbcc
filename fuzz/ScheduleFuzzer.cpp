//===- ScheduleFuzzer.cpp - libFuzzer target for schedule.json ------------===//
//
// What a rank does with schedule.json at start-up: parse it, then verify
// it (the non-blocking model). Bad input must throw dpc::Error; a crash,
// another exception or a sanitizer report is a bug.
//
//===----------------------------------------------------------------------===//

#include "dpc/schedule/Schedule.h"
#include "dpc/schedule/Verifier.h"
#include "dpc/support/Error.h"

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using namespace dpc::schedule;
  std::string text(reinterpret_cast<const char *>(data), size);
  Schedule schedule;
  try {
    schedule = fromJson(text);
  } catch (const dpc::Error &) {
    return 0;
  }
  VerifyOptions options;
  options.checkBlocking = false;
  (void)verifySchedule(schedule, options);
  return 0;
}

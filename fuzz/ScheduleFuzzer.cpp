//===- ScheduleFuzzer.cpp - libFuzzer target for schedule.json ------------===//
//
// What a rank does with schedule.json at start-up: parse it, then verify
// it (the non-blocking model). Errors are messages; a crash, an exception
// or a sanitizer report is a bug.
//
//===----------------------------------------------------------------------===//

#include "dpc/schedule/Schedule.h"
#include "dpc/schedule/Verifier.h"

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using namespace dpc::schedule;
  Schedule schedule;
  std::string text(reinterpret_cast<const char *>(data), size);
  if (!fromJson(text, schedule).empty())
    return 0;
  VerifyOptions options;
  options.checkBlocking = false;
  (void)verifySchedule(schedule, options);
  return 0;
}

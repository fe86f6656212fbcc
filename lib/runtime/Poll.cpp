//===- Poll.cpp - Waiting for another rank --------------------------------===//

#include "dpc/runtime/Poll.h"

#include "dpc/runtime/Error.h"

#include <cstdio>
#include <thread>

namespace dpc::runtime {

std::string formatSeconds(std::chrono::milliseconds t) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g s", double(t.count()) / 1000.0);
  return text;
}

void pollUntil(const std::function<bool()> &done,
               std::chrono::milliseconds timeout,
               const std::function<std::string()> &describe) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  const Clock::time_point deadline = start + timeout;
  for (;;) {
    if (done())
      return;
    Clock::time_point now = Clock::now();
    // Most waits of a balanced pipeline end within tens of microseconds.
    if (now - start < std::chrono::microseconds(50))
      continue;
    if (now >= deadline)
      throw Error("timed out after " + formatSeconds(timeout) + " " +
                  describe());
    std::this_thread::sleep_for(std::chrono::microseconds(
        now - start < std::chrono::milliseconds(10) ? 10 : 200));
  }
}

} // namespace dpc::runtime

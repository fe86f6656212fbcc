//===- Heartbeat.cpp - A rank's sign of life for dpc run's watchdog -------===//

#include "dpc/runtime/Heartbeat.h"

#include <condition_variable>
#include <mutex>
#include <thread>
#include <unistd.h>

namespace dpc::runtime {

namespace {

using schedule::Instruction;
using schedule::Op;

struct Activity {
  std::mutex mutex;
  std::string text = "starts up";
  bool running = false; // `instruction` of `step` is current, not `text`
  int64_t step = 0;
  Instruction instruction;
  int chunks = 1;
};

Activity &activity() {
  static Activity state;
  return state;
}

} // namespace

void setActivity(const std::string &text) {
  Activity &a = activity();
  std::lock_guard<std::mutex> lock(a.mutex);
  a.text = text;
  a.running = false;
}

void setActivity(int64_t step, const Instruction &instruction, int chunks) {
  Activity &a = activity();
  std::lock_guard<std::mutex> lock(a.mutex);
  a.running = true;
  a.step = step;
  a.instruction = instruction;
  a.chunks = chunks;
}

std::string describeActivity() {
  Activity &a = activity();
  std::lock_guard<std::mutex> lock(a.mutex);
  if (!a.running)
    return a.text;
  const Instruction &i = a.instruction;
  std::string step = "step " + std::to_string(a.step + 1);
  std::string message = std::string(schedule::payloadName(i.what)) + " mb " +
                        std::to_string(i.mb);
  if (a.chunks > 1)
    message += " chunk " + std::to_string(i.chunk);
  if (i.op == Op::RecvFinish)
    return "waits to receive from rank " + std::to_string(i.peer) + " (" +
           step + ", " + message + ")";
  if (i.op == Op::SendFinish)
    return "waits for rank " + std::to_string(i.peer) + " to receive (" + step +
           ", " + message + ")";
  return "runs " + schedule::describe(i, a.chunks) + " (" + step + ")";
}

struct Heartbeat::Impl {
  std::mutex mutex;
  std::condition_variable wake;
  bool stopping = false;
  std::thread thread;
};

Heartbeat::Heartbeat(std::chrono::milliseconds interval)
    : impl(std::make_unique<Impl>()) {
  impl->thread = std::thread([state = impl.get(), interval] {
    std::unique_lock<std::mutex> lock(state->mutex);
    for (;;) {
      std::string line = kHeartbeatPrefix + describeActivity() + "\n";
      // One write: stderr is unbuffered, and a line written in pieces
      // could be cut by the rank's own messages.
      ssize_t ignored = ::write(STDERR_FILENO, line.data(), line.size());
      (void)ignored;
      if (state->wake.wait_for(lock, interval,
                               [state] { return state->stopping; }))
        return;
    }
  });
}

Heartbeat::~Heartbeat() {
  {
    std::lock_guard<std::mutex> lock(impl->mutex);
    impl->stopping = true;
  }
  impl->wake.notify_all();
  impl->thread.join();
  // The launcher stops watching a rank that says it is done; its heartbeat
  // ends here while it leaves MPI.
  std::string line = std::string(kHeartbeatPrefix) + "done\n";
  ssize_t ignored = ::write(STDERR_FILENO, line.data(), line.size());
  (void)ignored;
}

} // namespace dpc::runtime

//===- InterferenceTest.cpp - The co-located process of --interfere -------===//

#include "dpc/runtime/Interference.h"
#include "dpc/runtime/RankOptions.h"
#include "test/unittests/runtime/ErrorOf.h"

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <fstream>
#include <sstream>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace dpc::runtime;

namespace {

// User-mode CPU seconds of process `pid` and its reaped children (the
// spinning shell is a child of `timeout`), from /proc.
double cpuSeconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)),
                   std::istreambuf_iterator<char>());
  std::istringstream fields(text.substr(text.rfind(')') + 2));
  std::string field;
  double ticks = 0;
  // Fields 14 and 16 (utime, cutime), counted from 1 with pid and comm.
  for (int k = 3; k <= 16 && fields >> field; ++k)
    if (k == 14 || k == 16)
      ticks += std::stod(field);
  return ticks / double(::sysconf(_SC_CLK_TCK));
}

// The process tree under `pid`: `timeout` and its shell. Sums the shell's
// CPU time through /proc's children list.
double treeCpuSeconds(pid_t pid) {
  double total = cpuSeconds(pid);
  std::ifstream children("/proc/" + std::to_string(pid) + "/task/" +
                         std::to_string(pid) + "/children");
  pid_t child;
  while (children >> child)
    total += treeCpuSeconds(child);
  return total;
}

TEST(Interference, SpinsOnTheCallersCoresAndEnds) {
  Interferer spinner;
  ASSERT_EQ(errorOf([&] { spinner.start(0.6); }), "");
  pid_t pid = spinner.pid();
  ASSERT_GT(pid, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  // A busy loop: it has used a good part of a core already.
  EXPECT_GT(treeCpuSeconds(pid), 0.1);
  // `timeout` ends it after its time, without being told.
  int status = 0;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  pid_t done = 0;
  while ((done = ::waitpid(pid, &status, WNOHANG)) == 0 &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(done, pid);
}

// The processes `timeout` runs (its shell loop), from /proc.
std::vector<pid_t> childrenOf(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/task/" +
                   std::to_string(pid) + "/children");
  std::vector<pid_t> children;
  pid_t child;
  while (in >> child)
    children.push_back(child);
  return children;
}

TEST(Interference, StopEndsALongRunAndItsLoop) {
  Interferer spinner;
  ASSERT_EQ(errorOf([&] { spinner.start(600); }), "");
  pid_t pid = spinner.pid();
  std::vector<pid_t> loops;
  for (int k = 0; k < 100 && loops.empty(); ++k) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    loops = childrenOf(pid);
  }
  ASSERT_EQ(loops.size(), 1u);
  auto begin = std::chrono::steady_clock::now();
  spinner.stop();
  EXPECT_LT(std::chrono::steady_clock::now() - begin, std::chrono::seconds(5));
  EXPECT_EQ(spinner.pid(), -1);
  // Reaped, and the loop killed with it (not left to spin, orphaned,
  // holding the job's output open).
  EXPECT_NE(::kill(pid, 0), 0);
  bool gone = false;
  for (int k = 0; k < 100 && !gone; ++k) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    std::ifstream stat("/proc/" + std::to_string(loops[0]) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)),
                     std::istreambuf_iterator<char>());
    // Gone, or a zombie of init's until it reaps it.
    gone = text.empty() || text.find(") Z ") != std::string::npos;
  }
  EXPECT_TRUE(gone) << "the loop " << loops[0] << " still runs";
  EXPECT_NE(errorOf([&] { spinner.start(0); }), "");
}

TEST(Interference, NamesTheCallersCores) {
  std::string cores = Interferer::cores();
  EXPECT_FALSE(cores.empty());
  EXPECT_NE(cores.find_first_of("0123456789"), std::string::npos);
}

TEST(Interference, ParsesRankStepAndSeconds) {
  std::optional<Interference> i = parseInterference("1:20:2.5");
  ASSERT_TRUE(i);
  EXPECT_EQ(i->rank, 1);
  EXPECT_EQ(i->fromStep, 20);
  EXPECT_EQ(i->seconds, 2.5);
  for (const char *bad : {"1:20", "1:0:2", "1:20:0", "x:1:1", "1:2:3:4"})
    EXPECT_FALSE(parseInterference(bad)) << bad;
}

} // namespace

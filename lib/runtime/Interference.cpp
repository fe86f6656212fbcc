//===- Interference.cpp - A co-located CPU-bound process ------------------===//

#include "dpc/runtime/Interference.h"

#include "dpc/runtime/Error.h"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sched.h>
#include <spawn.h>
#include <sys/wait.h>
#include <vector>

extern char **environ;

namespace dpc::runtime {

Interferer::~Interferer() { stop(); }

void Interferer::start(double seconds) {
  stop();
  if (!(seconds > 0))
    throw Error("the interference needs a positive duration");
  char duration[32];
  std::snprintf(duration, sizeof duration, "%.3f", seconds);
  // `timeout` ends the loop however long the rank lives; the shell's
  // builtin loop does no system calls, as a compute-bound job.
  std::vector<std::string> args = {
      "timeout", "--signal=KILL", duration, "sh", "-c", "while :; do :; done"};
  std::vector<char *> argv;
  for (std::string &a : args)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  // Its own process group, which stop() kills whole, and no inherited
  // output: a job's pipes must close when the job ends.
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attributes, 0);
  posix_spawn_file_actions_t files;
  posix_spawn_file_actions_init(&files);
  for (int fd : {0, 1, 2})
    posix_spawn_file_actions_addopen(&files, fd, "/dev/null", O_RDWR, 0);
  pid_t pid = -1;
  int error =
      posix_spawnp(&pid, "timeout", &files, &attributes, argv.data(), environ);
  posix_spawn_file_actions_destroy(&files);
  posix_spawnattr_destroy(&attributes);
  if (error)
    throw Error(std::string("cannot start the interfering process: ") +
                std::strerror(error));
  child = pid;
}

void Interferer::stop() {
  if (child <= 0)
    return;
  // The whole group: `timeout` and the loop it runs.
  ::kill(-child, SIGKILL);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  child = -1;
}

std::string Interferer::cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0)
    return "";
  std::string text;
  for (int cpu = 0; cpu < CPU_SETSIZE;) {
    if (!CPU_ISSET(cpu, &set)) {
      ++cpu;
      continue;
    }
    int last = cpu;
    while (last + 1 < CPU_SETSIZE && CPU_ISSET(last + 1, &set))
      ++last;
    text += (text.empty() ? "" : ",") + std::to_string(cpu) +
            (last > cpu ? "-" + std::to_string(last) : "");
    cpu = last + 1;
  }
  return text;
}

} // namespace dpc::runtime

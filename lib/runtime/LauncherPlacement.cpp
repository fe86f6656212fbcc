//===- LauncherPlacement.cpp - The appfile and host placement -------------===//
//
// What the launcher reads before it starts anything: OUT/appfile (the
// `mpirun --app` format), an Open MPI host file, the placement of the ranks
// on its hosts in stage order, the programs' paths resolved against OUT/, and
// the check that every rank executable is a whole program.
//
//===----------------------------------------------------------------------===//

#include "LauncherInternal.h"

#include "dpc/runtime/Error.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

namespace dpc::runtime {

using namespace launcher_detail;

namespace {

/// mpirun options that take one value and may appear on an appfile line.
bool takesOneValue(const std::string &option) {
  static const char *const kOptions[] = {
      "-np",        "--np",     "-n",        "-c",        "-x",
      "-H",         "-host",    "--host",    "-wdir",     "--wdir",
      "-wd",        "--map-by", "--bind-to", "--rank-by", "-hostfile",
      "--hostfile", "-path",    "--path",    "--prefix",  "-machinefile"};
  for (const char *o : kOptions)
    if (option == o)
      return true;
  return false;
}

bool takesTwoValues(const std::string &option) {
  return option == "-mca" || option == "--mca" || option == "-gmca" ||
         option == "--gmca";
}

} // namespace

/// What is wrong with `path` as a program to launch, or "": it must be an
/// ELF image whose header's program and section tables lie inside the file,
/// or a "#!" script. A rank executable overwritten with anything else, or
/// truncated, would otherwise fail inside mpirun or crash at load, and
/// mpirun names neither the rank nor the file.
std::string programProblem(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  unsigned char head[64] = {};
  in.read(reinterpret_cast<char *>(head), sizeof(head));
  std::streamsize got = in.gcount();
  if (got >= 2 && head[0] == '#' && head[1] == '!')
    return "";
  if (got < 4 || std::memcmp(head,
                             "\x7f"
                             "ELF",
                             4) != 0)
    return "is not a program (no ELF header)";
  // ELF64, little-endian: the only kind this host runs.
  if (got < 64 || head[4] != 2 || head[5] != 1)
    return "is not a 64-bit little-endian ELF program";
  auto field = [&](int offset, int bytes) {
    uint64_t value = 0;
    for (int i = bytes - 1; i >= 0; --i)
      value = value << 8 | head[offset + i];
    return value;
  };
  uint64_t tablesEnd =
      std::max(field(0x20, 8) + field(0x38, 2) * field(0x36, 2),  // programs
               field(0x28, 8) + field(0x3C, 2) * field(0x3A, 2)); // sections
  struct stat info;
  if (::stat(path.c_str(), &info) != 0)
    return std::string("cannot be read: ") + std::strerror(errno);
  if (uint64_t(info.st_size) < tablesEnd)
    return "is truncated (its ELF header needs " + std::to_string(tablesEnd) +
           " bytes, the file has " + std::to_string(info.st_size) + ")";
  return "";
}

//===----------------------------------------------------------------------===//
// The appfile
//===----------------------------------------------------------------------===//

/// Parses OUT/appfile; on failure throws an Error naming the file and line.
std::vector<AppLine> parseAppfile(const std::string &path) {
  std::ifstream in(path);
  if (!in)
    throw Error(path + ": " + std::strerror(errno));
  std::vector<AppLine> lines;
  std::string text;
  for (int number = 1; std::getline(in, text); ++number) {
    std::vector<std::string> words = splitWords(text);
    if (words.empty() || words[0][0] == '#')
      continue;
    AppLine line;
    line.lineNumber = number;
    size_t i = 0;
    for (; i < words.size() && words[i][0] == '-'; ++i) {
      const std::string &option = words[i];
      size_t values = takesTwoValues(option)  ? 2
                      : takesOneValue(option) ? 1
                                              : 0;
      if (i + values >= words.size())
        throw Error(path + ":" + std::to_string(number) + ": option '" +
                    option + "' without its value");
      line.mpirunOptions.push_back(option);
      for (size_t v = 1; v <= values; ++v)
        line.mpirunOptions.push_back(words[i + v]);
      if (option == "-np" || option == "--np" || option == "-n") {
        char *end = nullptr;
        long n = std::strtol(words[i + 1].c_str(), &end, 10);
        if (*end != '\0' || n <= 0)
          throw Error(path + ":" + std::to_string(number) +
                      ": bad rank count '" + words[i + 1] + "'");
        line.ranks = int(n);
      }
      i += values;
    }
    if (i == words.size())
      throw Error(path + ":" + std::to_string(number) + ": no program to run");
    line.program = words[i];
    line.programArgs.assign(words.begin() + long(i) + 1, words.end());
    lines.push_back(std::move(line));
  }
  if (lines.empty())
    throw Error(path + ": no ranks to launch");
  return lines;
}

//===----------------------------------------------------------------------===//
// Host files and rank placement
//===----------------------------------------------------------------------===//

/// Reads an Open MPI host file: `HOST [slots=N] [max_slots=N]` a line,
/// `#` comments, blank lines. A host named twice adds its slots. On failure
/// throws an InputError naming the file and line.
std::vector<HostSlots> parseHostfile(const std::string &path) {
  std::ifstream in(path);
  if (!in)
    throw InputError(path + ": " + std::strerror(errno));
  std::vector<HostSlots> hosts;
  std::string text;
  for (int number = 1; std::getline(in, text); ++number) {
    std::string at = path + ":" + std::to_string(number) + ": ";
    text = text.substr(0, text.find('#'));
    std::vector<std::string> words = splitWords(text);
    if (words.empty())
      continue;
    if (words[0].find('=') != std::string::npos)
      throw InputError(at + "expected a host name before '" + words[0] + "'");
    HostSlots entry{words[0], 1};
    for (size_t i = 1; i < words.size(); ++i) {
      size_t eq = words[i].find('=');
      std::string key = words[i].substr(0, eq);
      if (eq == std::string::npos ||
          (key != "slots" && key != "max_slots" && key != "max-slots"))
        throw InputError(at + "expected slots=N or max_slots=N, not '" +
                         words[i] + "'");
      std::string value = words[i].substr(eq + 1);
      char *end = nullptr;
      long n = std::strtol(value.c_str(), &end, 10);
      if (value.empty() || *end != '\0' || n <= 0 || n > 1 << 20)
        throw InputError(at + key + " expects a positive integer, not '" +
                         value + "'");
      if (key == "slots")
        entry.slots = int(n);
    }
    auto same = std::find_if(hosts.begin(), hosts.end(), [&](const auto &h) {
      return h.host == entry.host;
    });
    if (same != hosts.end())
      same->slots += entry.slots;
    else
      hosts.push_back(entry);
  }
  if (hosts.empty())
    throw InputError(path + ": no hosts");
  return hosts;
}

/// The host of every rank: ranks in order (the appfile's, which is stage
/// order) fill each host's slots before the next host's, so neighbouring
/// stages, which exchange every microbatch, share a host where they can.
std::vector<std::string> placeRanks(const std::vector<HostSlots> &hosts,
                                    int ranks) {
  std::vector<std::string> placement;
  for (const HostSlots &h : hosts)
    for (int k = 0; k < h.slots && int(placement.size()) < ranks; ++k)
      placement.push_back(h.host);
  return placement;
}

/// Resolves a program path of the appfile against OUT/, where `dpc compile`
/// put the executables; mpirun would resolve it against the current
/// directory instead, which breaks `dpc run` from anywhere but OUT/.
std::string resolveProgram(const std::string &outDir,
                           const std::string &program) {
  if (!program.empty() && program[0] == '/')
    return program;
  std::string relative = program;
  while (relative.rfind("./", 0) == 0)
    relative.erase(0, 2);
  std::string candidate = outDir + "/" + relative;
  if (program.find('/') != std::string::npos || isRegularFile(candidate))
    return candidate;
  return program; // a bare name found on PATH, like `hostname`
}

namespace launcher_detail {

void checkPrograms(const LaunchJob &job, const std::string &outDir,
                   const std::string &appfilePath) {
  for (const AppLine &line : job.lines) {
    std::string program = resolveProgram(job.outDir, line.program);
    if (program.find('/') == std::string::npos)
      continue;
    std::string at = appfilePath + ":" + std::to_string(line.lineNumber) + ": ";
    if (!isRegularFile(program) || ::access(program.c_str(), X_OK) != 0)
      throw Error(
          at + outDir + "/" + line.program +
          (isRegularFile(program) ? " is not executable" : ": no such file"));
    if (std::string problem = programProblem(program); !problem.empty())
      throw Error(at + program + " " + problem + ": a corrupt rank executable");
  }
}

} // namespace launcher_detail

} // namespace dpc::runtime

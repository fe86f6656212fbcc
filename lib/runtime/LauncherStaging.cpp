//===- LauncherStaging.cpp - Hosts without a shared file system -----------===//
//
// `dpc run OUT --hostfile FILE --stage DIR`: the hosts share no file system
// with the launching one. Before the run, the launcher copies what the
// ranks read (the compiled OUT without its IR and model, the data files of
// --data and --eval-data, a checkpoint directory to resume from) to DIR on
// every host of the placement, through the launch agent (ssh, or the
// emulated cluster's agent: the command Open MPI starts its daemons with),
// as a tar stream; the ranks run from there with every path rewritten into
// DIR. After the run, whether it succeeded or not, it brings back what the
// ranks wrote (metrics, trace parts, op times, predictions, TensorBoard
// events, checkpoints, the step-time summary) to the paths the user gave,
// then removes DIR from every host.
//
//===----------------------------------------------------------------------===//

#include "LauncherInternal.h"

#include <algorithm>
#include <cstdlib>
#include <glob.h>
#include <set>
#include <sys/wait.h>
#include <unistd.h>

namespace dpc::runtime::launcher_detail {

namespace {

std::string shellQuote(const std::string &text) {
  std::string quoted = "'";
  for (char c : text) {
    if (c == '\'')
      quoted += "'\\''";
    else
      quoted += c;
  }
  return quoted + "'";
}

std::string dirName(const std::string &path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos)
    return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string baseName(const std::string &path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

/// Runs `command` with /bin/sh; its exit status, or -1.
int runShell(const std::string &command) {
  return runProgram({"/bin/sh", "-c", command}, "");
}

bool succeeded(int status) {
  return status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/// The local files a data path names: its glob's matches, or itself.
std::vector<std::string> expandPath(const std::string &path) {
  if (path.find_first_of("*?[") == std::string::npos)
    return {path};
  glob_t found{};
  std::vector<std::string> files;
  if (::glob(path.c_str(), 0, nullptr, &found) == 0)
    for (size_t i = 0; i < found.gl_pathc; ++i)
      files.push_back(found.gl_pathv[i]);
  ::globfree(&found);
  return files;
}

/// Whether `field` of a data spec (the text after KIND: for the first, the
/// comma-separated fields after it) names a path: the first field of every
/// kind but synthetic, an npy spec's further fields without '=' (its label
/// and input arrays) and its lengths=.
bool namesPath(const std::string &kind, size_t index, const std::string &key) {
  if (kind == "synthetic")
    return false;
  if (index == 0)
    return true;
  return kind == "npy" && (key.empty() || key == "lengths");
}

} // namespace

std::string Staging::remote(const std::string &host,
                            const std::string &command) const {
  return agent + " " + shellQuote(host) + " " + shellQuote(command);
}

std::string Staging::stageData(const std::string &spec,
                               const std::string &name) {
  if (spec.empty())
    return spec;
  size_t colon = spec.find(':');
  std::string kind = spec.substr(0, colon);
  if (colon == std::string::npos)
    return spec;
  // Each path of the spec becomes DIR/data/NAME-K/BASENAME: its files (a
  // glob's matches) or its directory are copied there.
  std::string rewritten = kind + ":";
  std::string rest = spec.substr(colon + 1);
  size_t start = 0;
  for (size_t index = 0;; ++index) {
    size_t comma = rest.find(',', start);
    std::string field = rest.substr(
        start, comma == std::string::npos ? std::string::npos : comma - start);
    size_t equals = index == 0 ? std::string::npos : field.find('=');
    std::string key =
        equals == std::string::npos ? "" : field.substr(0, equals);
    std::string value =
        equals == std::string::npos ? field : field.substr(equals + 1);
    if (namesPath(kind, index, key) && !value.empty()) {
      if (dirName(value).find_first_of("*?[") != std::string::npos)
        throw InputError("--stage: data path '" + value +
                         "' has a pattern in its directory part");
      std::vector<std::string> files = expandPath(value);
      if (files.empty())
        throw InputError("--stage: data path '" + value + "' matches no file");
      std::string target =
          dir + "/data/" + name + "-" + std::to_string(inputs.size());
      inputs.push_back({dirName(value), {}, target});
      for (const std::string &f : files)
        inputs.back().names.push_back(baseName(f));
      value = target + "/" + baseName(value);
    }
    rewritten +=
        (index == 0 ? "" : ",") + (key.empty() ? "" : key + "=") + value;
    if (comma == std::string::npos)
      break;
    start = comma + 1;
  }
  return rewritten;
}

std::string Staging::stageOutput(const std::string &path, const char *name,
                                 bool isDirectory) {
  if (path.empty())
    return path;
  std::string staged = dir + "/results/" + name;
  outputs.push_back({staged, absolutePath(path), isDirectory});
  return isDirectory ? staged : staged + "/" + baseName(path);
}

Staging planStaging(const LaunchOptions &options, const LaunchJob &job,
                    RankOptions &rankOptions) {
  Staging staging;
  staging.dir = options.stageDir;
  if (staging.dir.empty() || staging.dir[0] != '/' ||
      staging.dir.find_first_of(" \t\n'\"") != std::string::npos ||
      staging.dir == "/")
    throw InputError("option '--stage' expects an absolute directory "
                     "without spaces or quotes, not '" +
                     options.stageDir + "'");
  if (job.placement.empty())
    throw InputError("--stage needs --hostfile: it copies to the hosts");
  staging.agent = options.agent;
  if (staging.agent.empty())
    if (const char *mca = std::getenv("OMPI_MCA_plm_rsh_agent"))
      staging.agent = mca;
  if (staging.agent.empty())
    staging.agent = "ssh";
  for (const std::string &host : job.placement)
    if (std::find(staging.hosts.begin(), staging.hosts.end(), host) ==
        staging.hosts.end())
      staging.hosts.push_back(host);

  rankOptions.data = staging.stageData(rankOptions.data, "train");
  rankOptions.evalData = staging.stageData(rankOptions.evalData, "eval");
  if (!rankOptions.checkpointDir.empty()) {
    // Read (resume, inference weights) and written: copied there when it
    // exists, brought back after the run.
    std::string local = absolutePath(rankOptions.checkpointDir);
    if (isDirectory(local))
      staging.inputs.push_back({local, {"."}, staging.dir + "/checkpoint"});
    staging.outputs.push_back({staging.dir + "/checkpoint", local, true});
    rankOptions.checkpointDir = staging.dir + "/checkpoint";
  }
  rankOptions.metrics =
      staging.stageOutput(rankOptions.metrics, "metrics", false);
  rankOptions.trace = staging.stageOutput(rankOptions.trace, "trace", false);
  rankOptions.opTimes =
      staging.stageOutput(rankOptions.opTimes, "op-times", false);
  rankOptions.predictions =
      staging.stageOutput(rankOptions.predictions, "predictions", false);
  rankOptions.tensorboard =
      staging.stageOutput(rankOptions.tensorboard, "tensorboard", true);
  return staging;
}

namespace {

/// Ends what is left of the job on `host` and removes DIR there, bounded
/// in time (a host whose network is down must not hang the launcher).
/// What is left (ranks of a failed run whose peers are gone, Open MPI's
/// daemon when the host lost its network) is every process whose command
/// line names DIR: the ranks by their programs, the daemon by its session
/// directory. The pattern's bracket keeps the shell running pkill from
/// matching itself.
void clearHost(const Staging &staging, const std::string &host) {
  std::string pattern =
      "[" + staging.dir.substr(0, 1) + "]" + staging.dir.substr(1) + "/";
  runShell("timeout 30 " +
           staging.remote(host, "pkill -9 -f " + shellQuote(pattern) +
                                    "; rm -rf " + shellQuote(staging.dir)) +
           " >/dev/null 2>&1");
}

/// The exit status of the remote command when DIR already exists on a
/// host: it is not dpc's to fill and remove.
constexpr int kStageDirExists = 3;

} // namespace

void stageToHosts(const Staging &staging, const std::string &outDir) {
  // DIR is created by dpc run and removed after the run, here and on every
  // host, so it must not exist before: it could be the user's.
  if (::access(staging.dir.c_str(), F_OK) == 0)
    throw InputError("--stage: " + staging.dir +
                     " exists on this host; --stage needs a directory that "
                     "dpc run creates and removes");
  // The outputs' directories, which the ranks do not create.
  std::string made = " " + shellQuote(staging.dir + "/ompi") + " " +
                     shellQuote(staging.dir + "/out");
  for (const Staging::Output &out : staging.outputs)
    made += " " + shellQuote(out.staged);
  for (size_t h = 0; h < staging.hosts.size(); ++h) {
    const std::string &host = staging.hosts[h];
    // The compiled output without what only the compiler reads.
    std::string command =
        "tar -c -C " + shellQuote(outDir) +
        " --exclude=./mlir --exclude='./model.*' --exclude='./.dpc-*' . | " +
        staging.remote(host, "test ! -e " + shellQuote(staging.dir) +
                                 " || exit " + std::to_string(kStageDirExists) +
                                 "; mkdir -p" + made + " && tar -x -C " +
                                 shellQuote(staging.dir + "/out"));
    for (const Staging::Input &input : staging.inputs) {
      std::string names;
      for (const std::string &n : input.names)
        names += " " + shellQuote(n);
      command +=
          " && tar -c -C " + shellQuote(input.from) + names + " | " +
          staging.remote(host, "mkdir -p " + shellQuote(input.to) +
                                   " && tar -x -C " + shellQuote(input.to));
    }
    int status = runShell(command);
    if (succeeded(status))
      continue;
    // Nothing of a refused run stays: DIR goes from the hosts it was made
    // on (this one too, unless it was there before).
    bool existed = status != -1 && WIFEXITED(status) &&
                   WEXITSTATUS(status) == kStageDirExists;
    for (size_t k = 0; k < h + (existed ? 0 : 1); ++k)
      clearHost(staging, staging.hosts[k]);
    if (existed)
      throw InputError("--stage: " + staging.dir + " exists on host " + host +
                       "; --stage needs a directory that dpc run creates "
                       "and removes");
    throw Error("--stage: copying to host " + host + " failed (" +
                staging.agent + " " + host + "; tar)");
  }
  // Open MPI's session directories, on the launching host and (mpirun
  // passes the setting on to its daemons) on every host: inside DIR, so
  // the job writes nothing on a host outside it, and its daemon is known
  // by DIR on its command line.
  std::string session = staging.dir + "/ompi";
  if (!succeeded(runShell("mkdir -p " + shellQuote(session))))
    throw Error("--stage: cannot create " + session + " on this host");
  ::setenv("OMPI_MCA_orte_tmpdir_base", session.c_str(), 1);
}

void collectFromHosts(const Staging &staging) {
  char temp[] = "/tmp/dpc-run-collect-XXXXXX";
  if (!::mkdtemp(temp))
    throw Error("--stage: cannot create a local directory for the results");
  std::string error;
  for (size_t h = 0; h < staging.hosts.size(); ++h) {
    const std::string &host = staging.hosts[h];
    std::string local = std::string(temp) + "/" + std::to_string(h);
    // Bounded: a host whose network is down must not hang the launcher.
    std::string fetch =
        "mkdir -p " + shellQuote(local) + " && timeout 60 " +
        staging.remote(host, "cd " + shellQuote(staging.dir) +
                                 " 2>/dev/null && mkdir -p results && tar -c "
                                 "results $(ls -d checkpoint 2>/dev/null)") +
        " | tar -x -C " + shellQuote(local);
    bool fetched = succeeded(runShell(fetch));
    if (fetched) {
      for (const Staging::Output &out : staging.outputs) {
        std::string from = local + out.staged.substr(staging.dir.size());
        std::string to = out.isDirectory ? out.local : dirName(out.local);
        std::string copy = "if [ -d " + shellQuote(from) +
                           " ]; then mkdir -p " + shellQuote(to) +
                           " && cp -a " + shellQuote(from + "/.") + " " +
                           shellQuote(to) + "; fi";
        if (!succeeded(runShell(copy)) && error.empty())
          error =
              "--stage: cannot copy the results of host " + host + " to " + to;
      }
    } else if (error.empty()) {
      error = "--stage: cannot bring back the results of host " + host;
    }
    clearHost(staging, host);
  }
  // DIR here held Open MPI's session directories; dpc run made it.
  runShell("rm -rf " + shellQuote(temp) + " " + shellQuote(staging.dir));
  if (!error.empty())
    throw Error(error);
}

} // namespace dpc::runtime::launcher_detail

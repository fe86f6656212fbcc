//===- RankMain.cpp - The main of every rank executable -------------------===//
//
// A rank executable is the generated object of one stage linked with this
// library (dpc_rank_main) and the runtime. This main parses the rank's
// options, reads the rank manifest the object carries and the schedule next
// to the executable, builds the executor on the target's device, and hands
// it to the run of its build: an inference build's prediction
// (RankPredict.cpp) or training (RankTraining.cpp). Errors anywhere abort
// the whole MPI job with "rank R: error: MESSAGE", so no peer is left
// waiting.
//
//===----------------------------------------------------------------------===//

#include "RankRun.h"

#include "dpc/runtime/Abi.h"
#include "dpc/runtime/Device.h"
#include "dpc/runtime/Error.h"
#include "dpc/runtime/Heartbeat.h"
#include "dpc/runtime/Manifest.h"
#include "dpc/runtime/MpiCommunicator.h"
#include "dpc/runtime/StepPlanner.h"
#include "dpc/support/CommandLine.h"

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace cli = dpc::cli;

namespace dpc::runtime::rank {

std::string resolve(const std::string &dir, const std::string &path) {
  return !path.empty() && path[0] == '/' ? path : dir + "/" + path;
}

bool fileExists(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

dpc::planner::PlanSummary compiledPlan(const std::string &dir) {
  std::string path = resolve(dir, "plan.json");
  if (!fileExists(path))
    return {};
  std::string text;
  return dpc::planner::loadPlanSummary(path, text);
}

double compiledMemoryLimit(const std::string &dir) {
  return compiledPlan(dir).memoryLimitBytes.value_or(0);
}

void checkWritableDirectory(const std::string &dir, int rank) {
  auto problem = [&](const std::string &what) {
    return UsageError{"--checkpoint-dir " + dir + ": " + what};
  };
  if (::mkdir(dir.c_str(), 0777) != 0 && errno != EEXIST)
    throw problem(std::string("cannot create it: ") + std::strerror(errno));
  struct stat info;
  if (::stat(dir.c_str(), &info) != 0 || !S_ISDIR(info.st_mode))
    throw problem("not a directory");
  std::string probe = dir + "/.dpc-write-test.rank" + std::to_string(rank);
  std::FILE *file = std::fopen(probe.c_str(), "w");
  if (!file)
    throw problem(std::string("cannot write there: ") + std::strerror(errno));
  std::fclose(file);
  std::remove(probe.c_str());
}

int64_t product(const std::vector<int64_t> &v, size_t from) {
  int64_t n = 1;
  for (size_t k = from; k < v.size(); ++k)
    n *= v[k];
  return n;
}

ModelDataShape shareModelShape(Communicator &comm, const RankManifest &m) {
  constexpr size_t kMaxRank = 8;
  // The first stage's inputs: their count, then each one's rank,
  // dimensions, and whether it holds ids.
  std::vector<int64_t> count{int64_t(m.inputs.size())};
  broadcastInts(comm, 0, count);
  ModelDataShape model;
  for (int64_t k = 0; k < count[0]; ++k) {
    std::vector<int64_t> shape(kMaxRank + 2, 0);
    if (m.isFirstStage()) {
      const std::vector<int64_t> &in = m.inputs[size_t(k)].shape;
      if (in.size() - 1 > kMaxRank)
        throw Error("the model's input " + std::to_string(k) + " has rank " +
                    std::to_string(in.size()) + "; the runtime handles up to " +
                    std::to_string(kMaxRank + 1));
      shape[0] = int64_t(in.size()) - 1;
      for (size_t d = 1; d < in.size(); ++d)
        shape[d] = in[d];
      shape[kMaxRank + 1] = m.inputs[size_t(k)].integer;
    }
    broadcastInts(comm, 0, shape);
    // The input's name (the graph's), by which npy:NAME=A.npy,... gives
    // it its array on every rank that loads the data.
    std::vector<int64_t> name;
    if (m.isFirstStage())
      for (char c : m.inputs[size_t(k)].name)
        name.push_back(static_cast<unsigned char>(c));
    std::vector<int64_t> length{int64_t(name.size())};
    broadcastInts(comm, 0, length);
    name.resize(size_t(length[0]));
    if (!name.empty())
      broadcastInts(comm, 0, name);
    model.inputs.push_back(
        {std::string(name.begin(), name.end()),
         std::vector<int64_t>(shape.begin() + 1, shape.begin() + 1 + shape[0]),
         shape[kMaxRank + 1] != 0});
  }
  // The last stage's classes and the shape of a sample's labels: a class
  // per row of the output, whose last dimension is the class dimension
  // when the labels have positions.
  // Then whether the loss ignores a label, and which, and whether the labels
  // are float targets (--loss mse).
  std::vector<int64_t> labels(kMaxRank + 5, 0);
  if (m.isLastStage() && m.ignoreIndex) {
    labels[kMaxRank + 2] = 1;
    labels[kMaxRank + 3] = *m.ignoreIndex;
  }
  if (m.isLastStage())
    labels[kMaxRank + 4] = m.floatLabels;
  if (m.isLastStage() && m.outputShape) {
    const std::vector<int64_t> &out = *m.outputShape;
    size_t labelRank = m.labelsShape ? m.labelsShape->size() : 1;
    labels[0] = labelRank > 1 ? out.back() : product(out, 1);
    labels[1] = int64_t(labelRank) - 1;
    for (size_t k = 1; k < labelRank && k <= kMaxRank; ++k)
      labels[k + 1] = (*m.labelsShape)[k];
  }
  broadcastInts(comm, comm.size() - 1, labels);
  if (!model.inputs.empty()) {
    model.sampleShape = model.inputs[0].sampleShape;
    model.integerInputs = model.inputs[0].integer;
  }
  model.numClasses = labels[0];
  model.labelShape.assign(labels.begin() + 2, labels.begin() + 2 + labels[1]);
  if (labels[kMaxRank + 2])
    model.ignoreIndex = labels[kMaxRank + 3];
  model.floatLabels = labels[kMaxRank + 4] != 0;
  return model;
}

void printLine(const std::string &line) {
  // Whole lines: mpirun forwards output line by line.
  std::fprintf(stdout, "%s\n", line.c_str());
  std::fflush(stdout);
}

} // namespace dpc::runtime::rank

using namespace dpc::runtime;
using namespace dpc::runtime::rank;

namespace {

std::string executablePath() {
  std::vector<char> buffer(4096);
  ssize_t n = ::readlink("/proc/self/exe", buffer.data(), buffer.size() - 1);
  if (n <= 0)
    throw Error("cannot read /proc/self/exe to find the executable's "
                "directory");
  return std::string(buffer.data(), size_t(n));
}

std::string directoryOf(const std::string &path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

Options parseOptions(int argc, char **argv, bool &help) {
  Options o;
  cli::ArgParser parser(
      "rank", "one rank of a dpc pipeline (launch all ranks with 'dpc run')",
      "mpirun --app OUT/appfile [options], or: dpc run OUT [options]");
  addRankOptions(parser, o, RankOptionSet::All);
  std::vector<std::string> args(argv + 1, argv + argc);
  switch (parser.parse(args)) {
  case cli::ArgParser::Result::Help:
    help = true;
    std::printf("%s", parser.help().c_str());
    return o;
  case cli::ArgParser::Result::Error:
    throw UsageError{parser.error()};
  case cli::ArgParser::Result::Ok:
    break;
  }
  if (std::string problem = finishRankOptions(parser, o, RankOptionSet::All);
      !problem.empty())
    throw UsageError{problem};
  // The checks that need the runtime's names.
  if (!parseTransport(o.transport))
    throw UsageError{"--transport expects auto, nccl, host-staging or mpi, "
                     "not '" +
                     o.transport + "'"};
  if (!parseMicrobatchingMode(o.microbatching))
    throw UsageError{"--microbatching expects dp, padded or sorted, not '" +
                     o.microbatching + "'"};
  if (o.isGiven("test-forward-delay"))
    o.delay = *parseForwardDelay(o.testForwardDelay);
  if (o.isGiven("interfere"))
    o.interference = *parseInterference(o.interfere);
  if (o.adapt && o.adaptRequest.empty())
    throw UsageError{"--adapt needs 'dpc run', which re-plans and relaunches "
                     "the ranks"};
  if (o.adapt && o.checkpointDir.empty())
    throw UsageError{"--adapt needs --checkpoint-dir for the checkpoint it "
                     "resumes from ('dpc run' gives one)"};
  if (o.epochs == 0 && o.steps == 0)
    o.epochs = 1;
  return o;
}

int runRank(int argc, char **argv, Communicator &comm) {
  bool help = false;
  Options opts = parseOptions(argc, argv, help);
  if (help)
    return 0;
  // A rank waiting on a message sleeps in steps of microseconds; the
  // default 50 us timer slack would lengthen each of them fivefold.
  ::prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
  // Before the executor: the communicators it makes take this timeout.
  if (opts.timeoutSeconds > 0)
    comm.setTimeout(std::chrono::milliseconds(
        std::max<int64_t>(1, int64_t(opts.timeoutSeconds * 1000))));
  std::optional<Heartbeat> heartbeat;
  if (opts.heartbeat)
    heartbeat.emplace(std::chrono::seconds(1));

  // The target's memory (the kernel library linked in defines it); a CUDA
  // rank without a usable GPU stops here, before any data is read.
  std::unique_ptr<Device> device = createTargetDevice();

  std::string exe = executablePath();
  std::string dir = directoryOf(exe);
  RankManifest manifest = parseManifest(dpc_rank_manifest, exe);
  std::string schedulePath = resolve(dir, manifest.schedule);
  dpc::schedule::Schedule schedule =
      dpc::schedule::readScheduleFile(schedulePath);
  manifest.schedule = schedulePath;
  // A bf16 build on a CPU without native bf16 still runs, in f32 (oneDNN
  // would emulate bf16 slower than f32 or have no kernel at all).
  if (manifest.bf16 && !dpc_bf16_native()) {
    std::fprintf(stderr,
                 "warning: rank %d: this CPU has no native bf16 (AVX512-BF16 "
                 "or AMX); --precision bf16 convolutions and matmuls compute "
                 "in fp32, transfers stay bf16\n",
                 comm.rank());
    std::fflush(stderr);
  }

  SegmentFunctions segments;
  segments.forward = dpc_segment_forward;
  segments.backward = dpc_segment_backward;
  segments.backwardInput = dpc_segment_backward_input;
  segments.backwardWeight = dpc_segment_backward_weight;
  segments.optimizer = dpc_segment_optimizer;
  Executor exec(manifest, schedule, comm, segments, *device);
  // Errors found inside ABI calls cannot unwind through generated code.
  exec.setFatalHandler(
      [&comm](const std::string &message) { comm.abort(message, 1); });
  exec.connect(*parseTransport(opts.transport));
  if (!device->hostAccessible())
    printLine("rank " + std::to_string(comm.rank()) + ": " +
              device->description() + "; transport " +
              exec.transportDescription());
  const RankManifest &m = exec.manifest();
  if (m.inference)
    return predict(opts, comm, exec, dir);
  if (!opts.predictions.empty())
    throw UsageError{"--predictions needs an inference build (dpc compile "
                     "--inference)"};
  return train(opts, comm, exec, schedule, dir);
}

} // namespace

int main(int argc, char **argv) {
  MpiEnvironment mpi(&argc, &argv);
  std::unique_ptr<Communicator> world = mpi.world();
  try {
    return runRank(argc, argv, *world);
  } catch (const UsageError &e) {
    world->abort(e.message, cli::kUsageError);
  } catch (const InputError &e) {
    world->abort(e.what(), cli::kUsageError);
  } catch (const Error &e) {
    world->abort(e.what(), 1);
  } catch (const std::exception &e) {
    world->abort(std::string("internal error: ") + e.what(), 1);
  }
}

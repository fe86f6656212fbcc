//===- Schedule.cpp - Instruction names and schedule.json -----------------===//

#include "dpc/schedule/Schedule.h"
#include "dpc/support/Error.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>
#include <type_traits>

namespace dpc::schedule {

namespace {

struct OpNames {
  Op op;
  const char *name;
  const char *json;
};

const OpNames kOps[] = {
    {Op::LoadMicrobatch, "LoadMicrobatch", "load"},
    {Op::Forward, "Forward", "forward"},
    {Op::Backward, "Backward", "backward"},
    {Op::BackwardInput, "BackwardInput", "backward_input"},
    {Op::BackwardWeight, "BackwardWeight", "backward_weight"},
    {Op::SendStart, "SendStart", "send_start"},
    {Op::SendFinish, "SendFinish", "send_finish"},
    {Op::RecvStart, "RecvStart", "recv_start"},
    {Op::RecvFinish, "RecvFinish", "recv_finish"},
    {Op::AllReduce, "AllReduce", "allreduce"},
    {Op::OptimizerStep, "OptimizerStep", "optimizer_step"},
    {Op::Stash, "Stash", "stash"},
    {Op::Restore, "Restore", "restore"},
    {Op::Free, "Free", "free"},
    {Op::StashWeights, "StashWeights", "stash_weights"},
    {Op::RestoreWeights, "RestoreWeights", "restore_weights"},
    {Op::FreeWeights, "FreeWeights", "free_weights"},
};

const OpNames &names(Op op) {
  for (const OpNames &entry : kOps)
    if (entry.op == op)
      return entry;
  return kOps[0];
}

// The kinds' table: a kind's name (in options and schedule.json) and which
// commands take it. A new kind is a row here (docs/EXTENDING.md).
struct KindNames {
  ScheduleKind kind;
  const char *name;
  /// buildSchedule builds it (all but custom).
  bool built;
  /// The planner prices it (planner::ScheduleKind).
  bool planned;
};

const KindNames kKinds[] = {
    {ScheduleKind::GPipe, "gpipe", true, true},
    {ScheduleKind::OneFOneB, "1f1b", true, true},
    {ScheduleKind::PipeDream, "pipedream", true, true},
    {ScheduleKind::Interleaved, "interleaved", true, false},
    {ScheduleKind::ZeroBubbleH1, "zb-h1", true, false},
    {ScheduleKind::ZeroBubble2P, "zb-2p", true, false},
    {ScheduleKind::Custom, "custom", false, false},
};

} // namespace

const char *kindName(ScheduleKind kind) {
  for (const KindNames &entry : kKinds)
    if (entry.kind == kind)
      return entry.name;
  return "custom";
}

bool parseKind(const std::string &name, ScheduleKind &kind) {
  for (const KindNames &entry : kKinds) {
    if (name == entry.name) {
      kind = entry.kind;
      return true;
    }
  }
  return false;
}

bool isSynchronous(ScheduleKind kind) {
  return kind != ScheduleKind::PipeDream && kind != ScheduleKind::Custom;
}

bool splitsBackward(ScheduleKind kind) {
  return kind == ScheduleKind::ZeroBubbleH1 ||
         kind == ScheduleKind::ZeroBubble2P;
}

bool takes(KindUse use, ScheduleKind kind) {
  for (const KindNames &entry : kKinds)
    if (entry.kind == kind)
      return use == KindUse::Build ? entry.built : entry.planned;
  return false;
}

std::vector<ScheduleKind> kindsFor(KindUse use) {
  std::vector<ScheduleKind> kinds;
  for (const KindNames &entry : kKinds)
    if (takes(use, entry.kind))
      kinds.push_back(entry.kind);
  return kinds;
}

std::string joinKindNames(const std::vector<ScheduleKind> &kinds) {
  std::string text;
  for (size_t i = 0; i < kinds.size(); ++i)
    text += std::string(i == 0                  ? ""
                        : i + 1 == kinds.size() ? " or "
                                                : ", ") +
            kindName(kinds[i]);
  return text;
}

const char *opName(Op op) { return names(op).name; }
const char *opJsonName(Op op) { return names(op).json; }

bool parseOpJsonName(const std::string &name, Op &op) {
  for (const OpNames &entry : kOps) {
    if (name == entry.json) {
      op = entry.op;
      return true;
    }
  }
  return false;
}

const char *payloadName(Payload p) {
  switch (p) {
  case Payload::Activation:
    return "act";
  case Payload::Gradient:
    return "grad";
  case Payload::None:
    break;
  }
  return "none";
}

bool isCompute(Op op) {
  return op == Op::Forward || op == Op::Backward || op == Op::BackwardInput ||
         op == Op::BackwardWeight;
}

bool isTransfer(Op op) {
  return op == Op::SendStart || op == Op::SendFinish || op == Op::RecvStart ||
         op == Op::RecvFinish;
}

bool Instruction::operator==(const Instruction &other) const {
  return op == other.op && mb == other.mb && chunk == other.chunk &&
         peer == other.peer && tag == other.tag && what == other.what &&
         bytes == other.bytes && version == other.version;
}

std::string describe(const Instruction &inst, int numChunks) {
  std::ostringstream os;
  os << opName(inst.op);
  if (isTransfer(inst.op))
    os << ' ' << payloadName(inst.what);
  if (inst.mb >= 0)
    os << " mb " << inst.mb;
  bool versionOp = inst.op == Op::StashWeights ||
                   inst.op == Op::RestoreWeights || inst.op == Op::FreeWeights;
  if (numChunks > 1 && (inst.mb >= 0 || versionOp || inst.op == Op::AllReduce))
    os << " chunk " << inst.chunk;
  if (inst.version >= 0)
    os << (versionOp ? " version " : " weights v") << inst.version;
  if (inst.op == Op::SendStart || inst.op == Op::SendFinish)
    os << " to rank " << inst.peer;
  else if (inst.op == Op::RecvStart || inst.op == Op::RecvFinish)
    os << " from rank " << inst.peer;
  return os.str();
}

size_t Schedule::numInstructions() const {
  size_t total = 0;
  for (const auto &program : programs)
    total += program.size();
  return total;
}

double StageInfo::computeMs(Op op) const {
  switch (op) {
  case Op::Forward:
    return forward;
  case Op::Backward:
    return backwardInput + backwardWeight;
  case Op::BackwardInput:
    return backwardInput;
  case Op::BackwardWeight:
    return backwardWeight;
  default:
    return 0;
  }
}

const char *reduceName(ReduceMode mode) {
  return mode == ReduceMode::PartialReduce ? "preduce" : "allreduce";
}

bool parseReduce(const std::string &name, ReduceMode &mode) {
  for (ReduceMode m : {ReduceMode::AllReduce, ReduceMode::PartialReduce})
    if (name == reduceName(m)) {
      mode = m;
      return true;
    }
  return false;
}

bool Schedule::hasReplicas() const {
  for (int r : replicas)
    if (r != 1)
      return true;
  return false;
}

int Schedule::firstRankOf(int stage) const {
  if (replicas.empty())
    return stage;
  int first = 0;
  for (int s = 0; s < stage; ++s)
    first += replicas[s];
  return first;
}

int Schedule::stageOf(int rank) const {
  if (replicas.empty())
    return rank;
  int stage = 0, end = replicas.front();
  while (rank >= end && stage + 1 < static_cast<int>(replicas.size()))
    end += replicas[++stage];
  return stage;
}

std::string Schedule::checkLayout() const {
  if (ranks < 1 || microbatches < 1 || chunks < 1)
    return "ranks, microbatches and chunks must be positive";
  // Every microbatch takes two message tags per virtual stage, below
  // kScheduleTagLimit; that also bounds what a schedule allocates per stage
  // (a schedule.json claiming 55555554 ranks asked for gigabytes).
  int64_t stages = replicas.empty() ? ranks : int64_t(replicas.size());
  if (stages * chunks > kScheduleTagLimit / 2 ||
      int64_t(microbatches) * stages * chunks > maxMicrobatches(1))
    return std::to_string(microbatches) + " microbatches on " +
           std::to_string(stages) + " stages of " + std::to_string(chunks) +
           " chunks need more message tags than the " +
           std::to_string(kScheduleTagLimit) + " the runtime has";
  // A replica that falls behind skips steps (docs/RUNTIME.md), which the
  // other stages of a pipeline, waiting for its microbatches, cannot do.
  if (reduce == ReduceMode::PartialReduce &&
      (replicas.size() != 1 || replicas[0] < 2))
    return "preduce needs one pipeline stage with replicas (--replicas R, "
           "R > 1): a replica that falls behind skips steps, which the "
           "stages it would feed cannot";
  if (shardOptimizer && reduce == ReduceMode::PartialReduce)
    return "shard_optimizer cannot be combined with preduce, whose replicas "
           "adopt replica 0's weights instead of updating their own shares";
  if (shardOptimizer && !hasReplicas())
    return "shard_optimizer splits a replicated stage's optimizer state, "
           "but no stage has replicas";
  if (replicas.empty())
    return "";
  int64_t total = 0;
  for (size_t s = 0; s < replicas.size(); ++s) {
    if (replicas[s] < 1)
      return "stage " + std::to_string(s) + " has " +
             std::to_string(replicas[s]) + " replicas";
    total += replicas[s];
  }
  if (total != ranks)
    return "the replicas per stage add up to " + std::to_string(total) +
           " ranks, not " + std::to_string(ranks);
  if (chunks > 1 && hasReplicas())
    return "replicated stages cannot also hold several model chunks";
  return "";
}

int32_t messageTag(Payload what, int mb, int vstage, int numVirtualStages) {
  return (mb * numVirtualStages + vstage) * 2 +
         (what == Payload::Gradient ? 1 : 0);
}

//===----------------------------------------------------------------------===//
// schedule.json
//===----------------------------------------------------------------------===//

using nlohmann::json;

std::string toJson(const Schedule &schedule, int indent) {
  json root;
  root["format"] = "dpc-schedule";
  root["version"] = 1;
  root["kind"] = kindName(schedule.kind);
  root["ranks"] = schedule.ranks;
  root["microbatches"] = schedule.microbatches;
  root["chunks"] = schedule.chunks;
  if (schedule.hasReplicas())
    root["replicas"] = schedule.replicas;
  if (schedule.reduce != ReduceMode::AllReduce)
    root["reduce"] = reduceName(schedule.reduce);
  if (schedule.shardOptimizer)
    root["shard_optimizer"] = true;
  root["vertical_sync"] = schedule.verticalSync;
  if (schedule.messageLatency > 0)
    root["message_latency_ms"] = schedule.messageLatency;
  if (schedule.cores > 0)
    root["cores"] = schedule.cores;
  if (schedule.wakeLatency > 0)
    root["wake_latency_ms"] = schedule.wakeLatency;
  json stages = json::array();
  for (size_t vs = 0; vs < schedule.stages.size(); ++vs) {
    const StageInfo &s = schedule.stages[vs];
    stages.push_back({{"id", vs},
                      {"rank", schedule.firstRankOf(vs % schedule.numStages())},
                      {"chunk", schedule.chunkOf(vs)},
                      {"forward_ms", s.forward},
                      {"backward_input_ms", s.backwardInput},
                      {"backward_weight_ms", s.backwardWeight},
                      {"param_bytes", s.paramBytes},
                      {"weight_bytes", s.weightBytes},
                      {"activation_bytes", s.activationBytes},
                      {"backward_stash_bytes", s.backwardStashBytes},
                      {"output_bytes", s.outputBytes},
                      {"input_bytes", s.inputBytes}});
  }
  root["stages"] = std::move(stages);
  json programs = json::array();
  for (size_t rank = 0; rank < schedule.programs.size(); ++rank) {
    json insts = json::array();
    for (const Instruction &inst : schedule.programs[rank]) {
      // Only the fields an op uses, so that the file stays readable.
      json j;
      j["op"] = opJsonName(inst.op);
      if (inst.mb >= 0)
        j["mb"] = inst.mb;
      if (inst.chunk != 0)
        j["chunk"] = inst.chunk;
      if (isTransfer(inst.op)) {
        j["what"] = payloadName(inst.what);
        j["peer"] = inst.peer;
        j["tag"] = inst.tag;
      }
      if (inst.bytes != 0)
        j["bytes"] = inst.bytes;
      if (inst.version >= 0)
        j["version"] = inst.version;
      insts.push_back(std::move(j));
    }
    programs.push_back({{"rank", rank}, {"instructions", std::move(insts)}});
  }
  root["programs"] = std::move(programs);
  return root.dump(indent);
}

namespace {

/// A value of the wrong type or out of range for its field. nlohmann's
/// get<int>() would convert 3e83 or 5e9 anyway (undefined behaviour for a
/// float out of range, silent wrap-around for an integer).
struct BadValue {
  std::string message;
};

template <typename T> T checked(const json &value, const char *key) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    bool fits = false;
    if (value.is_number_unsigned())
      fits = value.get<uint64_t>() <=
             static_cast<uint64_t>(std::numeric_limits<T>::max());
    else if (value.is_number_integer())
      fits = value.get<int64_t>() >=
                 static_cast<int64_t>(std::numeric_limits<T>::min()) &&
             (std::is_unsigned_v<T> ||
              value.get<int64_t>() <=
                  static_cast<int64_t>(std::numeric_limits<T>::max()));
    if (!fits)
      throw BadValue{std::string("\"") + key + "\" must be an integer from " +
                     std::to_string(std::numeric_limits<T>::min()) + " to " +
                     std::to_string(std::numeric_limits<T>::max()) + ", got " +
                     value.dump()};
    return value.get<T>();
  } else {
    return value.get<T>(); // strings, bools, doubles: type-checked by json
  }
}

template <typename T> T get(const json &j, const char *key, T fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null())
    return fallback;
  return checked<T>(*it, key);
}

/// The fields of stage `id` of a "stages" array (schedule.json's, or a
/// dpc-schedule cost file's) on top of `info`'s defaults; throws BadValue
/// for a field of the wrong type or range.
std::string readStage(const json &s, size_t id, StageInfo &info) {
  info.forward = get<double>(s, "forward_ms", info.forward);
  info.backwardInput = get<double>(s, "backward_input_ms", info.backwardInput);
  info.backwardWeight =
      get<double>(s, "backward_weight_ms", info.backwardWeight);
  info.paramBytes = get<int64_t>(s, "param_bytes", 0);
  info.weightBytes = get<int64_t>(s, "weight_bytes", 0);
  info.activationBytes = get<int64_t>(s, "activation_bytes", 0);
  info.backwardStashBytes = get<int64_t>(s, "backward_stash_bytes", 0);
  if (info.backwardStashBytes < 0 ||
      info.backwardStashBytes > info.activationBytes)
    return "stage " + std::to_string(id) +
           ": \"backward_stash_bytes\" must be between 0 and its "
           "\"activation_bytes\"";
  info.outputBytes = get<int64_t>(s, "output_bytes", 0);
  info.inputBytes = get<int64_t>(s, "input_bytes", 0);
  return "";
}

std::string parseInstruction(const json &j, Instruction &inst) {
  if (!j.is_object() || !j.contains("op") || !j["op"].is_string())
    return "instruction without an \"op\" string";
  std::string name = j["op"].get<std::string>();
  if (!parseOpJsonName(name, inst.op))
    return "unknown op '" + name + "'";
  inst.mb = get<int32_t>(j, "mb", -1);
  inst.chunk = get<int32_t>(j, "chunk", 0);
  inst.peer = get<int32_t>(j, "peer", -1);
  inst.tag = get<int32_t>(j, "tag", -1);
  inst.bytes = get<int64_t>(j, "bytes", 0);
  inst.version = get<int32_t>(j, "version", -1);
  std::string what = get<std::string>(j, "what", "none");
  if (what == "act")
    inst.what = Payload::Activation;
  else if (what == "grad")
    inst.what = Payload::Gradient;
  else if (what == "none")
    inst.what = Payload::None;
  else
    return "unknown payload '" + what + "' (expects act or grad)";
  if (isTransfer(inst.op) && inst.what == Payload::None)
    return std::string(opName(inst.op)) + " without \"what\"";
  return "";
}

/// fromJson's reading into `schedule`; "" or what is wrong.
std::string parseSchedule(const std::string &text, Schedule &schedule) {
  json root;
  try {
    root = json::parse(text);
  } catch (const json::exception &e) {
    return std::string("invalid JSON: ") + e.what();
  }
  try {
    if (!root.is_object())
      return "schedule.json must hold an object";
    std::string kind = get<std::string>(root, "kind", "custom");
    if (!parseKind(kind, schedule.kind))
      return "unknown schedule kind '" + kind + "'";
    schedule.ranks = get<int>(root, "ranks", 0);
    schedule.microbatches = get<int>(root, "microbatches", 0);
    schedule.chunks = get<int>(root, "chunks", 1);
    schedule.replicas.clear();
    if (root.contains("replicas")) {
      const json &replicas = root["replicas"];
      // An array per stage; a single number (older files) means the same
      // count everywhere, and 1 means none.
      if (replicas.is_array())
        for (const json &r : replicas)
          schedule.replicas.push_back(checked<int>(r, "replicas"));
      else if (int r = checked<int>(replicas, "replicas"); r != 1)
        return "\"replicas\" must list the ranks of every stage, got " +
               std::to_string(r);
    }
    std::string reduce = get<std::string>(root, "reduce", "allreduce");
    if (!parseReduce(reduce, schedule.reduce))
      return "unknown reduce '" + reduce + "' (allreduce or preduce)";
    schedule.shardOptimizer = get<bool>(root, "shard_optimizer", false);
    schedule.verticalSync = get<bool>(root, "vertical_sync", false);
    schedule.messageLatency = get<double>(root, "message_latency_ms", 0.0);
    if (!(schedule.messageLatency >= 0) ||
        !std::isfinite(schedule.messageLatency))
      return "\"message_latency_ms\" must be milliseconds >= 0";
    schedule.cores = get<int>(root, "cores", 0);
    if (schedule.cores < 0)
      return "\"cores\" must be a count >= 0";
    schedule.wakeLatency = get<double>(root, "wake_latency_ms", 0.0);
    if (!(schedule.wakeLatency >= 0) || !std::isfinite(schedule.wakeLatency))
      return "\"wake_latency_ms\" must be milliseconds >= 0";
    if (std::string problem = schedule.checkLayout(); !problem.empty())
      return problem;
    schedule.stages.assign(schedule.numVirtualStages(), StageInfo());
    if (root.contains("stages")) {
      const json &stages = root["stages"];
      if (!stages.is_array())
        return "\"stages\" must be an array";
      for (size_t i = 0; i < stages.size(); ++i) {
        const json &s = stages[i];
        size_t id = get<size_t>(s, "id", i);
        if (id >= schedule.stages.size())
          return "stage id " + std::to_string(id) + " out of range";
        if (std::string error = readStage(s, id, schedule.stages[id]);
            !error.empty())
          return error;
      }
    }
    if (!root.contains("programs") || !root["programs"].is_array())
      return "missing \"programs\" array";
    const json &programs = root["programs"];
    schedule.programs.assign(schedule.ranks, {});
    for (size_t i = 0; i < programs.size(); ++i) {
      const json &program = programs[i];
      int rank = get<int>(program, "rank", static_cast<int>(i));
      if (rank < 0 || rank >= schedule.ranks)
        return "program for rank " + std::to_string(rank) +
               " but the schedule has " + std::to_string(schedule.ranks) +
               " ranks";
      if (!program.contains("instructions") ||
          !program["instructions"].is_array())
        return "program of rank " + std::to_string(rank) +
               " has no \"instructions\" array";
      auto &stream = schedule.programs[rank];
      for (const json &j : program["instructions"]) {
        Instruction inst;
        std::string error;
        try {
          error = parseInstruction(j, inst);
        } catch (const BadValue &e) {
          error = e.message;
        }
        if (!error.empty())
          return "rank " + std::to_string(rank) + ": instruction " +
                 std::to_string(stream.size()) + ": " + error;
        stream.push_back(inst);
      }
    }
  } catch (const json::exception &e) {
    return std::string("malformed schedule.json: ") + e.what();
  } catch (const BadValue &e) {
    return e.message;
  }
  return "";
}

/// stagesFromJson's reading into `stages`; "" or what is wrong.
std::string parseStages(const std::string &text,
                        std::vector<StageInfo> &stages) {
  json root;
  try {
    root = json::parse(text);
  } catch (const json::exception &e) {
    return std::string("invalid JSON: ") + e.what();
  }
  if (!root.is_object() || !root.contains("stages") ||
      !root["stages"].is_array())
    return "missing \"stages\" array";
  stages.clear();
  try {
    for (const json &s : root["stages"]) {
      if (!s.is_object())
        return "stage " + std::to_string(stages.size()) + " is not an object";
      StageInfo info;
      if (std::string error = readStage(s, stages.size(), info); !error.empty())
        return error;
      stages.push_back(info);
    }
  } catch (const BadValue &e) {
    return "stage " + std::to_string(stages.size()) + ": " + e.message;
  } catch (const json::exception &e) {
    return "stage " + std::to_string(stages.size()) + ": " + e.what();
  }
  return "";
}

} // namespace

Schedule fromJson(const std::string &text) {
  Schedule schedule;
  if (std::string error = parseSchedule(text, schedule); !error.empty())
    throw Error(error);
  return schedule;
}

std::vector<StageInfo> stagesFromJson(const std::string &text) {
  std::vector<StageInfo> stages;
  if (std::string error = parseStages(text, stages); !error.empty())
    throw Error(error);
  return stages;
}

Schedule readScheduleFile(const std::string &path) {
  std::ifstream in(path);
  if (!in)
    throw Error("cannot open '" + path + "'");
  std::stringstream buffer;
  buffer << in.rdbuf();
  Schedule schedule;
  if (std::string error = parseSchedule(buffer.str(), schedule); !error.empty())
    throw Error(path + ": " + error);
  return schedule;
}

} // namespace dpc::schedule

//===- Manifest.cpp - Writing, parsing and checking the rank manifest -----===//

#include "dpc/runtime/Manifest.h"

#include "dpc/runtime/Error.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

namespace dpc::runtime {

using nlohmann::json;

static int64_t product(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

int64_t ManifestTensor::elements() const { return product(shape); }
int64_t ManifestParam::elements() const { return product(shape); }

const char *transferKindName(TransferKind kind) {
  return kind == TransferKind::Activation ? "act" : "grad";
}

/// Every optimizer, for parsing names and recognising state tensors.
constexpr Optimizer kOptimizers[] = {Optimizer::Sgd, Optimizer::Adam,
                                     Optimizer::AdamW};

const char *optimizerName(Optimizer optimizer) {
  switch (optimizer) {
  case Optimizer::Adam:
    return "adam";
  case Optimizer::AdamW:
    return "adamw";
  case Optimizer::Sgd:
    break;
  }
  return "sgd";
}

const std::vector<std::string> &optimizerStateNames(Optimizer optimizer) {
  static const std::vector<std::string> sgd = {"momentum"};
  static const std::vector<std::string> adam = {"exp_avg", "exp_avg_sq"};
  return optimizer == Optimizer::Sgd ? sgd : adam;
}

bool isOptimizerState(const std::string &tensor) {
  for (Optimizer optimizer : kOptimizers)
    for (const std::string &state : optimizerStateNames(optimizer))
      if (tensor.rfind(state + ".", 0) == 0)
        return true;
  return false;
}

bool RankManifest::hasSegment(const std::string &name) const {
  for (const std::string &s : segments)
    if (s == name)
      return true;
  return false;
}

const ManifestParam *RankManifest::findParam(int64_t id) const {
  for (const ManifestParam &p : params)
    if (p.id == id)
      return &p;
  return nullptr;
}

static const ManifestTransfer *
findTransfer(const std::vector<ManifestTransfer> &list, int64_t tag) {
  for (const ManifestTransfer &t : list)
    if (t.tag == tag)
      return &t;
  return nullptr;
}

const ManifestTransfer *RankManifest::findSend(int64_t tag) const {
  return findTransfer(sends, tag);
}
const ManifestTransfer *RankManifest::findRecv(int64_t tag) const {
  return findTransfer(recvs, tag);
}

const ManifestStash *RankManifest::findStash(int64_t key) const {
  for (const ManifestStash &s : stashes)
    if (s.key == key)
      return &s;
  return nullptr;
}

namespace {

/// Reads fields with error messages that carry the JSON path of the field,
/// so that a compiler bug in one entry is found without reading the whole
/// document.
class Reader {
public:
  explicit Reader(std::string name)
      : prefix(std::move(name) + ": manifest: ") {}

  [[noreturn]] void fail(const std::string &path, const std::string &what) {
    throw Error(prefix + (path.empty() ? "" : path + ": ") + what);
  }

  const json &field(const json &object, const std::string &path,
                    const char *key) {
    auto it = object.find(key);
    if (it == object.end())
      fail(path + key, "missing");
    return *it;
  }

  int64_t integer(const json &object, const std::string &path, const char *key,
                  int64_t min) {
    const json &v = field(object, path, key);
    if (!v.is_number_integer())
      fail(path + key, "expected an integer");
    int64_t x = v.get<int64_t>();
    if (x < min)
      fail(path + key, "expected an integer >= " + std::to_string(min) +
                           ", got " + std::to_string(x));
    return x;
  }

  std::string string(const json &object, const std::string &path,
                     const char *key) {
    const json &v = field(object, path, key);
    if (!v.is_string() || v.get<std::string>().empty())
      fail(path + key, "expected a non-empty string");
    return v.get<std::string>();
  }

  /// Batched tensors have at least one dimension; a parameter may be a
  /// scalar (`allowScalar`, shape []).
  std::vector<int64_t> shape(const json &v, const std::string &path,
                             bool allowScalar = false) {
    const char *expected =
        allowScalar ? "expected an array of positive integers"
                    : "expected a non-empty array of positive integers";
    if (!v.is_array() || (v.empty() && !allowScalar))
      fail(path, expected);
    std::vector<int64_t> dims;
    for (const json &d : v) {
      if (!d.is_number_integer() || d.get<int64_t>() <= 0)
        fail(path, expected);
      dims.push_back(d.get<int64_t>());
    }
    return dims;
  }

  double number(const json &object, const std::string &path, const char *key) {
    const json &v = field(object, path, key);
    if (!v.is_number() || !std::isfinite(v.get<double>()) ||
        v.get<double>() < 0)
      fail(path + key, "expected a finite number >= 0");
    return v.get<double>();
  }

  const json &array(const json &object, const std::string &path,
                    const char *key) {
    const json &v = field(object, path, key);
    if (!v.is_array())
      fail(path + key, "expected an array");
    return v;
  }

  /// `{"shape": [...]}` or null.
  std::optional<std::vector<int64_t>>
  optionalShape(const json &object, const std::string &path, const char *key) {
    auto it = object.find(key);
    if (it == object.end() || it->is_null())
      return std::nullopt;
    if (!it->is_object())
      fail(path + key, "expected an object with \"shape\" or null");
    return shape(field(*it, path + key + ".", "shape"), path + key + ".shape");
  }

private:
  std::string prefix;
};

std::string at(const char *list, size_t i) {
  return std::string(list) + "[" + std::to_string(i) + "].";
}

/// The "sends" or "recvs" (`key`) of `root`, the manifest or one of its
/// buckets (`base`, its path in messages).
std::vector<ManifestTransfer> readTransfers(Reader &r, const json &root,
                                            const std::string &base,
                                            const char *key,
                                            const RankManifest &m) {
  std::vector<ManifestTransfer> list;
  std::set<int64_t> tags;
  const json &entries = r.array(root, base, key);
  for (size_t i = 0; i < entries.size(); ++i) {
    std::string path = base + at(key, i);
    const json &e = entries[i];
    if (!e.is_object())
      r.fail(path.substr(0, path.size() - 1), "expected an object");
    ManifestTransfer t;
    t.tag = r.integer(e, path, "tag", 0);
    t.stage = e.contains("stage") ? r.integer(e, path, "stage", 0) : m.stage;
    t.peerStage = r.integer(e, path, "peer_stage", 0);
    t.bytes = r.integer(e, path, "bytes", 1);
    if (auto wire = e.find("wire"); wire != e.end()) {
      std::string type = wire->is_string() ? wire->get<std::string>() : "";
      if (type != "bf16" && type != "f32")
        r.fail(path + "wire", "expected \"bf16\" or \"f32\"");
      t.bf16 = type == "bf16";
      if (t.bf16 && t.bytes % 4 != 0)
        r.fail(path + "wire", "bf16 packs f32 tensors, but bytes " +
                                  std::to_string(t.bytes) +
                                  " is not a multiple of 4");
    }
    std::string what = r.string(e, path, "what");
    if (what == "act")
      t.what = TransferKind::Activation;
    else if (what == "grad")
      t.what = TransferKind::Gradient;
    else
      r.fail(path + "what",
             "expected \"act\" or \"grad\", got \"" + what + "\"");
    if (t.stage >= m.numVirtualStages() || t.stage % m.stages != m.stage)
      r.fail(path + "stage", "stage " + std::to_string(t.stage) +
                                 " is not a stage of rank " +
                                 std::to_string(m.rank));
    if (t.peerStage >= m.numVirtualStages() || t.peerStage == t.stage)
      r.fail(path + "peer_stage", "stage " + std::to_string(t.peerStage) +
                                      " is not another stage of the " +
                                      std::to_string(m.numVirtualStages()) +
                                      "-stage pipeline");
    // Activations flow to later stages and gradients to earlier ones; which
    // end is "later" depends on whether this is a send or a receive.
    bool towardsLater =
        (t.peerStage > t.stage) == (std::string(key) == "sends");
    if (towardsLater != (t.what == TransferKind::Activation))
      r.fail(path + "what",
             std::string("\"") + what + "\" cannot " +
                 (std::string(key) == "sends" ? "go to" : "come from") +
                 " stage " + std::to_string(t.peerStage) +
                 " (activations flow forward, gradients back)");
    if (!tags.insert(t.tag).second)
      r.fail(path + "tag", "tag " + std::to_string(t.tag) + " appears twice");
    list.push_back(t);
  }
  return list;
}

/// The "stashes" of the manifest or of one of its buckets (`base`).
std::vector<ManifestStash> readStashes(Reader &r, const json &root,
                                       const std::string &base,
                                       const RankManifest &m) {
  std::vector<ManifestStash> list;
  const json &stashes = r.array(root, base, "stashes");
  std::set<int64_t> keys;
  for (size_t i = 0; i < stashes.size(); ++i) {
    std::string path = base + at("stashes", i);
    ManifestStash s;
    s.key = r.integer(stashes[i], path, "key", 0);
    auto nameIt = stashes[i].find("name");
    if (nameIt != stashes[i].end() && nameIt->is_string())
      s.name = nameIt->get<std::string>();
    s.bytes = r.integer(stashes[i], path, "bytes", 1);
    s.stage = stashes[i].contains("stage")
                  ? r.integer(stashes[i], path, "stage", 0)
                  : m.stage;
    if (s.stage >= m.numVirtualStages() || s.stage % m.stages != m.stage)
      r.fail(path + "stage", "stage " + std::to_string(s.stage) +
                                 " is not a stage of rank " +
                                 std::to_string(m.rank));
    if (!keys.insert(s.key).second)
      r.fail(path + "key", "key " + std::to_string(s.key) + " appears twice");
    list.push_back(s);
  }
  return list;
}

/// Whether two transfer lists carry the same tags between the same stages
/// in the same form, whatever their bytes.
bool sameTransfers(const std::vector<ManifestTransfer> &a,
                   const std::vector<ManifestTransfer> &b) {
  if (a.size() != b.size())
    return false;
  for (const ManifestTransfer &x : a)
    if (std::none_of(b.begin(), b.end(), [&](const ManifestTransfer &y) {
          return x.tag == y.tag && x.stage == y.stage &&
                 x.peerStage == y.peerStage && x.what == y.what &&
                 x.bf16 == y.bf16;
        }))
      return false;
  return true;
}

bool sameStashes(const std::vector<ManifestStash> &a,
                 const std::vector<ManifestStash> &b) {
  if (a.size() != b.size())
    return false;
  for (const ManifestStash &x : a)
    if (std::none_of(b.begin(), b.end(), [&](const ManifestStash &y) {
          return x.key == y.key && x.stage == y.stage;
        }))
      return false;
  return true;
}

std::string formatShape(const std::vector<int64_t> &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

/// The "buckets" of a variable-length build, checked against the top level:
/// the same inputs, labels and output in shapes that start with the
/// bucket's (batch, length), the same transfer tags and stash keys, a cost
/// per virtual stage; sorted by (length, batch), and one of them the top
/// level's own shape.
void readBuckets(Reader &r, const json &root, RankManifest &m) {
  const json &list = r.array(root, "", "buckets");
  if (list.empty())
    r.fail("buckets", "expected at least one bucket");
  int64_t longest = 0;
  for (size_t i = 0; i < list.size(); ++i) {
    std::string path = at("buckets", i);
    const json &e = list[i];
    if (!e.is_object())
      r.fail(path.substr(0, path.size() - 1), "expected an object");
    ManifestBucket b;
    b.batch = r.integer(e, path, "batch", 1);
    b.length = r.integer(e, path, "length", 1);
    auto sized = [&](const std::vector<int64_t> &shape,
                     const std::string &where) {
      if (shape.size() < 2 || shape[0] != b.batch || shape[1] != b.length)
        r.fail(where, "expected [" + std::to_string(b.batch) + ", " +
                          std::to_string(b.length) + ", ...], got " +
                          formatShape(shape));
    };
    auto matching = [&](const char *key, bool here, bool top) {
      if (here != top)
        r.fail(path + key, here ? "present, but not at the top level"
                                : "missing, but present at the top level");
    };
    const json &inputs = r.array(e, path, "inputs");
    if (inputs.size() != m.inputs.size())
      r.fail(path + "inputs", "expected " + std::to_string(m.inputs.size()) +
                                  " inputs, as at the top level, got " +
                                  std::to_string(inputs.size()));
    for (size_t k = 0; k < inputs.size(); ++k) {
      std::string where = path + at("inputs", k);
      ManifestTensor t;
      t.name = r.string(inputs[k], where, "name");
      t.shape = r.shape(r.field(inputs[k], where, "shape"), where + "shape");
      t.integer = m.inputs[k].integer;
      sized(t.shape, where + "shape");
      b.inputs.push_back(t);
    }
    b.labelsShape = r.optionalShape(e, path, "labels");
    matching("labels", b.labelsShape.has_value(), m.labelsShape.has_value());
    if (b.labelsShape)
      sized(*b.labelsShape, path + "labels.shape");
    b.outputShape = r.optionalShape(e, path, "output");
    matching("output", b.outputShape.has_value(), m.outputShape.has_value());
    if (b.outputShape)
      sized(*b.outputShape, path + "output.shape");
    b.sends = readTransfers(r, e, path, "sends", m);
    b.recvs = readTransfers(r, e, path, "recvs", m);
    if (!sameTransfers(b.sends, m.sends) || !sameTransfers(b.recvs, m.recvs))
      r.fail(path + "sends", "the bucket's transfers are not the top level's "
                             "(the same tags between the same stages)");
    b.stashes = readStashes(r, e, path, m);
    if (!sameStashes(b.stashes, m.stashes))
      r.fail(path + "stashes",
             "the bucket's stash keys are not the top level's");
    const json &costs = r.array(e, path, "stage_costs");
    if (costs.size() != size_t(m.numVirtualStages()))
      r.fail(path + "stage_costs", "expected one entry per stage (" +
                                       std::to_string(m.numVirtualStages()) +
                                       "), got " +
                                       std::to_string(costs.size()));
    for (size_t k = 0; k < costs.size(); ++k) {
      std::string where = path + at("stage_costs", k);
      BucketStageCost c;
      c.forward = r.number(costs[k], where, "forward");
      c.backwardInput = r.number(costs[k], where, "backward_input");
      c.backwardWeight = r.number(costs[k], where, "backward_weight");
      c.activationBytes = r.integer(costs[k], where, "activation_bytes", 0);
      c.outputBytes = r.integer(costs[k], where, "output_bytes", 0);
      b.stageCosts.push_back(c);
    }
    if (!m.buckets.empty() &&
        std::make_pair(m.buckets.back().length, m.buckets.back().batch) >=
            std::make_pair(b.length, b.batch))
      r.fail(path.substr(0, path.size() - 1),
             "buckets must be sorted by (length, batch), each shape once");
    longest = std::max(longest, b.length);
    m.buckets.push_back(std::move(b));
  }
  for (size_t i = 0; i < m.buckets.size(); ++i)
    if (m.buckets[i].batch == m.microbatchSize &&
        m.buckets[i].length == longest)
      m.topBucket = int(i);
  if (m.topBucket < 0)
    r.fail("buckets", "no bucket holds microbatch_size (" +
                          std::to_string(m.microbatchSize) +
                          ") sequences of the longest length (" +
                          std::to_string(longest) + "), the top level's shape");
}

/// The first dimension of a batched shape is the microbatch size.
void checkBatchFirst(Reader &r, const RankManifest &m,
                     const std::vector<int64_t> &shape,
                     const std::string &path) {
  if (shape[0] != m.microbatchSize)
    r.fail(path, "the first dimension is " + std::to_string(shape[0]) +
                     " but microbatch_size is " +
                     std::to_string(m.microbatchSize));
}

/// The document as JSON, checked to be a version-1 rank manifest.
json readDocument(Reader &r, const std::string &text, const std::string &name) {
  json root;
  try {
    root = json::parse(text);
  } catch (const json::exception &e) {
    throw Error(name + ": manifest: not valid JSON: " + e.what());
  }
  if (!root.is_object())
    r.fail("", "expected a JSON object");
  std::string format = r.string(root, "", "format");
  if (format != "dpc-rank")
    r.fail("format", "expected \"dpc-rank\", got \"" + format + "\"");
  int64_t version = r.integer(root, "", "version", 0);
  if (version != 1)
    r.fail("version", "unsupported version " + std::to_string(version) +
                          " (this runtime reads version 1)");
  return root;
}

/// Which rank and stage of which pipeline, its schedule and microbatch size.
void readPlace(Reader &r, const json &root, RankManifest &m) {
  m.rank = static_cast<int>(r.integer(root, "", "rank", 0));
  m.stages = static_cast<int>(r.integer(root, "", "stages", 1));
  m.stage = static_cast<int>(r.integer(root, "", "stage", 0));
  if (root.contains("chunks"))
    m.chunks = static_cast<int>(r.integer(root, "", "chunks", 1));
  if (m.stage >= m.stages)
    r.fail("stage", "stage " + std::to_string(m.stage) + " of a " +
                        std::to_string(m.stages) + "-stage pipeline");
  m.schedule = r.string(root, "", "schedule");
  m.microbatchSize = r.integer(root, "", "microbatch_size", 1);
}

/// The data inputs the first stage reads.
void readInputs(Reader &r, const json &root, RankManifest &m) {
  const json &inputs = r.array(root, "", "inputs");
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::string path = at("inputs", i);
    ManifestTensor t;
    t.name = r.string(inputs[i], path, "name");
    t.shape = r.shape(r.field(inputs[i], path, "shape"), path + "shape");
    checkBatchFirst(r, m, t.shape, path + "shape");
    if (auto it = inputs[i].find("dtype"); it != inputs[i].end()) {
      std::string dtype = it->is_string() ? it->get<std::string>() : "";
      if (dtype != "f32" && dtype != "i64")
        r.fail(path + "dtype", "expected \"f32\" or \"i64\"");
      t.integer = dtype == "i64";
    }
    m.inputs.push_back(t);
  }
  if (!m.inputs.empty() && !m.isFirstStage())
    r.fail("inputs", "only the first stage reads data inputs");
  if (m.isFirstStage() && m.inputs.empty())
    r.fail("inputs", "the first stage must read at least one data input");
}

/// The labels the last stage reads: shape, dtype and ignored index.
void readLabels(Reader &r, const json &root, RankManifest &m) {
  m.labelsShape = r.optionalShape(root, "", "labels");
  if (!m.labelsShape)
    return;
  if (!m.isLastStage())
    r.fail("labels", "only the last stage reads labels");
  if (m.labelsShape->empty())
    r.fail("labels.shape", "expected [microbatch_size, positions...]");
  checkBatchFirst(r, m, *m.labelsShape, "labels.shape");
  const json &labels = root.at("labels");
  if (auto it = labels.find("dtype"); it != labels.end()) {
    std::string dtype = it->is_string() ? it->get<std::string>() : "";
    if (dtype != "f32" && dtype != "i64")
      r.fail("labels.dtype", "expected \"f32\" or \"i64\"");
    m.floatLabels = dtype == "f32";
  }
  if (labels.contains("ignore_index"))
    m.ignoreIndex = r.integer(labels, "labels.", "ignore_index",
                              std::numeric_limits<int64_t>::min());
  if (m.ignoreIndex && m.floatLabels)
    r.fail("labels.ignore_index", "applies to class labels (\"i64\"), not "
                                  "float targets");
}

/// What kind of build: inference or training, its optimizer and precision.
void readBuildKind(Reader &r, const json &root, RankManifest &m) {
  if (auto it = root.find("inference"); it != root.end()) {
    if (!it->is_boolean())
      r.fail("inference", "expected true or false");
    m.inference = it->get<bool>();
  }
  if (auto it = root.find("optimizer"); it != root.end()) {
    std::string name = it->is_string() ? it->get<std::string>() : "";
    bool known = false;
    for (Optimizer optimizer : kOptimizers)
      if (name == optimizerName(optimizer)) {
        m.optimizer = optimizer;
        m.namesOptimizer = true;
        known = true;
      }
    if (!known)
      r.fail("optimizer", "expected \"sgd\", \"adam\" or \"adamw\"");
  }
  if (auto it = root.find("precision"); it != root.end()) {
    std::string name = it->is_string() ? it->get<std::string>() : "";
    if (name != "fp32" && name != "bf16")
      r.fail("precision", "expected \"fp32\" or \"bf16\"");
    m.bf16 = name == "bf16";
  }
  if (m.inference && m.labelsShape)
    r.fail("labels", "an inference build reads no labels");
}

/// The output the last stage reports.
void readOutput(Reader &r, const json &root, RankManifest &m) {
  m.outputShape = r.optionalShape(root, "", "output");
  if (m.outputShape) {
    if (!m.isLastStage())
      r.fail("output", "only the last stage reports an output");
    // A model's output need not be batch-major (Flatten with axis 0); the
    // loss of a training build needs it to be.
    if (!m.inference)
      checkBatchFirst(r, m, *m.outputShape, "output.shape");
  }
}

/// The stage's parameters and the weights file that holds them.
void readParams(Reader &r, const json &root, RankManifest &m) {
  const json &params = r.array(root, "", "params");
  std::set<int64_t> ids;
  std::set<std::string> names;
  for (size_t i = 0; i < params.size(); ++i) {
    std::string path = at("params", i);
    ManifestParam p;
    p.id = r.integer(params[i], path, "id", 0);
    p.name = r.string(params[i], path, "name");
    p.shape = r.shape(r.field(params[i], path, "shape"), path + "shape",
                      /*allowScalar=*/true);
    if (!ids.insert(p.id).second)
      r.fail(path + "id", "id " + std::to_string(p.id) + " appears twice");
    if (!names.insert(p.name).second)
      r.fail(path + "name", "'" + p.name + "' appears twice");
    m.params.push_back(p);
  }
  // A stage without parameters needs no weights file.
  auto weights = root.find("weights");
  if (weights != root.end() && !weights->is_null())
    m.weights = r.string(root, "", "weights");
  else if (!m.params.empty())
    r.fail("weights", "missing, but the stage has parameters");
}

/// The code segments the rank's object defines.
void readSegments(Reader &r, const json &root, RankManifest &m) {
  static const char *const kSegments[] = {
      "forward", "backward", "backward_input", "backward_weight", "optimizer"};
  const json &segments = r.array(root, "", "segments");
  for (size_t i = 0; i < segments.size(); ++i) {
    std::string path = "segments[" + std::to_string(i) + "]";
    if (!segments[i].is_string())
      r.fail(path, "expected a string");
    std::string s = segments[i].get<std::string>();
    bool known = false;
    for (const char *k : kSegments)
      known |= s == k;
    if (!known)
      r.fail(path, "unknown segment \"" + s +
                       "\" (expected forward, backward, backward_input, "
                       "backward_weight or optimizer)");
    m.segments.push_back(s);
  }
  if (!m.hasSegment("forward") || !m.hasSegment("optimizer"))
    r.fail("segments", "must list at least \"forward\" and \"optimizer\"");
}

/// The ops of a timing build (dpc profile), ids in order.
void readProfile(Reader &r, const json &root, RankManifest &m) {
  const json &ops = r.array(root, "", "profile");
  for (size_t i = 0; i < ops.size(); ++i) {
    std::string path = at("profile", i);
    ManifestProfileOp op;
    op.id = r.integer(ops[i], path, "id", 0);
    op.node = r.string(ops[i], path, "node");
    op.phase = r.string(ops[i], path, "phase");
    if (ops[i].contains("share"))
      op.share = r.number(ops[i], path, "share");
    if (op.id != static_cast<int64_t>(i))
      r.fail(path + "id", "expected ids 0, 1, ... in order");
    m.profile.push_back(op);
  }
}

} // namespace

RankManifest parseManifest(const std::string &text, const std::string &name) {
  Reader r(name);
  json root = readDocument(r, text, name);
  RankManifest m;
  readPlace(r, root, m);
  readInputs(r, root, m);
  readLabels(r, root, m);
  readBuildKind(r, root, m);
  readOutput(r, root, m);
  readParams(r, root, m);
  m.sends = readTransfers(r, root, "", "sends", m);
  m.recvs = readTransfers(r, root, "", "recvs", m);
  m.stashes = readStashes(r, root, "", m);
  readSegments(r, root, m);
  if (root.contains("buckets")) {
    if (m.inference)
      r.fail("buckets", "an inference build has one shape");
    readBuckets(r, root, m);
  }
  if (root.contains("profile"))
    readProfile(r, root, m);
  return m;
}

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

namespace {

json tensorJson(const ManifestTensor &t) {
  return {{"name", t.name},
          {"shape", t.shape},
          {"dtype", t.integer ? "i64" : "f32"}};
}

/// `{"shape": [...]}` or null, as optionalShape reads it.
json shapeObject(const std::optional<std::vector<int64_t>> &shape) {
  return shape ? json{{"shape", *shape}} : json(nullptr);
}

/// The labels of the manifest or of one of its buckets (`shape`); their
/// dtype and ignored index are the top level's.
json labelsJson(const std::optional<std::vector<int64_t>> &shape,
                const RankManifest &m) {
  if (!shape)
    return nullptr;
  json labels = {{"shape", *shape}, {"dtype", m.floatLabels ? "f32" : "i64"}};
  if (m.ignoreIndex)
    labels["ignore_index"] = *m.ignoreIndex;
  return labels;
}

json transfersJson(const std::vector<ManifestTransfer> &list) {
  json entries = json::array();
  for (const ManifestTransfer &t : list) {
    json e = {{"tag", t.tag},
              {"stage", t.stage},
              {"peer_stage", t.peerStage},
              {"what", transferKindName(t.what)},
              {"bytes", t.bytes}};
    if (t.bf16)
      e["wire"] = "bf16";
    entries.push_back(std::move(e));
  }
  return entries;
}

json stashesJson(const std::vector<ManifestStash> &list) {
  json entries = json::array();
  for (const ManifestStash &s : list)
    entries.push_back({{"key", s.key},
                       {"name", s.name},
                       {"stage", s.stage},
                       {"bytes", s.bytes}});
  return entries;
}

json bucketJson(const ManifestBucket &b, const RankManifest &m) {
  json inputs = json::array();
  for (const ManifestTensor &t : b.inputs)
    inputs.push_back(tensorJson(t));
  json costs = json::array();
  for (const BucketStageCost &c : b.stageCosts)
    costs.push_back({{"forward", c.forward},
                     {"backward_input", c.backwardInput},
                     {"backward_weight", c.backwardWeight},
                     {"activation_bytes", c.activationBytes},
                     {"output_bytes", c.outputBytes}});
  return {{"batch", b.batch},
          {"length", b.length},
          {"inputs", std::move(inputs)},
          {"labels", labelsJson(b.labelsShape, m)},
          {"output", shapeObject(b.outputShape)},
          {"sends", transfersJson(b.sends)},
          {"recvs", transfersJson(b.recvs)},
          {"stashes", stashesJson(b.stashes)},
          {"stage_costs", std::move(costs)}};
}

} // namespace

std::string writeManifest(const RankManifest &m) {
  json inputs = json::array(), params = json::array();
  for (const ManifestTensor &t : m.inputs)
    inputs.push_back(tensorJson(t));
  for (const ManifestParam &p : m.params)
    params.push_back({{"id", p.id}, {"name", p.name}, {"shape", p.shape}});
  json root = {{"format", "dpc-rank"},
               {"version", 1},
               {"rank", m.rank},
               {"stage", m.stage},
               {"stages", m.stages},
               {"chunks", m.chunks},
               {"schedule", m.schedule},
               {"weights", m.weights.empty() ? json(nullptr) : json(m.weights)},
               {"microbatch_size", m.microbatchSize},
               {"inputs", std::move(inputs)},
               {"labels", labelsJson(m.labelsShape, m)},
               {"params", std::move(params)},
               {"sends", transfersJson(m.sends)},
               {"recvs", transfersJson(m.recvs)},
               {"stashes", stashesJson(m.stashes)},
               {"output", shapeObject(m.outputShape)},
               {"segments", m.segments}};
  if (!m.profile.empty()) {
    json ops = json::array();
    for (const ManifestProfileOp &op : m.profile) {
      json entry = {{"id", op.id}, {"node", op.node}, {"phase", op.phase}};
      if (op.share != 1)
        entry["share"] = op.share;
      ops.push_back(std::move(entry));
    }
    root["profile"] = std::move(ops);
  }
  if (m.inference)
    root["inference"] = true;
  if (m.bf16)
    root["precision"] = "bf16";
  if (m.namesOptimizer)
    root["optimizer"] = optimizerName(m.optimizer);
  if (!m.buckets.empty()) {
    json buckets = json::array();
    for (const ManifestBucket &b : m.buckets)
      buckets.push_back(bucketJson(b, m));
    root["buckets"] = std::move(buckets);
  }
  // Names come from the model; bytes that are not UTF-8 become U+FFFD
  // rather than an exception.
  return root.dump(-1, ' ', false, json::error_handler_t::replace);
}

} // namespace dpc::runtime

//===- Profile.cpp - Reading and writing planner profiles -----------------===//

#include "dpc/planner/Profile.h"

#include "dpc/support/CommandLine.h"
#include "dpc/support/Error.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <limits>
#include <sstream>

namespace dpc::planner {

namespace {

std::string trim(const std::string &s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos)
    return "";
  size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

/// Profile values are times in milliseconds and sizes in bytes. Above this
/// (30 million years, an exabyte) a value is a typo or a fuzzer's, and sums
/// of such values overflow to infinity in the cost model.
constexpr double kMaxProfileValue = 1e18;

bool parseNumber(const std::string &text, double &out) {
  return cli::parseDecimal(trim(text), out) && out >= 0 &&
         out <= kMaxProfileValue;
}

/// A number or PipeDream's bracketed list `[a; b; c]` of several outputs,
/// which the cost model sums (all of them cross a cut together).
bool parseSize(const std::string &text, double &out) {
  std::string t = trim(text);
  if (t.size() < 2 || t.front() != '[')
    return parseNumber(t, out);
  if (t.back() != ']')
    return false;
  out = 0;
  std::stringstream items(t.substr(1, t.size() - 2));
  std::string item;
  while (std::getline(items, item, ';')) {
    double v;
    if (!parseNumber(item, v))
      return false;
    out += v;
  }
  return true;
}

/// Whether `text` is UTF-8 (RFC 3629: no overlong forms, no surrogates,
/// nothing past U+10FFFF). plan.json is JSON, which must be UTF-8, and node
/// names and descriptions go into it.
bool isUtf8(const std::string &text) {
  size_t i = 0, n = text.size();
  while (i < n) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t length;
    uint32_t code;
    if (c >= 0xc2 && c <= 0xdf) {
      length = 2;
      code = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
      length = 3;
      code = c & 0x0f;
    } else if (c >= 0xf0 && c <= 0xf4) {
      length = 4;
      code = c & 0x07;
    } else {
      return false;
    }
    if (n - i < length)
      return false;
    for (size_t k = 1; k < length; ++k) {
      unsigned char next = static_cast<unsigned char>(text[i + k]);
      if ((next & 0xc0) != 0x80)
        return false;
      code = (code << 6) | (next & 0x3f);
    }
    if ((length == 3 && code < 0x800) || (length == 4 && code < 0x10000) ||
        (code >= 0xd800 && code <= 0xdfff) || code > 0x10ffff)
      return false;
    i += length;
  }
  return true;
}

struct PendingEdge {
  std::string from, to;
  size_t line;
};

} // namespace

Graph parsePipeDreamProfile(const std::string &text,
                            const std::string &source) {
  Graph graph;
  std::vector<PendingEdge> edges;
  std::istringstream in(text);
  std::string raw;
  size_t lineNo = 0;
  auto invalid = [&](const std::string &why) {
    return InputError(source + ":" + std::to_string(lineNo) + ": " + why);
  };
  const std::string sep = " -- ";

  while (std::getline(in, raw)) {
    ++lineNo;
    if (!raw.empty() && raw.back() == '\r')
      raw.pop_back();
    if (trim(raw).empty())
      continue;
    if (!isUtf8(raw))
      throw invalid("not UTF-8 text");

    if (raw[0] == '\t') {
      std::string body = trim(raw);
      size_t at = body.find(sep);
      if (at == std::string::npos ||
          body.find(sep, at + 1) != std::string::npos)
        throw invalid("malformed edge line, expected '<tab>nodeA -- nodeB'");
      std::string from = trim(body.substr(0, at));
      std::string to = trim(body.substr(at + sep.size()));
      if (from.empty() || to.empty())
        throw invalid("malformed edge line, expected '<tab>nodeA -- nodeB'");
      edges.push_back({from, to, lineNo});
      continue;
    }

    // The description may itself contain " -- "; the name ends at the first
    // separator and the costs start after the last.
    size_t first = raw.find(sep);
    size_t last = raw.rfind(sep);
    if (first == std::string::npos || first == last)
      throw invalid("malformed node line, expected 'name -- description -- "
                    "forward_compute_time=F, backward_compute_time=B, "
                    "activation_size=A, parameter_size=P'");
    Node node;
    node.name = trim(raw.substr(0, first));
    node.description =
        trim(raw.substr(first + sep.size(), last - first - sep.size()));
    if (node.name.empty())
      throw invalid("node line without a name");
    if (graph.find(node.name))
      throw invalid("node '" + node.name + "' defined twice");
    node.isInput = node.description.rfind("Input", 0) == 0;

    double *fields[4] = {&node.forwardMs, &node.backwardMs,
                         &node.activationBytes, &node.parameterBytes};
    const char *keys[4] = {"forward_compute_time", "backward_compute_time",
                           "activation_size", "parameter_size"};
    bool seen[4] = {false, false, false, false};
    std::stringstream costs(raw.substr(last + sep.size()));
    std::string item;
    while (std::getline(costs, item, ',')) {
      size_t eq = item.find('=');
      if (eq == std::string::npos)
        throw invalid("malformed cost '" + trim(item) +
                      "', expected key=value");
      std::string key = trim(item.substr(0, eq));
      std::string value = item.substr(eq + 1);
      for (int k = 0; k < 4; ++k) {
        if (key != keys[k])
          continue;
        if (!parseSize(value, *fields[k]))
          throw invalid("bad value '" + trim(value) + "' for " + key +
                        " (expected a decimal number from 0 to 1e18, or a "
                        "[a; b] list of them)");
        seen[k] = true;
      }
    }
    for (int k = 0; k < 4; ++k)
      if (!seen[k])
        throw invalid(std::string("node '") + node.name + "' has no " +
                      keys[k]);
    graph.addNode(std::move(node));
  }

  for (const PendingEdge &e : edges) {
    auto from = graph.find(e.from), to = graph.find(e.to);
    lineNo = e.line;
    if (!from)
      throw invalid("edge from unknown node '" + e.from + "'");
    if (!to)
      throw invalid("edge to unknown node '" + e.to + "'");
    if (*from == *to)
      throw invalid("graph has a cycle: " + e.from + " -> " + e.to);
    graph.addEdge(*from, *to);
  }
  if (graph.size() == 0)
    throw InputError(source + ": profile has no nodes");
  return graph;
}

Graph parseJsonProfile(const std::string &text, const std::string &source) {
  nlohmann::json doc = nlohmann::json::parse(text, nullptr,
                                             /*allow_exceptions=*/false);
  if (doc.is_discarded())
    throw InputError(source + ": not valid JSON");
  auto invalid = [&](const std::string &why) {
    return InputError(source + ": " + why);
  };
  if (!doc.is_object() || !doc.contains("nodes") || !doc["nodes"].is_array())
    throw invalid("expected an object with a \"nodes\" array");

  Graph graph;
  size_t index = 0;
  for (const nlohmann::json &j : doc["nodes"]) {
    std::string where = "nodes[" + std::to_string(index++) + "]";
    if (!j.is_object() || !j.contains("name") || !j["name"].is_string())
      throw invalid(where + " has no \"name\" string");
    Node node;
    node.name = j["name"].get<std::string>();
    where += " ('" + node.name + "')";
    if (graph.find(node.name))
      throw invalid(where + " is defined twice");
    if (j.contains("description") && j["description"].is_string())
      node.description = j["description"].get<std::string>();
    struct Field {
      const char *key;
      double *out;
    } fields[] = {{"forward_ms", &node.forwardMs},
                  {"backward_ms", &node.backwardMs},
                  {"activation_bytes", &node.activationBytes},
                  {"parameter_bytes", &node.parameterBytes}};
    for (const Field &f : fields) {
      if (!j.contains(f.key))
        continue; // absent costs are zero, as for an op that was not measured
      if (!j[f.key].is_number() || !(j[f.key].get<double>() >= 0) ||
          j[f.key].get<double>() > kMaxProfileValue)
        throw invalid(where + " has a bad \"" + f.key +
                      "\" (expected a number from 0 to 1e18)");
      *f.out = j[f.key].get<double>();
    }
    if (j.contains("input")) {
      if (!j["input"].is_boolean())
        throw invalid(where + " has a bad \"input\" (expected true or false)");
      node.isInput = j["input"].get<bool>();
    }
    graph.addNode(std::move(node));
  }

  if (doc.contains("edges")) {
    if (!doc["edges"].is_array())
      throw invalid("\"edges\" must be an array of [from, to] pairs");
    index = 0;
    for (const nlohmann::json &e : doc["edges"]) {
      std::string where = "edges[" + std::to_string(index++) + "]";
      if (!e.is_array() || e.size() != 2 || !e[0].is_string() ||
          !e[1].is_string())
        throw invalid(where + " is not a [from, to] pair of node names");
      auto from = graph.find(e[0].get<std::string>());
      auto to = graph.find(e[1].get<std::string>());
      if (!from || !to)
        throw invalid(where + " names unknown node '" +
                      (!from ? e[0] : e[1]).get<std::string>() + "'");
      if (*from == *to)
        throw invalid("graph has a cycle: " + e[0].get<std::string>() + " -> " +
                      e[1].get<std::string>());
      graph.addEdge(*from, *to);
    }
  }
  if (graph.size() == 0)
    throw invalid("profile has no nodes");
  return graph;
}

std::string writeJsonProfile(const Graph &graph,
                             const ProfileSections &sections) {
  nlohmann::json nodes = nlohmann::json::array();
  nlohmann::json edges = nlohmann::json::array();
  for (NodeId v = 0; v < graph.size(); ++v) {
    const Node &n = graph.node(v);
    nlohmann::json j = {{"name", n.name},
                        {"forward_ms", n.forwardMs},
                        {"backward_ms", n.backwardMs},
                        {"activation_bytes", n.activationBytes},
                        {"parameter_bytes", n.parameterBytes}};
    if (!n.description.empty())
      j["description"] = n.description;
    if (n.isInput)
      j["input"] = true;
    nodes.push_back(std::move(j));
    for (NodeId w : graph.successors(v))
      edges.push_back({n.name, graph.node(w).name});
  }
  nlohmann::json doc = {{"format", "dpc-profile"},
                        {"version", 1},
                        {"nodes", std::move(nodes)},
                        {"edges", std::move(edges)}};
  if (!sections.precision.empty() && sections.precision != "fp32")
    doc["precision"] = sections.precision;
  if (!sections.shapes.empty()) {
    nlohmann::json list = nlohmann::json::array();
    for (const MeasuredShape &shape : sections.shapes) {
      nlohmann::json times = nlohmann::json::array();
      for (const auto &[name, t] : shape.nodes)
        times.push_back({{"name", name},
                         {"forward_ms", t.forwardMs},
                         {"backward_ms", t.backwardMs}});
      list.push_back({{"batch", shape.batch},
                      {"length", shape.length},
                      {"nodes", std::move(times)}});
    }
    doc["shapes"] = std::move(list);
  }
  for (auto [section, table] :
       {std::pair{kMessageLatencySection, &sections.messages},
        std::pair{kWakeLatencySection, &sections.wakes},
        std::pair{kComputeFactorSection, &sections.computeFactors}}) {
    if (table->empty())
      continue;
    nlohmann::json latencies = nlohmann::json::object();
    for (const auto &[ranks, ms] : *table)
      latencies[std::to_string(ranks)] = ms;
    doc[section] = std::move(latencies);
  }
  return doc.dump(2) + "\n";
}

namespace {

// The text of the profile at `path`, read up to kMaxProfileBytes.
std::string readProfileText(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw InputError("cannot read profile '" + path + "'");
  // Read at most one byte past the limit, so that /dev/zero or a runaway
  // pipe fails at once instead of filling memory.
  std::string text;
  char chunk[65536];
  while (in.read(chunk, sizeof(chunk)) || in.gcount() > 0) {
    text.append(chunk, size_t(in.gcount()));
    if (text.size() > kMaxProfileBytes)
      throw InputError(path + ": larger than " +
                       std::to_string(kMaxProfileBytes >> 20) +
                       " MiB, the most a profile may hold");
  }
  if (in.bad())
    throw InputError("cannot read profile '" + path + "'");
  return text;
}

bool isJson(const std::string &text) {
  size_t first = text.find_first_not_of(" \t\r\n");
  return first != std::string::npos && text[first] == '{';
}

} // namespace

Graph loadProfile(const std::string &path) {
  std::string text = readProfileText(path);
  if (isJson(text))
    return parseJsonProfile(text, path);
  return parsePipeDreamProfile(text, path);
}

namespace {

// A profile.json's document for its optional sections: null for a
// graph.txt, which has none.
nlohmann::json sectionsOf(const std::string &text, const std::string &source) {
  if (!isJson(text))
    return nlohmann::json();
  nlohmann::json doc = nlohmann::json::parse(text, nullptr,
                                             /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object())
    throw InputError(source + ": not a JSON object");
  return doc;
}

} // namespace

std::vector<MeasuredShape> parseProfileShapes(const std::string &text,
                                              const std::string &source) {
  std::vector<MeasuredShape> shapes;
  nlohmann::json doc = sectionsOf(text, source);
  if (!doc.contains("shapes"))
    return shapes;
  auto invalid = [&](const std::string &why) {
    return InputError(source + ": " + why);
  };
  if (!doc["shapes"].is_array())
    throw invalid("\"shapes\" must be an array");
  for (size_t i = 0; i < doc["shapes"].size(); ++i) {
    const nlohmann::json &j = doc["shapes"][i];
    std::string where = "shapes[" + std::to_string(i) + "]";
    if (!j.is_object())
      throw invalid(where + " is not an object");
    MeasuredShape shape;
    for (auto [key, out] : {std::pair{"batch", &shape.batch},
                            std::pair{"length", &shape.length}}) {
      if (!j.contains(key) || !j[key].is_number_integer() ||
          j[key].get<int64_t>() < 1 || j[key].get<int64_t>() > (1 << 30))
        throw invalid(where + " has no \"" + key +
                      "\" (expected an integer from 1 to 2^30)");
      *out = j[key].get<int64_t>();
    }
    for (const MeasuredShape &other : shapes)
      if (other.batch == shape.batch && other.length == shape.length)
        throw invalid(where + " repeats the shape " +
                      std::to_string(shape.batch) + "x" +
                      std::to_string(shape.length));
    if (!j.contains("nodes") || !j["nodes"].is_array())
      throw invalid(where + " has no \"nodes\" array");
    for (size_t k = 0; k < j["nodes"].size(); ++k) {
      const nlohmann::json &n = j["nodes"][k];
      std::string at = where + ".nodes[" + std::to_string(k) + "]";
      if (!n.is_object() || !n.contains("name") || !n["name"].is_string())
        throw invalid(at + " has no \"name\" string");
      std::string name = n["name"].get<std::string>();
      if (shape.nodes.count(name))
        throw invalid(at + " ('" + name + "') is defined twice");
      NodeTimes times;
      for (auto [key, out] : {std::pair{"forward_ms", &times.forwardMs},
                              std::pair{"backward_ms", &times.backwardMs}}) {
        if (!n.contains(key))
          continue;
        if (!n[key].is_number() || !(n[key].get<double>() >= 0) ||
            n[key].get<double>() > kMaxProfileValue)
          throw invalid(at + " ('" + name + "') has a bad \"" + key +
                        "\" (expected a number from 0 to 1e18)");
        *out = n[key].get<double>();
      }
      shape.nodes.emplace(std::move(name), times);
    }
    shapes.push_back(std::move(shape));
  }
  return shapes;
}

std::vector<MeasuredShape> loadProfileShapes(const std::string &path) {
  return parseProfileShapes(readProfileText(path), path);
}

MessageLatencies parseMessageLatencies(const std::string &text,
                                       const std::string &source,
                                       const char *section) {
  MessageLatencies messages;
  nlohmann::json doc = sectionsOf(text, source);
  if (!doc.contains(section))
    return messages;
  const nlohmann::json &latencies = doc[section];
  std::string where = source + ": " + section + ": ";
  if (!latencies.is_object())
    throw InputError(where + "expected an object of milliseconds by "
                             "rank count");
  for (const auto &[key, value] : latencies.items()) {
    int64_t ranks = 0;
    if (!cli::parseInteger(key, ranks) || ranks < 1 || ranks > (1 << 20))
      throw InputError(where + "'" + key + "' is not a rank count");
    bool factor = std::string(section) == kComputeFactorSection;
    if (!value.is_number() || !std::isfinite(value.get<double>()) ||
        value.get<double>() < 0 || (factor && value.get<double>() <= 0))
      throw InputError(where + key +
                       (factor ? ": expected a factor > 0"
                               : ": expected milliseconds >= 0"));
    messages[int(ranks)] = value.get<double>();
  }
  return messages;
}

std::string parseProfilePrecision(const std::string &text,
                                  const std::string &source) {
  nlohmann::json doc = sectionsOf(text, source);
  if (!doc.contains("precision"))
    return "fp32";
  const nlohmann::json &precision = doc["precision"];
  if (!precision.is_string() || (precision != "fp32" && precision != "bf16"))
    throw InputError(source + ": precision: expected \"fp32\" or "
                              "\"bf16\"");
  return precision.get<std::string>();
}

std::string loadProfilePrecision(const std::string &path) {
  return parseProfilePrecision(readProfileText(path), path);
}

MessageLatencies loadMessageLatencies(const std::string &path,
                                      const char *section) {
  return parseMessageLatencies(readProfileText(path), path, section);
}

double messageLatencyFor(const MessageLatencies &messages, int ranks) {
  if (messages.empty())
    return 0;
  auto above = messages.upper_bound(ranks);
  return above == messages.begin() ? above->second : std::prev(above)->second;
}

namespace {

// The features of the shape fit: a call, the tokens, the token pairs.
std::array<double, 3> shapeFeatures(int64_t batch, int64_t length) {
  double tokens = double(batch) * double(length);
  return {1.0, tokens, tokens * double(length)};
}

// Least squares over the features in `active` (a bit mask), the others
// held at zero; false when the system is singular. Columns are scaled to a
// largest value of 1 first.
bool solveLeastSquares(const std::vector<std::array<double, 3>> &x,
                       const std::vector<double> &y, unsigned active,
                       double coefficients[3]) {
  int columns[3], n = 0;
  for (int c = 0; c < 3; ++c)
    if (active & (1u << c))
      columns[n++] = c;
  double scale[3] = {0, 0, 0};
  for (int i = 0; i < n; ++i)
    for (const auto &row : x)
      scale[i] = std::max(scale[i], std::abs(row[size_t(columns[i])]));
  // Normal equations [A | b], solved by Gaussian elimination with pivoting.
  double a[3][4] = {};
  for (size_t r = 0; r < x.size(); ++r)
    for (int i = 0; i < n; ++i) {
      double xi = x[r][size_t(columns[i])] / scale[i];
      for (int j = 0; j < n; ++j)
        a[i][j] += xi * x[r][size_t(columns[j])] / scale[j];
      a[i][n] += xi * y[r];
    }
  for (int c = 0; c < n; ++c) {
    int pivot = c;
    for (int r = c + 1; r < n; ++r)
      if (std::abs(a[r][c]) > std::abs(a[pivot][c]))
        pivot = r;
    if (std::abs(a[pivot][c]) < 1e-12)
      return false;
    std::swap(a[c], a[pivot]);
    for (int r = 0; r < n; ++r) {
      if (r == c)
        continue;
      double f = a[r][c] / a[c][c];
      for (int k = c; k <= n; ++k)
        a[r][k] -= f * a[c][k];
    }
  }
  for (int c = 0; c < 3; ++c)
    coefficients[c] = 0;
  for (int i = 0; i < n; ++i)
    coefficients[columns[i]] = a[i][n] / a[i][i] / scale[i];
  return true;
}

// The non-negative least-squares fit: every subset of the features solved
// without constraints, the best one whose coefficients are all >= 0.
void fitShapes(const std::vector<std::array<double, 3>> &x,
               const std::vector<double> &y, double best[3]) {
  double bestError = std::numeric_limits<double>::infinity();
  for (unsigned active = 1; active < 8; ++active) {
    double c[3];
    if (!solveLeastSquares(x, y, active, c) || c[0] < 0 || c[1] < 0 || c[2] < 0)
      continue;
    double error = 0;
    for (size_t r = 0; r < x.size(); ++r) {
      double d = c[0] * x[r][0] + c[1] * x[r][1] + c[2] * x[r][2] - y[r];
      error += d * d;
    }
    if (error < bestError * (1 - 1e-12)) {
      bestError = error;
      std::copy(c, c + 3, best);
    }
  }
}

} // namespace

ShapeCosts::ShapeCosts(std::vector<MeasuredShape> measured)
    : shapes(std::move(measured)) {
  std::map<std::string, std::vector<const MeasuredShape *>> byNode;
  for (const MeasuredShape &shape : shapes)
    for (const auto &entry : shape.nodes)
      byNode[entry.first].push_back(&shape);
  for (const auto &[name, list] : byNode) {
    if (list.size() < 3)
      continue;
    std::vector<std::array<double, 3>> x;
    std::vector<double> forward, backward;
    for (const MeasuredShape *shape : list) {
      x.push_back(shapeFeatures(shape->batch, shape->length));
      const NodeTimes &t = shape->nodes.at(name);
      forward.push_back(t.forwardMs);
      backward.push_back(t.backwardMs);
    }
    std::pair<Fit, Fit> &fit = fits[name];
    fitShapes(x, forward, fit.first.a);
    fitShapes(x, backward, fit.second.a);
  }
}

std::optional<NodeTimes> ShapeCosts::estimate(const std::string &node,
                                              int64_t batch,
                                              int64_t length) const {
  const MeasuredShape *nearest = nullptr;
  double nearestDistance = std::numeric_limits<double>::infinity();
  for (const MeasuredShape &shape : shapes) {
    auto it = shape.nodes.find(node);
    if (it == shape.nodes.end())
      continue;
    if (shape.batch == batch && shape.length == length)
      return it->second;
    double db = std::log(double(shape.batch) / double(batch));
    double dl = std::log(double(shape.length) / double(length));
    double distance = db * db + dl * dl;
    if (distance < nearestDistance) {
      nearestDistance = distance;
      nearest = &shape;
    }
  }
  if (!nearest)
    return std::nullopt;
  std::array<double, 3> x = shapeFeatures(batch, length);
  if (auto it = fits.find(node); it != fits.end()) {
    const auto &[forward, backward] = it->second;
    NodeTimes t;
    for (int c = 0; c < 3; ++c) {
      t.forwardMs += forward.a[c] * x[size_t(c)];
      t.backwardMs += backward.a[c] * x[size_t(c)];
    }
    return t;
  }
  NodeTimes t = nearest->nodes.at(node);
  double ratio = double(batch) * double(length) /
                 (double(nearest->batch) * double(nearest->length));
  t.forwardMs *= ratio;
  t.backwardMs *= ratio;
  return t;
}

} // namespace dpc::planner

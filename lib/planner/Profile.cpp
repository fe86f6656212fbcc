//===- Profile.cpp - Reading and writing planner profiles -----------------===//

#include "dpc/planner/Profile.h"

#include "dpc/support/CommandLine.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <fstream>
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

Expected<Graph> parsePipeDreamProfile(const std::string &text,
                                      const std::string &source) {
  using Result = Expected<Graph>;
  Graph graph;
  std::vector<PendingEdge> edges;
  std::istringstream in(text);
  std::string raw;
  size_t lineNo = 0;
  auto fail = [&](const std::string &why) {
    return Result::failure(source + ":" + std::to_string(lineNo) + ": " + why);
  };
  const std::string sep = " -- ";

  while (std::getline(in, raw)) {
    ++lineNo;
    if (!raw.empty() && raw.back() == '\r')
      raw.pop_back();
    if (trim(raw).empty())
      continue;
    if (!isUtf8(raw))
      return fail("not UTF-8 text");

    if (raw[0] == '\t') {
      std::string body = trim(raw);
      size_t at = body.find(sep);
      if (at == std::string::npos ||
          body.find(sep, at + 1) != std::string::npos)
        return fail("malformed edge line, expected '<tab>nodeA -- nodeB'");
      std::string from = trim(body.substr(0, at));
      std::string to = trim(body.substr(at + sep.size()));
      if (from.empty() || to.empty())
        return fail("malformed edge line, expected '<tab>nodeA -- nodeB'");
      edges.push_back({from, to, lineNo});
      continue;
    }

    // The description may itself contain " -- "; the name ends at the first
    // separator and the costs start after the last.
    size_t first = raw.find(sep);
    size_t last = raw.rfind(sep);
    if (first == std::string::npos || first == last)
      return fail("malformed node line, expected 'name -- description -- "
                  "forward_compute_time=F, backward_compute_time=B, "
                  "activation_size=A, parameter_size=P'");
    Node node;
    node.name = trim(raw.substr(0, first));
    node.description =
        trim(raw.substr(first + sep.size(), last - first - sep.size()));
    if (node.name.empty())
      return fail("node line without a name");
    if (graph.find(node.name))
      return fail("node '" + node.name + "' defined twice");
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
        return fail("malformed cost '" + trim(item) + "', expected key=value");
      std::string key = trim(item.substr(0, eq));
      std::string value = item.substr(eq + 1);
      for (int k = 0; k < 4; ++k) {
        if (key != keys[k])
          continue;
        if (!parseSize(value, *fields[k]))
          return fail("bad value '" + trim(value) + "' for " + key +
                      " (expected a decimal number from 0 to 1e18, or a "
                      "[a; b] list of them)");
        seen[k] = true;
      }
    }
    for (int k = 0; k < 4; ++k)
      if (!seen[k])
        return fail(std::string("node '") + node.name + "' has no " + keys[k]);
    graph.addNode(std::move(node));
  }

  for (const PendingEdge &e : edges) {
    auto from = graph.find(e.from), to = graph.find(e.to);
    lineNo = e.line;
    if (!from)
      return fail("edge from unknown node '" + e.from + "'");
    if (!to)
      return fail("edge to unknown node '" + e.to + "'");
    if (*from == *to)
      return fail("graph has a cycle: " + e.from + " -> " + e.to);
    graph.addEdge(*from, *to);
  }
  if (graph.size() == 0)
    return Result::failure(source + ": profile has no nodes");
  return graph;
}

Expected<Graph> parseJsonProfile(const std::string &text,
                                 const std::string &source) {
  using Result = Expected<Graph>;
  nlohmann::json doc = nlohmann::json::parse(text, nullptr,
                                             /*allow_exceptions=*/false);
  if (doc.is_discarded())
    return Result::failure(source + ": not valid JSON");
  auto fail = [&](const std::string &why) {
    return Result::failure(source + ": " + why);
  };
  if (!doc.is_object() || !doc.contains("nodes") || !doc["nodes"].is_array())
    return fail("expected an object with a \"nodes\" array");

  Graph graph;
  size_t index = 0;
  for (const nlohmann::json &j : doc["nodes"]) {
    std::string where = "nodes[" + std::to_string(index++) + "]";
    if (!j.is_object() || !j.contains("name") || !j["name"].is_string())
      return fail(where + " has no \"name\" string");
    Node node;
    node.name = j["name"].get<std::string>();
    where += " ('" + node.name + "')";
    if (graph.find(node.name))
      return fail(where + " is defined twice");
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
        return fail(where + " has a bad \"" + f.key +
                    "\" (expected a number from 0 to 1e18)");
      *f.out = j[f.key].get<double>();
    }
    if (j.contains("input")) {
      if (!j["input"].is_boolean())
        return fail(where + " has a bad \"input\" (expected true or false)");
      node.isInput = j["input"].get<bool>();
    }
    graph.addNode(std::move(node));
  }

  if (doc.contains("edges")) {
    if (!doc["edges"].is_array())
      return fail("\"edges\" must be an array of [from, to] pairs");
    index = 0;
    for (const nlohmann::json &e : doc["edges"]) {
      std::string where = "edges[" + std::to_string(index++) + "]";
      if (!e.is_array() || e.size() != 2 || !e[0].is_string() ||
          !e[1].is_string())
        return fail(where + " is not a [from, to] pair of node names");
      auto from = graph.find(e[0].get<std::string>());
      auto to = graph.find(e[1].get<std::string>());
      if (!from || !to)
        return fail(where + " names unknown node '" +
                    (!from ? e[0] : e[1]).get<std::string>() + "'");
      if (*from == *to)
        return fail("graph has a cycle: " + e[0].get<std::string>() + " -> " +
                    e[1].get<std::string>());
      graph.addEdge(*from, *to);
    }
  }
  if (graph.size() == 0)
    return fail("profile has no nodes");
  return graph;
}

std::string writeJsonProfile(const Graph &graph) {
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
  return doc.dump(2) + "\n";
}

Expected<Graph> loadProfile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Expected<Graph>::failure("cannot read profile '" + path + "'");
  // Read at most one byte past the limit, so that /dev/zero or a runaway
  // pipe fails at once instead of filling memory.
  std::string text;
  char chunk[65536];
  while (in.read(chunk, sizeof(chunk)) || in.gcount() > 0) {
    text.append(chunk, size_t(in.gcount()));
    if (text.size() > kMaxProfileBytes)
      return Expected<Graph>::failure(path + ": larger than " +
                                      std::to_string(kMaxProfileBytes >> 20) +
                                      " MiB, the most a profile may hold");
  }
  if (in.bad())
    return Expected<Graph>::failure("cannot read profile '" + path + "'");
  size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && text[first] == '{')
    return parseJsonProfile(text, path);
  return parsePipeDreamProfile(text, path);
}

} // namespace dpc::planner

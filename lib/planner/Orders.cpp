//===- Orders.cpp - Topological orders to split along ---------------------===//
//
// The dynamic program splits one order into contiguous stages, so the order
// decides which activations cross a cut. Orders that finish a branch before
// starting the next keep few tensors live at any position; which of them is
// best depends on the costs, so the planner tries several and keeps the best.
//
//===----------------------------------------------------------------------===//

#include "dpc/planner/Planner.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <queue>
#include <set>
#include <tuple>

namespace dpc::planner {

namespace {

/// Ranks nodes by name with a trailing number compared as a number, so that
/// PipeDream's node2 < node10 (its ids follow creation order).
std::vector<uint32_t> naturalNameRanks(const Graph &g) {
  struct Key {
    std::string prefix;
    unsigned long long number;
    bool hasNumber;
    NodeId id;
  };
  std::vector<Key> keys;
  for (NodeId v = 0; v < g.size(); ++v) {
    const std::string &name = g.node(v).name;
    size_t end = name.size();
    while (end > 0 && std::isdigit(static_cast<unsigned char>(name[end - 1])))
      --end;
    Key k{name.substr(0, end), 0, end < name.size(), v};
    if (k.hasNumber && name.size() - end < 19)
      k.number = std::stoull(name.substr(end));
    keys.push_back(std::move(k));
  }
  std::sort(keys.begin(), keys.end(), [&](const Key &a, const Key &b) {
    if (a.prefix != b.prefix)
      return a.prefix < b.prefix;
    if (a.number != b.number)
      return a.number < b.number;
    return a.id < b.id;
  });
  std::vector<uint32_t> rank(g.size());
  for (size_t i = 0; i < keys.size(); ++i)
    rank[keys[i].id] = static_cast<uint32_t>(i);
  return rank;
}

enum class Rule {
  /// Lowest priority first: creation order, breadth across branches.
  Lowest,
  /// The most recently readied node first: finishes a branch before the
  /// next one starts.
  DepthFirst,
  /// The node that leaves the fewest live activation bytes behind it.
  SmallestFrontier,
};

/// A Kahn traversal of `g` (or of its reverse, read backwards afterwards)
/// that always takes a ready input first, so that inputs lead the order.
std::vector<NodeId> traverse(const Graph &g, const std::vector<uint32_t> &prio,
                             Rule rule, bool reversed) {
  size_t n = g.size();
  auto outs = [&](NodeId v) -> const std::vector<NodeId> & {
    return reversed ? g.predecessors(v) : g.successors(v);
  };
  auto ins = [&](NodeId v) -> const std::vector<NodeId> & {
    return reversed ? g.successors(v) : g.predecessors(v);
  };
  std::vector<uint32_t> indegree(n), unreadOuts(n);
  std::vector<NodeId> ready;
  for (NodeId v = 0; v < n; ++v) {
    indegree[v] = static_cast<uint32_t>(ins(v).size());
    unreadOuts[v] = static_cast<uint32_t>(outs(v).size());
    if (indegree[v] == 0)
      ready.push_back(v);
  }
  auto byPrio = [&](NodeId a, NodeId b) { return prio[a] < prio[b]; };
  std::sort(ready.begin(), ready.end(), byPrio);
  if (rule == Rule::DepthFirst)
    std::reverse(ready.begin(), ready.end()); // a stack: lowest on top

  std::vector<NodeId> order;
  order.reserve(n);
  while (!ready.empty()) {
    // Ready inputs first; then the rule; then the priority.
    size_t pick = 0;
    std::tuple<int, double, uint32_t> pickKey;
    for (size_t k = 0; k < ready.size(); ++k) {
      NodeId v = ready[k];
      int inputRank = !reversed && g.node(v).isInput ? 0 : 1;
      double primary = 0;
      if (rule == Rule::DepthFirst) {
        primary = -static_cast<double>(k); // top of the stack
      } else if (rule == Rule::SmallestFrontier) {
        // Live bytes after emitting v: its output becomes live, the inputs
        // it is the last reader of die.
        primary = unreadOuts[v] ? g.activationBytes(v) : 0.0;
        for (NodeId u : ins(v))
          if (unreadOuts[u] == 1)
            primary -= g.activationBytes(u);
      }
      std::tuple<int, double, uint32_t> key(inputRank, primary, prio[v]);
      if (k == 0 || key < pickKey) {
        pick = k;
        pickKey = key;
      }
    }
    NodeId v = ready[pick];
    ready.erase(ready.begin() + pick);
    order.push_back(v);
    for (NodeId u : ins(v))
      --unreadOuts[u];
    std::vector<NodeId> newlyReady;
    for (NodeId w : outs(v))
      if (--indegree[w] == 0)
        newlyReady.push_back(w);
    std::sort(newlyReady.begin(), newlyReady.end(), byPrio);
    if (rule == Rule::DepthFirst)
      ready.insert(ready.end(), newlyReady.rbegin(), newlyReady.rend());
    else
      ready.insert(ready.end(), newlyReady.begin(), newlyReady.end());
  }
  if (!reversed)
    return order;
  std::reverse(order.begin(), order.end());
  // Inputs that are sources may always lead; the dynamic program keeps
  // everything up to the last input in the first stage.
  std::stable_partition(order.begin(), order.end(), [&](NodeId v) {
    return g.node(v).isInput && g.predecessors(v).empty();
  });
  return order;
}

} // namespace

std::vector<std::vector<NodeId>> candidateOrders(const Graph &g) {
  std::vector<uint32_t> insertion(g.size());
  for (NodeId v = 0; v < g.size(); ++v)
    insertion[v] = v;
  std::vector<std::vector<uint32_t>> priorities = {naturalNameRanks(g)};
  if (priorities[0] != insertion)
    priorities.push_back(insertion);

  std::vector<std::vector<NodeId>> orders;
  std::set<std::vector<NodeId>> seen;
  for (const auto &prio : priorities) {
    for (bool reversed : {false, true}) {
      for (Rule rule :
           {Rule::DepthFirst, Rule::Lowest, Rule::SmallestFrontier}) {
        std::vector<NodeId> order = traverse(g, prio, rule, reversed);
        if (order.size() == g.size() && seen.insert(order).second)
          orders.push_back(std::move(order));
      }
    }
  }
  return orders;
}

std::vector<std::vector<NodeId>> allTopologicalOrders(const Graph &g,
                                                      size_t limit) {
  size_t n = g.size();
  std::vector<std::vector<NodeId>> orders;
  std::vector<uint32_t> indegree(n);
  for (NodeId v = 0; v < n; ++v)
    indegree[v] = static_cast<uint32_t>(g.predecessors(v).size());
  std::vector<NodeId> prefix;
  std::vector<char> used(n, 0);
  bool overflow = false;

  // Inputs are taken as soon as they are ready (the lowest id first): every
  // valid stage assignment is still a contiguous split of one of these
  // orders, because inputs belong to the first stage anyway.
  std::function<void()> extend = [&]() {
    if (overflow)
      return;
    if (prefix.size() == n) {
      if (orders.size() >= limit) {
        overflow = true;
        return;
      }
      orders.push_back(prefix);
      return;
    }
    std::vector<NodeId> choices;
    for (NodeId v = 0; v < n && choices.empty(); ++v)
      if (!used[v] && indegree[v] == 0 && g.node(v).isInput)
        choices.push_back(v);
    if (choices.empty())
      for (NodeId v = 0; v < n; ++v)
        if (!used[v] && indegree[v] == 0)
          choices.push_back(v);
    for (NodeId v : choices) {
      used[v] = 1;
      prefix.push_back(v);
      for (NodeId w : g.successors(v))
        --indegree[w];
      extend();
      for (NodeId w : g.successors(v))
        ++indegree[w];
      prefix.pop_back();
      used[v] = 0;
      if (overflow)
        return;
    }
  };
  extend();
  if (overflow)
    orders.clear();
  return orders;
}

} // namespace dpc::planner

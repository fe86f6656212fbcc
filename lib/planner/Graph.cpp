//===- Graph.cpp - The graph the planner partitions -----------------------===//

#include "dpc/planner/Graph.h"

#include "dpc/support/Error.h"

#include <algorithm>
#include <cassert>

namespace dpc::planner {

NodeId Graph::addNode(Node node) {
  NodeId id = static_cast<NodeId>(nodes.size());
  bool inserted = byName.emplace(node.name, id).second;
  assert(inserted && "duplicate node name");
  (void)inserted;
  nodes.push_back(std::move(node));
  succ.emplace_back();
  pred.emplace_back();
  return id;
}

void Graph::addEdge(NodeId from, NodeId to) {
  assert(from < nodes.size() && to < nodes.size());
  std::vector<NodeId> &out = succ[from];
  if (std::find(out.begin(), out.end(), to) != out.end())
    return;
  out.push_back(to);
  pred[to].push_back(from);
  ++edgeCount;
}

std::optional<NodeId> Graph::find(const std::string &name) const {
  auto it = byName.find(name);
  if (it == byName.end())
    return std::nullopt;
  return it->second;
}

double Graph::computeSeconds(NodeId id) const {
  const Node &n = nodes[id];
  return n.isInput ? 0.0 : (n.forwardMs + n.backwardMs) / 1000.0;
}

double Graph::activationBytes(NodeId id) const {
  return nodes[id].isInput ? 0.0 : nodes[id].activationBytes;
}

double Graph::parameterBytes(NodeId id) const {
  return nodes[id].isInput ? 0.0 : nodes[id].parameterBytes;
}

std::vector<NodeId> Graph::topologicalOrder() const {
  size_t n = nodes.size();
  std::vector<uint32_t> indegree(n);
  for (size_t v = 0; v < n; ++v)
    indegree[v] = static_cast<uint32_t>(pred[v].size());
  std::vector<NodeId> order, ready;
  order.reserve(n);
  for (size_t v = 0; v < n; ++v)
    if (indegree[v] == 0)
      ready.push_back(static_cast<NodeId>(v));
  while (!ready.empty()) {
    NodeId v = ready.back();
    ready.pop_back();
    order.push_back(v);
    for (NodeId w : succ[v])
      if (--indegree[w] == 0)
        ready.push_back(w);
  }
  if (order.size() == n)
    return order;

  // Every node left has a predecessor that is left too, so walking
  // predecessors among them must revisit a node: that loop is a cycle.
  NodeId v = 0;
  while (indegree[v] == 0)
    ++v;
  std::vector<int> seenAt(n, -1);
  std::vector<NodeId> walk;
  while (seenAt[v] < 0) {
    seenAt[v] = static_cast<int>(walk.size());
    walk.push_back(v);
    for (NodeId p : pred[v]) {
      if (indegree[p] != 0) {
        v = p;
        break;
      }
    }
  }
  std::vector<NodeId> cycle(walk.begin() + seenAt[v], walk.end());
  std::reverse(cycle.begin(), cycle.end());
  // Start at the smallest id so that the message does not depend on where
  // the walk entered the cycle.
  std::rotate(cycle.begin(), std::min_element(cycle.begin(), cycle.end()),
              cycle.end());
  std::string path;
  for (NodeId c : cycle)
    path += nodes[c].name + " -> ";
  path += nodes[cycle.front()].name;
  throw InputError("graph has a cycle: " + path);
}

} // namespace dpc::planner

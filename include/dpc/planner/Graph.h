//===- Graph.h - The graph the planner partitions ---------------*- C++ -*-===//
//
// The planner sees a model as a DAG of nodes, each with a forward and backward
// time, the bytes of its output activation and the bytes of its parameters.
// `dpc plan` fills it from a PipeDream graph.txt or a profile.json; the
// compiler's partition-stages pass fills it from the IR after annotate-costs.
// Nothing here knows about MLIR.
//
// What the user can fix (a malformed profile or cluster file, a cyclic
// graph, a constraint no plan meets) throws dpc::InputError, and a plan or
// plan.json that is not valid dpc::Error, each with one line naming the
// file or node (docs/ARCHITECTURE.md, "Errors"); bugs assert.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_PLANNER_GRAPH_H
#define DPC_PLANNER_GRAPH_H

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace dpc::planner {

/// Index of a node in its Graph, dense from 0.
using NodeId = uint32_t;

struct Node {
  std::string name;
  /// Free text (the op, its shape); only carried into the output.
  std::string description;
  /// Milliseconds per microbatch (PipeDream: per minibatch).
  double forwardMs = 0;
  double backwardMs = 0;
  /// Bytes of the node's output that a later stage would receive.
  double activationBytes = 0;
  /// Bytes of the node's trainable parameters.
  double parameterBytes = 0;
  /// A data input: costs nothing (every stage that needs data reads it
  /// itself) and is placed in the first stage.
  bool isInput = false;
};

class Graph {
public:
  /// Adds a node and returns its id. Names must be unique; addNode asserts it,
  /// callers that read user input check with `find` first.
  NodeId addNode(Node node);
  /// Adds the edge `from -> to` (the activation of `from` is read by `to`).
  /// A repeated edge is ignored.
  void addEdge(NodeId from, NodeId to);

  size_t size() const { return nodes.size(); }
  size_t numEdges() const { return edgeCount; }
  const Node &node(NodeId id) const { return nodes[id]; }
  Node &node(NodeId id) { return nodes[id]; }
  const std::vector<NodeId> &successors(NodeId id) const { return succ[id]; }
  const std::vector<NodeId> &predecessors(NodeId id) const { return pred[id]; }
  std::optional<NodeId> find(const std::string &name) const;

  /// Forward plus backward time of a node in seconds; 0 for inputs.
  double computeSeconds(NodeId id) const;
  /// The costs the cost model charges; inputs are free.
  double activationBytes(NodeId id) const;
  double parameterBytes(NodeId id) const;

  /// A topological order of the nodes. Throws dpc::InputError when the
  /// graph is not a DAG, naming the nodes of one cycle in edge order.
  std::vector<NodeId> topologicalOrder() const;

private:
  std::vector<Node> nodes;
  std::vector<std::vector<NodeId>> succ, pred;
  std::unordered_map<std::string, NodeId> byName;
  size_t edgeCount = 0;
};

} // namespace dpc::planner

#endif // DPC_PLANNER_GRAPH_H

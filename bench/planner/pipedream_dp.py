"""An independent implementation of PipeDream's published partitioning DP.

Written from the equations of the PipeDream paper (SOSP'19, section 3.1),
not from its code, to time dpc's planner against the same algorithm class in
Python. For a chain of layers 1..n on m workers:

    T(i..j, m) = max(sum of compute, sum of weight-sync time) / m
    A(j, m)    = min( T(1..j, m),
                      min over i < j, m' < m of
                          max(A(i, m - m'), 2 C_i / B, T(i+1..j, m')) )

where C_i is the output activation of layer i and the weight-sync time of
a layer with w parameter bytes is 4 (m - 1) w / (B m). A DAG is linearised by
a topological order first (the chain model then sees only the activation of
the node before each cut, which is what under-counts skip connections).
"""

import heapq
import re

_NODE = re.compile(r"^(\S+) -- (.*) -- forward_compute_time=([^,]+), "
                   r"backward_compute_time=([^,]+), activation_size=(.+), "
                   r"parameter_size=(.+)$")


def _size(text):
    text = text.strip()
    if text.startswith("["):
        return sum(float(x) for x in text[1:-1].split(";"))
    return float(text)


def read_profile(path):
    """Returns (names, compute_s, activation, params, is_input, edges)."""
    nodes, edges = {}, []
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line.strip():
                continue
            if line.startswith("\t"):
                a, b = line.strip().split(" -- ")
                edges.append((a, b))
                continue
            m = _NODE.match(line)
            if not m:
                raise ValueError("bad line: " + line)
            name, desc = m.group(1), m.group(2)
            is_input = desc.startswith("Input")
            f_ms, b_ms = float(m.group(3)), float(m.group(4))
            nodes[name] = dict(
                compute=0.0 if is_input else (f_ms + b_ms) / 1000.0,
                act=0.0 if is_input else _size(m.group(5)),
                params=0.0 if is_input else _size(m.group(6)),
                input=is_input)
    return nodes, edges


def topological_order(nodes, edges):
    """Kahn's algorithm, inputs first, then by the number in the name."""
    def key(name):
        digits = re.search(r"(\d+)$", name)
        return (0 if nodes[name]["input"] else 1,
                int(digits.group(1)) if digits else 0, name)
    indegree = {n: 0 for n in nodes}
    succ = {n: [] for n in nodes}
    for a, b in edges:
        succ[a].append(b)
        indegree[b] += 1
    ready = [key(n) for n in nodes if indegree[n] == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        n = heapq.heappop(ready)[2]
        order.append(n)
        for w in succ[n]:
            indegree[w] -= 1
            if indegree[w] == 0:
                heapq.heappush(ready, key(w))
    return order


def pipedream_partition(order, nodes, devices, bandwidth=1e9, straight=False,
                        prune=False):
    """Returns [(first, last_exclusive, replicas)] over positions of order.

    prune=False evaluates every (i, m') as the published recurrence does;
    prune=True skips candidates that cannot beat the best so far (same
    result, a faster Python baseline).
    """
    n = len(order)
    comp = [0.0] * (n + 1)
    par = [0.0] * (n + 1)
    for p, name in enumerate(order):
        comp[p + 1] = comp[p] + nodes[name]["compute"]
        par[p + 1] = par[p] + nodes[name]["params"]
    act = [nodes[name]["act"] for name in order]

    def stage(i, j, m):  # positions i..j-1 on m replicas
        c = comp[j] - comp[i]
        sync = 4.0 * (m - 1) * (par[j] - par[i]) / (bandwidth * m)
        return max(c, sync) / m

    inf = float("inf")
    # best[j][m]: layers 0..j-1 on m workers; choice[j][m] = (i, m').
    best = [[inf] * (devices + 1) for _ in range(n + 1)]
    choice = [[None] * (devices + 1) for _ in range(n + 1)]
    for j in range(1, n + 1):
        for m in range(1, devices + 1):
            if not straight or m == 1:
                best[j][m] = stage(0, j, m)
                choice[j][m] = (0, m)
            for i in range(1, j):
                comm = 2.0 * act[i - 1] / bandwidth
                if prune and comm >= best[j][m]:
                    continue
                for mp in range(1, m):
                    if straight and mp != 1:
                        break
                    prev = best[i][m - mp]
                    if prune and prev >= best[j][m]:
                        continue
                    v = max(prev, comm, stage(i, j, mp))
                    if v < best[j][m]:
                        best[j][m] = v
                        choice[j][m] = (i, mp)
    m = min(range(1, devices + 1), key=lambda k: best[n][k])
    stages, j = [], n
    while j > 0:
        i, mp = choice[j][m]
        stages.append((i, j, mp))
        j, m = i, m - mp
    return list(reversed(stages))


def evaluate(stage_nodes, replicas, nodes, edges, bandwidth=1e9):
    """Bottleneck of a plan under issue 4's cost model (exact cuts)."""
    stage_of = {}
    for s, names in enumerate(stage_nodes):
        for name in names:
            stage_of[name] = s
    last_reader = dict(stage_of)
    for a, b in edges:
        last_reader[a] = max(last_reader[a], stage_of[b])
    S = len(stage_nodes)
    cut = [0.0] * max(S - 1, 0)
    for name, s in stage_of.items():
        for c in range(s, last_reader[name]):
            cut[c] += nodes[name]["act"]
    worst = 0.0
    for s, names in enumerate(stage_nodes):
        r = replicas[s]
        c = sum(nodes[x]["compute"] for x in names)
        p = sum(nodes[x]["params"] for x in names)
        t = (c + 4.0 * (r - 1) * p / (bandwidth * r)) / r
        if s > 0:
            t = max(t, 2.0 * cut[s - 1] / (bandwidth * r))
        if s + 1 < S:
            t = max(t, 2.0 * cut[s] / (bandwidth * r))
        worst = max(worst, t)
    return worst

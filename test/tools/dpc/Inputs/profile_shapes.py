"""Helpers of profile-shapes.test.

  profile_shapes.py shapes PROFILE        what a profile of several shapes holds
  profile_shapes.py costs PROFILE RANK    whether each bucket's stage costs in
                                          the rank's manifest add up to the
                                          profile's times at its shape
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def shapes(path):
    profile = json.load(open(path))
    listed = profile["shapes"]
    print(f"{len(listed)} shapes: " +
          " ".join(f"{s['batch']}x{s['length']}" for s in listed))
    names = {n["name"] for n in profile["nodes"] if not n.get("input")}
    print("every shape times every node:",
          all({n["name"] for n in s["nodes"]} == names for s in listed))
    top = {n["name"]: (n["forward_ms"], n["backward_ms"])
           for n in profile["nodes"] if not n.get("input")}
    first = {n["name"]: (n["forward_ms"], n["backward_ms"])
             for n in listed[0]["nodes"]}
    print(f"the graph is {listed[0]['batch']}x{listed[0]['length']}'s:",
          top == first)
    matmuls = [n for s in listed for n in s["nodes"] if "MatMul" in n["name"]]
    print("matmuls cost time:", bool(matmuls) and all(
        n["forward_ms"] > 0 and n["backward_ms"] > 0 for n in matmuls))


def fit(measured, node, batch, length):
    """ShapeCosts' estimate, again: non-negative least squares of
    a + b*B*L + c*B*L*L over the shapes that measured the node."""
    import itertools
    rows = [(s["batch"], s["length"], n) for s in measured
            for n in s["nodes"] if n["name"] == node]
    def features(b, l):
        return [1.0, b * l, b * l * l]
    out = []
    for key in ("forward_ms", "backward_ms"):
        x = [features(b, l) for b, l, _ in rows]
        y = [n[key] for _, _, n in rows]
        best, best_error = [0, 0, 0], float("inf")
        for size in (1, 2, 3):
            for active in itertools.combinations(range(3), size):
                coef = solve(x, y, active)
                if coef is None or min(coef) < 0:
                    continue
                error = sum((sum(c * f for c, f in zip(coef, row)) - t) ** 2
                            for row, t in zip(x, y))
                if error < best_error * (1 - 1e-12):
                    best, best_error = coef, error
        out.append(sum(c * f for c, f in zip(best, features(batch, length))))
    return out


def solve(x, y, active):
    """Least squares over the `active` columns (the others zero)."""
    n = len(active)
    a = [[sum(r[i] * r[j] for r in x) for j in active] +
         [sum(r[i] * t for r, t in zip(x, y))] for i in active]
    for c in range(n):
        pivot = max(range(c, n), key=lambda r: abs(a[r][c]))
        if abs(a[pivot][c]) < 1e-300:
            return None
        a[c], a[pivot] = a[pivot], a[c]
        for r in range(n):
            if r != c:
                f = a[r][c] / a[c][c]
                a[r] = [u - f * v for u, v in zip(a[r], a[c])]
    coef = [0.0, 0.0, 0.0]
    for i, column in enumerate(active):
        coef[column] = a[i][n] / a[i][i]
    return coef


def costs(profile_path, rank):
    profile = json.load(open(profile_path))
    measured = profile["shapes"]
    names = [n["name"] for n in profile["nodes"] if not n.get("input")]
    data = open(rank, "rb").read()
    start = data.index(b'{"buckets":')
    manifest = json.loads(data[start:data.index(b"\0", start)].decode())
    print(f"{len(manifest['buckets'])} buckets")
    # A job of several ranks carries the profile's compute factor (the one
    # measured with the most ranks not above its own); the build is on 2.
    factors = {int(k): v for k, v in profile.get("compute_factor", {}).items()}
    below = [k for k in factors if k <= 2]
    factor = (factors[max(below)] if below
              else factors[min(factors)] if factors else 1.0)
    for bucket in manifest["buckets"]:
        b, l = bucket["batch"], bucket["length"]
        shape = next((s for s in measured
                      if s["batch"] == b and s["length"] == l), None)
        if shape:
            forward = sum(n["forward_ms"] for n in shape["nodes"])
            backward = sum(n["backward_ms"] for n in shape["nodes"])
        else:
            times = [fit(measured, name, b, l) for name in names]
            forward = sum(t[0] for t in times)
            backward = sum(t[1] for t in times)
        forward *= factor
        backward *= factor
        # This rank's manifest carries every stage's costs.
        stage_forward = sum(c["forward"] for c in bucket["stage_costs"])
        stage_backward = sum(c["backward_input"] + c["backward_weight"]
                             for c in bucket["stage_costs"])
        # The backward also holds gradient sums of no model node (priced
        # at their analytic time scaled by the measured ratio): a few
        # percent more than the nodes' own times.
        ok = (abs(stage_forward - forward) <= 1e-6 * forward and
              backward * (1 - 1e-6) <= stage_backward <= backward * 1.1)
        print(f"{b}x{l} {'measured' if shape else 'fitted'}: stage costs "
              + ("match" if ok else
                 f"differ: {stage_forward:.6g}/{stage_backward:.6g} against "
                 f"{forward:.6g}/{backward:.6g}"))


if __name__ == "__main__":
    if sys.argv[1] == "shapes":
        shapes(sys.argv[2])
    else:
        costs(sys.argv[2], sys.argv[3])

"""The process tree under a pid, read from /proc, for the benches that
sample the memory of a command's processes (bench/large-models/measure.py,
bench/data/tokens.py)."""

import os


def descendants(pid):
    """The processes under `pid` (not itself), by /proc's parent links."""
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found

#!/usr/bin/env python3
"""Fails when a source of the plain C++ libraries is compiled with MLIR's or
LLVM's headers on its include path.

lib/ (runtime, planner, schedule, support) and the kernel libraries under
backends/*/runtime are linked into rank executables and built without the
compiler (-DDPC_ENABLE_COMPILER=OFF); only the compiler's targets link
dpc_mlir, which carries MLIR's include path. This reads the build's
compile_commands.json and checks every command of those sources.

usage: check_include_paths.py COMPILE_COMMANDS SOURCE_ROOT FORBIDDEN_DIR...
"""

import json
import os
import shlex
import sys

# Each must have at least one source in the build, so that a moved folder
# cannot make the check pass by checking nothing.
REQUIRED = ["lib/runtime/", "lib/planner/", "lib/schedule/", "lib/support/",
            "backends/cpu/runtime/"]
CHECKED = REQUIRED + ["backends/cuda/runtime/"]
INCLUDE_FLAGS = ["-isystem", "-I", "-iquote", "-idirafter", "--include-path"]


def include_dirs(arguments, directory):
    """The directories that the include flags of `arguments` name."""
    dirs = []
    i = 0
    while i < len(arguments):
        arg = arguments[i]
        for flag in INCLUDE_FLAGS:
            if arg == flag and i + 1 < len(arguments):
                i += 1
                dirs.append(arguments[i])
                break
            if arg.startswith(flag) and len(arg) > len(flag):
                dirs.append(arg[len(flag):].lstrip("="))
                break
        i += 1
    return [os.path.realpath(os.path.join(directory, d)) for d in dirs]


def main():
    commands_path, root = sys.argv[1], os.path.realpath(sys.argv[2])
    forbidden = {os.path.realpath(d) for d in sys.argv[3:] if d}
    if not forbidden:
        print("no forbidden include directory given")
        return 2
    with open(commands_path) as f:
        commands = json.load(f)
    seen = {prefix: 0 for prefix in CHECKED}
    problems = []
    for entry in commands:
        directory = entry.get("directory", ".")
        source = os.path.relpath(
            os.path.realpath(os.path.join(directory, entry["file"])), root)
        prefix = next((p for p in CHECKED if source.startswith(p)), None)
        if prefix is None:
            continue
        seen[prefix] += 1
        arguments = entry.get("arguments") or shlex.split(entry["command"])
        for d in include_dirs(arguments, directory):
            if d in forbidden:
                problems.append(f"{source}: compiled with {d} on its "
                                "include path")
    for prefix in REQUIRED:
        if seen[prefix] == 0:
            problems.append(f"no source under {prefix} in {commands_path}")
    for problem in problems:
        print(problem)
    if problems:
        return 1
    print(f"{sum(seen.values())} sources of "
          f"{', '.join(p for p in CHECKED if seen[p])} compiled without "
          f"{', '.join(sorted(forbidden))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

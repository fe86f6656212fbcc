"""The peer at its best, for every bench that runs PyTorch.

Debian's torch sends matmuls to whatever libblas.so.3 resolves to, which is
netlib's reference BLAS unless OpenBLAS is installed; no user trains on that.
The helpers here find OpenBLAS (the package's directory, or a copy unpacked
from Debian's registry into a cache without installing it, so that the
system's alternatives and the tests' oracles are left as they are), set its
thread count, choose the faster memory format for a convnet, give the bf16
autocast context, and measure this machine's fp32 peak for MFU.
"""

import contextlib
import ctypes
import glob
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
DEFAULT_DPC = os.path.join(REPO, "build", "bin", "dpc")
CACHE = os.path.join(os.path.expanduser("~"), ".cache", "dpc-bench")
OPENBLAS_PACKAGE = "libopenblas0-pthread"
OPENBLAS_SUBDIR = os.path.join("usr", "lib", "x86_64-linux-gnu",
                               "openblas-pthread")


def find_dpc(given, fail):
    """The dpc driver: `given`, else the build's, else the one on PATH."""
    for candidate in [given, DEFAULT_DPC]:
        if candidate and os.path.isfile(candidate) and \
                os.access(candidate, os.X_OK):
            return candidate
    for directory in os.environ.get("PATH", "").split(os.pathsep):
        candidate = os.path.join(directory, "dpc")
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    fail(f"no dpc executable ({given or DEFAULT_DPC}, nor on PATH): build "
         f"the project first (scripts/build) or pass --dpc")


def find_openblas(fetch=True):
    """A directory holding OpenBLAS's libblas.so.3, or None. Looks at the
    installed package, then at the bench's cache; with `fetch`, downloads
    the package from Debian's registry into the cache and unpacks it there
    (apt-get download + dpkg -x: nothing is installed)."""
    for root in ["/", os.path.join(CACHE, "openblas")]:
        candidate = os.path.join(root, OPENBLAS_SUBDIR)
        if os.path.isfile(os.path.join(candidate, "libblas.so.3")):
            return candidate
    if not fetch:
        return None
    os.makedirs(CACHE, exist_ok=True)
    print(f"bench: fetching {OPENBLAS_PACKAGE} from Debian's registry into "
          f"{CACHE} (not installed)", file=sys.stderr, flush=True)
    download = subprocess.run(["apt-get", "download", OPENBLAS_PACKAGE],
                              cwd=CACHE, capture_output=True, text=True)
    packages = sorted(glob.glob(os.path.join(CACHE, OPENBLAS_PACKAGE +
                                             "_*.deb")))
    if download.returncode != 0 or not packages:
        print(f"bench: apt-get download {OPENBLAS_PACKAGE} failed: "
              f"{download.stderr.strip()[-300:]}", file=sys.stderr)
        return None
    subprocess.run(["dpkg", "-x", packages[-1],
                    os.path.join(CACHE, "openblas")], check=True)
    return find_openblas(fetch=False)


def use_blas(choice, fail):
    """Makes PyTorch's BLAS the one `choice` names before torch loads it:
    'openblas' (default; fails when it cannot be found or fetched),
    'system' (whatever libblas.so.3 resolves to), or a directory holding a
    libblas.so.3. The dynamic loader reads LD_LIBRARY_PATH only at
    start-up, so this starts the script again with it set. dpc's ranks do
    not use libblas."""
    if choice == "system":
        return
    if choice == "openblas":
        directory = find_openblas()
        if directory is None:
            fail("--torch-blas openblas: OpenBLAS is neither installed nor "
                 "fetchable (apt-get download libopenblas0-pthread); pass "
                 "--torch-blas system to measure against the system BLAS")
    else:
        directory = os.path.abspath(choice)
        if not os.path.isfile(os.path.join(directory, "libblas.so.3")):
            fail(f"--torch-blas: no libblas.so.3 in {directory}")
    paths = os.environ.get("LD_LIBRARY_PATH", "")
    if paths.split(":")[0] == directory:
        return
    env = dict(os.environ,
               LD_LIBRARY_PATH=":".join(filter(None, [directory, paths])))
    os.execve(sys.executable, [sys.executable] + sys.argv, env)


def loaded_blas(torch):
    """(path, name, set_threads) of the BLAS PyTorch's matmuls go to.
    set_threads(T) sets OpenBLAS's own pool to T threads, so that it and
    PyTorch's intra-op pool do not oversubscribe the cores (None for a
    BLAS without threads)."""
    torch.mm(torch.ones(2, 2), torch.ones(2, 2))  # make sure it is loaded
    with open("/proc/self/maps") as f:
        paths = {line.split()[-1] for line in f if "libblas" in line}
    if not paths:
        return "unknown", "unknown", None
    path = os.path.realpath(sorted(paths)[0])
    library = ctypes.CDLL(path)
    setter = getattr(library, "openblas_set_num_threads", None)
    name = ("OpenBLAS" if setter else
            "reference BLAS" if "blas/libblas" in path else
            os.path.basename(os.path.dirname(path)))
    return path, name, setter


def peak_gflops():
    """This machine's fp32 peak on one core, in GFLOPS: peak.c built with
    -march=native and run (best of three trials)."""
    os.makedirs(CACHE, exist_ok=True)
    binary = os.path.join(CACHE, "peak")
    source = os.path.join(HERE, "peak.c")
    if not os.path.isfile(binary) or \
            os.path.getmtime(binary) < os.path.getmtime(source):
        subprocess.run(["cc", "-O3", "-march=native", source, "-o", binary],
                       check=True)
    out = subprocess.run([binary], capture_output=True, text=True,
                         check=True).stdout
    return float(out.split()[0])


def autocast(torch, precision):
    """PyTorch's counterpart of dpc's --precision: bf16 autocast on the CPU
    for 'bf16', nothing for 'fp32'."""
    if precision == "bf16":
        return torch.autocast("cpu", dtype=torch.bfloat16)
    return contextlib.nullcontext()


def faster_memory_format(torch, rate, make_model, x):
    """For a convnet's 4-D input: measures `rate(model, x)` (samples/s of
    a few training steps) for a throwaway model from `make_model()` in the
    default (contiguous) format and in channels_last, and returns the
    faster one as (name, memory format)."""
    if x.dim() != 4:
        return "contiguous", torch.contiguous_format
    formats = {"contiguous": torch.contiguous_format,
               "channels_last": torch.channels_last}
    rates = {name: rate(make_model().to(memory_format=fmt),
                        x.contiguous(memory_format=fmt))
             for name, fmt in formats.items()}
    best = max(rates, key=rates.get)
    return best, formats[best]


def forward_flops(compiled_dir):
    """The forward FLOPs of one microbatch as dpc's cost model counts them
    (a multiply-add counts two): the sum of `flops` over the nn.cost
    attributes of the first module `dpc compile` wrote with costs, which
    is before autodiff. None when the compile kept no IR."""
    found = sorted(glob.glob(os.path.join(compiled_dir, "mlir",
                                          "*-annotate-costs.mlir")))
    if not found:
        return None
    total = 0
    with open(found[0]) as f:
        for line in f:
            at = line.find("nn.cost = {")
            if at < 0:
                continue
            fields = line[at:line.find("}", at)]
            key = fields.find(" flops = ")
            if key >= 0:
                total += int(fields[key + 9:].split()[0])
    return total

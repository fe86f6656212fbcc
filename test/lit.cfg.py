# lit configuration for dpc: dialect, pass, frontend and tool tests.
import os
import shutil
import subprocess

import lit.formats

config.name = "dpc"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.dpc_obj_root, "test")
config.excludes = ["unittests", "lit.cfg.py", "lit.site.cfg.py", "CMakeLists.txt",
                   "README.md", "Inputs", "lit.local.cfg", "oracle", "executor"]

# Our tools first, then LLVM's FileCheck, not and count.
path = [config.dpc_tools_dir, config.llvm_tools_dir, config.environment.get("PATH", "")]
config.environment["PATH"] = os.pathsep.join(path)
config.substitutions.append(("%python", config.python_executable))
config.substitutions.append(("%profiles", os.path.join(config.dpc_src_root, "examples", "profiles")))
# This machine's online cores, dpc compile's default --cores.
config.substitutions.append(("%cores", str(os.sysconf("SC_NPROCESSORS_ONLN"))))

if config.dpc_enable_compiler:
    config.available_features.add("compiler")
# "long": end-to-end runs too slow for CI (e2e/vision's AlexNet and VGG at
# 224 pixels, ResNet-50 and DenseNet-121, each over 200 s of CPU), run with
# DPC_LONG_TESTS=1.
if os.environ.get("DPC_LONG_TESTS") == "1":
    config.available_features.add("long")
# "cuda": this build has the CUDA backend (dpc compile --target cuda links);
# "gpu": this machine has a GPU to run its ranks on.
if getattr(config, "dpc_enable_cuda", False):
    config.available_features.add("cuda")
nvidia_smi = shutil.which("nvidia-smi")
if nvidia_smi:
    try:
        listed = subprocess.run([nvidia_smi, "-L"], capture_output=True,
                                timeout=30)
        if listed.returncode == 0 and listed.stdout.strip():
            config.available_features.add("gpu")
    except (OSError, subprocess.TimeoutExpired):
        pass
# "cluster": this machine can make the emulated cluster of scripts/cluster
# (root, network, UTS and mount namespaces, a bridge); where it cannot, its
# tests are unsupported, and `scripts/cluster check` prints why.
cluster_script = os.path.join(config.dpc_src_root, "scripts", "cluster")
try:
    checked = subprocess.run([cluster_script, "check"], capture_output=True,
                             timeout=60)
    if checked.returncode == 0:
        config.available_features.add("cluster")
    else:
        lit_config.note("cluster tests unsupported: " +
                        checked.stdout.decode(errors="replace").strip())
except (OSError, subprocess.TimeoutExpired) as error:
    lit_config.note(f"cluster tests unsupported: {error}")
config.substitutions.append(("%cluster", cluster_script))
# "slurm": Debian's slurm-wlm and munge are installed, for Slurm on the
# emulated cluster (scripts/cluster slurm-up).
slurm_path = os.pathsep.join([config.environment.get("PATH", ""), "/usr/sbin"])
slurm_missing = [tool for tool in ("munged", "slurmctld", "slurmd", "srun", "sinfo")
                 if not shutil.which(tool, path=slurm_path)]
if slurm_missing:
    lit_config.note("slurm tests unsupported: missing " + ", ".join(slurm_missing) +
                    " (Debian packages slurm-wlm and munge)")
else:
    config.available_features.add("slurm")

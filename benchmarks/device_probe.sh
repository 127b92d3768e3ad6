#!/usr/bin/env bash
# One quick look at the GPU machine: versions, sandbox primitives, a Triton launch.
set -u
OUT=${OUT:-./gpu-out}; mkdir -p "$OUT"
{
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
python3 - <<'PY'
import ctypes, os, sys, subprocess, platform
import torch, triton, psutil
print("python", sys.version.split()[0], "torch", torch.__version__, "triton", triton.__version__, "cuda", torch.version.cuda)
print("device", torch.cuda.get_device_name(0), torch.cuda.get_device_properties(0))
print("uid", os.getuid(), "kernel", platform.release())
r = subprocess.run([sys.executable, "-c", "import ctypes,os;l=ctypes.CDLL(None,use_errno=True);rc=l.unshare(0x40000000);print('unshare netns rc',rc,os.strerror(ctypes.get_errno()))"], capture_output=True, text=True)
print(r.stdout.strip(), r.stderr.strip()[-300:])
import resource
print("RLIMIT_NPROC", resource.getrlimit(resource.RLIMIT_NPROC))
print("cgroup", open("/proc/self/cgroup").read().strip())
import triton.language as tl
@triton.jit
def k(x, y, n, B: tl.constexpr):
    o = tl.program_id(0) * B + tl.arange(0, B)
    m = o < n
    tl.store(y + o, tl.load(x + o, mask=m) * 2, mask=m)
x = torch.randn(1000, device="cuda"); y = torch.empty_like(x)
k[(triton.cdiv(1000, 256),)](x, y, 1000, B=256)
print("triton ok", torch.allclose(y, 2 * x))
PY
} 2>&1 | tee "$OUT/probe.txt"

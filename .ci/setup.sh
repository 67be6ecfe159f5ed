# Sourced by .ci/run and bench/run: everything a fresh machine needs, installed only when missing.
#  - a virtual environment in .venv with gpuops and its test extra
#  - a WebGPU adapter: when wgpu finds no Vulkan/Metal/D3D12 adapter, Mesa's software Vulkan driver
#    (Debian package mesa-vulkan-drivers) is installed.
# Afterwards $PY is the environment's python and GPUOPS_ADAPTER (if it was empty) names the adapter to use.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-/tmp}"  # silences wgpu-native's loader warnings
PY=.venv/bin/python
if [ ! -x "$PY" ]; then
  python3 -m venv .venv
fi
if ! "$PY" -c 'import gpuops, pytest, hypothesis' 2>/dev/null; then
  "$PY" -m pip install -q --disable-pip-version-check -e ".[test]"
fi

native_adapter() {
  "$PY" - <<'PYEOF'
import sys, wgpu
adapters = [a for a in wgpu.gpu.enumerate_adapters_sync() if a.info["backend_type"] != "OpenGL"]
if not adapters:
    sys.exit(1)
print(adapters[0].info["device"], "|", adapters[0].info["backend_type"])
PYEOF
}

if ! native_adapter >/dev/null 2>&1; then
  echo "no native WebGPU adapter: installing Mesa's software Vulkan driver (mesa-vulkan-drivers)"
  SUDO=""
  [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq mesa-vulkan-drivers libvulkan1 >/dev/null
fi
echo "WebGPU adapter: $(native_adapter 2>/dev/null || echo 'none found')"

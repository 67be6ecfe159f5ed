# Sourced by .ci/run and bench/run: everything a fresh machine needs, installed only when missing.
#  - a virtual environment in .venv with gpuops and its test extra
#  - a WebGPU adapter: when wgpu finds no Vulkan/Metal/D3D12 adapter, Mesa's software Vulkan driver
#    (Debian package mesa-vulkan-drivers) is installed.
#  - on request (setup_opengl, for .ci/run's second run), an OpenGL adapter that can run compute shaders: when
#    wgpu finds none, Mesa's EGL and software OpenGL driver (Debian packages libegl1, libegl-mesa0,
#    libgl1-mesa-dri: llvmpipe, OpenGL 4.5).
# Afterwards $PY is the environment's python, and GL_SOFTWARE_ENV holds the environment (VAR=value words) that
# points wgpu's OpenGL backend at Mesa's llvmpipe.
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

# Mesa's software OpenGL even where a GPU vendor's EGL would answer first (NVIDIA's gives OpenGL 3.3, without the
# compute shaders WebGPU needs).
GL_SOFTWARE_ENV=(LIBGL_ALWAYS_SOFTWARE=1)
if [ -f /usr/share/glvnd/egl_vendor.d/50_mesa.json ]; then
  GL_SOFTWARE_ENV+=(__EGL_VENDOR_LIBRARY_FILENAMES=/usr/share/glvnd/egl_vendor.d/50_mesa.json)
fi

opengl_adapter() {
  env "${GL_SOFTWARE_ENV[@]}" "$PY" - <<'PYEOF'
import sys, wgpu
from gpuops.adapters import compute_shader_problem
adapters = [a for a in wgpu.gpu.enumerate_adapters_sync()
            if a.info["backend_type"] == "OpenGL" and compute_shader_problem(a.info, a.limits) is None]
if not adapters:
    sys.exit(1)
print(adapters[0].info["device"], "|", adapters[0].info["description"])
PYEOF
}

setup_opengl() {
  if ! opengl_adapter >/dev/null 2>&1; then
    echo "no OpenGL adapter that runs compute shaders: installing Mesa's EGL and software OpenGL driver"
    local sudo=""
    [ "$(id -u)" = 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq libegl1 libegl-mesa0 libgl1-mesa-dri >/dev/null
  fi
  echo "OpenGL adapter: $(opengl_adapter 2>/dev/null || echo 'none found')"
}

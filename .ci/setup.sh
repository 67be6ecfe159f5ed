# Sourced by .ci/run and bench/run: what a fresh machine needs, installed only when missing.
#  - install_gpuops VENV [EXTRAS]: the README's Install section. A virtual environment at VENV, an sdist and a wheel
#    built from it by `python -m build` (into VENV/dist), and the wheel installed, not editable, with EXTRAS (e.g.
#    "test"). Afterwards $PY is VENV's python and $SDIST, $WHEEL the built files.
#  - install_native_driver: when wgpu finds no Vulkan/Metal/D3D12 adapter, Mesa's software Vulkan driver (Debian
#    package mesa-vulkan-drivers: lavapipe).
#  - install_opengl_driver: when wgpu finds no OpenGL adapter that can run compute shaders, Mesa's EGL and software
#    OpenGL driver (Debian packages libegl1, libegl-mesa0, libgl1-mesa-dri: llvmpipe, OpenGL 4.5).
# $CHECKOUT is the checkout; GL_SOFTWARE_ENV holds the environment (VAR=value words) that points wgpu's OpenGL
# backend at Mesa's llvmpipe. Python runs with -P wherever gpuops is imported, so that the current folder (the
# checkout) never stands in for the installed package.
set -euo pipefail
CHECKOUT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-/tmp}"  # silences the drivers' window-system warnings in these scripts
PIP_QUIET=(-q --disable-pip-version-check)

install_gpuops() {
  local venv=$1 extras=${2:-}
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
  PY=$venv/bin/python
  "$PY" -m pip install "${PIP_QUIET[@]}" build
  rm -rf "$venv/dist"
  "$PY" -m build --outdir "$venv/dist" "$CHECKOUT" >"$venv/build.log" 2>&1 || { cat "$venv/build.log"; return 1; }
  SDIST=$(echo "$venv"/dist/*.tar.gz)
  WHEEL=$(echo "$venv"/dist/*.whl)
  "$PY" -m pip install "${PIP_QUIET[@]}" --force-reinstall --no-deps "$WHEEL"
  "$PY" -m pip install "${PIP_QUIET[@]}" "$WHEEL${extras:+[$extras]}"
}

native_adapter() {
  "$PY" -P - <<'PYEOF'
import sys, wgpu
adapters = [a for a in wgpu.gpu.enumerate_adapters_sync() if a.info["backend_type"] != "OpenGL"]
if not adapters:
    sys.exit(1)
print(adapters[0].info["device"], "|", adapters[0].info["backend_type"])
PYEOF
}

apt_install() {
  local sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$@" >/dev/null
}

install_native_driver() {
  if ! native_adapter >/dev/null 2>&1; then
    echo "no native WebGPU adapter: installing Mesa's software Vulkan driver (mesa-vulkan-drivers)"
    apt_install mesa-vulkan-drivers libvulkan1
  fi
  echo "WebGPU adapter: $(native_adapter 2>/dev/null || echo 'none found')"
}

# Mesa's software OpenGL even where a GPU vendor's EGL would answer first (NVIDIA's gives OpenGL 3.3, without the
# compute shaders WebGPU needs).
GL_SOFTWARE_ENV=(LIBGL_ALWAYS_SOFTWARE=1)
if [ -f /usr/share/glvnd/egl_vendor.d/50_mesa.json ]; then
  GL_SOFTWARE_ENV+=(__EGL_VENDOR_LIBRARY_FILENAMES=/usr/share/glvnd/egl_vendor.d/50_mesa.json)
fi

opengl_adapter() {
  env "${GL_SOFTWARE_ENV[@]}" "$PY" -P - <<'PYEOF'
import sys, wgpu
from gpuops.adapter_choice import compute_shader_problem
adapters = [a for a in wgpu.gpu.enumerate_adapters_sync()
            if a.info["backend_type"] == "OpenGL" and compute_shader_problem(a.info, a.limits) is None]
if not adapters:
    sys.exit(1)
print(adapters[0].info["device"], "|", adapters[0].info["description"])
PYEOF
}

install_opengl_driver() {
  if ! opengl_adapter >/dev/null 2>&1; then
    echo "no OpenGL adapter that runs compute shaders: installing Mesa's EGL and software OpenGL driver"
    apt_install libegl1 libegl-mesa0 libgl1-mesa-dri
  fi
  echo "OpenGL adapter: $(opengl_adapter 2>/dev/null || echo 'none found')"
}

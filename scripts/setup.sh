#!/usr/bin/env bash
# Installs the Debian packages xreduce needs (when missing), makes the Python virtual environment
# ${XR_VENV:-.venv} with the Python packages from PyPI, configures and builds xreduce in
# ${XR_BUILD_DIR:-build} (the Python extension included), then installs the Python package into
# the virtual environment from that build. Extra arguments go to the CMake configure step.
set -euo pipefail
cd "$(dirname "$0")/.."

# clang, libomp-dev (LLVM's OpenMP runtime and its Archer tool) and libclang-rt-dev serve the
# ThreadSanitizer stage of scripts/test.sh (scripts/sanitize.sh); g++ brings ASan and UBSan.
# Open MPI (libopenmpi-dev, openmpi-bin) builds xreduce::mpi and runs its tests with mpirun.
# python3-matplotlib draws the plots (scripts/plot.py, reduce_cli --plot). python3-venv and
# python3-dev (Python.h) build the Python package. ninja-build builds (scripts/generator.sh).
packages=(cmake g++ make ninja-build pkg-config opencl-headers ocl-icd-opencl-dev pocl-opencl-icd
          doctest-dev libcli11-dev nlohmann-json3-dev libmpfr-dev clang libomp-dev libclang-rt-dev
          libopenmpi-dev openmpi-bin python3-matplotlib python3-venv python3-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  if [[ $(id -u) -ne 0 ]]; then
    echo "setup: need root to install packages (run as root or: sudo apt-get install -y ${missing[*]})" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# nvcc is optional: Debian's CUDA toolkit is older than 12, so CUDA comes from NVIDIA's
# installer. Without it the CUDA backend is simply not built.
if ! command -v nvcc >/dev/null && [[ -x /usr/local/cuda/bin/nvcc ]]; then
  export PATH=/usr/local/cuda/bin:$PATH
fi

# With no GPU to run it, CUDA code is compiled to be checked: to PTX alone (compute_90, compiled
# for the GPU when it loads) and for speed of compiling (XREDUCE_CUDA_CHECK_ONLY: nvcc -Ofc max,
# the host code unoptimised). nvcc's front end checks all of it; the machine code and the
# optimiser, most of nvcc's time (backends/cuda/CMakeLists.txt), wait for a machine that can run
# it. Such a build is slow on a GPU: set up again where there is one. CUDAARCHS,
# -DCMAKE_CUDA_ARCHITECTURES and -DXREDUCE_CUDA_CHECK_ONLY choose otherwise.
cuda_arch=()
gpu=OFF
nvidia-smi -L >/dev/null 2>&1 && gpu=ON
if [[ $gpu == OFF && -z ${CUDAARCHS:-} && "$*" != *CMAKE_CUDA_ARCHITECTURES* ]]; then
  cuda_arch+=(-DCMAKE_CUDA_ARCHITECTURES=90-virtual)
fi
if [[ "$*" != *XREDUCE_CUDA_CHECK_ONLY* ]]; then
  cuda_arch+=(-DXREDUCE_CUDA_CHECK_ONLY=$([[ $gpu == ON ]] && echo OFF || echo ON))
fi

# The Python package's build and test requirements, from PyPI into a virtual environment (pip
# leaves those already there alone).
venv=${XR_VENV:-.venv}
start=$SECONDS
[[ -x $venv/bin/python ]] || python3 -m venv "$venv"
"$venv/bin/python" -m pip install -q --disable-pip-version-check nanobind scikit-build-core numpy pytest hypothesis ml_dtypes mpi4py
echo "setup: python packages: $((SECONDS - start)) s"

build=${XR_BUILD_DIR:-build}
source scripts/generator.sh
# shellcheck disable=SC2046
cmake -S . -B "$build" $(generator_flags "$build") -DCMAKE_BUILD_TYPE=Release "${cuda_arch[@]}" -DXREDUCE_PYTHON=ON \
  -DPython_EXECUTABLE="$(realpath "$venv")/bin/python" "$@"
start=$SECONDS
cmake --build "$build" -j "$(nproc)"
echo "setup: build: $((SECONDS - start)) s"

# pip install . over the build just made (scikit-build-core's build-dir): it reconfigures that
# tree with the same settings, finds the extension, libxreduce and reduce_cli built, and
# installs them, so that nothing compiles twice. -DXREDUCE_PYTHON=OFF leaves the package out.
if grep -q '^XREDUCE_PYTHON:BOOL=ON$' "$build/CMakeCache.txt"; then
  start=$SECONDS
  generator=$(sed -n 's/^CMAKE_GENERATOR:INTERNAL=//p' "$build/CMakeCache.txt")
  CMAKE_GENERATOR=$generator "$venv/bin/python" -m pip install -q --disable-pip-version-check --no-build-isolation \
    --no-deps --config-settings=build-dir="$(realpath "$build")" .
  echo "setup: python package: $((SECONDS - start)) s"
fi

# Sourced by setup.sh and sanitize.sh. generator_flags DIR prints the CMake generator flag for a
# build directory DIR: -GNinja where Ninja is installed, DIR is new and CMAKE_GENERATOR does not
# choose; nothing otherwise (a configured directory keeps its generator, and CMake's default is
# Unix Makefiles). Ninja keeps both cores busy where make leaves them idle: the ASan stage's
# build took 394 s with Ninja against 530 s with make on the 2-core development VM
# (docs/performance.md, "Build and test time").
generator_flags() {
  [[ -f $1/CMakeCache.txt || -n ${CMAKE_GENERATOR:-} ]] && return 0
  command -v ninja >/dev/null && echo "-GNinja"
  return 0
}

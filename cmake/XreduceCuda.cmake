# CUDA as a language of the including project, set up as xreduce's own CUDA sources need it.
# xreduce's CMakeLists.txt includes this file; so does the installed package config, for
# applications with CUDA sources of their own (xreduce_enable_cuda() there).
#
# xr_enable_cuda_language(default_architectures): in the calling directory (the top level, for
# every directory), enables CUDA for CMAKE_CUDA_ARCHITECTURES, or CUDAARCHS, or else
# default_architectures, and lets nvcc compile C++20, which xreduce's headers are written in.
macro(xr_enable_cuda_language default_architectures)
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES AND NOT DEFINED ENV{CUDAARCHS})
    set(CMAKE_CUDA_ARCHITECTURES ${default_architectures})
  endif()
  enable_language(CUDA)
  # CMake < 3.26 does not know nvcc's C++20 flag.
  if(NOT DEFINED CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
    set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
    set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
  endif()
endmacro()

# The library and its parts.
#
# Core and every backend compile once, into OBJECT libraries. Two libraries are made of the same
# objects:
#   xreduce          the installed library, shared or static (BUILD_SHARED_LIBS). Built with
#                    hidden visibility: it exports what the public headers mark XR_API
#                    (xreduce/export.hpp) and nothing else.
#   xreduce_testing  static, never installed: the same code with every internal symbol reachable,
#                    for the tests that call a backend's internals (tests/opencl).
# xreduce_internal (an INTERFACE library) carries core's public and internal include paths to
# the parts.

# xr_library_part(<object-library> [INCLUDE <dir>] [LINK <deps>...] [PUBLIC_LINK <deps>...])
#   adds the objects of <object-library> to xreduce and xreduce_testing.
#   INCLUDE      a directory of public headers (installed by the caller).
#   LINK         what the part's code needs to compile and link; private to xreduce (a static
#                xreduce lists them for its users to link, so xreduceConfig.cmake finds them).
#   PUBLIC_LINK  the same, for dependencies that the public headers need too.
function(xr_library_part part)
  cmake_parse_arguments(arg "" "INCLUDE" "LINK;PUBLIC_LINK" ${ARGN})
  target_link_libraries(${part} PRIVATE xreduce_internal ${arg_LINK} ${arg_PUBLIC_LINK})
  if(arg_INCLUDE)
    target_include_directories(${part} PRIVATE ${arg_INCLUDE})
  endif()
  foreach(lib xreduce xreduce_testing)
    target_sources(${lib} PRIVATE $<TARGET_OBJECTS:${part}>)
    target_link_libraries(${lib} PRIVATE ${arg_LINK} PUBLIC ${arg_PUBLIC_LINK})
    if(arg_INCLUDE)
      target_include_directories(${lib} PUBLIC $<BUILD_INTERFACE:${arg_INCLUDE}>)
    endif()
  endforeach()
endfunction()

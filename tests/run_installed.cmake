# Installs the build tree into a scratch prefix, then configures and builds a separate project
# against it with find_package(xreduce), as an application is built, and runs the steps script
# STEPS, which calls run_step() and run_program() with these set: PREFIX (the installed
# package), BUILD (the project's build directory), WORK_DIR (scratch space), WITH_OPENCL,
# LIBDIR (as installed) and MPIEXEC (mpirun, where MPI was found).
#   cmake -DBUILD_DIR=... -DSOURCE_DIR=... -DWORK_DIR=... -DCXX=... -DWITH_OPENCL=... -DLIBDIR=...
#         -DSTEPS=... -P run_installed.cmake
file(REMOVE_RECURSE ${WORK_DIR})
set(PREFIX ${WORK_DIR}/prefix)
set(BUILD ${WORK_DIR}/build)
# run_step(command...): fails the test unless the command exits 0.
function(run_step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  message("${out}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "step failed (${rc}): ${ARGN}")
  endif()
endfunction()
# run_program(command...): the same, except that exit code 77 (the program cannot run here: no
# device) is reported as a skip and the test goes on; run_program_rc and run_program_output are
# what it returned and printed.
function(run_program)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  message("${out}")
  if(rc EQUAL 77)
    message("SKIP: ${ARGN}")
  elseif(NOT rc EQUAL 0)
    message(FATAL_ERROR "step failed (${rc}): ${ARGN}")
  endif()
  set(run_program_rc ${rc} PARENT_SCOPE)
  set(run_program_output "${out}" PARENT_SCOPE)
endfunction()
run_step(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${PREFIX})
run_step(${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${BUILD} -DCMAKE_PREFIX_PATH=${PREFIX} -DCMAKE_CXX_COMPILER=${CXX})
run_step(${CMAKE_COMMAND} --build ${BUILD})
include(${STEPS})

# The consumer project's programs (run_installed.cmake): consumer, and consumer_opencl when
# the OpenCL backend (and so xreduce/opencl.hpp) is built. Then the installed reduce_cli draws
# its ladder with the installed plot.py, where python3 has matplotlib. consumer_mpi runs on 2
# ranks where the package has xreduce::mpi.
run_step(${BUILD}/consumer)
if(WITH_OPENCL)
  run_step(${BUILD}/consumer_opencl)
endif()
if(EXISTS ${BUILD}/consumer_mpi)
  run_step(${CMAKE_COMMAND} -E env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
           OMPI_MCA_rmaps_base_oversubscribe=1 ${MPIEXEC} -n 2 ${BUILD}/consumer_mpi)
endif()
if(EXISTS ${PREFIX}/bin/reduce_cli)
  # The build chose the first of python3 and /usr/bin/python3 that imports matplotlib.
  set(no_matplotlib 1)
  foreach(py python3 /usr/bin/python3)
    execute_process(COMMAND ${py} -c "import matplotlib" RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET)
    if(rc EQUAL 0)
      set(no_matplotlib 0)
    endif()
  endforeach()
  if(no_matplotlib)
    message("SKIP: installed reduce_cli --plot: no python3 with matplotlib")
  else()
    execute_process(COMMAND ${CMAKE_COMMAND} -E env --unset=XR_PLOT_SCRIPT LD_LIBRARY_PATH=${PREFIX}/${LIBDIR}
                    ${PREFIX}/bin/reduce_cli -b omp --kernel all --n 2^12 --repeat 1 --plot ${WORK_DIR}/ladder.png
                    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
    message("${out}")
    string(FIND "${out}" "drawn by ${PREFIX}/share/xreduce/plot.py" installed_script)
    if(NOT rc EQUAL 0 OR NOT EXISTS ${WORK_DIR}/ladder.png OR installed_script EQUAL -1)
      message(FATAL_ERROR "the installed reduce_cli did not draw with the installed plot.py (exit ${rc})")
    endif()
  endif()
endif()

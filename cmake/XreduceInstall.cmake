# install() and the exported package: find_package(xreduce) then
# target_link_libraries(app PRIVATE xreduce::xreduce).
include(CMakePackageConfigHelpers)
install(TARGETS xreduce EXPORT xreduceTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(EXPORT xreduceTargets NAMESPACE xreduce:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/xreduce)
set(XREDUCE_BACKENDS "")
foreach(name OPENMP CUDA OPENCL)
  if(XR_BUILD_${name})
    list(APPEND XREDUCE_BACKENDS ${name})
  endif()
endforeach()
# What xreduceConfig.cmake finds: a static libxreduce leaves its dependencies to the
# application's link (cmake/xreduceConfig.cmake.in).
get_target_property(xr_type xreduce TYPE)
if(xr_type STREQUAL "STATIC_LIBRARY")
  set(XREDUCE_STATIC TRUE)
else()
  set(XREDUCE_STATIC FALSE)
endif()
if(OpenMP_CXX_FOUND)
  set(XREDUCE_LINKS_OPENMP TRUE)
else()
  set(XREDUCE_LINKS_OPENMP FALSE)
endif()
set(XREDUCE_WITH_MPI ${XR_BUILD_MPI})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/xreduceConfig.cmake.in
  ${PROJECT_BINARY_DIR}/xreduceConfig.cmake INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/xreduce)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/xreduceConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/xreduceConfig.cmake ${PROJECT_BINARY_DIR}/xreduceConfigVersion.cmake
  ${PROJECT_SOURCE_DIR}/cmake/XreduceCuda.cmake DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/xreduce)

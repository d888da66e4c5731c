# Finds GNU MPFR and GMP (Debian: libmpfr-dev) through CMAKE_PREFIX_PATH and the system paths.
# Defines MPFR::MPFR.
find_path(MPFR_INCLUDE_DIR mpfr.h)
find_path(GMP_INCLUDE_DIR gmp.h)  # Debian: include/<multiarch>/gmp.h
find_library(MPFR_LIBRARY mpfr)
find_library(GMP_LIBRARY gmp)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(MPFR REQUIRED_VARS MPFR_INCLUDE_DIR GMP_INCLUDE_DIR MPFR_LIBRARY GMP_LIBRARY)
if(MPFR_FOUND AND NOT TARGET MPFR::MPFR)
  add_library(MPFR::MPFR UNKNOWN IMPORTED)
  set_target_properties(MPFR::MPFR PROPERTIES IMPORTED_LOCATION "${MPFR_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${MPFR_INCLUDE_DIR};${GMP_INCLUDE_DIR}" INTERFACE_LINK_LIBRARIES "${GMP_LIBRARY}")
endif()

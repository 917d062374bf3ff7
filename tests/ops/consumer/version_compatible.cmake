# SPDX-License-Identifier: MIT
# cmake -DF=sigverifyConfigVersion.cmake -DPACKAGE_FIND_VERSION=... -P version_compatible.cmake
# prints TRUE or FALSE: whether find_package would take that package version
# for the version asked (tests/ops/test_install.sh).
include(${F})
if(PACKAGE_VERSION_COMPATIBLE)
  execute_process(COMMAND ${CMAKE_COMMAND} -E echo TRUE)
else()
  execute_process(COMMAND ${CMAKE_COMMAND} -E echo FALSE)
endif()

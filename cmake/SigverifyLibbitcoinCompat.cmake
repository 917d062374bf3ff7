# SPDX-License-Identifier: MIT
# The opt-in libbitcoin compatibility layer (docs/libbitcoin.md): the header
# <ufsecp/libbitcoin.hpp>, the CMake package secp256k1-fast (target
# secp256k1::fastsecp256k1) and the pkg-config module secp256k1-fast, all
# resolving to libsigverify. With SIGVERIFY_LIBBITCOIN_COMPAT=OFF (the
# default) a plain install leaves them out; the install component
# libsigverify-libbitcoin-dev still installs them on request:
#   cmake --install build --component libsigverify-libbitcoin-dev
# Included after SigverifyInstall.cmake (it uses SIGVERIFY_PC_* from there).
option(SIGVERIFY_LIBBITCOIN_COMPAT "Install the libbitcoin compatibility layer (ufsecp/libbitcoin.hpp, secp256k1-fast)" OFF)
if(SIGVERIFY_LIBBITCOIN_COMPAT)
  set(_sv_compat_all)
else()
  set(_sv_compat_all EXCLUDE_FROM_ALL)
endif()
set(_sv_compat COMPONENT libsigverify-libbitcoin-dev ${_sv_compat_all})

install(FILES ${PROJECT_SOURCE_DIR}/client/compat/ufsecp/libbitcoin.hpp
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/ufsecp ${_sv_compat})

set(_sv_compat_cmakedir ${CMAKE_INSTALL_LIBDIR}/cmake/secp256k1-fast)
configure_file(${PROJECT_SOURCE_DIR}/cmake/secp256k1-fastConfig.cmake.in
  ${PROJECT_BINARY_DIR}/cmake/secp256k1-fastConfig.cmake @ONLY)
# AnyNewerVersion: find_package(secp256k1-fast X) is satisfied for every X <= 4.0.0.0.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/cmake/secp256k1-fastConfigVersion.cmake
  VERSION 4.0.0.0 COMPATIBILITY AnyNewerVersion)
install(FILES ${PROJECT_BINARY_DIR}/cmake/secp256k1-fastConfig.cmake
  ${PROJECT_BINARY_DIR}/cmake/secp256k1-fastConfigVersion.cmake DESTINATION ${_sv_compat_cmakedir} ${_sv_compat})

configure_file(${PROJECT_SOURCE_DIR}/cmake/secp256k1-fast.pc.in ${PROJECT_BINARY_DIR}/cmake/secp256k1-fast.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/cmake/secp256k1-fast.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig ${_sv_compat})

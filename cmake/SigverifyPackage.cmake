# SPDX-License-Identifier: MIT
# Debian packages with CPack's DEB generator (scripts/package.sh; docs/operations.md
# says why CPack and not a debian/ directory). One package per install component:
#   sigverifyd        the daemon, the sigverify CLI, unit, sysusers, tmpfiles, config
#                     (a conffile), docs, man pages, bash completion
#   libsigverify0     the shared client library (SONAME libsigverify.so.SOVERSION, CMakeLists.txt)
#   libsigverify-dev  headers, static libraries, pkg-config file, CMake package
#   libsigverify-libbitcoin-dev
#                     the opt-in libbitcoin compatibility layer (<ufsecp/libbitcoin.hpp>,
#                     CMake package and pkg-config module secp256k1-fast): built always,
#                     installed only by whoever wants an unmodified libbitcoin to use us
# The packages are meant for a build configured with -DCMAKE_INSTALL_PREFIX=/usr.
set(SIGVERIFY_PACKAGE_MAINTAINER "sigverify maintainers <maintainers@users.noreply.a-seed-da0336f9.example>"
  CACHE STRING "Maintainer field of the Debian packages")

set(CPACK_PACKAGE_NAME sigverify)
set(CPACK_PACKAGE_VENDOR "sigverify")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
# Each package's description starts with its own summary line: CPack prepends
# CPACK_PACKAGE_DESCRIPTION_SUMMARY unless it is CPack's default, so it is that.
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_NAME} built using CMake")
set(CPACK_PACKAGE_CONTACT "${SIGVERIFY_PACKAGE_MAINTAINER}")
set(CPACK_PACKAGING_INSTALL_PREFIX "${CMAKE_INSTALL_PREFIX}")
set(CPACK_PACKAGE_DIRECTORY "${PROJECT_BINARY_DIR}/packages")
set(CPACK_GENERATOR DEB)
set(CPACK_COMPONENTS_ALL sigverifyd libsigverify0 libsigverify-dev libsigverify-libbitcoin-dev)

set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # NAME_VERSION_ARCH.deb, as apt expects
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${SIGVERIFY_PACKAGE_MAINTAINER}")
# Depends on the shared libraries the binaries use, found by dpkg-shlibdeps.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# A shlibs file for the package with libsigverify.so.0 (only libsigverify0 has one),
# so that packages built against it depend on libsigverify0 (>= this version);
# its symbols file (packaging/debian/libsigverify0/symbols, below), which
# dpkg-shlibdeps prefers, narrows that to the release that added each symbol a
# package uses.
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY ">=")
# Binaries and the shared library without debugging symbols, as Debian ships them.
set(CPACK_STRIP_FILES ON)
# Maintainer scripts 0755, other control files 0644, whatever their modes in the checkout.
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)

set(_sv_debian ${PROJECT_SOURCE_DIR}/packaging/debian)
set(_sv_version "${PROJECT_VERSION}")

set(CPACK_DEBIAN_SIGVERIFYD_PACKAGE_NAME sigverifyd)
set(CPACK_DEBIAN_SIGVERIFYD_PACKAGE_SECTION net)
# Which GPUs the package's kernels run on (docs/kernels.md "Architectures built").
if(SIGVERIFY_HAVE_CUDA)
  set(_sv_gpus "Its CUDA kernels are built for
 ${SIGVERIFY_CUDA_ARCH_TEXT};
a GPU without an image is reported (sigverify info) and the CPU serves.")
else()
  set(_sv_gpus "This build has no CUDA kernels: it verifies on the CPU.")
endif()
set(CPACK_DEBIAN_SIGVERIFYD_DESCRIPTION "bulk secp256k1 signature verification service for Bitcoin nodes
sigverifyd verifies the secp256k1 signatures of Bitcoin blocks in bulk for
every node process on a host, on the GPU (CUDA) or on all CPU cores through
libsecp256k1. Nodes hand the signature checks over in shared memory.
${_sv_gpus}

This package contains the daemon with its systemd unit and the sigverify
command-line tool.")
# The postinst creates the user with systemd-sysusers, else adduser; dpkg-shlibdeps adds the libraries.
set(CPACK_DEBIAN_SIGVERIFYD_PACKAGE_DEPENDS "systemd | adduser")
# Maintainer scripts and control files: CPack takes them by their file names
# (postinst, prerm, postrm, conffiles), one directory per package.
set(CPACK_DEBIAN_SIGVERIFYD_PACKAGE_CONTROL_EXTRA ${_sv_debian}/sigverifyd/postinst ${_sv_debian}/sigverifyd/prerm
  ${_sv_debian}/sigverifyd/postrm ${_sv_debian}/sigverifyd/conffiles)

set(CPACK_DEBIAN_LIBSIGVERIFY0_PACKAGE_NAME libsigverify0)
set(CPACK_DEBIAN_LIBSIGVERIFY0_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_LIBSIGVERIFY0_DESCRIPTION "client library of sigverifyd
libsigverify hands a Bitcoin block's secp256k1 signature checks to
sigverifyd over shared memory and reads back the verdicts, or verifies
them in-process with libsecp256k1 when the daemon is not there.

This package contains the shared library.")
# ldconfig runs from dpkg's trigger (the triggers file), not from maintainer
# scripts; this package's postinst and postrm are there only to replace the
# ones CPack would generate to call ldconfig directly.
set(CPACK_DEBIAN_LIBSIGVERIFY0_PACKAGE_CONTROL_EXTRA ${_sv_debian}/libsigverify0/triggers
  ${_sv_debian}/libsigverify0/postinst ${_sv_debian}/libsigverify0/postrm ${_sv_debian}/libsigverify0/symbols)

set(CPACK_DEBIAN_LIBSIGVERIFY-DEV_PACKAGE_NAME libsigverify-dev)
set(CPACK_DEBIAN_LIBSIGVERIFY-DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_LIBSIGVERIFY-DEV_DESCRIPTION "client library of sigverifyd (development files)
libsigverify hands a Bitcoin block's secp256k1 signature checks to
sigverifyd over shared memory and reads back the verdicts.

This package contains the C++20 and C headers, the static libraries, the
pkg-config file, the CMake package (find_package(sigverify)) and the
reference page of the C ABI, sigverify.h(3).")
# Headers and the static library only: dpkg-shlibdeps has nothing to read. The
# static library needs libsecp256k1 at link time (pkg-config --static).
set(CPACK_DEBIAN_LIBSIGVERIFY-DEV_PACKAGE_DEPENDS "libsigverify0 (= ${_sv_version}), libsecp256k1-dev")

# The compatibility layer: headers and package files only, over libsigverify-dev
# (secp256k1-fast.pc requires sigverify.pc; secp256k1-fastConfig.cmake finds sigverify).
set(CPACK_DEBIAN_LIBSIGVERIFY-LIBBITCOIN-DEV_PACKAGE_NAME libsigverify-libbitcoin-dev)
set(CPACK_DEBIAN_LIBSIGVERIFY-LIBBITCOIN-DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_LIBSIGVERIFY-LIBBITCOIN-DEV_DESCRIPTION "libbitcoin compatibility layer of libsigverify
An unmodified libbitcoin-system built with its accelerator option finds this
package's secp256k1-fast CMake package or pkg-config module and includes
its <ufsecp/libbitcoin.hpp>, which forwards libbitcoin's batch verification
hook to sigverifyd through libsigverify (sigverify/lbtc.hpp).

It is a stand-in until libbitcoin calls libsigverify by its own name; it
claims the names secp256k1-fast and ufsecp, so install it only on a machine
that has no other library of those names.")
set(CPACK_DEBIAN_LIBSIGVERIFY-LIBBITCOIN-DEV_PACKAGE_DEPENDS "libsigverify-dev (= ${_sv_version})")

# Every package: copyright and changelog under /usr/share/doc/<package>/ (Debian policy 12.5, 12.7).
set(_sv_changelog ${PROJECT_BINARY_DIR}/packaging/changelog.gz)
file(MAKE_DIRECTORY ${PROJECT_BINARY_DIR}/packaging)
add_custom_command(OUTPUT ${_sv_changelog} COMMAND gzip -9 -n -c ${_sv_debian}/changelog > ${_sv_changelog}
  DEPENDS ${_sv_debian}/changelog VERBATIM)
add_custom_target(sigverify_package_changelog ALL DEPENDS ${_sv_changelog})
foreach(pkg sigverifyd libsigverify0 libsigverify-dev libsigverify-libbitcoin-dev)
  install(FILES ${_sv_debian}/copyright ${_sv_changelog} DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/${pkg}
    COMPONENT ${pkg} EXCLUDE_FROM_ALL)
endforeach()
foreach(pkg sigverifyd libsigverify0)
  install(FILES ${_sv_debian}/${pkg}/lintian-overrides DESTINATION ${CMAKE_INSTALL_DATADIR}/lintian/overrides
    RENAME ${pkg} COMPONENT ${pkg} EXCLUDE_FROM_ALL)
endforeach()

include(CPack)

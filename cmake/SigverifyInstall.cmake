# SPDX-License-Identifier: MIT
# Install and packaging: the unit files, sysusers/tmpfiles snippets, default
# config, operations guide, the public headers' shm_protocol includes, a
# pkg-config file and a CMake package (find_package(sigverify) ->
# sigverify::client). The binaries and libraries are installed by their own
# directories (daemon/, client/, client/cli/).
include(CMakePackageConfigHelpers)

set(SIGVERIFY_SYSTEMD_UNITDIR "lib/systemd/system" CACHE STRING "systemd unit directory (relative to the prefix, or absolute)")
set(SIGVERIFY_SYSUSERSDIR "lib/sysusers.d" CACHE STRING "sysusers.d directory (relative to the prefix, or absolute)")
set(SIGVERIFY_TMPFILESDIR "lib/tmpfiles.d" CACHE STRING "tmpfiles.d directory (relative to the prefix, or absolute)")

# --- systemd ------------------------------------------------------------------
configure_file(${PROJECT_SOURCE_DIR}/systemd/sigverifyd.service.in ${PROJECT_BINARY_DIR}/systemd/sigverifyd.service @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/systemd/sigverifyd.service DESTINATION ${SIGVERIFY_SYSTEMD_UNITDIR} COMPONENT sigverifyd)
install(FILES ${PROJECT_SOURCE_DIR}/systemd/sigverifyd.sysusers DESTINATION ${SIGVERIFY_SYSUSERSDIR}
  RENAME sigverifyd.conf COMPONENT sigverifyd)
install(FILES ${PROJECT_SOURCE_DIR}/systemd/sigverifyd.tmpfiles DESTINATION ${SIGVERIFY_TMPFILESDIR}
  RENAME sigverifyd.conf COMPONENT sigverifyd)
# The config goes where the unit's ExecStart reads it: CMAKE_INSTALL_FULL_SYSCONFDIR,
# which GNUInstallDirs maps to /etc for the prefix /usr (and /etc/opt/... for /opt/...),
# not to <prefix>/etc. For every other prefix the full path is <prefix>/etc and the
# relative destination is used, so `cmake --install --prefix DIR` still relocates it.
if(CMAKE_INSTALL_FULL_SYSCONFDIR STREQUAL "${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_SYSCONFDIR}")
  set(SIGVERIFY_CONFIG_DESTINATION ${CMAKE_INSTALL_SYSCONFDIR}/sigverifyd)
else()
  set(SIGVERIFY_CONFIG_DESTINATION ${CMAKE_INSTALL_FULL_SYSCONFDIR}/sigverifyd)
endif()
install(FILES ${PROJECT_SOURCE_DIR}/systemd/sigverifyd.conf DESTINATION ${SIGVERIFY_CONFIG_DESTINATION} COMPONENT sigverifyd)
install(FILES ${PROJECT_SOURCE_DIR}/docs/operations.md DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT sigverifyd)

# --- headers ------------------------------------------------------------------
# client.hpp includes the ring ABI (segment_layout.hpp), what both sides compute over it
# (segment_access.hpp: status texts, layout checks) and the row layouts (wire_format.hpp),
# groups.hpp the grouping fields and a group's verdict (group_fields.hpp);
# they live in shm_protocol/include/sigverify/shm_protocol/ and go to
# include/sigverify/shm_protocol/, the path everything includes them by, so
# sigverify::wire and sigverify.pc add only include/.
# The daemon's submission validator (daemon/memory/submission_checks.hpp) and fd_passing.hpp are not installed.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/shm_protocol/include/sigverify/shm_protocol
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/sigverify COMPONENT libsigverify-dev)
# The generated version header (CMakeLists.txt, cmake/version.h.in).
install(FILES ${PROJECT_BINARY_DIR}/include/sigverify/version.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/sigverify COMPONENT libsigverify-dev)

# --- CMake package ------------------------------------------------------------
target_compile_features(sigverify_wire INTERFACE cxx_std_20)  # std::span in the public headers
set_target_properties(sigverify_wire PROPERTIES EXPORT_NAME wire)
set_target_properties(sigverify_reference PROPERTIES EXPORT_NAME reference)
set_target_properties(sigverify_client PROPERTIES EXPORT_NAME client)
set_target_properties(sigverify_client_static PROPERTIES EXPORT_NAME client_static)
# The static client's link-only dependency (the local fallback verifier) ships with it.
install(TARGETS sigverify_wire sigverify_reference EXPORT sigverifyTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT libsigverify-dev)
set(SIGVERIFY_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/sigverify)
install(EXPORT sigverifyTargets NAMESPACE sigverify:: DESTINATION ${SIGVERIFY_CMAKEDIR} COMPONENT libsigverify-dev)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/sigverifyConfig.cmake.in
  ${PROJECT_BINARY_DIR}/cmake/sigverifyConfig.cmake INSTALL_DESTINATION ${SIGVERIFY_CMAKEDIR})
# While the major version is 0 a minor release may add what an older one lacks
# (and the soname says when it breaks): find_package(sigverify 0.2) accepts any
# 0.2.x, not 0.3. From 1.0 on this becomes SameMajorVersion.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/cmake/sigverifyConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/cmake/sigverifyConfig.cmake ${PROJECT_BINARY_DIR}/cmake/sigverifyConfigVersion.cmake
  DESTINATION ${SIGVERIFY_CMAKEDIR} COMPONENT libsigverify-dev)

# --- pkg-config ---------------------------------------------------------------
# Relocatable: prefix is found from the .pc file's own place (${pcfiledir}),
# so `cmake --install --prefix DIR` gives a correct file for any DIR.
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(SIGVERIFY_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
else()
  set(SIGVERIFY_PC_PREFIX "\${pcfiledir}")
  string(REPLACE "/" ";" _sv_parts "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
  foreach(_sv_part IN LISTS _sv_parts)
    if(NOT _sv_part STREQUAL "" AND NOT _sv_part STREQUAL ".")
      string(APPEND SIGVERIFY_PC_PREFIX "/..")
    endif()
  endforeach()
endif()
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(SIGVERIFY_PC_LIBDIR "${CMAKE_INSTALL_LIBDIR}")
else()
  set(SIGVERIFY_PC_LIBDIR "\${exec_prefix}/${CMAKE_INSTALL_LIBDIR}")
endif()
if(IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  set(SIGVERIFY_PC_INCLUDEDIR "${CMAKE_INSTALL_INCLUDEDIR}")
else()
  set(SIGVERIFY_PC_INCLUDEDIR "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}")
endif()
configure_file(${PROJECT_SOURCE_DIR}/cmake/sigverify.pc.in ${PROJECT_BINARY_DIR}/cmake/sigverify.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/cmake/sigverify.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT libsigverify-dev)

# --- manual pages and bash completion -----------------------------------------
# Installed gzipped (-n: no name or time stamp, so the bytes do not depend on
# when they were built), as Debian wants them.
set(SIGVERIFY_MAN_PAGES sigverifyd.8 sigverify.1 sigverifyd.conf.5)
set(_sv_man_outputs)
foreach(page IN LISTS SIGVERIFY_MAN_PAGES)
  set(src ${PROJECT_SOURCE_DIR}/packaging/man/${page})
  set(out ${PROJECT_BINARY_DIR}/man/${page}.gz)
  add_custom_command(OUTPUT ${out} COMMAND ${CMAKE_COMMAND} -E make_directory ${PROJECT_BINARY_DIR}/man
    COMMAND gzip -9 -n -c ${src} > ${out} DEPENDS ${src} VERBATIM)
  string(REGEX MATCH "[0-9]$" section ${page})
  install(FILES ${out} DESTINATION ${CMAKE_INSTALL_MANDIR}/man${section} COMPONENT sigverifyd)
  list(APPEND _sv_man_outputs ${out})
endforeach()
# The C ABI's reference page goes with the headers (libsigverify-dev).
set(_sv_header_page ${PROJECT_BINARY_DIR}/man/sigverify.h.3.gz)
add_custom_command(OUTPUT ${_sv_header_page} COMMAND ${CMAKE_COMMAND} -E make_directory ${PROJECT_BINARY_DIR}/man
  COMMAND gzip -9 -n -c ${PROJECT_SOURCE_DIR}/packaging/man/sigverify.h.3 > ${_sv_header_page}
  DEPENDS ${PROJECT_SOURCE_DIR}/packaging/man/sigverify.h.3 VERBATIM)
install(FILES ${_sv_header_page} DESTINATION ${CMAKE_INSTALL_MANDIR}/man3 COMPONENT libsigverify-dev)
list(APPEND _sv_man_outputs ${_sv_header_page})
add_custom_target(sigverify_man_pages ALL DEPENDS ${_sv_man_outputs})
install(FILES ${PROJECT_SOURCE_DIR}/packaging/bash-completion/sigverify
  DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions COMPONENT sigverifyd)

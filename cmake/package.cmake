# Installation and the Debian package (README, "Install on a server").
#
# `cmake --install` and CPack's DEB generator share these rules: the package is what an
# install to /usr gives, plus the maintainer scripts of packaging/deb.  One command builds it:
# `scripts/gw deb` (or `cpack -G DEB` in a build dir).

# gpuwardd finds gpuward-shim beside itself, in ../lib/gpuward or in ../libexec (launcher.c):
# users never run the supervisor, so it stays out of their PATH.
install(TARGETS gpuwardd RUNTIME DESTINATION sbin)
install(TARGETS gpuward RUNTIME DESTINATION bin)
install(TARGETS gpuward-shim RUNTIME DESTINATION lib/gpuward)

# The unit names the installed daemon, so it is written at install time from the prefix the
# install (or CPack) uses, not the one the build was configured with.
install(CODE "
  set(GW_SBINDIR \"\${CMAKE_INSTALL_PREFIX}/sbin\")
  configure_file(\"${CMAKE_SOURCE_DIR}/contrib/gpuwardd.service.in\"
                 \"${CMAKE_BINARY_DIR}/gpuwardd.service\" @ONLY)
  configure_file(\"${CMAKE_SOURCE_DIR}/contrib/gpuward-agent.service.in\"
                 \"${CMAKE_BINARY_DIR}/gpuward-agent.service\" @ONLY)")
install(FILES ${CMAKE_BINARY_DIR}/gpuwardd.service ${CMAKE_BINARY_DIR}/gpuward-agent.service
        DESTINATION lib/systemd/system)

# gpuwardd reads /etc/gpuward/gpuward.conf whatever the prefix: an absolute destination.  An
# existing one is an admin's and is kept (a package build stages into an empty DESTDIR; dpkg
# handles the conffile on upgrades).
install(CODE "
  set(gw_conf \"\$ENV{DESTDIR}/etc/gpuward/gpuward.conf\")
  if(EXISTS \"\${gw_conf}\")
    message(STATUS \"Kept: \${gw_conf} (every setting with its default: contrib/gpuward.conf)\")
  else()
    file(INSTALL \"${CMAKE_SOURCE_DIR}/contrib/gpuward.conf\" DESTINATION /etc/gpuward) # file(INSTALL) adds DESTDIR
  endif()")

# Debian's documentation files: the copyright, the changelog (changelog.gz: a native
# package) compressed as policy asks (-9n: no name or time stamp, so two builds give the
# same bytes), and lintian's overrides.
find_program(GW_GZIP gzip)
if(GW_GZIP)
  set(gw_changelog ${CMAKE_BINARY_DIR}/changelog.gz)
  add_custom_command(OUTPUT ${gw_changelog}
    COMMAND ${GW_GZIP} -9nc ${CMAKE_SOURCE_DIR}/packaging/deb/changelog > ${gw_changelog}
    DEPENDS ${CMAKE_SOURCE_DIR}/packaging/deb/changelog VERBATIM)
  add_custom_target(gw_changelog ALL DEPENDS ${gw_changelog})
  install(FILES ${gw_changelog} DESTINATION share/doc/gpuward)
endif()
install(FILES packaging/deb/copyright DESTINATION share/doc/gpuward)
install(FILES packaging/deb/lintian-overrides DESTINATION share/lintian/overrides RENAME gpuward)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME gpuward)
set(CPACK_PACKAGE_VERSION 0.1.0) # gpuwardd --version
set(CPACK_PACKAGE_CONTACT "gpuward maintainers <maintainers@users.noreply.a-seed-8d98c315.example>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "queue and governor for the GPUs of a shared server")
set(CPACK_PACKAGE_DESCRIPTION "gpuward hands out whole GPUs of a shared deep-learning server
through a queue: CUDA_VISIBLE_DEVICES set for each job, time limits,
cancellation that kills every process a job spawned, retries from checkpoints,
reclamation of idle GPUs, bookings and quotas.  One daemon (gpuwardd, a systemd
service), one command (gpuward), an HTTP API with a web dashboard and
Prometheus metrics.")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT) # gpuward_0.1.0_amd64.deb
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON) # libc6, libsqlite3-0, libmicrohttpd12, ... from the binaries
# Webhooks load libcurl at run time; NVML comes with the NVIDIA driver (non-free).
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "libcurl4")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "libnvidia-ml1, prometheus")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
  ${CMAKE_SOURCE_DIR}/packaging/deb/conffiles ${CMAKE_SOURCE_DIR}/packaging/deb/postinst
  ${CMAKE_SOURCE_DIR}/packaging/deb/prerm ${CMAKE_SOURCE_DIR}/packaging/deb/postrm)
set(CPACK_PRE_BUILD_SCRIPTS ${CMAKE_SOURCE_DIR}/cmake/deb_man.cmake) # manual pages gzipped
include(CPack)

# CPack runs this (CPACK_PRE_BUILD_SCRIPTS) on the staged files before it makes the .deb.
set(root "${CPACK_TEMPORARY_INSTALL_DIRECTORY}")

# Debian wants manual pages compressed with gzip -9n (lintian: uncompressed-manual-page), and
# `cmake --install` installs them as they are in the tree.
file(GLOB_RECURSE pages "${root}/usr/share/man/*")
foreach(page ${pages})
  if(NOT page MATCHES "\\.gz$")
    execute_process(COMMAND gzip -9nf "${page}" RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "gzip -9n ${page} failed (${rc})")
    endif()
  endif()
endforeach()

# A command without a manual page is a lintian warning: overridden for each one that has none
# yet (docs/man installs them), so that the override goes away by itself with the page.
set(overrides "${root}/usr/share/lintian/overrides/gpuward")
foreach(bin usr/bin/gpuward usr/sbin/gpuwardd)
  get_filename_component(name ${bin} NAME)
  file(GLOB_RECURSE page "${root}/usr/share/man/${name}.*")
  if(NOT page AND EXISTS "${overrides}")
    file(APPEND "${overrides}" "\n# No manual page yet: `${name} --help` is the reference.\ngpuward: no-manual-page [${bin}]\n")
  endif()
endforeach()

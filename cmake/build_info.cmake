# Run at build time (cmake -P), so that a build says which commit it was built from even when the
# tree changed after configuring: writes OUTPUT_DIR/build_info.h for `sluice --version` and
# OUTPUT_DIR/package_version.cmake for CPack, each only when its text changes (so that nothing
# relinks needlessly).
#
# Inputs: SOURCE_DIR (the source tree), OUTPUT_DIR, VERSION (the CMake project's version).
# The version is VERSION, or VERSION+dirty when tracked files differ from the commit: a package
# built from such a tree must not pass for the release. Untracked files do not count: the build
# names every file it uses, and a new one must be added to it, and so to git, to be built.
set(commit "")
set(version "${VERSION}")
find_program(GIT git)
if(GIT AND EXISTS "${SOURCE_DIR}/.git")
  execute_process(COMMAND "${GIT}" -C "${SOURCE_DIR}" rev-parse --short=12 HEAD
                  OUTPUT_VARIABLE commit OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    set(commit "")
  else()
    execute_process(COMMAND "${GIT}" -C "${SOURCE_DIR}" status --porcelain --untracked-files=no
                    OUTPUT_VARIABLE changes ERROR_QUIET RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0 OR NOT changes STREQUAL "")
      string(APPEND version "+dirty")
    endif()
  endif()
endif()

file(CONFIGURE OUTPUT "${OUTPUT_DIR}/build_info.h" CONTENT [[
// Written by cmake/build_info.cmake at build time.
#pragma once
#define SLUICE_BUILD_VERSION "@version@"  // with +dirty for a changed tree
#define SLUICE_COMMIT "@commit@"  // empty when not built from a git checkout
]] @ONLY)
file(CONFIGURE OUTPUT "${OUTPUT_DIR}/package_version.cmake" CONTENT [[
# Written by cmake/build_info.cmake at build time; read by cpack.
set(CPACK_PACKAGE_VERSION "@version@")
]] @ONLY)

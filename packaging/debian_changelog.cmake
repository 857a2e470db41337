# Run when installing (cmake -P, by packaging/CMakeLists.txt's install(CODE)): writes the Debian
# package's changelog, OUTPUT (gzipped), from CHANGELOG.md, whose entries read
#
#   ## VERSION (YYYY-MM-DD)
#
#   - a change, its lines
#     continued indented
#
# The newest entry takes the package's version from VERSION_FILE (package_version.cmake, which
# says "+dirty" for a build from a modified tree), so that it matches the package.
#
# Inputs: CHANGELOG, VERSION_FILE, MAINTAINER, OUTPUT.
include("${VERSION_FILE}")  # CPACK_PACKAGE_VERSION
file(STRINGS "${CHANGELOG}" lines)
set(text "")
set(open_entry "")  # the trailer line of the entry being written
set(entries 0)  # entries written so far
foreach(line IN LISTS lines)
  if(line MATCHES "^## ([^ ]+) \\(([0-9-]+)\\)$")
    set(version "${CMAKE_MATCH_1}")
    if(open_entry STREQUAL "")
      set(version "${CPACK_PACKAGE_VERSION}")
    else()
      string(APPEND text "\n${open_entry}\n\n")
    endif()
    # Each entry a minute before the one above it, from the end of its day: releases of one
    # day keep their order, and each entry's date is new (lintian refuses one that is not).
    execute_process(COMMAND date -u +%s -d "${CMAKE_MATCH_2} 23:59:00 UTC"
                    OUTPUT_VARIABLE seconds OUTPUT_STRIP_TRAILING_WHITESPACE COMMAND_ERROR_IS_FATAL ANY)
    math(EXPR seconds "${seconds} - 60 * ${entries}")
    math(EXPR entries "${entries} + 1")
    execute_process(COMMAND date -u -R -d "@${seconds}"
                    OUTPUT_VARIABLE date OUTPUT_STRIP_TRAILING_WHITESPACE COMMAND_ERROR_IS_FATAL ANY)
    string(APPEND text "sluice (${version}) unstable; urgency=medium\n\n")
    set(open_entry " -- ${MAINTAINER}  ${date}")
  elseif(NOT open_entry STREQUAL "" AND line MATCHES "^- (.*)")
    string(APPEND text "  * ${CMAKE_MATCH_1}\n")
  elseif(NOT open_entry STREQUAL "" AND line MATCHES "^  +(.*)")
    string(APPEND text "    ${CMAKE_MATCH_1}\n")
  endif()
endforeach()
if(open_entry STREQUAL "")
  message(FATAL_ERROR "${CHANGELOG} has no entry \"## VERSION (YYYY-MM-DD)\"")
endif()
string(APPEND text "\n${open_entry}\n")

get_filename_component(name "${OUTPUT}" NAME_WE)
get_filename_component(dir "${OUTPUT}" DIRECTORY)
file(WRITE "${dir}/${name}" "${text}")
# -n: no name or time in the header, so that the same text gives the same file.
execute_process(COMMAND gzip -9nf "${dir}/${name}" COMMAND_ERROR_IS_FATAL ANY)

# Fails unless every kind of store the conformance suite is instantiated with (BINARY's
# --gtest_list_tests) is in KINDS, the list tests/CMakeLists.txt registers a ctest test for each.
cmake_minimum_required(VERSION 3.25)
execute_process(COMMAND ${BINARY} --gtest_list_tests --gtest_filter=Stores/*
                OUTPUT_VARIABLE listed RESULT_VARIABLE failed)
if(failed)
  message(FATAL_ERROR "${BINARY} --gtest_list_tests failed: ${failed}")
endif()
string(REGEX MATCHALL "# GetParam\\(\\) = [A-Za-z0-9]+" params "${listed}")
list(REMOVE_DUPLICATES params)
foreach(param IN LISTS params)
  string(REPLACE "# GetParam() = " "" kind "${param}")
  if(NOT kind IN_LIST KINDS)
    message(FATAL_ERROR "the conformance suite runs on ${kind}, which tests/CMakeLists.txt's "
                        "SLUICE_CONFORMANCE_KINDS lacks: its cases would never run")
  endif()
endforeach()
if(NOT params)
  message(FATAL_ERROR "no case of the conformance suite listed")
endif()

# SPDX-License-Identifier: MIT
# cmake -DBUILD_DIR=<dir> -DTARGET=<target> -DRUN=<command;args...> [-DCONFIG=<cfg>] [-DFILE=<file.md>]
#   -P build_and_run.cmake
# Builds TARGET (an example of FILE: README.md or a docs/ page), then runs RUN; fails if either fails.
cmake_minimum_required(VERSION 3.20)
set(config_args "")
if(CONFIG)
  set(config_args --config "${CONFIG}")
endif()
execute_process(COMMAND "${CMAKE_COMMAND}" --build "${BUILD_DIR}" --target "${TARGET}" ${config_args}
                OUTPUT_VARIABLE output ERROR_VARIABLE output RESULT_VARIABLE result)
if(NOT result EQUAL 0)
  message("${output}")
  message(FATAL_ERROR "FAIL: the example ${TARGET} of ${FILE} does not compile")
endif()
string(REPLACE ";" " " shown "${RUN}")
message("== ${shown}")
execute_process(COMMAND ${RUN} RESULT_VARIABLE result)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "FAIL: the example ${TARGET} of ${FILE} exited with ${result}")
endif()

# SPDX-License-Identifier: MIT
# cmake -DBUILD_DIR=<dir> -DTARGET=<target> -DRUN=<command;args...> [-DCONFIG=<cfg>] -P build_and_run.cmake
# Builds TARGET (a README example), then runs RUN; fails if either fails.
cmake_minimum_required(VERSION 3.20)
set(config_args "")
if(CONFIG)
  set(config_args --config "${CONFIG}")
endif()
execute_process(COMMAND "${CMAKE_COMMAND}" --build "${BUILD_DIR}" --target "${TARGET}" ${config_args}
                OUTPUT_VARIABLE output ERROR_VARIABLE output RESULT_VARIABLE result)
if(NOT result EQUAL 0)
  message("${output}")
  message(FATAL_ERROR "FAIL: the README example ${TARGET} does not compile")
endif()
string(REPLACE ";" " " shown "${RUN}")
message("== ${shown}")
execute_process(COMMAND ${RUN} RESULT_VARIABLE result)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "FAIL: the README example ${TARGET} exited with ${result}")
endif()

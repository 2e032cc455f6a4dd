# SPDX-License-Identifier: MIT
# cmake -DBUILD_DIR=<dir> -DTARGET=<target> -DOBJECTS=<object files> -DRECORD=<file> -DGNU_TIME=<path>
#       -DMAX_CPU_SECONDS=<s> -DMAX_MIB=<MiB> [-DCONFIG=<cfg>] -P check_compile_budget.cmake
#
# Recompiles TARGET (its objects are removed first), whose compiler launcher is GNU time writing
# "<wall s> <user s> <sys s> <peak KiB>" to RECORD, and fails if the compiler's CPU time (user +
# sys) exceeds MAX_CPU_SECONDS or its peak memory MAX_MIB. Wall time is reported, never judged: it
# grows with whatever else the machine runs, CPU time and memory do not.
cmake_minimum_required(VERSION 3.20)

if(NOT GNU_TIME)
  message("hpf-skip: GNU time (/usr/bin/time) not found; install Debian's 'time' package and reconfigure")
  return()
endif()

foreach(object IN LISTS OBJECTS)
  file(REMOVE "${object}")
endforeach()
file(REMOVE "${RECORD}")
cmake_host_system_information(RESULT cores QUERY NUMBER_OF_LOGICAL_CORES)
set(load "unknown")
if(EXISTS /proc/loadavg)
  file(READ /proc/loadavg load)
  string(REGEX MATCH "^[^ ]+ [^ ]+ [^ ]+" load "${load}")
endif()

set(config_args "")
if(CONFIG)
  set(config_args --config "${CONFIG}")
endif()
execute_process(COMMAND "${CMAKE_COMMAND}" --build "${BUILD_DIR}" --target "${TARGET}" ${config_args}
                OUTPUT_VARIABLE output ERROR_VARIABLE output RESULT_VARIABLE result)
if(NOT result EQUAL 0)
  message("${output}")
  message(FATAL_ERROR "FAIL: ${TARGET} did not compile")
endif()
if(NOT EXISTS "${RECORD}")
  message("${output}")
  message(FATAL_ERROR "FAIL: no timing in ${RECORD}: was ${TARGET} compiled through GNU time?")
endif()

file(STRINGS "${RECORD}" lines)
list(GET lines -1 last)
if(NOT last MATCHES "^([0-9.]+) ([0-9.]+) ([0-9.]+) ([0-9]+)$")
  message(FATAL_ERROR "FAIL: unexpected GNU time record '${last}' in ${RECORD}")
endif()
set(wall "${CMAKE_MATCH_1}")
# CMake's math is integer only: CPU time in hundredths of a second.
string(REPLACE "." "" user_cs "${CMAKE_MATCH_2}")
string(REPLACE "." "" sys_cs "${CMAKE_MATCH_3}")
math(EXPR cpu_cs "${user_cs} + ${sys_cs}")
math(EXPR cpu_s "${cpu_cs} / 100")
math(EXPR cpu_hundredths "${cpu_cs} % 100")
set(cpu "${cpu_s}.${cpu_hundredths}")
if(cpu_hundredths LESS 10)
  set(cpu "${cpu_s}.0${cpu_hundredths}")
endif()
math(EXPR mib "(${CMAKE_MATCH_4} + 1023) / 1024")
message("${TARGET}: ${cpu} s compiler CPU time (user + sys), ${mib} MiB peak compiler memory, ${wall} s wall "
        "(budget: ${MAX_CPU_SECONDS} s CPU, ${MAX_MIB} MiB; ${cores} cores, load average ${load} before)")

set(over "")
math(EXPR max_cs "${MAX_CPU_SECONDS} * 100")
if(cpu_cs GREATER max_cs)
  string(APPEND over " compiler CPU time ${cpu} s > ${MAX_CPU_SECONDS} s;")
endif()
if(mib GREATER MAX_MIB)
  string(APPEND over " peak memory ${mib} MiB > ${MAX_MIB} MiB;")
endif()
if(over)
  message(FATAL_ERROR "FAIL: over the compile budget:${over}")
endif()

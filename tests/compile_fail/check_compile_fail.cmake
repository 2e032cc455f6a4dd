# SPDX-License-Identifier: MIT
# cmake -DBUILD_DIR=<dir> -DTARGET=<target> -DSOURCE=<file.cpp> [-DCONFIG=<cfg>] [-DCOMPILER_ID=GNU|Clang]
#       [-DFIRST_LINES=<n>] -P check_compile_fail.cmake
#
# Builds TARGET, which must fail to compile, and checks the compiler's diagnostics against the
# expectations written in SOURCE as comments:
#   // expect-message: <regex>   must match somewhere in the diagnostics (the hpf static_assert text)
#   // expect-early: <regex>     must match within the first FIRST_LINES lines of the diagnostics
#   // expect-index: <n>         layer position n must appear within those lines, in one of the
#                                forms compilers print it: "I = n;" / "I = n," (the chain's fold),
#                                "layer_in_model<n, ..." or Clang's "operator|<nUL, ..."
#   // expect-lines: <n>         this file's FIRST_LINES for GCC (doubled for Clang, see below)
# "Diagnostics" is the build output without the build tool's own lines (progress, FAILED:, the
# echoed command line, make/ninja messages, a CMake re-run). Clang prints every note as three lines
# (note, source, caret) where GCC prints one, so Clang's window is twice GCC's. The test fails,
# printing what it found, if the build succeeds or an expectation is not met.
cmake_minimum_required(VERSION 3.20)

foreach(var BUILD_DIR TARGET SOURCE)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "check_compile_fail.cmake: -D${var}=... is required")
  endif()
endforeach()
if(NOT DEFINED FIRST_LINES)
  set(FIRST_LINES 12)
endif()

# Expectations from the source's comments.
file(STRINGS "${SOURCE}" directives REGEX "^// expect-[a-z]+: ")
set(expect_message "")
set(expect_early "")
foreach(line IN LISTS directives)
  string(REGEX MATCH "^// expect-([a-z]+): (.*)$" _ "${line}")
  set(kind "${CMAKE_MATCH_1}")
  set(value "${CMAKE_MATCH_2}")
  if(kind STREQUAL "message")
    list(APPEND expect_message "${value}")
  elseif(kind STREQUAL "early")
    list(APPEND expect_early "${value}")
  elseif(kind STREQUAL "index")
    list(APPEND expect_early "(I = ${value}[;,]|layer_in_model<${value},|operator\\|<${value}UL,)")
  elseif(kind STREQUAL "lines")
    set(FIRST_LINES "${value}")
  else()
    message(FATAL_ERROR "${SOURCE}: unknown directive '// expect-${kind}:'")
  endif()
endforeach()
if(NOT expect_message)
  message(FATAL_ERROR "${SOURCE}: no '// expect-message:' line")
endif()
if(COMPILER_ID STREQUAL "Clang")
  math(EXPR FIRST_LINES "2 * ${FIRST_LINES}")
endif()

# Build it; LC_ALL=C so GCC quotes with ' rather than locale-dependent quotation marks.
set(config_args "")
if(CONFIG)
  set(config_args --config "${CONFIG}")
endif()
execute_process(
  COMMAND "${CMAKE_COMMAND}" -E env LC_ALL=C "${CMAKE_COMMAND}" --build "${BUILD_DIR}" --target "${TARGET}" ${config_args}
  OUTPUT_VARIABLE output ERROR_VARIABLE output RESULT_VARIABLE result)

if(result EQUAL 0)
  message("${output}")
  message(FATAL_ERROR "FAIL: ${TARGET} compiled, but ${SOURCE} must be rejected at compile time")
endif()

# Diagnostics: the output without colour codes and without the build tool's own lines.
string(ASCII 27 esc)
string(REGEX REPLACE "${esc}\\[[0-9;]*[mK]" "" output "${output}")
# CMake lists split on ';' and treat '[' ']' specially: park them in control characters first.
string(ASCII 1 semicolon)
string(ASCII 2 open_bracket)
string(ASCII 3 close_bracket)
string(REPLACE ";" "${semicolon}" output "${output}")
string(REPLACE "[" "${open_bracket}" output "${output}")
string(REPLACE "]" "${close_bracket}" output "${output}")
string(REPLACE "\n" ";" lines "${output}")
get_filename_component(source_name "${SOURCE}" NAME)
set(diagnostics "")
# A configure input edited since the last build (CMakeLists.txt, README.md, a globbed header)
# makes the build tool run CMake again first; all it prints, up to its closing line, is not the
# compiler's (its feature summary's lines start with " * ").
set(in_cmake_run FALSE)
foreach(line IN LISTS lines)
  if(line MATCHES "Re-running CMake")
    set(in_cmake_run TRUE)
  endif()
  if(in_cmake_run)
    if(line MATCHES "^-- Build files have been written to")
      set(in_cmake_run FALSE)
    endif()
    continue()
  endif()
  if(line MATCHES "^${open_bracket} *[0-9]+(%|/[0-9]+)${close_bracket}"  # ninja / make progress
     OR line MATCHES "^FAILED: "                          # ninja
     OR line MATCHES "^(ninja|g?make)(${open_bracket}[0-9]+${close_bracket})?: "  # ninja / make messages
     OR line MATCHES "^-- "                               # cmake's own lines outside a re-run
     OR (line MATCHES " -c " AND line MATCHES " -o ")       # the echoed compile command
     OR line STREQUAL "")
    continue()
  endif()
  list(APPEND diagnostics "${line}")
endforeach()
list(LENGTH diagnostics total)
if(total GREATER FIRST_LINES)
  list(SUBLIST diagnostics 0 ${FIRST_LINES} first)
else()
  set(first "${diagnostics}")
endif()
string(REPLACE ";" "\n" first_text "${first}")
string(REPLACE ";" "\n" all_text "${diagnostics}")
foreach(text first_text all_text)
  string(REPLACE "${semicolon}" ";" ${text} "${${text}}")
  string(REPLACE "${open_bracket}" "[" ${text} "${${text}}")
  string(REPLACE "${close_bracket}" "]" ${text} "${${text}}")
endforeach()
string(REGEX MATCHALL "error: " errors "${all_text}")
list(LENGTH errors error_count)

set(problems "")
foreach(regex IN LISTS expect_message)
  if(NOT all_text MATCHES "${regex}")
    string(APPEND problems "  message not found anywhere: ${regex}\n")
  endif()
endforeach()
foreach(regex IN LISTS expect_early)
  if(NOT first_text MATCHES "${regex}")
    if(all_text MATCHES "${regex}")
      string(APPEND problems "  found, but not within the first ${FIRST_LINES} lines: ${regex}\n")
    else()
      string(APPEND problems "  not found: ${regex}\n")
    endif()
  endif()
endforeach()

set(summary "${TARGET}: build failed as expected; ${total} diagnostic lines, ${error_count} 'error:' lines")
# message() without a mode prints as is; FATAL_ERROR would re-wrap the compiler's lines.
if(problems)
  message("FAIL: ${summary}, but:\n${problems}"
          "--- first ${FIRST_LINES} diagnostic lines:\n${first_text}\n"
          "--- all diagnostics:\n${all_text}")
  message(FATAL_ERROR "${TARGET}: diagnostics do not meet the expectations in ${source_name}")
endif()
message("PASS: ${summary}\n--- first ${FIRST_LINES} diagnostic lines:\n${first_text}")

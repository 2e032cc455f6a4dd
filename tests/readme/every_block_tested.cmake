# SPDX-License-Identifier: MIT
# cmake -DROOT=<source dir> -P every_block_tested.cmake: fails unless every ```cpp block of
# README.md and of docs/*.md directly follows a `<!-- readme-example: ... -->` line
# (tests/readme/CMakeLists.txt). The pages are listed now, not at configure time, so a new page
# is checked too.
cmake_minimum_required(VERSION 3.20)
file(GLOB pages "${ROOT}/docs/*.md")
list(SORT pages)
set(failed "")
foreach(file IN ITEMS "${ROOT}/README.md" LISTS pages)
  file(READ "${file}" text)
  string(REGEX MATCHALL "\n```cpp\n" blocks "\n${text}")
  string(REGEX MATCHALL "<!-- readme-example:[^\n]*-->\n```cpp\n" marked "${text}")
  list(LENGTH blocks total)
  list(LENGTH marked tested)
  file(RELATIVE_PATH shown "${ROOT}" "${file}")
  message("${shown}: ${total} ```cpp blocks, ${tested} with a readme-example marker")
  if(NOT total EQUAL tested)
    list(APPEND failed "${shown}")
  endif()
endforeach()
if(failed)
  message(FATAL_ERROR "FAIL: every ```cpp block needs a '<!-- readme-example: NAME ... -->' line before it "
                      "(tests/readme/CMakeLists.txt says what it may hold); not so in: ${failed}")
endif()

# SPDX-License-Identifier: MIT
# cmake -DREADME=<README.md> -P every_block_tested.cmake: fails unless every ```cpp block of the
# README directly follows a `<!-- readme-example: ... -->` line (tests/readme/CMakeLists.txt).
cmake_minimum_required(VERSION 3.20)
file(READ "${README}" text)
string(REGEX MATCHALL "\n```cpp\n" blocks "\n${text}")
string(REGEX MATCHALL "<!-- readme-example:[^\n]*-->\n```cpp\n" marked "${text}")
list(LENGTH blocks total)
list(LENGTH marked tested)
message("${README}: ${total} ```cpp blocks, ${tested} with a readme-example marker")
if(NOT total EQUAL tested)
  message(FATAL_ERROR "FAIL: every ```cpp block of README.md needs a '<!-- readme-example: NAME ... -->' line before it "
                      "(tests/readme/CMakeLists.txt says what it may hold)")
endif()

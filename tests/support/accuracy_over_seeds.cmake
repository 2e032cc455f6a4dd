# SPDX-License-Identifier: MIT
# The examples' accuracy tests: hpf's mean test accuracy over several seeds must lie within
# PyTorch's mean +- TOLERANCE points, both sides. PyTorch's mean is read from the
# `accuracy-seeds` section of benchmarks/RESULTS.md, written by benchmarks/accuracy_over_seeds.py
# (five seeds), never typed in here.
#
#   cmake -DRESULTS=benchmarks/RESULTS.md -DMODEL=cnn|mlp -DSEEDS=0,1,2 [-DTOLERANCE=1]
#         -DCOMMAND=<mpiexec> "-DARGS=<mpiexec args>;<hpf_fashion_mnist>;<its args>"
#         -P accuracy_over_seeds.cmake
#
# Runs COMMAND ARGS --seed S for each seed S; each run prints `final test accuracy: 87.63%`.
# Accuracies are compared in hundredths of a point, exactly (CMake's math is integer).
cmake_minimum_required(VERSION 3.20)  # IN_LIST
if(NOT DEFINED TOLERANCE)
  set(TOLERANCE 1)
endif()
foreach(var RESULTS MODEL SEEDS COMMAND ARGS)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "accuracy_over_seeds.cmake: -D${var}=... is required")
  endif()
endforeach()

# "87.63" -> 8763
function(hundredths text out)
  if(NOT text MATCHES "^([0-9]+)\\.([0-9][0-9])$")
    message(FATAL_ERROR "accuracy_over_seeds.cmake: '${text}' is not a percentage with two decimals")
  endif()
  math(EXPR value "${CMAKE_MATCH_1} * 100 + 1${CMAKE_MATCH_2} - 100")
  set(${out} ${value} PARENT_SCOPE)
endfunction()
# 8763 -> "87.63"
function(percent value out)
  math(EXPR whole "${value} / 100")
  math(EXPR frac "${value} % 100")
  if(frac LESS 10)
    set(frac "0${frac}")
  endif()
  set(${out} "${whole}.${frac}" PARENT_SCOPE)
endfunction()

# PyTorch's row of the section: | <model> | PyTorch | seed 0 | ... | seed k | mean | stdev |
file(READ "${RESULTS}" text)
string(FIND "${text}" "<!-- accuracy-seeds:begin -->" begin)
string(FIND "${text}" "<!-- accuracy-seeds:end -->" end)
if(begin LESS 0 OR end LESS begin)
  message(FATAL_ERROR "${RESULTS} has no accuracy-seeds section: run benchmarks/accuracy_over_seeds.py")
endif()
math(EXPR length "${end} - ${begin}")
string(SUBSTRING "${text}" ${begin} ${length} section)
if(NOT section MATCHES "\n\\| ${MODEL} \\| PyTorch \\|([^\n]*)\\|[ ]*\n")
  message(FATAL_ERROR "the accuracy-seeds section of ${RESULTS} has no PyTorch row for ${MODEL}")
endif()
string(REPLACE "|" ";" cells "${CMAKE_MATCH_1}")
set(values "")
foreach(cell IN LISTS cells)
  string(STRIP "${cell}" cell)
  list(APPEND values "${cell}")
endforeach()
list(LENGTH values count)
math(EXPR seed_cells "${count} - 2")
list(GET values -2 torch_mean_text)
list(SUBLIST values 0 ${seed_cells} torch_seeds)
if(seed_cells LESS 5 OR "-" IN_LIST torch_seeds)
  message(FATAL_ERROR "PyTorch's ${MODEL} row in ${RESULTS} has ${seed_cells} seeds (${torch_seeds}); at least 5 "
                      "measured are needed: run benchmarks/accuracy_over_seeds.py")
endif()
hundredths("${torch_mean_text}" torch_mean)

string(REPLACE "," ";" SEEDS "${SEEDS}")
set(sum 0)
set(n 0)
set(report "")
foreach(seed IN LISTS SEEDS)
  execute_process(COMMAND ${COMMAND} ${ARGS} --seed ${seed} OUTPUT_VARIABLE out ERROR_VARIABLE err
                  RESULT_VARIABLE code)
  if(NOT code EQUAL 0 OR NOT out MATCHES "final test accuracy: ([0-9]+\\.[0-9][0-9])%")
    message("${out}${err}")
    message(FATAL_ERROR "seed ${seed}: the run failed (exit code ${code}) or printed no final test accuracy")
  endif()
  set(accuracy_text "${CMAKE_MATCH_1}")
  hundredths("${accuracy_text}" accuracy)
  message(STATUS "${MODEL}, seed ${seed}: test accuracy ${accuracy_text}%")
  math(EXPR sum "${sum} + ${accuracy}")
  math(EXPR n "${n} + 1")
  string(APPEND report " ${accuracy_text}")
endforeach()

# |sum / n - torch_mean| <= TOLERANCE points, exactly: |sum - n * torch_mean| <= n * TOLERANCE * 100
math(EXPR deviation "${sum} - ${n} * ${torch_mean}")
math(EXPR bound "${n} * ${TOLERANCE} * 100")
math(EXPR mean "(${sum} + ${n} / 2) / ${n}")
percent(${mean} mean_text)
math(EXPR low "${torch_mean} - ${TOLERANCE} * 100")
math(EXPR high "${torch_mean} + ${TOLERANCE} * 100")
percent(${low} low_text)
percent(${high} high_text)
list(JOIN SEEDS ", " seeds_text)
list(JOIN torch_seeds " " torch_seeds_text)
string(CONCAT summary "hpf ${MODEL} over seeds ${seeds_text}:${report}, mean ${mean_text}%; PyTorch's five-seed "
              "mean (${torch_seeds_text}; ${RESULTS}): ${torch_mean_text}%, so the mean must lie within "
              "${low_text}-${high_text}%")
if(deviation GREATER bound OR deviation LESS -${bound})
  message(FATAL_ERROR "${summary}: it does not")
endif()
message(STATUS "${summary}: it does")

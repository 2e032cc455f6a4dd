# Builds and runs tests/consumer in MODE (subdirectory | package) from scratch in WORK_DIR.
# package: installs hpf from BUILD_DIR into WORK_DIR/prefix first.
file(REMOVE_RECURSE ${WORK_DIR})
set(configure_args -S ${SOURCE_DIR}/tests/consumer -B ${WORK_DIR}/build -G ${GENERATOR} -DCMAKE_BUILD_TYPE=Release
                   -DCMAKE_CXX_COMPILER=${CXX_COMPILER} -DHPF_CONSUMER_MODE=${MODE})
if(OPTIMIZATION)  # the test suite's (HPF_TEST_OPTIMIZATION): the test is about the package, not speed
  list(APPEND configure_args "-DCMAKE_CXX_FLAGS_RELEASE=${OPTIMIZATION} -DNDEBUG")
endif()
if(MODE STREQUAL "package")
  execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK_DIR}/prefix RESULT_VARIABLE rc)
  if(rc)
    message(FATAL_ERROR "cmake --install failed")
  endif()
  list(APPEND configure_args -Dhpf_ROOT=${WORK_DIR}/prefix)
else()
  list(APPEND configure_args -DHPF_SOURCE_DIR=${SOURCE_DIR} -DHPF_ENABLE_TESTS=OFF -DHPF_ENABLE_EXAMPLES=OFF
                             -DHPF_ENABLE_BENCHMARKS=OFF)
endif()
if(KOKKOS_ROOT)
  list(APPEND configure_args -DKokkos_ROOT=${KOKKOS_ROOT})
endif()
# The MPI of the enclosing build: the consumer is launched with its mpiexec, so it must not find
# another MPI first (Debian's mpicxx and mpiexec alternatives can name different ones).
if(MPI_CXX_COMPILER)
  list(APPEND configure_args -DMPI_CXX_COMPILER=${MPI_CXX_COMPILER} -DMPIEXEC_EXECUTABLE=${MPIEXEC})
endif()
foreach(step IN ITEMS configure build run)
  if(step STREQUAL "configure")
    execute_process(COMMAND ${CMAKE_COMMAND} ${configure_args} RESULT_VARIABLE rc)
  elseif(step STREQUAL "build")
    execute_process(COMMAND ${CMAKE_COMMAND} --build ${WORK_DIR}/build RESULT_VARIABLE rc)
  else()
    execute_process(COMMAND ${MPIEXEC} ${MPIEXEC_NUMPROC_FLAG} 2 ${MPIEXEC_PREFLAGS} ${WORK_DIR}/build/consumer
                    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
    message("${out}${err}")
    if(NOT out MATCHES "consumer: [0-9]+ steps")
      message(FATAL_ERROR "the consumer did not train")
    endif()
  endif()
  if(rc)
    message(FATAL_ERROR "consumer (${MODE}): ${step} failed")
  endif()
endforeach()

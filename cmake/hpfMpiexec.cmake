# Launcher flags for hpf's own MPI tests and examples, so that a plain `ctest` works. The flags come
# from scripts/launch.sh, the same detection the quickstart's launch uses: Open MPI (4.x OpenRTE,
# 5.x PRRTE) gets --allow-run-as-root only as root and oversubscription only when the tests' largest
# rank count exceeds the cores; MPICH's Hydra needs nothing. Users' own MPIEXEC_PREFLAGS win.
set(HPF_TEST_MAX_RANKS 6)
set(HPF_MPIEXEC_ENVIRONMENT "")
if(MPIEXEC_EXECUTABLE AND NOT HPF_MPIEXEC_CONFIGURED STREQUAL "${MPIEXEC_EXECUTABLE}")
  set(_hpf_launch bash ${PROJECT_SOURCE_DIR}/scripts/launch.sh --launcher ${MPIEXEC_EXECUTABLE})
  execute_process(COMMAND ${_hpf_launch} --identify OUTPUT_VARIABLE _hpf_mpi
                  OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE _hpf_rc TIMEOUT 120)
  if(NOT _hpf_rc EQUAL 0)
    message(FATAL_ERROR "scripts/launch.sh could not identify the MPI of ${MPIEXEC_EXECUTABLE}")
  endif()
  string(REPLACE " " ";" _hpf_mpi "${_hpf_mpi}")
  list(GET _hpf_mpi 0 _hpf_family)
  list(GET _hpf_mpi 1 _hpf_major)
  set(HPF_MPI_FAMILY ${_hpf_family} CACHE INTERNAL "MPI family of MPIEXEC_EXECUTABLE")
  set(HPF_MPI_MAJOR ${_hpf_major} CACHE INTERNAL "major version of an Open MPI launcher")
  # Flags this file derived for an earlier launcher are derived again; flags a user set are kept.
  if(NOT MPIEXEC_PREFLAGS OR MPIEXEC_PREFLAGS STREQUAL HPF_MPIEXEC_DERIVED_PREFLAGS)
    execute_process(COMMAND ${_hpf_launch} --preflags -n ${HPF_TEST_MAX_RANKS} OUTPUT_VARIABLE _hpf_flags
                    OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE _hpf_rc TIMEOUT 120)
    string(REPLACE "\n" ";" _hpf_flags "${_hpf_flags}")
    set(MPIEXEC_PREFLAGS "${_hpf_flags}" CACHE STRING "Flags for mpiexec before the executable" FORCE)
    set(HPF_MPIEXEC_DERIVED_PREFLAGS "${_hpf_flags}" CACHE INTERNAL "")
  endif()
  message(STATUS "hpf: MPI launcher ${MPIEXEC_EXECUTABLE} (${_hpf_family}), test flags: ${MPIEXEC_PREFLAGS}")
  set(HPF_MPIEXEC_CONFIGURED "${MPIEXEC_EXECUTABLE}" CACHE INTERNAL "")
endif()
if(HPF_MPI_FAMILY STREQUAL "openmpi")
  # Shared memory only, and no warnings about the network interfaces of the build machine
  # (the shared-memory transport is vader in 4.x and sm from 5.0).
  if(HPF_MPI_MAJOR GREATER_EQUAL 5)
    set(HPF_MPIEXEC_ENVIRONMENT "OMPI_MCA_btl=self,sm;OMPI_MCA_btl_base_warn_component_unused=0")
  else()
    set(HPF_MPIEXEC_ENVIRONMENT "OMPI_MCA_btl=self,vader;OMPI_MCA_btl_base_warn_component_unused=0")
  endif()
endif()
# CTest slots of a test whose ranks are all expected to stop with an error: they compute little (at
# most a few steps of a small model), and most of such a test is the launcher's own wait (Open MPI
# 4's mpiexec waits 1-2 s after a rank exits non-zero). One slot lets CTest run it beside another
# test instead of idling the other cores for it. (Tests that time a wait, or whose output must beat
# an MPI_Abort, keep a slot per rank.)
set(HPF_ERROR_TEST_PROCESSORS 1)

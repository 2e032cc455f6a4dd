# Launcher flags for hpf's own MPI tests and examples, so that a plain `ctest` works:
# OpenMPI refuses to start as root without --allow-run-as-root and refuses more ranks than cores
# without --oversubscribe (tests run 4 ranks on 2-core machines); its TCP transport is not needed
# on one machine. MPICH's Hydra needs none of this. Users' own MPIEXEC_PREFLAGS win.
set(HPF_MPIEXEC_ENVIRONMENT "")
if(MPIEXEC_EXECUTABLE AND NOT HPF_MPIEXEC_CONFIGURED)
  execute_process(COMMAND ${MPIEXEC_EXECUTABLE} --version OUTPUT_VARIABLE _hpf_mpiexec_version
                  ERROR_VARIABLE _hpf_mpiexec_version RESULT_VARIABLE _hpf_rc TIMEOUT 20)
  if(_hpf_mpiexec_version MATCHES "Open MPI|OpenRTE")
    set(HPF_MPI_IS_OPENMPI TRUE CACHE INTERNAL "")
    if(NOT MPIEXEC_PREFLAGS)
      set(_hpf_flags --oversubscribe)
      execute_process(COMMAND id -u OUTPUT_VARIABLE _hpf_uid OUTPUT_STRIP_TRAILING_WHITESPACE)
      if(_hpf_uid STREQUAL "0")
        list(APPEND _hpf_flags --allow-run-as-root)
      endif()
      set(MPIEXEC_PREFLAGS "${_hpf_flags}" CACHE STRING "Flags for mpiexec before the executable" FORCE)
    endif()
  else()
    set(HPF_MPI_IS_OPENMPI FALSE CACHE INTERNAL "")
  endif()
  set(HPF_MPIEXEC_CONFIGURED TRUE CACHE INTERNAL "")
endif()
if(HPF_MPI_IS_OPENMPI)
  # shared memory only, and no warnings about the network interfaces of the build machine
  set(HPF_MPIEXEC_ENVIRONMENT "OMPI_MCA_btl=self,vader;OMPI_MCA_btl_base_warn_component_unused=0")
endif()

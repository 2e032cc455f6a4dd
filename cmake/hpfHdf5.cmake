# SPDX-License-Identifier: MIT
# HDF5 for hpf/data/hdf5_dataset.hpp: defines the imported target hpf::hdf5 (HDF5's C library and
# include directory, and MPI for a parallel HDF5) when a usable HDF5 is found. Included by hpf's
# build (after MPI is found, with the C language enabled: FindHDF5 compiles a C probe) and by the
# installed package.
#
# hpf's build asks FindHDF5 and leaves HPF_HDF5_{INCLUDE_DIRS,LIBRARIES,DEFINITIONS,IS_PARALLEL}
# for the package config, which sets them before including this file: a consumer gets the HDF5
# hpf was built and tested with, and a C++ consumer need not enable C for FindHDF5.
#
# Which HDF5: the flavour of the MPI hpf uses. Debian installs each flavour apart
# (/usr/lib/<arch>/hdf5/{serial,openmpi,mpich}, headers in /usr/include/hdf5/<flavour>), and
# /usr/bin/h5pcc is whichever parallel flavour its alternatives chose, while FindHDF5 prefers a
# serial h5cc unless HDF5_PREFER_PARALLEL is set. A parallel HDF5 of another MPI would mix two MPI
# libraries in one process, and one without MPI does not compile (its hdf5.h includes mpi.h).
if(NOT TARGET hpf::hdf5)
  set(HPF_HDF5_PROBLEM "")
  if(NOT DEFINED HPF_HDF5_LIBRARIES)
    set(_hpf_mpi_flavour "")
    if(HPF_ENABLE_MPI)
      set(HDF5_PREFER_PARALLEL TRUE)
      # The MPI library of MPI::MPI_CXX, from its mpi.h (FindMPI leaves no version string for CXX).
      find_file(_hpf_mpi_h mpi.h PATHS ${MPI_CXX_INCLUDE_DIRS} NO_DEFAULT_PATH NO_CACHE)
      if(_hpf_mpi_h)
        file(STRINGS "${_hpf_mpi_h}" _hpf_mpi_id REGEX "define (OMPI_MAJOR_VERSION|MPICH_VERSION) ")
        if(_hpf_mpi_id MATCHES "OMPI_MAJOR_VERSION")
          set(_hpf_mpi_flavour openmpi)
        elseif(_hpf_mpi_id MATCHES "MPICH_VERSION")
          set(_hpf_mpi_flavour mpich)
        endif()
      endif()
      # Debian's wrapper of that flavour (unless the user chose one): its -show names the
      # flavour's include directory and library.
      if(_hpf_mpi_flavour AND NOT HDF5_C_COMPILER_EXECUTABLE AND EXISTS /usr/bin/h5pcc.${_hpf_mpi_flavour})
        set(HDF5_C_COMPILER_EXECUTABLE /usr/bin/h5pcc.${_hpf_mpi_flavour} CACHE FILEPATH
            "HDF5 C wrapper compiler (hpf picks the one of its MPI)")
      endif()
    else()
      set(HDF5_PREFER_PARALLEL FALSE)
      if(NOT HDF5_C_COMPILER_EXECUTABLE AND EXISTS /usr/bin/h5cc)
        set(HDF5_C_COMPILER_EXECUTABLE /usr/bin/h5cc CACHE FILEPATH "HDF5 C wrapper compiler (serial: MPI is off)")
      endif()
    endif()
    find_package(HDF5 COMPONENTS C QUIET)
    set(HPF_HDF5_LIBRARIES "")
    if(HDF5_FOUND)
      set(_hpf_hdf5_flavour "")
      if(HDF5_C_INCLUDE_DIRS MATCHES "/hdf5/(serial|openmpi|mpich)(/|;|$)")
        set(_hpf_hdf5_flavour ${CMAKE_MATCH_1})
      endif()
      if(HDF5_IS_PARALLEL AND NOT HPF_ENABLE_MPI)
        string(CONCAT HPF_HDF5_PROBLEM "HDF5 ${HDF5_VERSION} at ${HDF5_C_INCLUDE_DIRS} is parallel, and MPI is off "
                      "(Debian: libhdf5-dev is the serial HDF5)")
      elseif(HDF5_IS_PARALLEL AND _hpf_mpi_flavour AND _hpf_hdf5_flavour
             AND NOT _hpf_hdf5_flavour STREQUAL _hpf_mpi_flavour)
        string(CONCAT HPF_HDF5_PROBLEM "HDF5 at ${HDF5_C_INCLUDE_DIRS} is built for ${_hpf_hdf5_flavour}, hpf uses "
                      "${_hpf_mpi_flavour} (Debian: libhdf5-${_hpf_mpi_flavour}-dev)")
      else()
        set(HPF_HDF5_INCLUDE_DIRS ${HDF5_C_INCLUDE_DIRS})
        set(HPF_HDF5_LIBRARIES ${HDF5_C_LIBRARIES})
        string(REPLACE "-D" "" HPF_HDF5_DEFINITIONS "${HDF5_C_DEFINITIONS}")  # as FindHDF5's own targets
        set(HPF_HDF5_IS_PARALLEL ${HDF5_IS_PARALLEL})
        set(HPF_HDF5_DESCRIPTION "HDF5 ${HDF5_VERSION}, ")
        if(HDF5_IS_PARALLEL)
          string(APPEND HPF_HDF5_DESCRIPTION "parallel (${_hpf_hdf5_flavour})")
        else()
          string(APPEND HPF_HDF5_DESCRIPTION "serial")
        endif()
        string(APPEND HPF_HDF5_DESCRIPTION ", ${HDF5_C_INCLUDE_DIRS}")
      endif()
    elseif(_hpf_mpi_flavour)
      set(HPF_HDF5_PROBLEM "HDF5 not found (Debian: libhdf5-${_hpf_mpi_flavour}-dev)")
    else()
      set(HPF_HDF5_PROBLEM "HDF5 not found (Debian: libhdf5-openmpi-dev, or libhdf5-dev without MPI)")
    endif()
    unset(_hpf_mpi_h)
    unset(_hpf_mpi_id)
    unset(_hpf_mpi_flavour)
    unset(_hpf_hdf5_flavour)
  else()
    # The installed package: the recorded files must still be there.
    foreach(_hpf_file IN LISTS HPF_HDF5_LIBRARIES HPF_HDF5_INCLUDE_DIRS)
      if(IS_ABSOLUTE "${_hpf_file}" AND NOT EXISTS "${_hpf_file}")
        set(HPF_HDF5_PROBLEM "hpf was built with HDF5, but ${_hpf_file} is missing")
      endif()
    endforeach()
    unset(_hpf_file)
  endif()
  if(HPF_HDF5_LIBRARIES AND NOT HPF_HDF5_PROBLEM)
    add_library(hpf::hdf5 INTERFACE IMPORTED)
    set_target_properties(hpf::hdf5 PROPERTIES
      INTERFACE_INCLUDE_DIRECTORIES "${HPF_HDF5_INCLUDE_DIRS}"
      INTERFACE_COMPILE_DEFINITIONS "${HPF_HDF5_DEFINITIONS}"
      INTERFACE_LINK_LIBRARIES "${HPF_HDF5_LIBRARIES};$<$<BOOL:${HPF_HDF5_IS_PARALLEL}>:MPI::MPI_CXX>")
  endif()
endif()

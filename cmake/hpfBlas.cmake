# The BLAS that hpf's GEMMs (through KokkosKernels) run on: defines the imported target hpf::blas
# when hpf should load a BLAS other than the one KokkosKernels was linked with. Included by hpf's
# build and by the installed package, after find_package(Kokkos).
#
# - A user's choice wins: with BLA_VENDOR set (FindBLAS' variable), hpf::blas is that BLAS.
# - With Kokkos' OpenMP backend, hpf::blas is OpenBLAS' OpenMP build (Debian:
#   libopenblas0-openmp), so GEMMs run on the same libgomp threads as Kokkos' kernels and oneDNN.
#   The pthread build (Debian's default libblas.so.3) keeps its own threads, which spin against
#   Kokkos' between calls: on 2 cores the MLP with 2 threads was 0.7x of 1 thread.
#
# How the choice reaches KokkosKernels: the executable lists hpf::blas among its own dependencies
# (kept even under --as-needed), and the dynamic loader maps an executable's own dependencies
# before theirs. OpenBLAS' builds share the soname libopenblas.so.0 (Debian's libblas.so.3 is a
# wrapper that needs it), so KokkosKernels' request for it resolves to the library loaded
# first; another vendor's sgemm_ comes first in symbol lookup for the same reason.
if(NOT TARGET hpf::blas)
  set(_hpf_blas_libraries "")
  if(BLA_VENDOR)
    find_package(BLAS REQUIRED)
    set(_hpf_blas_libraries ${BLAS_LIBRARIES})
    set(HPF_BLAS_CHOICE "BLA_VENDOR=${BLA_VENDOR}")
  elseif(Kokkos_ENABLE_OPENMP OR "OPENMP" IN_LIST Kokkos_DEVICES)
    find_library(HPF_OPENMP_BLAS_LIBRARY NAMES libopenblas.so.0 openblas
                 PATHS /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}/openblas-openmp /usr/lib64/openblas-openmp
                 NO_DEFAULT_PATH DOC "OpenBLAS built with OpenMP threads (Debian: libopenblas0-openmp)")
    if(HPF_OPENMP_BLAS_LIBRARY)
      set(_hpf_blas_libraries ${HPF_OPENMP_BLAS_LIBRARY})
      set(HPF_BLAS_CHOICE "OpenBLAS with OpenMP threads (${HPF_OPENMP_BLAS_LIBRARY})")
    else()
      message(WARNING "hpf: Kokkos has the OpenMP backend, but OpenBLAS' OpenMP build was not found "
                      "(Debian: apt-get install libopenblas0-openmp). GEMMs keep the BLAS KokkosKernels "
                      "links, whose own threads compete with Kokkos' OpenMP threads.")
    endif()
  endif()
  if(_hpf_blas_libraries)
    add_library(hpf::blas INTERFACE IMPORTED)
    if(HPF_OPENMP_BLAS_LIBRARY AND NOT BLA_VENDOR)
      # Handed to the linker as a flag, with its folder as an rpath: as a plain library CMake would
      # warn on every target that it may hide the pthread build's libopenblas.so.0 - the intent.
      get_filename_component(_hpf_blas_dir "${HPF_OPENMP_BLAS_LIBRARY}" DIRECTORY)
      set_target_properties(hpf::blas PROPERTIES
        INTERFACE_LINK_LIBRARIES "-Wl,--push-state,--no-as-needed,${HPF_OPENMP_BLAS_LIBRARY},--pop-state"
        INTERFACE_LINK_OPTIONS "LINKER:-rpath,${_hpf_blas_dir}")
      unset(_hpf_blas_dir)
    else()
      set_property(TARGET hpf::blas PROPERTY INTERFACE_LINK_LIBRARIES
                   "-Wl,--push-state,--no-as-needed" ${_hpf_blas_libraries} "-Wl,--pop-state")
    endif()
  endif()
  unset(_hpf_blas_libraries)
endif()

# Debian's Trilinos-packaged Kokkos 3.4 exports Kokkos::kokkos with the include directory
# /usr/lib/include, which does not exist (the headers are in ${Kokkos_INCLUDE_DIRS}). Point the
# target at the real headers so neither hpf nor its consumers ever see the bad path.
# KokkosKernels' Debian target (trilinos_kokkoskernels) has no include directory at all; its
# headers live next to Kokkos' there. Included after find_package(Kokkos) and, from the
# installed package config, after find_dependency(Kokkos).
if(TARGET Kokkos::kokkos AND Kokkos_INCLUDE_DIRS)
  get_target_property(_hpf_kokkos_inc Kokkos::kokkos INTERFACE_INCLUDE_DIRECTORIES)
  set(_hpf_kokkos_ok FALSE)
  foreach(_dir IN LISTS _hpf_kokkos_inc)
    if(EXISTS "${_dir}/Kokkos_Core.hpp")
      set(_hpf_kokkos_ok TRUE)
    endif()
  endforeach()
  if(NOT _hpf_kokkos_ok)
    list(GET Kokkos_INCLUDE_DIRS 0 _hpf_kokkos_first)
    get_filename_component(_hpf_kokkos_real "${_hpf_kokkos_first}" REALPATH)
    set_property(TARGET Kokkos::kokkos PROPERTY INTERFACE_INCLUDE_DIRECTORIES "${_hpf_kokkos_real}")
  endif()
  unset(_hpf_kokkos_inc)
  unset(_hpf_kokkos_ok)
  unset(_hpf_kokkos_first)
  unset(_hpf_kokkos_real)
endif()

# The KokkosKernels target differs between Debian's Trilinos build (trilinos_kokkoskernels) and a
# standalone KokkosKernels install (Kokkos::kokkoskernels). hpf's INTERFACE link uses a generator
# expression that picks whichever exists when the consumer generates, so one installed hpf works
# with either Kokkos. Fail early here if neither does.
if(NOT TARGET Kokkos::kokkoskernels AND NOT TARGET trilinos_kokkoskernels)
  message(FATAL_ERROR "hpf: find_package(KokkosKernels) found no usable target "
                      "(expected Kokkos::kokkoskernels or trilinos_kokkoskernels)")
endif()

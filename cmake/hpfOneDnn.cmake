# oneDNN for hpf's host convolutions: defines the imported target hpf::onednn when libdnnl and its
# C++ header are found. Debian's own dnnl CMake package requires OpenCL development files (its
# library is built with a GPU runtime), which the CPU convolutions hpf uses do not need, so the
# header and library are found directly. Included by hpf's build and by the installed package.
if(NOT TARGET hpf::onednn)
  find_path(HPF_ONEDNN_INCLUDE_DIR NAMES dnnl.hpp PATH_SUFFIXES oneapi/dnnl DOC "oneDNN's dnnl.hpp")
  find_library(HPF_ONEDNN_LIBRARY NAMES dnnl DOC "oneDNN library (libdnnl)")
  if(HPF_ONEDNN_INCLUDE_DIR AND HPF_ONEDNN_LIBRARY)
    add_library(hpf::onednn UNKNOWN IMPORTED)
    set_target_properties(hpf::onednn PROPERTIES IMPORTED_LOCATION "${HPF_ONEDNN_LIBRARY}"
                          INTERFACE_INCLUDE_DIRECTORIES "${HPF_ONEDNN_INCLUDE_DIR}")
  endif()
endif()

// Helpers for the HDF5 tests: datasets written with HDF5's C API (as h5py lays them out: C order,
// the element type as stored), into a new file or one written before.
#ifndef HPF_TESTS_DATA_HDF5_FILES_HPP
#define HPF_TESTS_DATA_HDF5_FILES_HPP

#include <data/idx_files.hpp>

#include <hdf5.h>

#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace hpf_test {

/// HDF5's native type of T.
template <class T>
hid_t hdf5_native_type() {
  if constexpr (std::is_same_v<T, float>) return H5T_NATIVE_FLOAT;
  else if constexpr (std::is_same_v<T, double>) return H5T_NATIVE_DOUBLE;
  else if constexpr (std::is_same_v<T, std::int8_t>) return H5T_NATIVE_INT8;
  else if constexpr (std::is_same_v<T, std::uint8_t>) return H5T_NATIVE_UINT8;
  else if constexpr (std::is_same_v<T, std::int16_t>) return H5T_NATIVE_INT16;
  else if constexpr (std::is_same_v<T, std::uint16_t>) return H5T_NATIVE_UINT16;
  else if constexpr (std::is_same_v<T, std::int32_t>) return H5T_NATIVE_INT32;
  else if constexpr (std::is_same_v<T, std::uint32_t>) return H5T_NATIVE_UINT32;
  else if constexpr (std::is_same_v<T, std::int64_t>) return H5T_NATIVE_INT64;
  else {
    static_assert(std::is_same_v<T, std::uint64_t>, "hdf5_native_type: not a type the tests write");
    return H5T_NATIVE_UINT64;
  }
}

/// How write_hdf5 lays a dataset out.
struct Hdf5Layout {
  hid_t file_type = H5I_INVALID_HID;  ///< the type stored (default: Elem's native type)
  hsize_t chunk_rows = 0;             ///< non-zero: chunks of this many rows, gzip-compressed
  const char* external = nullptr;     ///< non-null: the data lives in this external file (raw storage)
  hsize_t user_block = 0;             ///< a new file's user block (bytes before HDF5's signature)
};

/// Writes `values` (converted to Elem) as dataset `name` of shape `shape` to `file`, which is
/// created unless it exists; groups on the way are created.
template <class Elem, class Value>
void write_hdf5(const std::filesystem::path& file, const std::string& name, const std::vector<hsize_t>& shape,
                const std::vector<Value>& values, const Hdf5Layout& layout = {}) {
  const auto fail = [&](const std::string& what) {
    throw std::runtime_error("write_hdf5: " + what + " " + file.string());
  };
  std::vector<Elem> data(values.begin(), values.end());
  hid_t f = -1;
  if (std::filesystem::exists(file)) {
    f = H5Fopen(file.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  } else {
    const hid_t fcpl = H5Pcreate(H5P_FILE_CREATE);
    if (layout.user_block) H5Pset_userblock(fcpl, layout.user_block);
    f = H5Fcreate(file.c_str(), H5F_ACC_TRUNC, fcpl, H5P_DEFAULT);
    H5Pclose(fcpl);
  }
  if (f < 0) fail("cannot open");
  const hid_t space = H5Screate_simple(static_cast<int>(shape.size()), shape.data(), nullptr);
  const hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
  H5Pset_create_intermediate_group(lcpl, 1);
  const hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  if (layout.chunk_rows) {
    std::vector<hsize_t> chunk(shape);
    chunk[0] = layout.chunk_rows;
    H5Pset_chunk(dcpl, static_cast<int>(chunk.size()), chunk.data());
    H5Pset_deflate(dcpl, 6);
  }
  if (layout.external) H5Pset_external(dcpl, layout.external, 0, H5F_UNLIMITED);
  const hid_t native = hdf5_native_type<Elem>();
  const hid_t d = H5Dcreate2(f, name.c_str(), layout.file_type >= 0 ? layout.file_type : native, space, lcpl, dcpl,
                             H5P_DEFAULT);
  const bool written = d >= 0 && (data.empty() || layout.external ||
                                  H5Dwrite(d, native, H5S_ALL, H5S_ALL, H5P_DEFAULT, data.data()) >= 0);
  if (d >= 0) H5Dclose(d);
  H5Pclose(dcpl);
  H5Pclose(lcpl);
  H5Sclose(space);
  H5Fclose(f);
  if (!written) fail("cannot write dataset '" + name + "' of");
}

/// Adds an object of another kind to `file` (created unless it exists): "group" (an empty group),
/// "enum" (h5py's bool: an int8 enum of FALSE and TRUE, shape (n,)), "string" (fixed-length
/// strings, shape (n,)), "scalar" (one int32, shape ()) or "null" (a dataset with no dataspace).
inline void write_hdf5_object(const std::filesystem::path& file, const std::string& name, const std::string& kind,
                              hsize_t n = 4) {
  const hid_t f = std::filesystem::exists(file) ? H5Fopen(file.c_str(), H5F_ACC_RDWR, H5P_DEFAULT)
                                                : H5Fcreate(file.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  if (f < 0) throw std::runtime_error("write_hdf5_object: cannot open " + file.string());
  if (kind == "group") {
    H5Gclose(H5Gcreate2(f, name.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
  } else {
    hid_t type = -1;
    if (kind == "enum") {
      type = H5Tenum_create(H5T_NATIVE_INT8);
      std::int8_t no = 0, yes = 1;
      H5Tenum_insert(type, "FALSE", &no);
      H5Tenum_insert(type, "TRUE", &yes);
    } else if (kind == "string") {
      type = H5Tcopy(H5T_C_S1);
      H5Tset_size(type, 4);
    } else {
      type = H5Tcopy(H5T_NATIVE_INT32);
    }
    const hid_t space = kind == "scalar" ? H5Screate(H5S_SCALAR)
                        : kind == "null" ? H5Screate(H5S_NULL)
                                         : H5Screate_simple(1, &n, nullptr);
    H5Dclose(H5Dcreate2(f, name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
    H5Sclose(space);
    H5Tclose(type);
  }
  H5Fclose(f);
}

}  // namespace hpf_test

#endif  // HPF_TESTS_DATA_HDF5_FILES_HPP

// SPDX-License-Identifier: MIT
#ifndef HPF_DATA_DETAIL_HDF5_FILE_HPP
#define HPF_DATA_DETAIL_HDF5_FILE_HPP

#if !defined(HPF_HAVE_HDF5)
#error "hpf/data/detail/hdf5_file.hpp needs HDF5: use hpf::hpf of an hpf configured with HPF_ENABLE_HDF5=ON"
#endif

#include <hpf/data/error.hpp>
#include <hpf/data/shard.hpp>

#include <hdf5.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

// The HDF5 C API as hpf's readers use it: owned identifiers, a quiet error stack, a file opened
// with the driver each rank reads its own rows with, and datasets checked and read by row.
namespace hpf::data::detail {

// An HDF5 identifier, closed with `close` at scope exit.
class Hdf5Id {
 public:
  Hdf5Id() = default;
  Hdf5Id(hid_t id, herr_t (*close)(hid_t)) noexcept : id_(id), close_(close) {}
  Hdf5Id(Hdf5Id&& other) noexcept : id_(std::exchange(other.id_, H5I_INVALID_HID)), close_(other.close_) {}
  Hdf5Id& operator=(Hdf5Id&& other) noexcept {
    if (this != &other) {
      reset();
      id_ = std::exchange(other.id_, H5I_INVALID_HID);
      close_ = other.close_;
    }
    return *this;
  }
  Hdf5Id(const Hdf5Id&) = delete;
  Hdf5Id& operator=(const Hdf5Id&) = delete;
  ~Hdf5Id() { reset(); }

  hid_t get() const noexcept { return id_; }
  explicit operator bool() const noexcept { return id_ >= 0; }

 private:
  void reset() noexcept {
    if (id_ >= 0 && close_ != nullptr) close_(id_);
    id_ = H5I_INVALID_HID;
  }
  hid_t id_ = H5I_INVALID_HID;
  herr_t (*close_)(hid_t) = nullptr;
};

// HDF5 prints its whole error stack to stderr on every failed call by default; hpf's readers say
// what was wrong themselves (hdf5_error_text). The caller's handler, whatever it was, is restored
// at scope exit.
class Hdf5Quiet {
 public:
  Hdf5Quiet() noexcept {
    H5Eget_auto2(H5E_DEFAULT, &handler_, &data_);
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  }
  Hdf5Quiet(const Hdf5Quiet&) = delete;
  Hdf5Quiet& operator=(const Hdf5Quiet&) = delete;
  ~Hdf5Quiet() { H5Eset_auto2(H5E_DEFAULT, handler_, data_); }

 private:
  H5E_auto2_t handler_ = nullptr;
  void* data_ = nullptr;
};

// The most specific message on HDF5's error stack (where the error was first detected, e.g.
// "truncated file: eof = ..."), prefixed "HDF5: "; clears the stack.
inline std::string hdf5_error_text() {
  std::string text;
  H5Ewalk2(
      H5E_DEFAULT, H5E_WALK_UPWARD,
      [](unsigned n, const H5E_error2_t* error, void* out) -> herr_t {
        if (n == 0 && error->desc != nullptr) *static_cast<std::string*>(out) = error->desc;
        return 0;
      },
      &text);
  H5Eclear2(H5E_DEFAULT);
  return "HDF5: " + (text.empty() ? std::string("no reason given") : text);
}

// "(10, 3)", "(10,)", "()": a dataset's shape as NumPy and h5py print it.
inline std::string hdf5_shape_text(const std::vector<std::size_t>& shape) {
  std::string text = "(";
  for (std::size_t k = 0; k < shape.size(); ++k) text += (k ? ", " : "") + std::to_string(shape[k]);
  return text + (shape.size() == 1 ? ",)" : ")");
}

// Throws DataError unless `file` is a readable regular file with HDF5's signature: at byte 0, or
// after a user block at byte 512, 1024, 2048, ... HDF5 itself says "unable to open file" for all.
inline void check_hdf5_signature(const std::filesystem::path& file) {
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw DataError(file, std::string("cannot open: ") + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw DataError(file, "not a regular file (an HDF5 file is expected)");
  }
  static constexpr char signature[8] = {'\x89', 'H', 'D', 'F', '\r', '\n', '\x1a', '\n'};
  bool found = false;
  for (::off_t at = 0; !found && at + 8 <= st.st_size; at = at == 0 ? 512 : 2 * at) {
    char bytes[8];
    found = ::pread(fd, bytes, 8, at) == 8 && std::memcmp(bytes, signature, 8) == 0;
  }
  ::close(fd);
  if (!found) throw DataError(file, "not an HDF5 file (no HDF5 signature at its start or after a user block)");
}

// File access: each rank opens the file by itself and reads its own rows. With a parallel HDF5
// that is MPI-IO on MPI_COMM_SELF, independent reads: a collective read needs every rank of a
// communicator in the same call, which a DataSource(shard) cannot promise (the ranks of other
// pipeline stages read other datasets or none, a rank's shards may be loaded one by one, and
// hpf::Trainer loads shards in one process). Before MPI_Init, or without a parallel HDF5, the
// default (POSIX) driver.
inline Hdf5Id hdf5_file_access() {
  Hdf5Id fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
#if H5_VERSION_GE(1, 10, 7)
  // Shared locks where the file system has them; opened anyway where it has none (NFS, Lustre).
  H5Pset_file_locking(fapl.get(), 1, 1);
#endif
#ifdef H5_HAVE_PARALLEL
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) H5Pset_fapl_mpio(fapl.get(), MPI_COMM_SELF, MPI_INFO_NULL);
#endif
  return fapl;
}

// A dataset's element type and shape, read from its header.
struct Hdf5Dataset {
  Hdf5Id id;
  std::string name;                // as the caller named it
  H5T_class_t type_class = H5T_NO_CLASS;
  std::string type_name;           // "float32", "int64", "uint8", "string", ...
  std::vector<std::size_t> shape;  // empty for a scalar dataset

  std::size_t rows() const noexcept { return shape.empty() ? 1 : shape[0]; }
  std::size_t row_elements() const noexcept {
    std::size_t n = 1;
    for (std::size_t k = 1; k < shape.size(); ++k) n *= shape[k];
    return n;
  }
  bool is_float() const noexcept { return type_class == H5T_FLOAT; }
  bool is_integer() const noexcept { return type_class == H5T_INTEGER; }
  std::string described() const { return "dataset '" + name + "'"; }
};

inline std::string hdf5_type_name(hid_t type) {
  const std::string bits = std::to_string(8 * H5Tget_size(type));
  switch (H5Tget_class(type)) {
    case H5T_FLOAT: return "float" + bits;
    case H5T_INTEGER: return (H5Tget_sign(type) == H5T_SGN_NONE ? "uint" : "int") + bits;
    case H5T_STRING: return "string";
    case H5T_COMPOUND: return "compound";
    case H5T_ENUM: return "enum";
    case H5T_ARRAY: return "array";
    case H5T_VLEN: return "variable-length";
    case H5T_BITFIELD: return "bitfield";
    case H5T_OPAQUE: return "opaque";
    case H5T_REFERENCE: return "reference";
    case H5T_TIME: return "time";
    default: return "unknown";
  }
}

// An open HDF5 file, read-only.
class Hdf5File {
 public:
  explicit Hdf5File(const std::filesystem::path& file) : file_(file) {
    check_hdf5_signature(file);
    const Hdf5Id fapl = hdf5_file_access();
    id_ = Hdf5Id(H5Fopen(file.c_str(), H5F_ACC_RDONLY, fapl.get()), H5Fclose);
    if (!id_) throw DataError(file, "cannot open as HDF5: " + hdf5_error_text());
  }

  const std::filesystem::path& path() const noexcept { return file_; }

  // The dataset `name` (a path such as "train/images"), with its type and shape; throws DataError
  // naming the datasets the file has if there is none of that name.
  Hdf5Dataset dataset(const std::string& name) const {
    if (!has_object(name)) {
      throw DataError(file_, "no dataset '" + name + "' (" + dataset_list() + ")");
    }
    Hdf5Dataset d{Hdf5Id(H5Oopen(id_.get(), name.c_str(), H5P_DEFAULT), H5Oclose), name, H5T_NO_CLASS, {}, {}};
    if (!d.id) throw DataError(file_, "cannot open " + d.described() + ": " + hdf5_error_text());
    if (H5Iget_type(d.id.get()) != H5I_DATASET) {
      throw DataError(file_, "'" + name + "' is a group, not a dataset (" + dataset_list() + ")");
    }
    const Hdf5Id type(H5Dget_type(d.id.get()), H5Tclose);
    const Hdf5Id space(H5Dget_space(d.id.get()), H5Sclose);
    if (!type || !space) {
      throw DataError(file_, "cannot read the header of " + d.described() + ": " + hdf5_error_text());
    }
    d.type_class = H5Tget_class(type.get());
    d.type_name = hdf5_type_name(type.get());
    if (H5Sget_simple_extent_type(space.get()) == H5S_NULL) {
      throw DataError(file_, d.described() + " holds no data (an empty dataspace)");
    }
    const int rank = H5Sget_simple_extent_ndims(space.get());
    std::vector<hsize_t> dims(static_cast<std::size_t>(rank > 0 ? rank : 0));
    if (rank < 0 || H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr) < 0) {
      throw DataError(file_, "cannot read the shape of " + d.described() + ": " + hdf5_error_text());
    }
    d.shape.assign(dims.begin(), dims.end());
    return d;
  }

  // Rows shard.index, shard.index + shard.count, ... of `d` (every element of each), converted
  // by HDF5 to `memory_type` (T's native type) in the read: one strided hyperslab, so HDF5 reads
  // this shard's rows and no others.
  template <class T>
  std::vector<T> read_rows(const Hdf5Dataset& d, hid_t memory_type, const Shard& shard) const {
    const std::size_t rows = shard.size_of(d.rows());
    std::vector<T> values(rows * d.row_elements());
    if (values.empty()) return values;
    const std::size_t rank = d.shape.size();
    std::vector<hsize_t> start(rank, 0), stride(rank, 1), count(d.shape.begin(), d.shape.end()), block(rank, 1);
    start[0] = shard.index;
    stride[0] = shard.count;
    count[0] = rows;
    const Hdf5Id space(H5Dget_space(d.id.get()), H5Sclose);
    const hsize_t n = values.size();
    const Hdf5Id memory(H5Screate_simple(1, &n, nullptr), H5Sclose);
    if (!space || !memory ||
        H5Sselect_hyperslab(space.get(), H5S_SELECT_SET, start.data(), stride.data(), count.data(), block.data()) < 0 ||
        H5Dread(d.id.get(), memory_type, memory.get(), space.get(), H5P_DEFAULT, values.data()) < 0) {
      throw DataError(file_, "reading " + d.described() + " failed: " + hdf5_error_text());
    }
    return values;
  }

 private:
  // Whether the path `name` leads to an object. H5Lexists fails (instead of answering no) when a
  // group on the way is missing, so each prefix is asked in turn.
  bool has_object(const std::string& name) const {
    std::string prefix = name.starts_with('/') ? "/" : "";
    bool any = false;
    for (std::size_t at = 0; at < name.size();) {
      const std::size_t end = std::min(name.find('/', at), name.size());
      if (end > at) {
        if (any) prefix += '/';
        prefix.append(name, at, end - at);  // (GCC 12 at -O3 warns falsely of "/" + std::string)
        any = true;
        if (H5Lexists(id_.get(), prefix.c_str(), H5P_DEFAULT) <= 0) {
          H5Eclear2(H5E_DEFAULT);
          return false;
        }
      }
      at = end + 1;
    }
    return any;  // "" and "/" name the root group
  }

  // "the file's datasets: 'a', 'g/b'" (the first 20), or "the file holds no datasets".
  std::string dataset_list() const {
    struct Visit {
      hid_t file;
      std::vector<std::string> names;
    } visit{id_.get(), {}};
    H5Lvisit(
        id_.get(), H5_INDEX_NAME, H5_ITER_INC,
        [](hid_t, const char* name, const H5L_info_t*, void* data) -> herr_t {
          auto& v = *static_cast<Visit*>(data);
          const Hdf5Id object(H5Oopen(v.file, name, H5P_DEFAULT), H5Oclose);  // fails for a dangling link
          if (object && H5Iget_type(object.get()) == H5I_DATASET) v.names.push_back(name);
          return 0;
        },
        &visit);
    H5Eclear2(H5E_DEFAULT);
    if (visit.names.empty()) return "the file holds no datasets";
    constexpr std::size_t shown = 20;
    std::string text = "the file's datasets: ";
    for (std::size_t k = 0; k < visit.names.size() && k < shown; ++k) text += (k ? ", '" : "'") + visit.names[k] + "'";
    if (visit.names.size() > shown) text += " and " + std::to_string(visit.names.size() - shown) + " more";
    return text;
  }

  std::filesystem::path file_;
  Hdf5Id id_;
};

}  // namespace hpf::data::detail

#endif  // HPF_DATA_DETAIL_HDF5_FILE_HPP

#include <hpf/system/resident_memory.hpp>

#include <doctest/doctest.h>

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstring>

TEST_CASE("resident_bytes: the pages written count, those only reserved do not") {
  const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  const std::size_t pages = 16;
  void* mapped = mmap(nullptr, pages * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(mapped != MAP_FAILED);
  auto* bytes = static_cast<unsigned char*>(mapped);
  CHECK(hpf::system::resident_bytes(bytes, pages * page) == 0);
  std::memset(bytes, 1, 3 * page);        // the first three pages
  bytes[10 * page + page / 2] = 1;        // and one byte of the eleventh
  CHECK(hpf::system::resident_bytes(bytes, pages * page) == 4 * page);
  CHECK(hpf::system::resident_bytes(bytes, 2 * page) == 2 * page);
  CHECK(hpf::system::resident_bytes(bytes + page / 2, 10) == 10);  // never more than asked about
  CHECK(hpf::system::resident_bytes(bytes + 4 * page, 6 * page) == 0);
  CHECK(hpf::system::resident_bytes(bytes, 0) == 0);
  munmap(mapped, pages * page);
}

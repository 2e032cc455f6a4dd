// A std::vector<bool> handed to Safetensors::add (not contiguous).
// expect-message: hpf::io::Safetensors::add: std::vector<bool> is not contiguous; pass a std::span<const bool>
#include <hpf/io/safetensors.hpp>

#include <vector>

int main() {
  hpf::io::Safetensors file;
  file.add("flags", {2}, std::vector<bool>{true, false});
}

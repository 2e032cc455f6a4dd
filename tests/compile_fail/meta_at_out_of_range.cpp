// at_t of a 2-element list at index 2.
// expect-message: hpf::at_t: index out of range
// expect-early: at_impl<hpf::type_list<int, char>, 2>
#include <hpf/meta/type_list.hpp>

using Third = hpf::at_t<hpf::type_list<int, char>, 2>;

int main() { return int(sizeof(Third)); }

// SPDX-License-Identifier: MIT
#ifndef HPF_LAYERS_DETAIL_SPLIT_MEMBERS_HPP
#define HPF_LAYERS_DETAIL_SPLIT_MEMBERS_HPP

#include <hpf/layers/layer_split.hpp>

#include <cstddef>
#include <vector>

namespace hpf::detail {

/// \brief Which members of a split layer's group this process computes, and which of `extent`
/// things (outputs under a filter split, inputs under a channel split) each member owns.
template <class T, class Space>
class SplitMembers {
 public:
  SplitMembers() = default;
  SplitMembers(const LayerGroup<T, Space>& group, std::size_t extent) : group_(&group), extent_(extent) {}

  explicit operator bool() const { return group_ != nullptr; }
  const LayerGroup<T, Space>& group() const { return *group_; }
  std::size_t size() const { return group_->size(); }
  /// First thing of member m; member m owns [begin(m), begin(m + 1)).
  std::size_t begin(std::size_t m) const { return split_begin(extent_, group_->size(), m); }
  /// The members this process computes: [first(), end()).
  std::size_t first() const { return group_->first_member(); }
  std::size_t end() const { return group_->first_member() + group_->local_members(); }
  /// Every member's part of an [extent][per_thing] array, in elements (LayerGroup::gather).
  std::vector<std::size_t> bounds(std::size_t per_thing) const {
    std::vector<std::size_t> b(group_->size() + 1);
    for (std::size_t m = 0; m < b.size(); ++m) b[m] = begin(m) * per_thing;
    return b;
  }

 private:
  const LayerGroup<T, Space>* group_ = nullptr;
  std::size_t extent_ = 0;
};

}  // namespace hpf::detail

#endif  // HPF_LAYERS_DETAIL_SPLIT_MEMBERS_HPP

#pragma once
// DAPO's dynamic sampling ("dynamic GiGPO" in verl-agent; rewards.md section 5): a group whose
// episodes all got the same reward has zero group-relative advantage and teaches nothing, so it is
// dropped, and more groups are collected until the batch is full or the tries run out (then the
// batch trains on what it has).
#include <cstddef>
#include <stdexcept>
#include <utility>
#include <vector>

namespace turnrl::trainer::rewards {

/** Whether the episode rewards of one group differ (exact comparison; a group of one has none). */
bool has_signal(const std::vector<double>& episode_rewards);

template <typename Group>
struct SampledGroups {
  std::vector<Group> kept;    // at most the groups wanted, in the order collected
  size_t groups_dropped = 0;  // groups without signal
  size_t groups_surplus = 0;  // groups with signal collected after the batch was full
  int tries = 0;              // calls of the collect function
};

/**
 * Calls `collect()` (returning std::vector<Group>) until `groups_wanted` groups with signal are kept or
 * `max_tries` calls were made. `episode_rewards(group)` gives a group's episode rewards.
 */
template <typename Group, typename Collect, typename EpisodeRewards>
SampledGroups<Group> sample_groups_with_signal(size_t groups_wanted, int max_tries, Collect&& collect,
                                               EpisodeRewards&& episode_rewards) {
  if (max_tries < 1) throw std::invalid_argument("dynamic sampling: max_tries must be at least 1");
  SampledGroups<Group> result;
  while (result.kept.size() < groups_wanted && result.tries < max_tries) {
    std::vector<Group> collected = collect();
    ++result.tries;
    for (Group& group : collected) {
      if (!has_signal(episode_rewards(group))) {
        ++result.groups_dropped;
      } else if (result.kept.size() < groups_wanted) {
        result.kept.push_back(std::move(group));
      } else {
        ++result.groups_surplus;
      }
    }
  }
  return result;
}

}  // namespace turnrl::trainer::rewards

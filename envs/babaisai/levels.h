#pragma once
// The level generators BALROG evaluates (baba/envs.py: MakeWinEnv, TwoRoomEnv, TwoRoomMakeYouEnv,
// TwoRoomMakeWallWinEnv), drawing from numpy's legacy global RandomState exactly as the original.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "envs/babaisai/world.h"
#include "envs/common/numpy_random.h"

namespace turnrl::envs::babaisai {

/** One call of `np.random.randint(low, high)` or `np.random.choice(n[, size, replace])`. */
struct RngCall {
  bool is_choice = false;
  int64_t low = 0;     // randint: low; choice: n
  int64_t high = 0;    // randint only
  int64_t size = 0;    // choice: 0 for a scalar draw
  bool replace = true;
  std::vector<int64_t> result;
};

/** The global generator as the generators use it, optionally recording every call. */
class TracedRandom {
 public:
  TracedRandom(RandomState& state, std::vector<RngCall>* trace) : state_(state), trace_(trace) {}
  int64_t randint(int64_t low, int64_t high);
  int64_t choice(int64_t n);
  std::vector<int64_t> choice(int64_t n, int64_t size, bool replace);

 private:
  RandomState& state_;
  std::vector<RngCall>* trace_;
};

enum class Layout { kOneRoom, kTwoRoom, kTwoRoomMakeYou, kTwoRoomMakeWallWin };
/** Where TwoRoomEnv places the win object (and the distractor object). */
enum class ObjectArea { kLeftAnywhere, kRightAnywhere, kAnywhere };

struct LevelConfig {
  Layout layout = Layout::kOneRoom;
  ObjectArea object_area = ObjectArea::kLeftAnywhere;
  bool break_stop_rule = false;
  bool break_win_rule = false;
  bool distractor_obj = false;
  bool distractor_rule_block = false;
  bool irrelevant_rule_distractor = false;
  bool distractor_win_rule = false;
};

struct LevelId {
  std::string name;  // e.g. "two_room-make_you"; BALROG's id is "env/" + name
  LevelConfig config;
};

/** BALROG's 40 BabaIsAI levels, in its config order. */
const std::vector<LevelId>& balrog_levels();

/** Generates a level into `world` (ready to play) and returns its target plan. */
std::string generate_level(const LevelConfig& config, TracedRandom& random, World& world);

}  // namespace turnrl::envs::babaisai

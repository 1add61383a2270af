#pragma once
// Level generation for BabyAI-MixedTrainLocal-v0's five sub-tasks, drawing random numbers
// exactly as the Python fork does (RoomGrid, LevelGen, Level_MixedTrainLocal).
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "envs/babyai/instructions.h"
#include "envs/babyai/world.h"
#include "envs/common/numpy_random.h"

namespace turnrl::envs::babyai {

enum class Task { kGoTo, kPickup, kOpen, kPutNext, kPickUpSeqGoTo };

/** One `Generator.integers(low, high)` call, as the golden `rng_trace` lists them. */
struct RngCall {
  int64_t low, high, result;
};

struct Level {
  World world;
  std::unique_ptr<Instruction> instruction;
  std::string mission;
  int num_rows = 1;
  int num_cols = 1;
};

class LevelGenerator {
 public:
  static constexpr int kRoomSize = 8;

  LevelGenerator(Task task, int num_dists);
  /** Generates the level for `seed` into `level`; appends every generator call to `trace` if given. */
  void generate(uint64_t seed, Level& level, std::vector<RngCall>* trace);

 private:
  struct Room {
    Pos top;
    std::array<std::optional<Pos>, 4> door_pos;
    std::array<int, 4> neighbor{-1, -1, -1, -1};  // room index
    std::array<int16_t, 4> door{Grid::kEmpty, Grid::kEmpty, Grid::kEmpty, Grid::kEmpty};
  };
  struct Rejected {};  // the original's RejectSampling / RecursionError: regenerate

  int64_t integers(int64_t low, int64_t high);
  void build_rooms();
  Pos place_obj(Pos top, bool reject_next_to_agent);
  void place_agent();
  int16_t add_object(int room, ObjectType type, Color color);
  std::vector<int16_t> add_distractors(std::optional<int> room, int count);
  Color random_color();
  bool objects_reachable() const;
  void gen_mission();
  /** Each returns whether every object is reachable from the agent. */
  bool gen_open();
  /** putnext and pick-up-then-go-to: two objects drawn from the distractors. */
  bool gen_two_objects();
  bool excluded() const;
  void validate(Instruction& instruction);
  int room_of(Pos p) const { return p.x / (kRoomSize - 1) + (p.y / (kRoomSize - 1)) * num_cols_; }

  Task task_;
  int num_dists_;
  int num_cols_;
  int num_rows_ = 1;
  Pcg64Generator rng_;
  std::vector<RngCall>* trace_ = nullptr;
  std::vector<Room> rooms_;
  Level* level_ = nullptr;
};

}  // namespace turnrl::envs::babyai

#pragma once
// BabyAI's instruction language as MixedTrainLocal uses it: object descriptions, the mission
// surface text, and the verifier that decides success after every step.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "envs/babyai/world.h"
#include "envs/common/state_writer.h"

namespace turnrl::envs::babyai {

/** "the/a [colour] type": the objects matching it are tracked by identity. */
struct ObjectDesc {
  ObjectType type = ObjectType::kBall;
  std::optional<Color> color;
  std::vector<int16_t> objects;   // matching objects, found at reset
  std::vector<Pos> positions;     // their recorded positions

  /** Recomputes the matching set and positions (grid scanned x-outer, y-inner). */
  void find_matching(const World& world);
  /** Refreshes positions of the already tracked objects still on the grid (after a drop). */
  void refresh_positions(const World& world);
  std::string surface(const World& world);
  void append_state(StateWriter& out) const;
};

enum class Status { kContinue, kSuccess, kFailure };

class Instruction {
 public:
  enum class Kind { kGoTo, kPickup, kOpen, kPutNext, kBefore, kAfter };

  static std::unique_ptr<Instruction> go_to(ObjectDesc desc);
  static std::unique_ptr<Instruction> pickup(ObjectDesc desc);
  static std::unique_ptr<Instruction> open(ObjectDesc desc);
  static std::unique_ptr<Instruction> put_next(ObjectDesc move, ObjectDesc fixed);
  /** "a, then b". */
  static std::unique_ptr<Instruction> before(std::unique_ptr<Instruction> a, std::unique_ptr<Instruction> b);
  /** "a after you b": b must be done first. */
  static std::unique_ptr<Instruction> after(std::unique_ptr<Instruction> a, std::unique_ptr<Instruction> b);

  Kind kind() const { return kind_; }
  std::string surface(const World& world);
  void reset_verifier(const World& world);
  Status verify(const World& world, int action);
  void refresh_positions(const World& world);
  /** Navigations needed, for max_steps. */
  int num_navs() const;

  ObjectDesc& desc() { return desc_; }
  ObjectDesc& desc_fixed() { return desc_fixed_; }
  const ObjectDesc& desc() const { return desc_; }
  const ObjectDesc& desc_fixed() const { return desc_fixed_; }
  /** The leaf the verifier checks next: this leaf itself, or the part of a sequence still to do. */
  const Instruction& pending() const;
  /** For PutNext: whether a move object already sits next to a fixed position. */
  bool objects_next(const World& world) const;
  /** The verifier's progress (tracked objects, recorded positions, flags), for Env::serialize_state. */
  void append_state(StateWriter& out) const;

 private:
  explicit Instruction(Kind kind) : kind_(kind) {}
  Status verify_leaf(const World& world, int action);

  Kind kind_;
  ObjectDesc desc_;        // GoTo/Pickup/Open target, PutNext move object
  ObjectDesc desc_fixed_;  // PutNext fixed object
  std::unique_ptr<Instruction> first_, second_;  // Before: a then b; After: a after b
  int16_t pre_carrying_ = Grid::kEmpty;
  bool first_done_ = false;
  bool second_done_ = false;
};

}  // namespace turnrl::envs::babyai

#pragma once
// The objects of a BabaIsAI level: border walls, "things" whose behaviour comes only from the
// active rules (ball, wall, door, key, baba), and the always-pushable rule blocks.
#include <cstdint>
#include <string_view>

namespace turnrl::envs::babaisai {

enum class Kind : uint8_t { kBorder, kThing, kRuleObject, kRuleIs, kRuleProperty };

/** Thing types in the original's `objects` order (fball, fwall, fdoor, fkey, baba). */
enum class Thing : uint8_t { kBall, kWall, kDoor, kKey, kBaba };
constexpr int kNumThings = 5;

/** Properties in the original's `properties` order. */
enum class Property : uint8_t { kStop, kPush, kGoal, kDefeat, kAgent, kPull, kMove, kOpen, kShut };
constexpr int kNumProperties = 9;

/** The original's COLOR_TO_IDX order (its first seven entries). */
enum class Color : uint8_t { kRed, kGreen, kBlue, kPurple, kYellow, kGrey, kWhite };

struct Object {
  Kind kind = Kind::kBorder;
  Thing thing = Thing::kBall;          // kThing: its type; kRuleObject: the type it names
  Property property = Property::kStop;  // kRuleProperty: the property it names
  Color color = Color::kGrey;          // kThing only
  uint8_t dir = 0;                      // 0 right, 1 down, 2 left, 3 up (things only)
  bool has_moved = false;               // per-step flag of "you"/"move" things (kept between steps, as the original)

  /** Every field, packed in the low 41 bits: what tells two objects apart in a state. The move flag
   *  counts, since a stale flag can make a "you" thing uncovered mid-step skip its move. */
  uint64_t packed() const {
    return static_cast<uint64_t>(kind) | static_cast<uint64_t>(thing) << 8 | static_cast<uint64_t>(property) << 16 |
           static_cast<uint64_t>(color) << 24 | static_cast<uint64_t>(dir) << 32 | static_cast<uint64_t>(has_moved) << 40;
  }

  static Object border() { return Object{}; }
  static Object thing_of(Thing type, Color color) { return Object{Kind::kThing, type, Property::kStop, color}; }
  /** A thing created by a replacement rule ("key is door") gets its class's default colour. */
  static Object default_thing(Thing type);
  static Object rule_object(Thing type) { return Object{Kind::kRuleObject, type}; }
  static Object rule_is() { return Object{Kind::kRuleIs}; }
  static Object rule_property(Property property) { return Object{Kind::kRuleProperty, Thing::kBall, property}; }
};

/** Type names as the original spells them: "fball", "fwall", "fdoor", "fkey", "baba". */
std::string_view thing_type_name(Thing type);
/** Display names: "ball", "wall", "door", "key", "baba". */
std::string_view thing_display_name(Thing type);
/** "is_stop", "is_push", "is_goal", ... */
std::string_view property_name(Property property);
/** BALROG's names: "stop", "push", "win", "lose", "you", "pull", "move", "open", "shut". */
std::string_view property_display_name(Property property);
std::string_view color_name(Color color);
/** Block type names: "rule_object", "rule_is", "rule_property"; things: their type name; border: "wall". */
std::string_view kind_type_name(const Object& object);
/** Display name of a block's word ("ball", "is", "win"), or of a thing's type. */
std::string_view word(const Object& object);

/** The observation encoding of a top-of-stack object: (type code, colour code). */
uint8_t type_code(const Object& object);
uint8_t color_code(const Object& object);
constexpr uint8_t kEmptyTypeCode = 1;

}  // namespace turnrl::envs::babaisai

#include "envs/babaisai/objects.h"

namespace turnrl::envs::babaisai {
namespace {

constexpr std::string_view kThingTypes[] = {"fball", "fwall", "fdoor", "fkey", "baba"};
constexpr std::string_view kThingNames[] = {"ball", "wall", "door", "key", "baba"};
constexpr std::string_view kProperties[] = {"is_stop", "is_push", "is_goal",  "is_defeat", "is_agent",
                                            "is_pull", "is_move", "is_open", "is_shut"};
constexpr std::string_view kPropertyNames[] = {"stop", "push", "win", "lose", "you", "pull", "move", "open", "shut"};
constexpr std::string_view kColors[] = {"red", "green", "blue", "purple", "yellow", "grey", "white"};

// OBJECT_TO_IDX: Minigrid's 0..10, then the things in `objects` order, then "rule", the block types.
constexpr uint8_t kBorderCode = 2;
constexpr uint8_t kFirstThingCode = 11;
constexpr uint8_t kRuleObjectCode = 17;
constexpr uint8_t kRuleIsCode = 18;
constexpr uint8_t kRulePropertyCode = 19;
// COLOR_TO_IDX continues after the seven colours with the display names in the order of the
// original's name_mapping table: wall 7, ball 8, door 9, key 10, push 11, stop 12, win 13,
// lose 14, is 15, you 16, pull 17, move 18, open 19, shut 20, baba 21.
constexpr uint8_t kThingWordCodes[] = {8, 7, 9, 10, 21};
constexpr uint8_t kPropertyWordCodes[] = {12, 11, 13, 14, 16, 17, 18, 19, 20};
constexpr uint8_t kIsWordCode = 15;

}  // namespace

Object Object::default_thing(Thing type) {
  static constexpr Color kDefaults[] = {Color::kGreen, Color::kGrey, Color::kRed, Color::kBlue, Color::kWhite};
  return thing_of(type, kDefaults[static_cast<int>(type)]);
}

std::string_view thing_type_name(Thing type) { return kThingTypes[static_cast<int>(type)]; }
std::string_view thing_display_name(Thing type) { return kThingNames[static_cast<int>(type)]; }
std::string_view property_name(Property property) { return kProperties[static_cast<int>(property)]; }
std::string_view property_display_name(Property property) { return kPropertyNames[static_cast<int>(property)]; }
std::string_view color_name(Color color) { return kColors[static_cast<int>(color)]; }

std::string_view kind_type_name(const Object& object) {
  switch (object.kind) {
    case Kind::kBorder: return "wall";
    case Kind::kThing: return thing_type_name(object.thing);
    case Kind::kRuleObject: return "rule_object";
    case Kind::kRuleIs: return "rule_is";
    case Kind::kRuleProperty: return "rule_property";
  }
  return "?";
}

std::string_view word(const Object& object) {
  switch (object.kind) {
    case Kind::kBorder: return "wall";
    case Kind::kThing:
    case Kind::kRuleObject: return thing_display_name(object.thing);
    case Kind::kRuleIs: return "is";
    case Kind::kRuleProperty: return property_display_name(object.property);
  }
  return "?";
}

uint8_t type_code(const Object& object) {
  switch (object.kind) {
    case Kind::kBorder: return kBorderCode;
    case Kind::kThing: return static_cast<uint8_t>(kFirstThingCode + static_cast<int>(object.thing));
    case Kind::kRuleObject: return kRuleObjectCode;
    case Kind::kRuleIs: return kRuleIsCode;
    case Kind::kRuleProperty: return kRulePropertyCode;
  }
  return 0;
}

uint8_t color_code(const Object& object) {
  switch (object.kind) {
    case Kind::kBorder:
    case Kind::kThing: return static_cast<uint8_t>(object.color);
    case Kind::kRuleObject: return kThingWordCodes[static_cast<int>(object.thing)];
    case Kind::kRuleIs: return kIsWordCode;
    case Kind::kRuleProperty: return kPropertyWordCodes[static_cast<int>(object.property)];
  }
  return 0;
}

}  // namespace turnrl::envs::babaisai

#pragma once
// BALROG's text observation for BabaIsAI (balrog/environments/babaisai/base.py).
#include <optional>
#include <string>

#include "envs/babaisai/world.h"

namespace turnrl::envs::babaisai {

/** The property rules in discovery order, "{noun} is {property}", joined by newlines. */
std::string rules_text(const World& world);

/** BALROG's player position: the first cell (row-major) whose top object has the type named by
 *  the last "X is you" rule; nullopt when there is none (BALROG then resets the level). */
std::optional<Pos> you_position(const World& world);

/** "Objects on the map" lines relative to `reference`, with BALROG's singular "step" for every
 *  left/up distance (it tests plurality on the signed offset). */
std::string objects_text(const World& world, Pos reference);

/** The "Objects on the map" line of the top object at `cell` ("rule `win` 2 steps to the right"); empty
 *  where objects_text lists it as an empty line or not at all. */
std::string object_line(const World& world, int cell, Pos reference);

/** "Active rules:\n{rules}\n\nObjects on the map:\n{objects}" for a world with a "you" object. */
std::string observation_text(const World& world, Pos reference);

}  // namespace turnrl::envs::babaisai

#pragma once
// One fiber per slot on the calling thread: a slot's code reads straight through (prompt, await
// the reply, step, loop) while the thread runs whichever slots are not waiting. Torch- and
// fiber-free header.
#include <cstddef>
#include <functional>

namespace turnrl::trainer {

/** Runs `slot(i)` for i < count, each on its own fiber, and returns once all have ended;
 *  `stopping()` turns true after a slot throws, so the others can end early; the first exception
 *  is rethrown. With `tick_s` > 0, `tick()` runs every `tick_s` seconds meanwhile (progress). */
void run_slot_fibers(size_t count, const std::function<void(size_t slot, const std::function<bool()>& stopping)>& slot,
                     double tick_s = 0.0, const std::function<void()>& tick = nullptr);

}  // namespace turnrl::trainer

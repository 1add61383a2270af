#pragma once
// The layout of a training run's folder, which every command reads back:
//   RUN/config.yaml     the resolved config (turn settings, sampling, env ids)
//   RUN/metrics.jsonl   one line per iteration and evaluation
//   RUN/checkpoint/     the state to resume from (actor/ and critic/ are Hugging Face folders)
//   RUN/model/          the final actor, a Hugging Face folder, written when the run stops
// Folders are replaced through a swap (X.tmp -> X, the previous one kept as X.old until then), so at
// every instant a complete one exists under X or X.old. Torch-free.
#include <string>

namespace turnrl::trainer {

/** Installs the complete folder `temp` as `dir`; the previous `dir` stays as `dir.old` until then. */
void swap_in_folder(const std::string& temp, const std::string& dir);
/** `dir` when complete (holding `marker`), else `dir.old` when that is (an interrupted swap); "" if neither. */
std::string complete_folder(const std::string& dir, const std::string& marker);

/** The checkpoint to resume from, given RUN or RUN/checkpoint; throws std::invalid_argument if none. */
std::string find_checkpoint(const std::string& run_or_checkpoint);
/** The newest model folder of a run: RUN/model, else the checkpoint's actor; throws if none. */
std::string latest_model(const std::string& run_dir);
/** RUN/config.yaml; throws std::invalid_argument when `run_dir` is not a run folder. */
std::string run_config_path(const std::string& run_dir);

/** Cuts metrics.jsonl back to what the checkpoint of `iteration` had seen: iteration and evaluation
 *  lines past it are dropped (and a torn last line), so a resumed run never repeats an iteration. */
void truncate_metrics(const std::string& path, int iteration);

}  // namespace turnrl::trainer

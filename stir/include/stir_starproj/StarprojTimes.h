// SPDX-License-Identifier: Apache-2.0
// Timers of the "Starproj" classes, reported with "verbosity" 2: the steps of per-image calls and the parts of the
// related-viewgrams calls (summed over STIR's threads).
#ifndef STIR_STARPROJ_STARPROJTIMES_H
#define STIR_STARPROJ_STARPROJTIMES_H

#include "stir/common.h"

#include <atomic>
#include <string>
#include <utility>
#include <vector>

START_NAMESPACE_STIR

//! seconds on a steady clock
double starproj_seconds_now();

//! Seconds spent in the steps of the per-image calls (set_input, start_accumulating_in_new_target, get_output),
//! reported with "verbosity" 2 when the projector goes.
class StarprojStepTimes
{
public:
  //! adds the time since the last mark (or since start()) to step `name`
  void start();
  void mark(const char* name);
  void report(const std::string& who) const;

private:
  double _last = 0;
  std::vector<std::pair<std::string, std::pair<double, long>>> _steps;
};

//! Seconds the related-viewgrams calls spend in each of their parts, summed over the calls of all threads (STIR's
//! OpenMP threads call side by side), reported with "verbosity" 2 when the projector goes.
class StarprojCallTimes
{
public:
  enum Part
  {
    submit, //!< submitting projections
    sync,   //!< sproj_proj_sync: forward, waiting for the projections and their values; back, for the host copy
    values, //!< copying values between STIR's viewgrams and starproj's array
    num_parts
  };
  StarprojCallTimes();
  void add(Part part, double seconds);
  void report(const std::string& who) const;

private:
  std::atomic<long long> _ns[num_parts];
  std::atomic<long> _calls[num_parts];
};

//! Measures consecutive parts of one call: lap(part) adds the time since the previous lap (or construction).
class StarprojCallClock
{
public:
  explicit StarprojCallClock(StarprojCallTimes& times);
  void lap(StarprojCallTimes::Part part);

private:
  StarprojCallTimes& _times;
  double _last;
};

END_NAMESPACE_STIR

#endif

// SPDX-License-Identifier: Apache-2.0
// Timers of the "Starproj" classes, reported with "verbosity" 2: the steps of per-image calls and the parts of the
// related-viewgrams calls (StarprojTimes.h).

#include "stir_starproj/StarprojTimes.h"

#include "stir/info.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

START_NAMESPACE_STIR

double
starproj_seconds_now()
{
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void
StarprojStepTimes::start()
{
  _last = starproj_seconds_now();
}

void
StarprojStepTimes::mark(const char* name)
{
  const double t = starproj_seconds_now();
  auto it = std::find_if(_steps.begin(), _steps.end(), [&](const auto& s) { return s.first == name; });
  if (it == _steps.end())
    it = _steps.insert(_steps.end(), { name, { 0.0, 0L } });
  it->second.first += t - _last;
  it->second.second += 1;
  _last = t;
}

void
StarprojStepTimes::report(const std::string& who) const
{
  if (_steps.empty())
    return;
  std::string line = "Starproj: " + who + " steps, seconds in all (calls):";
  for (const auto& s : _steps)
    {
      char buf[128];
      std::snprintf(buf, sizeof buf, " %s %.3f (%ld);", s.first.c_str(), s.second.first, s.second.second);
      line += buf;
    }
  info(line);
}

StarprojCallTimes::StarprojCallTimes()
{
  for (int p = 0; p < num_parts; ++p)
    {
      _ns[p] = 0;
      _calls[p] = 0;
    }
}

void
StarprojCallTimes::add(Part part, double seconds)
{
  _ns[part] += static_cast<long long>(seconds * 1e9);
  _calls[part] += 1;
}

void
StarprojCallTimes::report(const std::string& who) const
{
  static const char* const names[num_parts] = { "submit", "sync", "values" };
  if (_calls[values] == 0)
    return;
  std::string line = "Starproj: " + who + " related-viewgrams calls, seconds summed over threads (calls):";
  for (int p = 0; p < num_parts; ++p)
    {
      char buf[128];
      std::snprintf(buf, sizeof buf, " %s %.3f (%ld);", names[p], _ns[p] * 1e-9, static_cast<long>(_calls[p]));
      line += buf;
    }
  info(line);
}

StarprojCallClock::StarprojCallClock(StarprojCallTimes& times)
    : _times(times),
      _last(starproj_seconds_now())
{}

void
StarprojCallClock::lap(StarprojCallTimes::Part part)
{
  const double t = starproj_seconds_now();
  _times.add(part, t - _last);
  _last = t;
}

END_NAMESPACE_STIR

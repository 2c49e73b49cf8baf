// SPDX-License-Identifier: Apache-2.0
// The "Timed" projector pair: delegates every call to the projectors of another pair and measures the wall time
// spent in them (std::chrono::steady_clock), per kind of call and for all kinds together. Calls come from STIR's
// OpenMP threads side by side, so besides the sum of the calls' durations it keeps the "busy" time: the wall time
// during which at least one call was running (an interval is opened when the first call starts and closed when the
// last one returns).

#include "stir_starproj/ProjectorByBinPairTimed.h"

#include "stir/DiscretisedDensity.h"
#include "stir/ProjData.h"
#include "stir/ProjDataInfo.h"
#include "stir/RelatedViewgrams.h"
#include "stir/Succeeded.h"
#include "stir/error.h"
#include "stir/info.h"
#include "stir/is_null_ptr.h"
#include "stir/warning.h"

#include <chrono>
#include <cstdio>
#include <mutex>

START_NAMESPACE_STIR

namespace
{
typedef std::chrono::steady_clock Clock;

double
seconds_between(Clock::time_point a, Clock::time_point b)
{
  return std::chrono::duration<double>(b - a).count();
}

// the process-wide record
struct Recorder
{
  std::mutex lock;
  TimedProjectorTotals totals;
  int running[TimedProjectorTotals::num_kinds] = {};
  Clock::time_point opened[TimedProjectorTotals::num_kinds];
  int running_any = 0;
  Clock::time_point opened_any;

  Clock::time_point enter(int kind)
  {
    const Clock::time_point now = Clock::now();
    std::lock_guard<std::mutex> guard(lock);
    if (running[kind]++ == 0)
      opened[kind] = now;
    if (running_any++ == 0)
      opened_any = now;
    return now;
  }
  void leave(int kind, Clock::time_point entered)
  {
    const Clock::time_point now = Clock::now();
    std::lock_guard<std::mutex> guard(lock);
    totals.calls[kind] += 1;
    totals.summed_s[kind] += seconds_between(entered, now);
    if (--running[kind] == 0)
      totals.busy_s[kind] += seconds_between(opened[kind], now);
    if (--running_any == 0)
      totals.any_busy_s += seconds_between(opened_any, now);
  }
  TimedProjectorTotals snapshot()
  {
    const Clock::time_point now = Clock::now();
    std::lock_guard<std::mutex> guard(lock);
    TimedProjectorTotals t = totals;
    for (int k = 0; k < TimedProjectorTotals::num_kinds; ++k)
      if (running[k] > 0)
        t.busy_s[k] += seconds_between(opened[k], now);
    if (running_any > 0)
      t.any_busy_s += seconds_between(opened_any, now);
    return t;
  }
};

Recorder&
recorder()
{
  static Recorder r;
  return r;
}

// times one call: the constructor enters, the destructor leaves (also when the call throws)
class Scope
{
public:
  explicit Scope(int kind)
      : _kind(kind),
        _entered(recorder().enter(kind))
  {}
  ~Scope() { recorder().leave(_kind, _entered); }
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

private:
  int _kind;
  Clock::time_point _entered;
};

typedef TimedProjectorTotals T;
} // namespace

const char*
TimedProjectorTotals::name(int kind)
{
  static const char* const names[num_kinds] = { "set_up", "set_input", "forward", "start_accumulating", "back", "get_output" };
  return kind >= 0 && kind < num_kinds ? names[kind] : "?";
}

std::string
TimedProjectorTotals::summary() const
{
  std::string s;
  char line[200];
  std::snprintf(line, sizeof line, "Timed projectors: in projectors %.6f s (wall time with at least one call running)\n",
                any_busy_s);
  s += line;
  for (int k = 0; k < num_kinds; ++k)
    {
      std::snprintf(line, sizeof line, "Timed projectors: %-18s %8ld calls, busy %.6f s, summed %.6f s\n", name(k),
                    calls[k], busy_s[k], summed_s[k]);
      s += line;
    }
  return s;
}

TimedProjectorTotals
timed_projector_totals()
{
  return recorder().snapshot();
}

// ---- forward ----------------------------------------------------------------------------------------------

ForwardProjectorByBinTimed::ForwardProjectorByBinTimed(const shared_ptr<ForwardProjectorByBin>& inner, bool set_up_inner)
    : _inner(inner),
      _set_up_inner(set_up_inner)
{
  if (is_null_ptr(_inner))
    error("ForwardProjectorByBinTimed: no inner projector");
}

void
ForwardProjectorByBinTimed::set_up(const shared_ptr<const ProjDataInfo>& proj_data_info_sptr,
                                   const shared_ptr<const DiscretisedDensity<3, float>>& density_info_sptr)
{
  ForwardProjectorByBin::set_up(proj_data_info_sptr, density_info_sptr);
  if (_set_up_inner)
    {
      Scope s(T::set_up);
      _inner->set_up(proj_data_info_sptr, density_info_sptr);
    }
}

const DataSymmetriesForViewSegmentNumbers*
ForwardProjectorByBinTimed::get_symmetries_used() const
{
  return _inner->get_symmetries_used();
}

void
ForwardProjectorByBinTimed::set_input(const DiscretisedDensity<3, float>& density)
{
  // the base class's copy of the image is not needed: the inner projector keeps its own
  Scope s(T::set_input);
  _inner->set_input(density);
}

void
ForwardProjectorByBinTimed::forward_project(ProjData& proj_data, int subset_num, int num_subsets, bool zero)
{
  Scope s(T::forward);
  _inner->forward_project(proj_data, subset_num, num_subsets, zero);
}

void
ForwardProjectorByBinTimed::actual_forward_project(RelatedViewgrams<float>& viewgrams, const int min_axial_pos_num,
                                                   const int max_axial_pos_num, const int min_tangential_pos_num,
                                                   const int max_tangential_pos_num)
{
  Scope s(T::forward);
  _inner->forward_project(viewgrams, min_axial_pos_num, max_axial_pos_num, min_tangential_pos_num, max_tangential_pos_num);
}

// ---- back -------------------------------------------------------------------------------------------------

BackProjectorByBinTimed::BackProjectorByBinTimed(const shared_ptr<BackProjectorByBin>& inner, bool set_up_inner)
    : _inner(inner),
      _set_up_inner(set_up_inner)
{
  if (is_null_ptr(_inner))
    error("BackProjectorByBinTimed: no inner projector");
}

void
BackProjectorByBinTimed::set_up(const shared_ptr<const ProjDataInfo>& proj_data_info_sptr,
                                const shared_ptr<const DiscretisedDensity<3, float>>& density_info_sptr)
{
  BackProjectorByBin::set_up(proj_data_info_sptr, density_info_sptr);
  if (_set_up_inner)
    {
      Scope s(T::set_up);
      _inner->set_up(proj_data_info_sptr, density_info_sptr);
    }
}

const DataSymmetriesForViewSegmentNumbers*
BackProjectorByBinTimed::get_symmetries_used() const
{
  return _inner->get_symmetries_used();
}

void
BackProjectorByBinTimed::back_project(const ProjData& proj_data, int subset_num, int num_subsets)
{
  Scope s(T::back);
  _inner->back_project(proj_data, subset_num, num_subsets);
}

void
BackProjectorByBinTimed::start_accumulating_in_new_target()
{
  // The base class's version is not called: it would zero this wrapper's own per-thread images, which nothing
  // uses (the inner projector accumulates; get_output asks it).
  Scope s(T::start);
  _inner->start_accumulating_in_new_target();
}

void
BackProjectorByBinTimed::get_output(DiscretisedDensity<3, float>& density) const
{
  Scope s(T::output);
  _inner->get_output(density);
}

BackProjectorByBinTimed*
BackProjectorByBinTimed::clone() const
{
  return new BackProjectorByBinTimed(shared_ptr<BackProjectorByBin>(_inner->clone()), _set_up_inner);
}

void
BackProjectorByBinTimed::actual_back_project(const RelatedViewgrams<float>& viewgrams, const int min_axial_pos_num,
                                             const int max_axial_pos_num, const int min_tangential_pos_num,
                                             const int max_tangential_pos_num)
{
  Scope s(T::back);
  _inner->back_project(viewgrams, min_axial_pos_num, max_axial_pos_num, min_tangential_pos_num, max_tangential_pos_num);
}

// ---- the pair ---------------------------------------------------------------------------------------------

const char* const ProjectorByBinPairTimed::registered_name = "Timed";

ProjectorByBinPairTimed::ProjectorByBinPairTimed()
{
  set_defaults();
}

ProjectorByBinPairTimed::~ProjectorByBinPairTimed()
{
  if (!is_null_ptr(_inner))
    info(timed_projector_totals().summary());
}

void
ProjectorByBinPairTimed::set_defaults()
{
  base_type::set_defaults();
  _inner.reset();
}

void
ProjectorByBinPairTimed::initialise_keymap()
{
  base_type::initialise_keymap();
  parser.add_start_key("Timed Projector Pair Parameters");
  parser.add_stop_key("End Timed Projector Pair Parameters");
  parser.add_parsing_key("projector pair type", &_inner);
}

bool
ProjectorByBinPairTimed::post_processing()
{
  if (base_type::post_processing())
    return true;
  if (is_null_ptr(_inner))
    {
      warning("Timed projector pair: no inner 'projector pair type'");
      return true;
    }
  wrap();
  return false;
}

void
ProjectorByBinPairTimed::wrap()
{
  // the inner pair sets its projectors up itself (Starproj shares one geometry between them), so the wrappers
  // leave theirs alone
  this->forward_projector_sptr.reset(new ForwardProjectorByBinTimed(_inner->get_forward_projector_sptr(), false));
  this->back_projector_sptr.reset(new BackProjectorByBinTimed(_inner->get_back_projector_sptr(), false));
}

Succeeded
ProjectorByBinPairTimed::set_up(const shared_ptr<const ProjDataInfo>& proj_data_info_sptr,
                                const shared_ptr<const DiscretisedDensity<3, float>>& density_info_sptr)
{
  if (is_null_ptr(_inner))
    error("Timed projector pair: no inner projector pair");
  {
    Scope s(T::set_up);
    if (_inner->set_up(proj_data_info_sptr, density_info_sptr) != Succeeded::yes)
      return Succeeded::no;
  }
  wrap(); // the inner pair's projectors may be new objects after its set_up
  return base_type::set_up(proj_data_info_sptr, density_info_sptr);
}

END_NAMESPACE_STIR

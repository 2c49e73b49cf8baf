// SPDX-License-Identifier: Apache-2.0
// STIR's Poisson log-likelihood of listmode data on starproj's resident events: set_up reads the list once and
// registers every prompt's LOR, TOF bin, normalisation factor and additive term; every gradient, value, sensitivity
// and Hessian product is a starproj task graph.

#include "stir_starproj/PoissonLogLikelihoodWithLinearModelForMeanAndListModeDataStarproj.h"

#include "stir/Bin.h"
#include "stir/ProjData.h"
#include "stir/ProjDataInfo.h"
#include "stir/RelatedViewgrams.h"
#include "stir/Succeeded.h"
#include "stir/Viewgram.h"
#include "stir/ViewgramIndices.h"
#include "stir/error.h"
#include "stir/info.h"
#include "stir/is_null_ptr.h"
#include "stir/listmode/ListModeData.h"
#include "stir/listmode/ListRecord.h"
#include "stir/recon_buildblock/BinNormalisation.h"
#include "stir/warning.h"
#include "stir_starproj/StarprojListmodeReader.h"
#include "stir_starproj/StarprojProjDataReader.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <exception>
#include <sstream>
#ifdef _OPENMP
#  include <omp.h>
#endif

START_NAMESPACE_STIR

const char* const PoissonLogLikelihoodWithLinearModelForMeanAndListModeDataStarproj::registered_name
    = "PoissonLogLikelihoodWithLinearModelForMeanAndListModeData using Starproj";

namespace
{
// an event while the list is read: its view, its LOR index in the geometry's order and its TOF bin (0 .. bins - 1),
// one integer, so that sorting sorts the events by view and, within a view, by LOR (segment, axial position,
// tangential position)
inline uint64_t
event_key(int view, int64_t lor, int tof_bin)
{
  return (static_cast<uint64_t>(view) << 48) | (static_cast<uint64_t>(lor) << 16) | static_cast<uint64_t>(tof_bin);
}
inline int
key_view(uint64_t key)
{
  return static_cast<int>(key >> 48);
}
inline int64_t
key_lor(uint64_t key)
{
  return static_cast<int64_t>((key >> 16) & 0xFFFFFFFFu);
}
inline int
key_bin(uint64_t key)
{
  return static_cast<int>(key & 0xFFFFu);
}

double
seconds_since(std::chrono::steady_clock::time_point t)
{
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}
} // namespace

struct PoissonLogLikelihoodWithLinearModelForMeanAndListModeDataStarproj::Inputs : StarprojReconInputs
{
  // per event, in the order registered (views one after the other, each sorted by LOR)
  StarprojFloats xs, xe, m, a; // endpoints, normalisation factor, factor x additive term (written whole: not zeroed)
  std::vector<int16_t> bins;       // TOF bin (TOF data only)
  // per LOR of the scanner's bins (the sensitivity's): normalisation factor and its background summed over TOF bins
  StarprojFloats lor_m, lor_a; // written whole
  StarprojFloats sens_ones;     // without a normalisation: the factors the sensitivities back project (ones)
  sproj_lors* events = nullptr;
  sproj_chunks* event_chunks = nullptr;
  sproj_model *model = nullptr, *sens_model = nullptr;

  ~Inputs() override
  {
    early_sensitivities.release(); // reads the factors below: before they go
    sproj_model_destroy(model);
    sproj_model_destroy(sens_model);
    if (event_chunks)
      sproj_chunks_destroy(event_chunks);
    if (events)
      sproj_lors_unregister(events);
  }
};

PoissonLogLikelihoodWithLinearModelForMeanAndListModeDataStarproj::PoissonLogLikelihoodWithLinearModelForMeanAndListModeDataStarproj()
    : base_type("PoissonLogLikelihood of listmode data using Starproj")
{
  set_defaults();
}

void
PoissonLogLikelihoodWithLinearModelForMeanAndListModeDataStarproj::initialise_keymap()
{
  base_type::initialise_keymap();
  this->parser.add_key("num_events_to_use", &this->num_events_to_use);
}

bool
PoissonLogLikelihoodWithLinearModelForMeanAndListModeDataStarproj::post_processing()
{
  if (base_type::post_processing())
    return true;
  if (this->num_events_to_use < 0)
    {
      warning(std::string(registered_name) + ": num_events_to_use must be >= 0 (0: every prompt)");
      return true;
    }
  return false;
}

int
PoissonLogLikelihoodWithLinearModelForMeanAndListModeDataStarproj::set_num_subsets(const int new_num_subsets)
{
  this->already_set_up = this->already_set_up && (this->num_subsets == new_num_subsets);
  this->num_subsets = std::max(new_num_subsets, 1);
  return this->num_subsets;
}

DiscretisedDensity<3, float>*
PoissonLogLikelihoodWithLinearModelForMeanAndListModeDataStarproj::construct_target_ptr() const
{
  return this->target_parameter_parser.create(this->get_input_data());
}

int
PoissonLogLikelihoodWithLinearModelForMeanAndListModeDataStarproj::num_views_in_subsets() const
{
  // the sensitivities are those of view subsets of the scanner's bins, as the sinogram objective function's
  return this->proj_data_info_sptr ? this->proj_data_info_sptr->get_num_views()
                                   : this->get_input_data().get_proj_data_info_sptr()->get_num_views();
}

Succeeded
PoissonLogLikelihoodWithLinearModelForMeanAndListModeDataStarproj::set_up_before_sensitivity(
    shared_ptr<const TargetT> const& target_sptr)
{
  // STIR's error() throws: a bad input (file, geometry, frame, normalisation, no events) is reported here and the
  // set-up fails the STIR way, so that the reconstruction stops with a message instead of an uncaught exception
  try
    {
      if (is_null_ptr(this->list_mode_data_sptr))
        {
          warning(std::string(registered_name) + ": no listmode data (list mode filename, or set_input_data)");
          return Succeeded::no;
        }
      if (base_type::set_up_before_sensitivity(target_sptr) != Succeeded::yes)
        return Succeeded::no;
      set_up_events(*target_sptr);
    }
  catch (const std::exception& e)
    {
      release();
      warning(std::string(registered_name) + ": set-up failed: " + e.what());
      return Succeeded::no;
    }
  return Succeeded::yes;
}

void
PoissonLogLikelihoodWithLinearModelForMeanAndListModeDataStarproj::set_up_events(const TargetT& target)
{
  const std::string who = registered_name;
  release();
  _num_events = 0;
  _subset_events.assign(this->num_subsets, 0);
  if (this->current_frame_num < 1 || this->current_frame_num > this->frame_defs.get_num_frames())
    error(who + ": time frame number " + std::to_string(this->current_frame_num) + " outside 1 .. "
          + std::to_string(this->frame_defs.get_num_frames()));
  if (this->cache_size > 0 || this->cache_path.size() > 0)
    warning(who + ": 'max cache size' and 'cache path' are not used: the events are read once and kept by starproj");
  if (is_null_ptr(this->normalisation_sptr))
    error(who + ": invalid normalisation object");

  StarprojStepTimes& times = this->times();
  times.start();
  const shared_ptr<const ProjDataInfo> pdi_sptr = this->proj_data_info_sptr;
  const ProjDataInfo& pdi = *pdi_sptr;
  // the scanner's bins and their LORs (the sensitivity's); uploaded by the sensitivity's own projections
  const auto geometry = register_lors(pdi_sptr, target, /* upload = */ false);
  const StarprojGeometry& g = *geometry;
  make_images(geometry);
  times.mark("set_up: LORs");

  // the normalisation, as STIR's listmode objective function sets it up: on the bins without TOF (the sensitivity's;
  // one factor per LOR, which each of its events carries)
  const shared_ptr<const ProjDataInfo> sens_pdi(pdi.is_tof_data() ? pdi.create_non_tof_clone() : pdi.create_shared_clone());
  if (this->normalisation_sptr->set_up(this->list_mode_data_sptr->get_exam_info_sptr(), sens_pdi) != Succeeded::yes)
    error(who + ": the normalisation could not be set up");

  const int min_segment = pdi.get_min_segment_num(), max_segment = pdi.get_max_segment_num();
  const int min_view = pdi.get_min_view_num(), num_views = pdi.get_num_views();
  const int min_tang = pdi.get_min_tangential_pos_num(), max_tang = pdi.get_max_tangential_pos_num();
  const int min_tof = pdi.get_min_tof_pos_num(), max_tof = pdi.get_max_tof_pos_num();
  const int num_tang = g.num_tangential_poss();
  const int num_subsets = this->num_subsets;

  const int threads = copy_threads();
  std::unique_ptr<Inputs> inputs(new Inputs);
  Inputs& in = *inputs;
  const int64_t num_lors = g.num_lors();
  const bool tof_data = g.is_tof();
  const bool trivial_norm = this->normalisation_sptr->is_trivial();
  const bool with_add = !is_null_ptr(this->additive_proj_data_sptr);
  // the normalisation of every bin (read from its file, or undo() of ones a viewgram at a time), for the sensitivity,
  // first: the subsets' sensitivities, which need only it and the LORs, then run on the devices while the list is read
  if (!trivial_norm)
    {
      in.lor_m.resize(num_lors);
      const std::vector<int64_t>& first_lor = g.first_lors(); // [segment][view]
      const std::string how
          = starproj_normalisation_factors(*this->normalisation_sptr, *sens_pdi, *sens_pdi, first_lor, in.lor_m.data(), threads);
      times.mark(("set_up: normalisation (" + how + ")").c_str());
    }
  // subset k's sensitivity: its views, each all its segments, one range of LORs (g.view_chunks()); the same lists give
  // the reconstruction each subset's background terms
  std::vector<int> sens_chunks, sens_sizes;
  g.subset_views(num_subsets, sens_chunks, sens_sizes);
  if (this->get_recompute_sensitivity())
    {
      // the back projections of the factors (ones without a normalisation, as the reconstruction would take)
      if (trivial_norm)
        {
          in.sens_ones.resize(num_lors);
          const int num_threads = starproj_threads_or_default(threads);
          float* const ones = in.sens_ones.data();
#ifdef _OPENMP
#  pragma omp parallel for schedule(static) num_threads(num_threads)
#endif
          for (int64_t lor = 0; lor < num_lors; ++lor)
            ones[lor] = 1.F;
        }
      in.early_sensitivities.submit(
          g, trivial_norm ? in.sens_ones.data() : in.lor_m.data(), g.view_chunks(), sens_chunks, sens_sizes);
      times.mark("set_up: sensitivities submitted");
    }

  // ---- the list, read once: prompts of the frame whose bin is in the data (on every core for the formats the
  // project reads itself, StarprojListmodeReader.h) ----
  if (num_views >= (1 << 16) || g.num_lors() > int64_t(0xFFFFFFFFu) || g.num_tof_bins() > 0xFFFF)
    error(who + ": the scanner's bins are too many for the events' keys");
  const auto read_start = std::chrono::steady_clock::now();
  ListModeData& lm = *this->list_mode_data_sptr;
  StarprojPromptsRequest request;
  request.start_time = this->frame_defs.get_start_time(this->current_frame_num);
  request.end_time = this->frame_defs.get_end_time(this->current_frame_num);
  request.do_time_frame = this->do_time_frame;
  request.max_events = this->num_events_to_use;
  request.key_of = [&](const Bin& bin) -> uint64_t {
    const int seg = bin.segment_num(), view = bin.view_num(), ax = bin.axial_pos_num(), t = bin.tangential_pos_num();
    const int tof = bin.timing_pos_num();
    if (bin.get_bin_value() <= 0 || seg < min_segment || seg > max_segment || view < min_view || view >= min_view + num_views
        || ax < pdi.get_min_axial_pos_num(seg) || ax > pdi.get_max_axial_pos_num(seg) || t < min_tang || t > max_tang
        || tof < min_tof || tof > max_tof)
      return StarprojPromptsRequest::no_key;
    return event_key(view - min_view, g.lor_index(seg, view, ax, t), tof - min_tof);
  };
  StarprojPromptsRead list;
  std::vector<uint64_t> keys = starproj_read_prompts(lm, pdi, request, threads, list);
  const int64_t records = list.records, outside = list.outside;
  _num_events = static_cast<int64_t>(keys.size());
  const double read_s = seconds_since(read_start);
  times.mark(starproj_prompts_read_in_parallel(lm) ? "set_up: reading the list (on every core)"
                                                   : "set_up: reading the list (STIR's reader)");
  if (_num_events == 0)
    error(who + ": no prompt of the time frame falls in the data's bins (" + std::to_string(records) + " records read, "
          + std::to_string(outside) + " prompts outside the segments processed)");

  // the events by view (a counting sort on the host's cores), each view's sorted by LOR (neighbours run through the
  // same voxels)
  std::vector<int64_t> view_first(num_views + 1, 0);
  std::vector<uint64_t> sorted(keys.size());
  {
    const int num_threads = starproj_threads_or_default(threads);
    const int64_t n = _num_events, block = (n + num_threads - 1) / num_threads;
    std::vector<int64_t> counts(std::size_t(num_threads) * num_views, 0); // [block][view], then where each goes
#ifdef _OPENMP
#  pragma omp parallel for schedule(static) num_threads(num_threads)
#endif
    for (int b = 0; b < num_threads; ++b)
      for (int64_t i = b * block; i < std::min(n, (b + 1) * block); ++i)
        ++counts[std::size_t(b) * num_views + key_view(keys[i])];
    int64_t at = 0;
    for (int v = 0; v < num_views; ++v)
      {
        view_first[v] = at;
        for (int b = 0; b < num_threads; ++b)
          {
            const int64_t c = counts[std::size_t(b) * num_views + v];
            counts[std::size_t(b) * num_views + v] = at;
            at += c;
          }
      }
    view_first[num_views] = at;
#ifdef _OPENMP
#  pragma omp parallel for schedule(static) num_threads(num_threads)
#endif
    for (int b = 0; b < num_threads; ++b)
      for (int64_t i = b * block; i < std::min(n, (b + 1) * block); ++i)
        sorted[counts[std::size_t(b) * num_views + key_view(keys[i])]++] = keys[i];
    std::vector<uint64_t>().swap(keys);
#ifdef _OPENMP
#  pragma omp parallel for schedule(dynamic) num_threads(num_threads)
#endif
    for (int v = 0; v < num_views; ++v)
      std::sort(sorted.begin() + view_first[v], sorted.begin() + view_first[v + 1]);
  }
  times.mark("set_up: sorting the events");

  const int64_t n = _num_events;
  in.xs.resize(3 * n);
  in.xe.resize(3 * n);
  if (tof_data)
    in.bins.resize(n);
  if (!trivial_norm)
    in.m.resize(n);
  if (with_add)
    {
      in.a.resize(n);
      in.lor_a.resize(num_lors);
    }

  // each event's LOR (the endpoints of its bin's, as the sinogram's), TOF bin and factor
#ifdef _OPENMP
#  pragma omp parallel for schedule(dynamic) num_threads(threads > 0 ? threads : omp_get_max_threads())
#endif
  for (int v = 0; v < num_views; ++v)
    {
      int64_t e = view_first[v];
      for (int64_t k = view_first[v]; k < view_first[v + 1]; ++k)
        {
          const uint64_t key = sorted[k];
          const int64_t lor = key_lor(key);
          std::memcpy(&in.xs[3 * e], g.lor_start(lor), 3 * sizeof(float));
          std::memcpy(&in.xe[3 * e], g.lor_end(lor), 3 * sizeof(float));
          if (tof_data)
            in.bins[e] = static_cast<int16_t>(key_bin(key));
          if (!trivial_norm)
            in.m[e] = in.lor_m[lor];
          ++e;
        }
    }
  times.mark("set_up: the events' LORs and factors");

  // the additive term (STIR adds it before the normalisation: starproj's background is m times it), read straight
  // from its file where it is one (StarprojProjDataReader): each event's, and each LOR's summed over the TOF positions
  // for the sensitivity LORs
  if (with_add)
    {
      const StarprojProjDataReader reader(*this->additive_proj_data_sptr,
                                          "the additive sinogram " + this->additive_projection_data_filename);
      const int add_bins = reader.values_per_lor();
      if (add_bins != max_tof - min_tof + 1)
        error(who + ": the additive sinogram has " + std::to_string(add_bins) + " TOF positions, the data "
              + std::to_string(max_tof - min_tof + 1));
      const std::vector<int64_t>& first_lor = g.first_lors(); // [segment][view]
      StarprojFloats add(std::size_t(num_lors) * add_bins);
      reader.read(pdi, first_lor, add.data(), threads);
      const int num_threads = starproj_threads_or_default(threads);
#ifdef _OPENMP
#  pragma omp parallel for schedule(static) num_threads(num_threads)
#endif
      for (int64_t lor = 0; lor < num_lors; ++lor)
        {
          const float factor = trivial_norm ? 1.F : in.lor_m[lor];
          float sum = 0.F; // over the TOF positions in their order, as STIR's segments came one after the other
          for (int b = 0; b < add_bins; ++b)
            sum += factor * add[lor * add_bins + b];
          in.lor_a[lor] = sum;
        }
#ifdef _OPENMP
#  pragma omp parallel for schedule(static) num_threads(num_threads)
#endif
      for (int64_t e = 0; e < n; ++e)
        {
          const uint64_t key = sorted[e];
          in.a[e] = (trivial_norm ? 1.F : in.m[e]) * add[key_lor(key) * add_bins + key_bin(key)];
        }
      times.mark(reader.direct() ? "set_up: additive term (read directly)" : "set_up: additive term (STIR's get_segment_by_view)");
    }
  std::vector<uint64_t>().swap(sorted);

  // ---- registration: one chunk per view with events; subset k = the views min_view + k, + k + S, ... ----
  std::vector<int64_t> chunk_first, chunk_count;
  std::vector<int> chunk_view;
  for (int v = 0; v < num_views; ++v)
    if (view_first[v + 1] > view_first[v])
      {
        chunk_first.push_back(view_first[v]);
        chunk_count.push_back(view_first[v + 1] - view_first[v]);
        chunk_view.push_back(v);
      }
  std::vector<int> subset_chunks, subset_sizes;
  for (int k = 0; k < num_subsets; ++k)
    {
      int size = 0;
      for (std::size_t c = 0; c < chunk_view.size(); ++c)
        if (chunk_view[c] % num_subsets == k)
          {
            subset_chunks.push_back(static_cast<int>(c));
            _subset_events[k] += chunk_count[c];
            ++size;
          }
      if (size == 0)
        error(who + ": subset " + std::to_string(k) + " of " + std::to_string(num_subsets) + " has no events (its views "
              + "hold none of the " + std::to_string(n) + " prompts): use fewer subsets");
      subset_sizes.push_back(size);
    }
  starproj_check(tof_data ? sproj_lors_register_events(&in.events, in.xs.data(), in.xe.data(), in.bins.data(), n)
                          : sproj_lors_register(&in.events, in.xs.data(), in.xe.data(), n),
                 "sproj_lors_register_events");
  starproj_check(sproj_chunks_create_ranges(&in.event_chunks,
                                            in.events,
                                            static_cast<int>(chunk_first.size()),
                                            chunk_first.data(),
                                            chunk_count.data()),
                 "sproj_chunks_create_ranges");
  starproj_check(sproj_model_create(&in.model,
                                    in.events,
                                    trivial_norm ? nullptr : in.m.data(),
                                    with_add ? in.a.data() : nullptr,
                                    tof_data ? g.tof() : nullptr,
                                    nullptr),
                 "sproj_model_create");
  starproj_check(sproj_model_create(&in.sens_model,
                                    g.lors(),
                                    trivial_norm ? nullptr : in.lor_m.data(),
                                    with_add ? in.lor_a.data() : nullptr,
                                    nullptr,
                                    nullptr),
                 "sproj_model_create");
  struct sproj_recon_config cfg;
  sproj_recon_config_init(&cfg);
  cfg.model = in.model;
  cfg.data = nullptr; // listmode: one count per event
  cfg.chunks = in.event_chunks;
  cfg.num_subsets = num_subsets;
  cfg.subset_chunks = subset_chunks.data();
  cfg.subset_sizes = subset_sizes.data();
  cfg.sens_model = in.sens_model;
  cfg.sens_chunks = g.view_chunks();
  cfg.sens_subset_chunks = sens_chunks.data();
  cfg.sens_subset_sizes = sens_sizes.data();
  create_recon(cfg, std::move(inputs));
  if (_settings.verbosity >= 1)
    {
      std::ostringstream s;
      s << who << ": " << n << " prompts of " << records << " records (" << outside
        << " outside the data's bins) read in " << read_s << " s (" << (read_s > 0 ? double(records) / read_s : 0.)
        << " records/s); " << num_lors << " LORs for the sensitivities, " << g.num_tof_bins() << " TOF bins, "
        << num_subsets << " subsets of";
      for (int64_t e : _subset_events)
        s << ' ' << e;
      s << " events, devices " << _settings.devices;
      info(s.str(), 1);
    }
}

Succeeded
PoissonLogLikelihoodWithLinearModelForMeanAndListModeDataStarproj::actual_add_multiplication_with_approximate_sub_Hessian_without_penalty(
    TargetT&, const TargetT&, const int) const
{
  error(std::string(registered_name) + ": no approximate Hessian for listmode data (it takes the expected counts as "
        + "the measured counts of each bin, which events do not give); use the Hessian at an estimate");
  return Succeeded::no;
}

END_NAMESPACE_STIR

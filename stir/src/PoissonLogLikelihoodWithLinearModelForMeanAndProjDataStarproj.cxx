// SPDX-License-Identifier: Apache-2.0
// STIR's Poisson log-likelihood of projection data on starproj's resident data: set_up registers the LORs, data,
// normalisation and additive term once; every gradient, value, sensitivity and Hessian product is a starproj task graph.

#include "stir_starproj/PoissonLogLikelihoodWithLinearModelForMeanAndProjDataStarproj.h"

#include "stir/ExamInfo.h"
#include "stir/ProjData.h"
#include "stir/ProjDataInfo.h"
#include "stir/RelatedViewgrams.h"
#include "stir/SegmentByView.h"
#include "stir/Succeeded.h"
#include "stir/Viewgram.h"
#include "stir/ViewgramIndices.h"
#include "stir/error.h"
#include "stir/info.h"
#include "stir/is_null_ptr.h"
#include "stir/recon_buildblock/BinNormalisation.h"
#include "stir/warning.h"
#include "stir_starproj/StarprojInputChecks.h"
#include "stir_starproj/StarprojSupported.h"
#include "stir_starproj/StarprojProjDataReader.h"

#include <algorithm>
#include <cstdlib>
#ifdef _OPENMP
#  include <omp.h>
#endif
#include <cmath>
#include <exception>
#include <future>
#include <memory>
#include <string>

START_NAMESPACE_STIR

const char* const PoissonLogLikelihoodWithLinearModelForMeanAndProjDataStarproj::registered_name
    = "PoissonLogLikelihoodWithLinearModelForMeanAndProjData using Starproj";

//! STIR's small-value rule in its divide_and_truncate and accumulate_loglikelihood: a numerator at most this fraction
//! of the largest of its viewgram counts as 0 (sproj_recon_config::small_fraction; a chunk here is one viewgram, its
//! TOF bins apart).
static const float stir_small_fraction = 1e-6F;

struct PoissonLogLikelihoodWithLinearModelForMeanAndProjDataStarproj::Inputs : StarprojReconInputs
{
  StarprojFloats y, m, a; // data [lor][tof bin], factor [lor], background m * additive [lor][tof bin]
  sproj_proj* data = nullptr;
  sproj_model* model = nullptr;

  ~Inputs() override
  {
    early_sensitivities.release(); // reads the factors below: before they go
    sproj_model_destroy(model);
    if (data)
      sproj_proj_unregister(data);
  }
};

PoissonLogLikelihoodWithLinearModelForMeanAndProjDataStarproj::PoissonLogLikelihoodWithLinearModelForMeanAndProjDataStarproj()
    : StarprojRegisteredObjectiveFunction<PoissonLogLikelihoodWithLinearModelForMeanAndProjDataStarproj,
                                          PoissonLogLikelihoodWithLinearModelForMeanAndProjData<TargetT>>(
        "PoissonLogLikelihood using Starproj")
{
  set_defaults();
}

int
PoissonLogLikelihoodWithLinearModelForMeanAndProjDataStarproj::num_views_in_subsets() const
{
  return this->proj_data_sptr->get_num_views();
}

void
PoissonLogLikelihoodWithLinearModelForMeanAndProjDataStarproj::check_inputs_readable() const
{
  const char* who = "PoissonLogLikelihood using Starproj";
  starproj_check_readable(*this->proj_data_sptr, who, "input file", this->input_filename);
  if (!is_null_ptr(this->additive_proj_data_sptr))
    starproj_check_readable(*this->additive_proj_data_sptr, who, "additive sinogram", this->additive_projection_data_filename);
}

Succeeded
PoissonLogLikelihoodWithLinearModelForMeanAndProjDataStarproj::set_up_before_sensitivity(
    shared_ptr<const TargetT> const& target_sptr)
{
  if (is_null_ptr(this->proj_data_sptr))
    {
      error("PoissonLogLikelihood using Starproj: you need to set the input data before calling set_up");
      return Succeeded::no;
    }
  const ProjData& proj_data = *this->proj_data_sptr;
  // SPECT data and geometries Starproj does not project stop here, with a message naming them (StarprojSupported.h)
  starproj_check_modality(*proj_data.get_exam_info_sptr(), "the projection data");
  if (!is_null_ptr(target_sptr))
    starproj_check_supported(*proj_data.get_proj_data_info_sptr(), *target_sptr);
  // then the files, before anything is read from them at length
  check_inputs_readable();
  if (this->max_segment_num_to_process == -1)
    this->max_segment_num_to_process = proj_data.get_max_segment_num();
  if (this->max_segment_num_to_process < 0 || this->max_segment_num_to_process > proj_data.get_max_segment_num())
    {
      error("PoissonLogLikelihood using Starproj: maximum segment " + std::to_string(this->max_segment_num_to_process)
            + " is outside the data's 0 .. " + std::to_string(proj_data.get_max_segment_num()));
      return Succeeded::no;
    }
  this->max_timing_pos_num_to_process = proj_data.get_max_tof_pos_num();
  if (this->frame_num <= 0 || static_cast<unsigned>(this->frame_num) > this->frame_defs.get_num_frames())
    {
      error("PoissonLogLikelihood using Starproj: frame number " + std::to_string(this->frame_num) + " outside 1 .. "
            + std::to_string(this->frame_defs.get_num_frames()));
      return Succeeded::no;
    }
  if (!is_null_ptr(this->additive_proj_data_sptr)
      && *this->additive_proj_data_sptr->get_proj_data_info_sptr() != *proj_data.get_proj_data_info_sptr())
    {
      error("PoissonLogLikelihood using Starproj: the additive sinogram's geometry differs from the data's");
      return Succeeded::no;
    }
  if (is_null_ptr(this->normalisation_sptr))
    {
      error("PoissonLogLikelihood using Starproj: invalid normalisation object");
      return Succeeded::no;
    }
  release();
  StarprojStepTimes& times = this->times();
  times.start();
  // StarPU first (held until the geometry holds it), so that its start is a step of its own
  const std::shared_ptr<StarprojRuntime> runtime = StarprojRuntime::acquire(_settings);
  times.mark("set_up: starting starproj (StarPU)");
  const int max_segment = this->max_segment_num_to_process;
  shared_ptr<ProjDataInfo> pdi(proj_data.get_proj_data_info_sptr()->clone());
  pdi->reduce_segment_range(-max_segment, max_segment);
  // not uploaded now: the reconstruction uploads the LORs with the data (sproj_recon_create), and an upload running
  // beside the reads below would pin and copy host memory while they fault in theirs
  const auto geometry = register_lors(pdi, *target_sptr, /* upload = */ false);
  times.mark("set_up: LORs");
  if (this->normalisation_sptr->set_up(proj_data.get_exam_info_sptr(), proj_data.get_proj_data_info_sptr())
      != Succeeded::yes)
    {
      error("PoissonLogLikelihood using Starproj: the normalisation could not be set up");
      return Succeeded::no;
    }

  const StarprojGeometry& g = *geometry;
  make_images(geometry);
  std::unique_ptr<Inputs> inputs(new Inputs);
  Inputs& r = *inputs;
  const int64_t num_lors = g.num_lors();
  const int num_bins = g.num_tof_bins(), num_tang = g.num_tangential_poss();
  // every value is written below: the arrays are not zeroed first
  r.y.resize(num_lors * num_bins);
  r.m.resize(num_lors);
  if (!is_null_ptr(this->additive_proj_data_sptr))
    r.a.resize(num_lors * num_bins);
  times.mark("set_up: host buffers (pinned images, data arrays)");
  const std::vector<int64_t>& first_lor = g.first_lors(); // [segment][view]
  const int threads = copy_threads();
  // STIR's "zero end planes of segment 0" takes those bins out of the model: their counts, factors and additive term
  // are 0 (STIR's distributable.cxx zeroes the three), so that neither the gradients nor the sensitivities see them
  const bool zero_end_planes = this->zero_seg0_end_planes && max_segment >= 0;
  auto zero_end_planes_of = [&](float* values, int per_lor) {
    const int num_views = pdi->get_num_views(), num_axial = pdi->get_num_axial_poss(0);
    const int64_t* starts = &first_lor[std::size_t(max_segment) * num_views];
    for (int v = 0; v < num_views; ++v)
      for (const int a : { 0, num_axial - 1 })
        {
          const int64_t first = starts[v] + int64_t(a) * num_tang, end = first + num_tang;
          std::fill(values + first * per_lor, values + end * per_lor, 0.F);
        }
  };

  // The data and the additive term are read on threads of their own (std::async) while the normalisation's factors
  // are made and the sensitivities submitted: three files from the page cache at once instead of one after another.
  // Two readers of one source (the same projection data or stream, each seeking it) take turns instead.
  const StarprojProjDataReader data_reader(proj_data, "the input file " + this->input_filename);
  std::unique_ptr<const StarprojProjDataReader> additive_reader;
  if (!r.a.empty())
    additive_reader.reset(new StarprojProjDataReader(*this->additive_proj_data_sptr,
                                                     "the additive sinogram " + this->additive_projection_data_filename));
  const bool additive_apart = additive_reader && !additive_reader->shares_source_with(data_reader);
  const bool beside_normalisation
      = starproj_normalisation_reads_apart(*this->normalisation_sptr, data_reader)
        && (!additive_reader || starproj_normalisation_reads_apart(*this->normalisation_sptr, *additive_reader));
  auto read_additive = [&] { additive_reader->read(*pdi, first_lor, r.a.data(), threads); };
  // The data (and the additive term after them when it cannot go alone) on a thread of their own, or, when the
  // normalisation reads one of their sources, deferred: run on this thread once the normalisation is done.
  // Declared after everything the reads use: leaving early (an error below) waits for them before those go.
  const bool additive_alone = beside_normalisation && additive_apart;
  const bool additive_after = additive_reader && !additive_alone;
  std::future<void> data_read
      = std::async(beside_normalisation ? std::launch::async : std::launch::deferred, [&, additive_after] {
          data_reader.read(*pdi, first_lor, r.y.data(), threads);
          if (zero_end_planes)
            zero_end_planes_of(r.y.data(), num_bins);
          if (additive_after)
            read_additive();
        });
  std::future<void> additive_read;
  if (additive_alone)
    additive_read = std::async(std::launch::async, read_additive);

  // the normalisation, evaluated once per LOR (undo() of ones: the forward model's factor), so that the subsets'
  // sensitivities, which need only it and the LORs, run on the devices while the data are read
  const std::string norm_how = starproj_normalisation_factors(
      *this->normalisation_sptr, *proj_data.get_proj_data_info_sptr(), *pdi, first_lor, r.m.data(), threads);
  if (zero_end_planes)
    zero_end_planes_of(r.m.data(), 1);
  times.mark(("set_up: normalisation (" + norm_how + ")").c_str());
  if (this->get_recompute_sensitivity())
    {
      // subset k's sensitivity: the back projection of the factors over its views, each view all its segments, one
      // range of LORs (g.view_chunks(): a few large copies to the GPUs, though planned and copied apart from the
      // reconstruction's viewgrams), or with SPROJ_STIR_SENS_CHUNKS=viewgrams over the subset's own viewgrams (the
      // reconstruction's pieces: 30 k small copies for STIR's span-1 mMR data); doc/stir.md compares the two
      const char* sens_by = std::getenv("SPROJ_STIR_SENS_CHUNKS");
      const bool by_viewgram = sens_by && std::string(sens_by) == "viewgrams";
      if (sens_by && *sens_by && !by_viewgram && std::string(sens_by) != "views")
        error(std::string("PoissonLogLikelihood using Starproj: SPROJ_STIR_SENS_CHUNKS is '") + sens_by
              + "', neither views nor viewgrams");
      std::vector<int> lists, sizes;
      g.subset_views(this->num_subsets, lists, sizes);
      if (by_viewgram) // each view's viewgrams instead, the subset's own chunks
        {
          std::vector<int> views;
          views.swap(lists);
          for (const int v : views)
            for (int seg = -max_segment; seg <= max_segment; ++seg)
              lists.push_back(g.chunk_of(seg, proj_data.get_min_view_num() + v));
          for (int& size : sizes)
            size *= 2 * max_segment + 1;
        }
      r.early_sensitivities.submit(g, r.m.data(), by_viewgram ? g.chunks() : g.view_chunks(), lists, sizes);
      times.mark("set_up: sensitivities submitted");
    }

  // the data and the additive term: waited for (both errors reported, the data's first), or read now
  const std::string how_read = std::string(data_reader.direct() ? "read directly" : "STIR's get_segment_by_view")
                               + (additive_reader && additive_reader->direct() != data_reader.direct()
                                      ? std::string(", additive term ")
                                            + (additive_reader->direct() ? "read directly" : "STIR's get_segment_by_view")
                                      : std::string());
  std::exception_ptr failed;
  for (std::future<void>* f : { &data_read, &additive_read })
    if (f->valid())
      try
        {
          f->get();
        }
      catch (...)
        {
          if (!failed)
            failed = std::current_exception();
        }
  if (failed)
    std::rethrow_exception(failed);
  times.mark(("set_up: the data" + std::string(additive_reader ? " and additive term" : "") + " (" + how_read
              + (beside_normalisation ? ", beside the normalisation)" : ")"))
                 .c_str());
  if (_settings.verbosity >= 2 && !data_reader.direct())
    info("PoissonLogLikelihood using Starproj: the data are read through STIR's interface: " + data_reader.why_not(), 2);

  // the additive term times the factors (STIR adds it before the normalisation: starproj's background is m times it)
  if (additive_reader)
    {
      const int num_threads = starproj_threads_or_default(threads);
      float* const a = r.a.data();
      const float* const m = r.m.data();
      if (num_bins == 1) // one loop the compiler vectorises
        {
#ifdef _OPENMP
#  pragma omp parallel for schedule(static) num_threads(num_threads)
#endif
          for (int64_t lor = 0; lor < num_lors; ++lor)
            a[lor] *= m[lor];
        }
      else
        {
#ifdef _OPENMP
#  pragma omp parallel for schedule(static) num_threads(num_threads)
#endif
          for (int64_t lor = 0; lor < num_lors; ++lor)
            for (int b = 0; b < num_bins; ++b)
              a[lor * num_bins + b] *= m[lor];
        }
      times.mark("set_up: additive term times the factors");
    }

  // subset k: the views min_view + k, min_view + k + S, ... of every segment processed, one chunk per viewgram
  std::vector<int> subset_chunks, subset_sizes;
  for (int k = 0; k < this->num_subsets; ++k)
    {
      int size = 0;
      for (int seg = -max_segment; seg <= max_segment; ++seg)
        for (int view = proj_data.get_min_view_num() + k; view <= proj_data.get_max_view_num(); view += this->num_subsets)
          {
            subset_chunks.push_back(g.chunk_of(seg, view));
            ++size;
          }
      subset_sizes.push_back(size);
    }
  starproj_check(g.is_tof() ? sproj_proj_register_tof(&r.data, r.y.data(), g.lors(), num_bins)
                            : sproj_proj_register(&r.data, r.y.data(), g.lors()),
                 "sproj_proj_register");
  starproj_check(sproj_model_create(&r.model,
                                    g.lors(),
                                    r.m.data(),
                                    r.a.empty() ? nullptr : r.a.data(),
                                    g.is_tof() ? g.tof() : nullptr,
                                    nullptr),
                 "sproj_model_create");
  struct sproj_recon_config cfg;
  sproj_recon_config_init(&cfg);
  cfg.model = r.model;
  cfg.data = r.data;
  cfg.chunks = g.chunks();
  cfg.num_subsets = this->num_subsets;
  cfg.subset_chunks = subset_chunks.data();
  cfg.subset_sizes = subset_sizes.data();
  cfg.small_fraction = stir_small_fraction;
  // the subsets' sensitivities (submitted above, or read by STIR) stay on the devices; STIR takes them as they are
  // when it computes its subset sensitivities (not averaged over the subsets)
  create_recon(cfg, std::move(inputs));
  if (_settings.verbosity >= 1)
    info("PoissonLogLikelihood using Starproj: " + std::to_string(num_lors) + " LORs x " + std::to_string(num_bins)
             + " TOF bins, " + std::to_string(this->num_subsets) + " subsets, devices " + _settings.devices,
         1);
  return Succeeded::yes;
}

Succeeded
PoissonLogLikelihoodWithLinearModelForMeanAndProjDataStarproj::actual_add_multiplication_with_approximate_sub_Hessian_without_penalty(
    TargetT& output, const TargetT& input, const int subset_num) const
{
  add_hessian_times(output, nullptr, input, subset_num, true);
  return Succeeded::yes;
}

END_NAMESPACE_STIR

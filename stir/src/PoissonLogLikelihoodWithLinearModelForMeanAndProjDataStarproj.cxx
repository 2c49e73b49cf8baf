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

#include <algorithm>
#ifdef _OPENMP
#  include <omp.h>
#endif
#include <cmath>
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
  std::vector<float> y, m, a; // data [lor][tof bin], factor [lor], background m * additive [lor][tof bin]
  sproj_proj* data = nullptr;
  sproj_model* model = nullptr;

  ~Inputs() override
  {
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
  const int max_segment = this->max_segment_num_to_process;
  shared_ptr<ProjDataInfo> pdi(proj_data.get_proj_data_info_sptr()->clone());
  pdi->reduce_segment_range(-max_segment, max_segment);
  const auto geometry = register_lors(pdi, *target_sptr, /* upload = */ true);
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
  const int num_bins = g.num_tof_bins(), num_tang = g.num_tangential_poss(), min_tang = g.min_tangential_pos_num();
  r.y.assign(num_lors * num_bins, 0.F);
  r.m.assign(num_lors, 1.F);
  if (!is_null_ptr(this->additive_proj_data_sptr))
    r.a.assign(num_lors * num_bins, 0.F);
  // the data, the normalisation evaluated once per bin (undo() of ones: the forward model's factor) and the additive
  // term (STIR adds it before the normalisation: starproj's background is m times it). The data and the additive
  // term are read a segment at a time, by view (STIR's usual storage: one read), the views of a segment copied on
  // every core; undo() one viewgram at a time, as STIR calls it (not thread-safe in general), and not at all for a
  // trivial normalisation.
  times.mark("set_up: host buffers (pinned images, data arrays)");
  const shared_ptr<DataSymmetriesForViewSegmentNumbers> trivial = starproj_trivial_viewgram_symmetries();
  const bool trivial_norm = this->normalisation_sptr->is_trivial();
  const ProjDataInfo& data_info = *proj_data.get_proj_data_info_sptr();
  bool tof_dependent_norm = false;
#ifdef _OPENMP
  const int threads = copy_threads() > 0 ? copy_threads() : omp_get_max_threads();
#endif
  for (int seg = -max_segment; seg <= max_segment; ++seg)
    for (int tof = proj_data.get_min_tof_pos_num(); tof <= proj_data.get_max_tof_pos_num(); ++tof)
      {
        SegmentByView<float> measured = proj_data.get_segment_by_view(seg, tof);
        const bool zero_end_planes = seg == 0 && this->zero_seg0_end_planes;
        std::unique_ptr<SegmentByView<float>> additive;
        if (!r.a.empty())
          additive.reset(new SegmentByView<float>(this->additive_proj_data_sptr->get_segment_by_view(seg, tof)));
        times.mark("set_up: reading the data and additive term (STIR)");
        const int bin = tof - g.min_tof_pos_num(), min_axial = g.min_axial_pos_num(seg);
        const int min_view = measured.get_min_view_num(), max_view = measured.get_max_view_num();
#ifdef _OPENMP
#  pragma omp parallel for schedule(dynamic) reduction(|| : tof_dependent_norm) num_threads(threads)
#endif
        for (int view = min_view; view <= max_view; ++view)
          {
            const int64_t first = g.first_lor(g.chunk_of(seg, view));
            std::unique_ptr<RelatedViewgrams<float>> factors;
            if (!trivial_norm)
              {
                factors.reset(new RelatedViewgrams<float>(
                    data_info.get_empty_related_viewgrams(ViewgramIndices(view, seg, tof), trivial, false, tof)));
                factors->fill(1.F);
#ifdef _OPENMP
#  pragma omp critical(STARPROJ_NORMALISATION)
#endif
                this->normalisation_sptr->undo(*factors);
              }
            for (int ax = measured.get_min_axial_pos_num(); ax <= measured.get_max_axial_pos_num(); ++ax)
              for (int t = measured.get_min_tangential_pos_num(); t <= measured.get_max_tangential_pos_num(); ++t)
                {
                  const int64_t lor = first + int64_t(ax - min_axial) * num_tang + (t - min_tang);
                  const float mf = factors ? (*factors->begin())[ax][t] : 1.F;
                  if (bin == 0)
                    r.m[lor] = mf;
                  else if (std::fabs(mf - r.m[lor]) > 1e-6F * std::fabs(r.m[lor]))
                    tof_dependent_norm = true;
                  const bool end_plane = ax == measured.get_min_axial_pos_num() || ax == measured.get_max_axial_pos_num();
                  r.y[lor * num_bins + bin] = zero_end_planes && end_plane ? 0.F : measured[view][ax][t];
                  if (additive)
                    r.a[lor * num_bins + bin] = mf * (*additive)[view][ax][t];
                }
          }
        times.mark("set_up: normalisation and copies into starproj's arrays");
      }
  if (tof_dependent_norm)
    {
      error("PoissonLogLikelihood using Starproj: the normalisation differs between TOF bins of one LOR; starproj's "
            "forward model has one multiplicative factor per LOR");
      return Succeeded::no;
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
  // the subsets' sensitivities are computed here, on the devices, and stay there; STIR takes them as they are when
  // it computes its subset sensitivities (not read from files, not averaged over the subsets)
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

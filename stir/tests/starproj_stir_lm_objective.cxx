// SPDX-License-Identifier: Apache-2.0
// Test helper: the listmode objective function "...AndListModeData using Starproj" against the sinogram objective
// function on the same events histogrammed by STIR's LmToProjData (the class of STIR's lm_to_projdata), subset by
// subset: sensitivities, gradients (with and without the sensitivity), objective values and Hessian products, with
// "...AndProjData using Starproj" on the histogram and optionally STIR's own PoissonLogLikelihoodWithLinearModelFor
// MeanAndProjData with its Parallelproj pair; optionally with a normalisation and an additive sinogram. Prints one
// line per quantity and the largest relative difference last; exits 1 when it exceeds the tolerance.
//
// usage: starproj_stir_lm_objective SOURCE IMAGE.hv NUM_SUBSETS TOLERANCE [options]
//   SOURCE: a listmode file STIR reads (its header), or "synthetic:COUNTS.hs:EVENTS": a listmode source made here
//           from projection data (TOF or not): about EVENTS prompts, bin b getting floor(EVENTS * v_b / sum v + u_b)
//           events (u_b uniform in [0, 1), a hash of b), in a shuffled order, with a delayed event after every 50
//           prompts and a time mark (1 ms apart) after every 1000 records, which both sides must skip or honour
//   IMAGE.hv: the image geometry, and the phantom from which the estimate (0.5 phantom + 0.2 of its maximum) and the
//           Hessian's direction (the phantom) are made
//   --max-segment N          segments -N .. N only
//   --norm-and-additive      a normalisation (factors in [0.5, 1.5) per LOR) and an additive sinogram (values per bin
//                            in 5% .. 15% of the histogram's mean count; the same for every TOF bin of a LOR)
//   --in-files               the normalisation and the additive sinogram written to Interfile files and read back
//   --stir-sinogram          also STIR's own sinogram objective function with its Parallelproj pair (gradients,
//                            sensitivities and values; Hessians not: STIR's TOF ones take timing position 0)
//   --value-tolerance T      objective values (default TOLERANCE)
//   --check-subsets N        compare subsets 0 .. N-1 only (default all)

#include "stir/Bin.h"
#include "stir/DiscretisedDensity.h"
#include "stir/ExamInfo.h"
#include "stir/LORCoordinates.h"
#include "stir/ProjDataInMemory.h"
#include "stir/ProjDataInfo.h"
#include "stir/Scanner.h"
#include "stir/Succeeded.h"
#include "stir/Viewgram.h"
#include "stir/IO/read_from_file.h"
#include "stir/listmode/CListModeData.h"
#include "stir/listmode/CListRecord.h"
#include "stir/listmode/LmToProjData.h"
#include "stir/recon_buildblock/BinNormalisationFromProjData.h"
#include "stir/recon_buildblock/Parallelproj_projector/ProjectorByBinPairUsingParallelproj.h"
#include "stir/recon_buildblock/PoissonLogLikelihoodWithLinearModelForMeanAndProjData.h"
#include "stir_starproj/PoissonLogLikelihoodWithLinearModelForMeanAndListModeDataStarproj.h"
#include "stir_starproj/PoissonLogLikelihoodWithLinearModelForMeanAndProjDataStarproj.h"
#include "objective_comparison.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

using namespace stir;
using namespace objective_comparison;
typedef PoissonLogLikelihoodWithLinearModelForMeanAndProjData<Image> Poisson;

namespace
{
// ---- a listmode source made from projection data (for TOF: STIR's test data have no TOF listmode file that this
// STIR reads) ----
struct SyntheticItem
{
  Bin bin;         // prompts and delayeds
  bool is_time;    // a time mark
  bool is_prompt;
  unsigned long ms;
};

class SyntheticEvent : public CListEvent
{
public:
  SyntheticItem item;
  shared_ptr<const ProjDataInfo> pdi;
  bool is_prompt() const override { return item.is_prompt; }
  void get_bin(Bin& bin, const ProjDataInfo&) const override
  {
    bin = item.bin;
    bin.set_bin_value(1.F);
  }
  LORAs2Points<float> get_LOR() const override
  {
    LORInAxialAndNoArcCorrSinogramCoordinates<float> lor;
    pdi->get_LOR(lor, item.bin);
    LORAs2Points<float> points;
    lor.get_intersections_with_cylinder(points, pdi->get_scanner_sptr()->get_max_FOV_radius());
    return points;
  }
  bool is_valid_template(const ProjDataInfo&) const override { return true; }
};

class SyntheticTime : public ListTime
{
public:
  unsigned long ms = 0;
  unsigned long get_time_in_millisecs() const override { return ms; }
  Succeeded set_time_in_millisecs(const unsigned long t) override
  {
    ms = t;
    return Succeeded::yes;
  }
};

class SyntheticRecord : public CListRecord
{
public:
  SyntheticEvent ev;
  SyntheticTime tm;
  bool is_time() const override { return ev.item.is_time; }
  bool is_event() const override { return !ev.item.is_time; }
  ListEvent& event() override { return ev; }
  const ListEvent& event() const override { return ev; }
  ListTime& time() override { return tm; }
  const ListTime& time() const override { return tm; }
};

class SyntheticListModeData : public CListModeData
{
public:
  SyntheticListModeData(const ProjData& counts_like, double num_events)
  {
    this->set_exam_info(counts_like.get_exam_info());
    this->set_proj_data_info_sptr(counts_like.get_proj_data_info_sptr()->create_shared_clone());
    const ProjDataInfo& pdi = *counts_like.get_proj_data_info_sptr();
    double total = 0;
    for (int s = pdi.get_min_segment_num(); s <= pdi.get_max_segment_num(); ++s)
      for (int tof = pdi.get_min_tof_pos_num(); tof <= pdi.get_max_tof_pos_num(); ++tof)
        total += counts_like.get_segment_by_view(s, tof).sum();
    const double scale = total > 0 ? num_events / total : 0;
    std::vector<Bin> prompts;
    for (int s = pdi.get_min_segment_num(); s <= pdi.get_max_segment_num(); ++s)
      for (int tof = pdi.get_min_tof_pos_num(); tof <= pdi.get_max_tof_pos_num(); ++tof)
        {
          const SegmentByView<float> seg = counts_like.get_segment_by_view(s, tof);
          for (int v = seg.get_min_view_num(); v <= seg.get_max_view_num(); ++v)
            for (int a = seg.get_min_axial_pos_num(); a <= seg.get_max_axial_pos_num(); ++a)
              for (int t = seg.get_min_tangential_pos_num(); t <= seg.get_max_tangential_pos_num(); ++t)
                {
                  const int c = int(std::floor(scale * seg[v][a][t] + hashed({s, v, a, t, tof, 7}, 0.F, 1.F)));
                  for (int k = 0; k < c; ++k)
                    prompts.push_back(Bin(s, v, a, t, tof, 1.F));
                }
        }
    // a shuffled order (Fisher-Yates with the hash as random numbers), so that neighbouring events lie on any bins
    for (std::size_t i = prompts.size(); i > 1; --i)
      std::swap(prompts[i - 1], prompts[hash_of({int(i), int(i >> 20), 11}) % i]);
    unsigned long ms = 0;
    for (std::size_t i = 0; i < prompts.size(); ++i)
      {
        _items.push_back({prompts[i], false, true, ms});
        if (i % 50 == 49) // a delayed event on another bin
          _items.push_back({prompts[(i * 7919) % prompts.size()], false, false, ms});
        if (_items.size() % 1000 == 0)
          _items.push_back({Bin(), true, false, ++ms});
      }
    _num_prompts = prompts.size();
    _pdi = counts_like.get_proj_data_info_sptr()->create_shared_clone();
  }
  std::size_t num_prompts() const { return _num_prompts; }

  std::string get_name() const override { return "synthetic listmode data"; }
  shared_ptr<CListRecord> get_empty_record_sptr() const override
  {
    auto r = std::make_shared<SyntheticRecord>();
    r->ev.pdi = _pdi;
    return r;
  }
  Succeeded get_next_record(CListRecord& record) const override
  {
    if (_next >= _items.size())
      return Succeeded::no;
    auto& r = static_cast<SyntheticRecord&>(record);
    r.ev.item = _items[_next++];
    r.tm.ms = r.ev.item.ms;
    return Succeeded::yes;
  }
  Succeeded reset() override
  {
    _next = 0;
    return Succeeded::yes;
  }
  SavedPosition save_get_position() override
  {
    _saved.push_back(_next);
    return SavedPosition(_saved.size() - 1);
  }
  Succeeded set_get_position(const SavedPosition& p) override
  {
    if (p >= _saved.size())
      return Succeeded::no;
    _next = _saved[p];
    return Succeeded::yes;
  }
  bool has_delayeds() const override { return true; }

private:
  std::vector<SyntheticItem> _items;
  std::vector<std::size_t> _saved;
  mutable std::size_t _next = 0;
  std::size_t _num_prompts = 0;
  shared_ptr<const ProjDataInfo> _pdi;
};
} // namespace

int
main(int argc, char** argv)
{
  if (argc < 5)
    {
      std::fprintf(stderr,
                   "usage: %s SOURCE IMAGE.hv NUM_SUBSETS TOLERANCE [--max-segment N] [--norm-and-additive [--in-files]] "
                   "[--stir-sinogram] [--value-tolerance T] [--check-subsets N]\n",
                   argv[0]);
      return 2;
    }
  const std::string source = argv[1];
  const int num_subsets = std::atoi(argv[3]);
  const double tolerance = std::atof(argv[4]);
  double value_tolerance = tolerance;
  int check_subsets = num_subsets, max_segment = -1;
  bool extras = false, stir_sinogram = false, in_files = false;
  for (int i = 5; i < argc; ++i)
    {
      const std::string opt = argv[i];
      if (opt == "--norm-and-additive")
        extras = true;
      else if (opt == "--in-files")
        in_files = true;
      else if (opt == "--stir-sinogram")
        stir_sinogram = true;
      else if (opt == "--max-segment" && i + 1 < argc)
        max_segment = std::atoi(argv[++i]);
      else if (opt == "--value-tolerance" && i + 1 < argc)
        value_tolerance = std::atof(argv[++i]);
      else if (opt == "--check-subsets" && i + 1 < argc)
        check_subsets = std::atoi(argv[++i]);
      else
        {
          std::fprintf(stderr, "starproj_stir_lm_objective: unknown or incomplete option '%s'\n", argv[i]);
          return 2;
        }
    }
  if (num_subsets < 1 || !(tolerance >= 0) || !(value_tolerance >= 0) || check_subsets < 1 || check_subsets > num_subsets)
    {
      std::fprintf(stderr, "starproj_stir_lm_objective: NUM_SUBSETS >= 1, tolerances >= 0, 1 <= N <= NUM_SUBSETS\n");
      return 2;
    }
  try
    {
      // the listmode data
      shared_ptr<ListModeData> lm;
      if (source.compare(0, 10, "synthetic:") == 0)
        {
          const std::size_t colon = source.rfind(':');
          if (colon <= 10)
            {
              std::fprintf(stderr, "starproj_stir_lm_objective: synthetic:COUNTS.hs:EVENTS\n");
              return 2;
            }
          shared_ptr<ProjData> like = ProjData::read_from_file(source.substr(10, colon - 10));
          auto synthetic = std::make_shared<SyntheticListModeData>(*like, std::atof(source.c_str() + colon + 1));
          std::printf("synthetic listmode data: %zu prompts\n", synthetic->num_prompts());
          lm = synthetic;
        }
      else
        lm = read_from_file<ListModeData>(source);
      shared_ptr<Image> image(read_from_file<Image>(argv[2]));
      shared_ptr<ProjDataInfo> pdi = lm->get_proj_data_info_sptr()->create_shared_clone();
      if (max_segment >= 0)
        pdi->reduce_segment_range(-max_segment, max_segment);

      // the same events histogrammed by STIR (prompts only)
      auto histogram = std::make_shared<ProjDataInMemory>(lm->get_exam_info_sptr(), pdi);
      {
        LmToProjData lm_to_projdata;
        lm_to_projdata.set_input_data(lm);
        lm_to_projdata.set_template_proj_data_info_sptr(pdi);
        lm_to_projdata.set_output_filename_prefix("unused"); // the output is the ProjData below
        lm_to_projdata.set_store_prompts(true);
        lm_to_projdata.set_store_delayeds(false);
        shared_ptr<ProjData> out = histogram;
        lm_to_projdata.set_output_projdata_sptr(out);
        if (lm_to_projdata.set_up() != Succeeded::yes)
          {
            std::fprintf(stderr, "starproj_stir_lm_objective: LmToProjData's set_up failed\n");
            return 1;
          }
        lm_to_projdata.process_data();
      }
      double histogram_total = 0;
      for (int s = pdi->get_min_segment_num(); s <= pdi->get_max_segment_num(); ++s)
        for (int tof = pdi->get_min_tof_pos_num(); tof <= pdi->get_max_tof_pos_num(); ++tof)
          histogram_total += histogram->get_segment_by_view(s, tof).sum();

      shared_ptr<ProjData> norm, additive;
      if (extras)
        {
          const shared_ptr<const ProjDataInfo> non_tof = pdi->create_non_tof_clone();
          norm = bin_values(lm->get_exam_info_sptr(), non_tof, 0.5F, 1.5F);
          std::size_t bins = 0;
          for (int s = pdi->get_min_segment_num(); s <= pdi->get_max_segment_num(); ++s)
            bins += std::size_t(pdi->get_num_axial_poss(s)) * pdi->get_num_views() * pdi->get_num_tangential_poss()
                    * pdi->get_num_tof_poss();
          const float mean = float(histogram_total / double(bins));
          // the additive term in STIR's convention (added before the normalisation)
          additive = bin_values(lm->get_exam_info_sptr(), pdi, 0.05F * mean, 0.15F * mean);
          if (in_files)
            {
              norm = through_file(norm, "lm_objective_norm.hs");
              additive = through_file(additive, "lm_objective_additive.hs");
            }
        }

      PoissonLogLikelihoodWithLinearModelForMeanAndListModeDataStarproj lm_objective;
      PoissonLogLikelihoodWithLinearModelForMeanAndProjDataStarproj sino_objective;
      Poisson stir_objective;
      lm_objective.starproj_settings().devices = "cpu";
      sino_objective.starproj_settings().devices = "cpu";
      stir_objective.set_projector_pair_sptr(std::make_shared<ProjectorByBinPairUsingParallelproj>());
      lm_objective.set_input_data(lm);
      if (max_segment >= 0)
        lm_objective.set_max_segment_num_to_process(max_segment);
      std::vector<PoissonLogLikelihoodWithLinearModelForMean<Image>*> objectives{&lm_objective, &sino_objective};
      if (stir_sinogram)
        objectives.push_back(&stir_objective);
      for (auto* f : objectives)
        {
          if (auto* p = dynamic_cast<Poisson*>(f))
            p->set_proj_data_sptr(histogram);
          if (!set_up_for_comparison(*f, num_subsets, norm, additive, *image, "starproj_stir_lm_objective"))
            return 1;
        }
      std::printf("%lld prompts in the listmode objective function, %.0f in the histogram; subsets of",
                  static_cast<long long>(lm_objective.get_num_events()), histogram_total);
      for (int64_t e : lm_objective.get_subset_num_events())
        std::printf(" %lld", static_cast<long long>(e));
      std::printf(" events\n");
      if (double(lm_objective.get_num_events()) != histogram_total || lm_objective.get_num_events() == 0)
        {
          std::printf("the listmode objective function kept %lld prompts, the histogram holds %.0f\n",
                      static_cast<long long>(lm_objective.get_num_events()), histogram_total);
          return 1;
        }

      const std::unique_ptr<Image> x = estimate_from(*image);

      double worst = 0, worst_value = 0;
      auto report = [&](const char* what, const char* against, int subset, double diff, double size, bool value) {
        std::printf("%-28s %-22s subset %2d: relative difference %.3g (size %.6g)\n", what, against, subset, diff, size);
        double& w = value ? worst_value : worst;
        if (!(diff <= w))
          w = std::isnan(diff) ? INFINITY : std::max(w, diff);
      };
      for (int k = 0; k < check_subsets; ++k)
        {
          std::unique_ptr<Image> a(image->get_empty_copy()), b(image->get_empty_copy());
          for (std::size_t o = 1; o < objectives.size(); ++o)
            {
              auto* ref = dynamic_cast<Poisson*>(objectives[o]);
              const char* against = o == 1 ? "(Starproj sinogram)" : "(STIR's, Parallelproj)";
              report("subset sensitivity",
                     against,
                     k,
                     rel_l2(ref->get_subset_sensitivity(k), lm_objective.get_subset_sensitivity(k)),
                     max_abs(ref->get_subset_sensitivity(k)),
                     false);
              ref->compute_sub_gradient_without_penalty_plus_sensitivity(*a, *x, k);
              lm_objective.compute_sub_gradient_without_penalty_plus_sensitivity(*b, *x, k);
              report("gradient plus sensitivity", against, k, rel_l2(*a, *b), max_abs(*a), false);
              ref->compute_sub_gradient_without_penalty(*a, *x, k);
              lm_objective.compute_sub_gradient_without_penalty(*b, *x, k);
              report("gradient", against, k, rel_l2(*a, *b), max_abs(*a), false);
              const double va = ref->compute_objective_function_without_penalty(*x, k);
              const double vb = lm_objective.compute_objective_function_without_penalty(*x, k);
              report("objective value", against, k, std::fabs(vb - va) / std::max(std::fabs(va), 1e-30), va, true);
              if (o != 1)
                continue; // STIR's TOF Hessians take timing position 0 for every TOF bin
              a->fill(0);
              b->fill(0);
              ref->accumulate_sub_Hessian_times_input_without_penalty(*a, *x, *image, k);
              lm_objective.accumulate_sub_Hessian_times_input_without_penalty(*b, *x, *image, k);
              report("Hessian times image", against, k, rel_l2(*a, *b), max_abs(*a), false);
            }
        }
      std::printf("largest relative difference %.3g (tolerance %.3g), objective values %.3g (tolerance %.3g); %lld "
                  "events%s%s\n",
                  worst,
                  tolerance,
                  worst_value,
                  value_tolerance,
                  static_cast<long long>(lm_objective.get_num_events()),
                  pdi->is_tof_data() ? ", TOF" : "",
                  extras ? ", with a normalisation and an additive sinogram" : "");
      return worst <= tolerance && worst_value <= value_tolerance ? 0 : 1;
    }
  catch (const std::exception& e)
    {
      std::fprintf(stderr, "starproj_stir_lm_objective: %s\n", e.what());
      return 1;
    }
}

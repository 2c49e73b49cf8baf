// SPDX-License-Identifier: Apache-2.0
// Test helper: STIR's Poisson objective function with its Parallelproj pair against "...AndProjData using Starproj" on
// the same data, subset by subset: sensitivities, gradients (with and without the sensitivity), objective values and
// both Hessian products, optionally with a normalisation (random factors per bin) and an additive sinogram. Prints one
// line per quantity and the largest relative difference last; exits 1 when it exceeds the tolerance.
//
// usage: starproj_stir_objective DATA.hs IMAGE.hv NUM_SUBSETS TOLERANCE [options]
//   --norm-and-additive        a normalisation (factors in [0.5, 1.5) per LOR) and an additive sinogram (~10%)
//   --in-files                 both written to Interfile files and read back (STIR's "From ProjData" normalisation
//                              and additive sinogram as a .par names them), instead of kept in memory
//   --shared-source WHICH      with --in-files, two inputs read from one projection data object (one stream), which
//                              the set-up then reads in turn instead of at the same time: norm-additive (the
//                              normalisation's factors are the additive sinogram's file) or additive-data (the
//                              additive sinogram is the data themselves)
//   --approximate-hessian-tolerance T   the tolerance of the approximate Hessian product (default TOLERANCE)
//   --check-subsets N          compare subsets 0 .. N-1 only (default all)
// With TOF data the Hessian products are not compared: STIR's take timing position 0 for every TOF bin (its
// get_empty_related_viewgrams and get_related_viewgrams replace the index's timing position by their own argument).

#include "stir/DiscretisedDensity.h"
#include "stir/ProjDataInMemory.h"
#include "stir/ProjDataInfo.h"
#include "stir/Viewgram.h"
#include "stir/IO/read_from_file.h"
#include "stir/recon_buildblock/BinNormalisationFromProjData.h"
#include "stir/recon_buildblock/Parallelproj_projector/ProjectorByBinPairUsingParallelproj.h"
#include "stir/recon_buildblock/PoissonLogLikelihoodWithLinearModelForMeanAndProjData.h"
#include "stir_starproj/PoissonLogLikelihoodWithLinearModelForMeanAndProjDataStarproj.h"
#include "objective_comparison.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

using namespace stir;
using namespace objective_comparison;
typedef PoissonLogLikelihoodWithLinearModelForMeanAndProjData<Image> Poisson;

int
main(int argc, char** argv)
{
  if (argc < 5)
    {
      std::fprintf(stderr, "usage: %s DATA.hs IMAGE.hv NUM_SUBSETS TOLERANCE [--norm-and-additive [--in-files]] "
                           "[--approximate-hessian-tolerance T] [--check-subsets N]\n", argv[0]);
      return 2;
    }
  const int num_subsets = std::atoi(argv[3]);
  const double tolerance = std::atof(argv[4]);
  double approximate_tolerance = tolerance;
  int check_subsets = num_subsets;
  bool extras = false, in_files = false;
  std::string shared_source;
  for (int i = 5; i < argc; ++i)
    {
      const std::string opt = argv[i];
      if (opt == "--norm-and-additive")
        extras = true;
      else if (opt == "--in-files")
        in_files = true;
      else if (opt == "--shared-source" && i + 1 < argc)
        shared_source = argv[++i];
      else if (opt == "--approximate-hessian-tolerance" && i + 1 < argc)
        approximate_tolerance = std::atof(argv[++i]);
      else if (opt == "--check-subsets" && i + 1 < argc)
        check_subsets = std::atoi(argv[++i]);
      else
        {
          std::fprintf(stderr, "starproj_stir_objective: unknown or incomplete option '%s'\n", argv[i]);
          return 2;
        }
    }
  if (num_subsets < 1 || !(tolerance >= 0) || !(approximate_tolerance >= 0) || check_subsets < 1
      || check_subsets > num_subsets)
    {
      std::fprintf(stderr, "starproj_stir_objective: NUM_SUBSETS >= 1, tolerances >= 0, 1 <= N <= NUM_SUBSETS\n");
      return 2;
    }
  if (!shared_source.empty()
      && (!extras || !in_files || (shared_source != "norm-additive" && shared_source != "additive-data")))
    {
      std::fprintf(stderr, "starproj_stir_objective: --shared-source norm-additive|additive-data needs "
                           "--norm-and-additive --in-files\n");
      return 2;
    }
  try
    {
      shared_ptr<ProjData> data = ProjData::read_from_file(argv[1]);
      shared_ptr<Image> image(read_from_file<Image>(argv[2]));
      shared_ptr<ProjData> norm, additive;
      if (extras)
        {
          norm = bin_values(data->get_exam_info_sptr(), data->get_proj_data_info_sptr(), 0.5F, 1.5F);
          // the additive term in STIR's convention (added before the normalisation), about 10% of the counts
          double total = 0;
          long n = 0;
          for (int v = data->get_min_view_num(); v <= data->get_max_view_num(); ++v)
            {
              const Viewgram<float> vg = data->get_viewgram(v, 0);
              total += vg.sum();
              n += long(vg.get_num_axial_poss()) * vg.get_num_tangential_poss();
            }
          const float mean = n > 0 ? float(total / n) : 1.F;
          additive = bin_values(data->get_exam_info_sptr(), data->get_proj_data_info_sptr(), 0.05F * mean, 0.15F * mean);
          if (in_files)
            {
              norm = through_file(norm, "objective_norm.hs");
              additive = through_file(additive, "objective_additive.hs");
              if (shared_source == "norm-additive")
                norm = additive;
              else if (shared_source == "additive-data")
                additive = data;
            }
        }

      Poisson stir_objective;
      PoissonLogLikelihoodWithLinearModelForMeanAndProjDataStarproj starproj_objective;
      starproj_objective.starproj_settings().devices = "cpu";
      Poisson* objectives[2] = {&stir_objective, &starproj_objective};
      stir_objective.set_projector_pair_sptr(std::make_shared<ProjectorByBinPairUsingParallelproj>());
      for (Poisson* f : objectives)
        {
          f->set_proj_data_sptr(data);
          if (!set_up_for_comparison(*f, num_subsets, norm, additive, *image, "starproj_stir_objective"))
            return 1;
        }
      const std::unique_ptr<Image> x = estimate_from(*image);

      // the largest difference over the quantities held to `tolerance`, and over the approximate Hessian's
      double worst = 0, worst_approximate = 0;
      auto report = [&](const char* what, int subset, double diff, double size, double* into = nullptr) {
        std::printf("%-34s subset %2d: relative difference %.3g (size %.6g)\n", what, subset, diff, size);
        double& w = into ? *into : worst;
        if (!(diff <= w))
          w = std::isnan(diff) ? INFINITY : std::max(w, diff);
      };
      const bool tof = data->get_proj_data_info_sptr()->is_tof_data();
      for (int k = 0; k < check_subsets; ++k)
        {
          report("subset sensitivity",
                 k,
                 rel_l2(stir_objective.get_subset_sensitivity(k), starproj_objective.get_subset_sensitivity(k)),
                 max_abs(stir_objective.get_subset_sensitivity(k)));
          std::unique_ptr<Image> a(image->get_empty_copy()), b(image->get_empty_copy());
          stir_objective.compute_sub_gradient_without_penalty_plus_sensitivity(*a, *x, k);
          starproj_objective.compute_sub_gradient_without_penalty_plus_sensitivity(*b, *x, k);
          report("gradient plus sensitivity", k, rel_l2(*a, *b), max_abs(*a));
          stir_objective.compute_sub_gradient_without_penalty(*a, *x, k);
          starproj_objective.compute_sub_gradient_without_penalty(*b, *x, k);
          report("gradient", k, rel_l2(*a, *b), max_abs(*a));
          const double va = stir_objective.compute_objective_function_without_penalty(*x, k);
          const double vb = starproj_objective.compute_objective_function_without_penalty(*x, k);
          report("objective value", k, std::fabs(vb - va) / std::max(std::fabs(va), 1e-30), va);
          if (tof)
            {
              std::printf("Hessian products                   subset %2d: not compared (TOF: STIR's use timing "
                          "position 0 for every bin)\n", k);
              continue;
            }
          a->fill(0);
          b->fill(0);
          stir_objective.add_multiplication_with_approximate_sub_Hessian_without_penalty(*a, *image, k);
          starproj_objective.add_multiplication_with_approximate_sub_Hessian_without_penalty(*b, *image, k);
          report("approximate Hessian times image", k, rel_l2(*a, *b), max_abs(*a), &worst_approximate);
          a->fill(0);
          b->fill(0);
          stir_objective.accumulate_sub_Hessian_times_input_without_penalty(*a, *x, *image, k);
          starproj_objective.accumulate_sub_Hessian_times_input_without_penalty(*b, *x, *image, k);
          report("Hessian times image", k, rel_l2(*a, *b), max_abs(*a));
        }
      std::printf("largest relative difference %.3g (tolerance %.3g), approximate Hessian %.3g (tolerance %.3g)%s%s\n",
                  worst,
                  tolerance,
                  worst_approximate,
                  approximate_tolerance,
                  extras ? ", with a normalisation and an additive sinogram" : "",
                  shared_source.empty() ? "" : (" (" + shared_source + " from one source)").c_str());
      return worst <= tolerance && worst_approximate <= approximate_tolerance ? 0 : 1;
    }
  catch (const std::exception& e)
    {
      std::fprintf(stderr, "starproj_stir_objective: %s\n", e.what());
      return 1;
    }
}

// SPDX-License-Identifier: Apache-2.0
// Checks the set-up's fast paths against STIR's own interfaces (test helper):
//   starproj_stir_setup_paths lors TEMPLATE.hs [reversed]
//       the closed-form LORs (StarprojCylindricalLORs) against ProjDataInfo::get_LOR per bin clipped to the FOV
//       cylinder, as STIR's parallelproj pair and the per-bin path make them: every float the same (exit 1 otherwise)
//   starproj_stir_setup_paths read DATA.hs direct|fallback|truncated
//       the read of projection data into starproj's arrays (StarprojProjDataReader) against STIR's
//       get_segment_by_view, every value of every segment and TOF position: "direct", read from the file directly;
//       "fallback", refused by the direct read and read through STIR's interface; "truncated", the direct read must
//       stop with a STIR error (the file holds fewer bytes than its header describes)
//   starproj_stir_setup_paths norm NORM.hs
//       the normalisation factors of a "From ProjData" normalisation read from its file directly against its undo() of
//       viewgrams of ones (starproj_normalisation_factors): every factor the same
//   starproj_stir_setup_paths listmode LIST.l.hdr [MAX_SEGMENT]
//       the prompts read by starproj_read_prompts (on every core for Siemens' ECAT8 32-bit list) against STIR's reader
//       record after record: the same events in the same order, the same counts, for the whole list, a time frame, a
//       start time alone and a number of events; the file must be one read in parallel
// Compiled with STIR's -ffast-math (stir/CMakeLists.txt), as the per-bin LOR path it stands in for.

#include "stir_starproj/StarprojCylindricalLORs.h"
#include "stir_starproj/StarprojListmodeReader.h"
#include "stir_starproj/StarprojProjDataReader.h"

#include "stir/Bin.h"
#include "stir/LORCoordinates.h"
#include "stir/ProjData.h"
#include "stir/ProjDataInfo.h"
#include "stir/Scanner.h"
#include "stir/SegmentByView.h"
#include "stir/Succeeded.h"
#include "stir/IO/read_from_file.h"
#include "stir/listmode/ListModeData.h"
#include "stir/recon_buildblock/BinNormalisationFromProjData.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

using namespace stir;

namespace
{
double
seconds_since(std::chrono::steady_clock::time_point t)
{
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// [segment][view] chunks of [axial][tangential] LORs, as StarprojGeometry lays them out
std::vector<int64_t>
chunk_starts(const ProjDataInfo& pdi, int64_t& num_lors)
{
  std::vector<int64_t> first;
  num_lors = 0;
  for (int seg = pdi.get_min_segment_num(); seg <= pdi.get_max_segment_num(); ++seg)
    for (int v = 0; v < pdi.get_num_views(); ++v)
      {
        first.push_back(num_lors);
        num_lors += int64_t(pdi.get_num_axial_poss(seg)) * pdi.get_num_tangential_poss();
      }
  return first;
}

int
check_lors(const std::string& filename, bool reversed)
{
  shared_ptr<ProjData> data = ProjData::read_from_file(filename);
  const ProjDataInfo& pdi = *data->get_proj_data_info_sptr();
  int64_t n = 0;
  const std::vector<int64_t> first = chunk_starts(pdi, n);
  const float scale = 1.F / pdi.get_scanner_sptr()->get_default_bin_size();
  const float fov_radius = pdi.get_scanner_sptr()->get_max_FOV_radius();
  std::vector<float> ref_s(3 * n, 0.F), ref_e(3 * n, 0.F), s(3 * n, -1.F), e(3 * n, -1.F);

  auto t0 = std::chrono::steady_clock::now();
  const int num_views = pdi.get_num_views(), num_tang = pdi.get_num_tangential_poss();
#ifdef _OPENMP
#  pragma omp parallel for schedule(dynamic)
#endif
  for (int c = 0; c < static_cast<int>(first.size()); ++c)
    {
      const int seg = pdi.get_min_segment_num() + c / num_views, view = pdi.get_min_view_num() + c % num_views;
      int64_t lor = first[c];
      for (int a = pdi.get_min_axial_pos_num(seg); a <= pdi.get_max_axial_pos_num(seg); ++a)
        for (int t = 0; t < num_tang; ++t, ++lor)
          {
            LORInAxialAndNoArcCorrSinogramCoordinates<float> sino_lor;
            pdi.get_LOR(sino_lor, Bin(seg, view, a, pdi.get_min_tangential_pos_num() + t));
            LORAs2Points<float> points;
            if (sino_lor.get_intersections_with_cylinder(points, fov_radius) != Succeeded::yes)
              continue;
            const CartesianCoordinate3D<float>& p = reversed ? points.p2() : points.p1();
            const CartesianCoordinate3D<float>& q = reversed ? points.p1() : points.p2();
            for (int d = 0; d < 3; ++d)
              {
                ref_s[3 * lor + d] = p[d + 1] * scale;
                ref_e[3 * lor + d] = q[d + 1] * scale;
              }
          }
    }
  const double per_bin_s = seconds_since(t0);
  t0 = std::chrono::steady_clock::now();
  if (!starproj_cylindrical_lors(pdi, scale, reversed, first, s.data(), e.data(), 0))
    {
      std::cout << "lors: the closed form refused " << filename << "\n";
      return 1;
    }
  const double closed_s = seconds_since(t0);
  int64_t differ = 0;
  double max_diff = 0;
  for (int64_t i = 0; i < 3 * n; ++i)
    for (const auto& pair : { std::make_pair(ref_s[i], s[i]), std::make_pair(ref_e[i], e[i]) })
      if (std::memcmp(&pair.first, &pair.second, sizeof(float)) != 0)
        {
          ++differ;
          max_diff = std::max(max_diff, double(std::fabs(pair.first - pair.second)));
        }
  std::cout << "lors: " << n << " LORs of " << filename << (reversed ? " (reversed)" : "") << ": per bin " << per_bin_s
            << " s, closed form " << closed_s << " s; " << differ << " of " << 6 * n << " floats differ (largest " << max_diff
            << ")\n";
  return differ == 0 ? 0 : 1;
}

int
check_read(const std::string& filename, const std::string& expect)
{
  const bool expect_fallback = expect == "fallback";
  shared_ptr<ProjData> data = ProjData::read_from_file(filename);
  const ProjDataInfo& pdi = *data->get_proj_data_info_sptr();
  int64_t n = 0;
  const std::vector<int64_t> first = chunk_starts(pdi, n);
  StarprojProjDataReader reader(*data, filename);
  const int num_bins = reader.values_per_lor();
  std::vector<float> values(n * num_bins, -1.F); // for the truncated file
  const bool direct = reader.direct();
  if (direct == expect_fallback)
    {
      std::cout << "read: " << filename
                << (direct ? " was read directly, expected STIR's interface" : " was not read directly: " + reader.why_not())
                << "\n";
      return 1;
    }
  auto t0 = std::chrono::steady_clock::now();
  if (expect == "truncated")
    {
      try
        {
          reader.read(pdi, first, values.data(), 0);
        }
      catch (const std::exception&)
        {
          std::cout << "read: " << filename << ": the direct read stopped with an error, as it should\n";
          return 0;
        }
      std::cout << "read: " << filename << " was read without an error\n";
      return 1;
    }
  // all segments, then those the objective functions keep with "maximum absolute segment number to process" 1 (the
  // file's other segments skipped)
  shared_ptr<ProjDataInfo> part(pdi.clone());
  if (pdi.get_min_segment_num() <= -1 && pdi.get_max_segment_num() >= 1)
    part->reduce_segment_range(-1, 1);
  int failures = 0;
  for (const ProjDataInfo* layout : { &pdi, static_cast<const ProjDataInfo*>(part.get()) })
    {
      int64_t n_layout = 0;
      const std::vector<int64_t> starts = chunk_starts(*layout, n_layout);
      std::vector<float> got_values(n_layout * num_bins, -1.F);
      t0 = std::chrono::steady_clock::now();
      reader.read(*layout, starts, got_values.data(), 0);
      const double read_s = seconds_since(t0);
      int64_t differ = 0, compared = 0;
      const int num_views = layout->get_num_views(), num_tang = layout->get_num_tangential_poss();
      for (int seg = layout->get_min_segment_num(); seg <= layout->get_max_segment_num(); ++seg)
        for (int tof = pdi.get_min_tof_pos_num(); tof <= pdi.get_max_tof_pos_num(); ++tof)
          {
            const SegmentByView<float> segment = data->get_segment_by_view(seg, tof);
            for (int v = 0; v < num_views; ++v)
              {
                const int view = layout->get_min_view_num() + v;
                int64_t lor = starts[(seg - layout->get_min_segment_num()) * num_views + v];
                for (int a = layout->get_min_axial_pos_num(seg); a <= layout->get_max_axial_pos_num(seg); ++a)
                  for (int t = 0; t < num_tang; ++t, ++lor)
                    {
                      const float want = segment[view][a][layout->get_min_tangential_pos_num() + t];
                      const float got = got_values[lor * num_bins + (tof - pdi.get_min_tof_pos_num())];
                      ++compared;
                      if (std::memcmp(&want, &got, sizeof want) != 0)
                        ++differ;
                    }
              }
          }
      std::cout << "read: " << compared << " values of " << filename << ", segments " << layout->get_min_segment_num() << " .. "
                << layout->get_max_segment_num() << (direct ? ", read directly" : ", read by STIR") << " in " << read_s << " s; "
                << differ << " differ from STIR's get_segment_by_view\n";
      failures += differ == 0 && compared == n_layout * num_bins ? 0 : 1;
    }
  return failures == 0 ? 0 : 1;
}
int
check_norm(const std::string& filename)
{
  shared_ptr<ProjData> factors = ProjData::read_from_file(filename);
  const shared_ptr<const ProjDataInfo> pdi = factors->get_proj_data_info_sptr();
  BinNormalisationFromProjData norm(factors);
  if (norm.set_up(factors->get_exam_info_sptr(), pdi) != Succeeded::yes)
    {
      std::cout << "norm: set_up failed\n";
      return 1;
    }
  int64_t n = 0;
  const std::vector<int64_t> first = chunk_starts(*pdi, n);
  std::vector<float> direct(n, -1.F), undo(n, -2.F);
  auto t0 = std::chrono::steady_clock::now();
  const std::string how = starproj_normalisation_factors(norm, *pdi, *pdi, first, direct.data(), 0);
  const double direct_s = seconds_since(t0);
  t0 = std::chrono::steady_clock::now();
  const std::string how_undo = starproj_normalisation_factors(norm, *pdi, *pdi, first, undo.data(), 0, false);
  const double undo_s = seconds_since(t0);
  const int64_t differ = std::memcmp(direct.data(), undo.data(), n * sizeof(float)) == 0
                             ? 0
                             : std::count_if(direct.begin(), direct.end(), [&](const float& d) {
                                 const float u = undo[&d - direct.data()];
                                 return std::memcmp(&d, &u, sizeof d) != 0;
                               });
  for (int64_t i = 0, shown = 0; i < n && shown < 3; ++i)
    if (std::memcmp(&direct[i], &undo[i], sizeof(float)) != 0)
      {
        std::printf("norm: LOR %lld: read directly %.9g, undo() %.9g\n", (long long)i, direct[i], undo[i]);
        ++shown;
      }
  std::cout << "norm: " << n << " factors of " << filename << ": " << how << " in " << direct_s << " s, " << how_undo << " in "
            << undo_s << " s; " << differ << " differ\n";
  return how == "read directly" && differ == 0 ? 0 : 1;
}
int
check_listmode(const std::string& filename, int max_segment)
{
  shared_ptr<ListModeData> lm(read_from_file<ListModeData>(filename));
  shared_ptr<ProjDataInfo> pdi(lm->get_proj_data_info_sptr()->clone());
  if (max_segment >= 0)
    pdi->reduce_segment_range(-max_segment, max_segment);
  std::string why;
  if (!starproj_prompts_read_in_parallel(*lm, &why))
    {
      std::cout << "listmode: " << filename << " is not read in parallel: " << why << "\n";
      return 1;
    }
  int64_t n = 0;
  const std::vector<int64_t> first = chunk_starts(*pdi, n);
  StarprojPromptsRequest request;
  // the bin's index in the [segment][view][axial][tangential] layout, times the TOF positions (a key of the caller's)
  request.key_of = [&](const Bin& b) -> uint64_t {
    const ProjDataInfo& p = *pdi;
    if (b.get_bin_value() <= 0 || b.segment_num() < p.get_min_segment_num() || b.segment_num() > p.get_max_segment_num()
        || b.axial_pos_num() < p.get_min_axial_pos_num(b.segment_num())
        || b.axial_pos_num() > p.get_max_axial_pos_num(b.segment_num()) || b.view_num() < p.get_min_view_num()
        || b.view_num() > p.get_max_view_num() || b.tangential_pos_num() < p.get_min_tangential_pos_num()
        || b.tangential_pos_num() > p.get_max_tangential_pos_num() || b.timing_pos_num() < p.get_min_tof_pos_num()
        || b.timing_pos_num() > p.get_max_tof_pos_num())
      return StarprojPromptsRequest::no_key;
    const int64_t lor
        = first[(b.segment_num() - p.get_min_segment_num()) * p.get_num_views() + b.view_num() - p.get_min_view_num()]
          + int64_t(b.axial_pos_num() - p.get_min_axial_pos_num(b.segment_num())) * p.get_num_tangential_poss()
          + b.tangential_pos_num() - p.get_min_tangential_pos_num();
    return uint64_t(lor) * p.get_num_tof_poss() + uint64_t(b.timing_pos_num() - p.get_min_tof_pos_num());
  };
  struct Case
  {
    const char* name;
    double start, end;
    bool frame;
    int64_t max_events;
  };
  const Case cases[] = { { "whole list", 0, 0, false, 0 },
                         { "time frame 0.1 - 0.3 s", 0.1, 0.3, true, 0 },
                         { "from 0.25 s", 0.25, 0, false, 0 },
                         { "first 1000 prompts", 0, 0, false, 1000 } };
  int failures = 0;
  for (const Case& c : cases)
    {
      request.start_time = c.start;
      request.end_time = c.end;
      request.do_time_frame = c.frame;
      request.max_events = c.max_events;
      StarprojPromptsRead by_stir, parallel;
      request.allow_parallel = false;
      auto t0 = std::chrono::steady_clock::now();
      const std::vector<uint64_t> want = starproj_read_prompts(*lm, *pdi, request, 0, by_stir);
      const double stir_s = seconds_since(t0);
      request.allow_parallel = true;
      t0 = std::chrono::steady_clock::now();
      const std::vector<uint64_t> got = starproj_read_prompts(*lm, *pdi, request, 0, parallel);
      const double parallel_s = seconds_since(t0);
      const bool same = want == got && by_stir.records == parallel.records && by_stir.outside == parallel.outside;
      std::cout << "listmode: " << filename << ", " << c.name << ": STIR's reader " << want.size() << " prompts ("
                << by_stir.records << " records, " << by_stir.outside << " outside) in " << stir_s << " s; read in parallel "
                << got.size() << " (" << parallel.records << ", " << parallel.outside << ") in " << parallel_s
                << " s: " << (same ? "the same, event for event" : "DIFFERENT") << "\n";
      failures += same ? 0 : 1;
    }
  return failures == 0 ? 0 : 1;
}
} // namespace

int
main(int argc, char** argv)
{
  const std::string what = argc > 1 ? argv[1] : "";
  try
    {
      if (what == "lors" && (argc == 3 || (argc == 4 && std::string(argv[3]) == "reversed")))
        return check_lors(argv[2], argc == 4);
      if (what == "listmode" && (argc == 3 || argc == 4))
        return check_listmode(argv[2], argc == 4 ? std::atoi(argv[3]) : -1);
      if (what == "norm" && argc == 3)
        return check_norm(argv[2]);
      const std::string mode = argc == 4 ? argv[3] : "";
      if (what == "read" && argc == 4 && (mode == "direct" || mode == "fallback" || mode == "truncated"))
        return check_read(argv[2], mode);
    }
  catch (const std::exception& e)
    {
      std::cout << what << ": failed: " << e.what() << "\n";
      return 1;
    }
  std::cerr << "usage: " << argv[0]
            << " lors TEMPLATE.hs [reversed] | read DATA.hs direct|fallback|truncated | norm NORM.hs | listmode LIST.l.hdr "
               "[MAX_SEGMENT]\n";
  return 2;
}

// SPDX-License-Identifier: Apache-2.0
// Benchmark helper: listmode data of any size for the Siemens mMR, written in the format of STIR's test-pack listmode
// file (ECAT8 32-bit "PETLINK" words, which STIR reads with CListModeDataECAT8_32bit), drawn from expected counts.
//
// usage: starproj_make_listmode EXPECTED.hs HEADER.l.hdr OUTPUT NUM_EVENTS [SEED]
//   EXPECTED.hs  expected counts on the mMR (non-TOF, any span and segments: e.g. a phantom's forward projection)
//   HEADER.l.hdr an ECAT8 32-bit listmode header of the mMR (STIR's recon_test_pack/PET_ACQ_small.l.hdr.STIR): its
//                scanner and sinogram layout; OUTPUT.l.hdr is a copy naming OUTPUT.l and the new number of words
//   NUM_EVENTS   the mean number of prompts: bin b gets Poisson(NUM_EVENTS * v_b / sum v) of them (starproj's
//                sproj_poisson, one stream per bin from SEED, default 1)
// Each prompt gets one of its bin's detector pairs (a compressed bin has several; picked by a hash of the event's
// index), is written as the offset of that pair's bin in the listmode's uncompressed sinogram (segments 0, -1, +1, ...,
// then axial position, view, tangential position), and the prompts are shuffled; a time mark follows every 1000
// prompts (1 ms apart). The file is then read back by STIR: the number of prompts, and the bins of the first events
// in EXPECTED's geometry, must be those written (exit status 1 otherwise).

#include "stir/Bin.h"
#include "stir/DetectionPositionPair.h"
#include "stir/ProjData.h"
#include "stir/ProjDataInfoCylindricalNoArcCorr.h"
#include "stir/SegmentByView.h"
#include "stir/Succeeded.h"
#include "stir/IO/read_from_file.h"
#include "stir/IO/stir_ecat_common.h"
#include "stir/listmode/CListModeData.h"
#include "stir/listmode/CListRecord.h"

#include <starproj_recon.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>
#ifdef _OPENMP
#  include <omp.h>
#endif

using namespace stir;

namespace
{
uint64_t
mix(uint64_t z) // splitmix64's finaliser
{
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

double
seconds_since(std::chrono::steady_clock::time_point t)
{
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// the bins of a projection data set, numbered [segment][view][axial][tangential]
struct BinNumbering
{
  const ProjDataInfo& pdi;
  std::vector<int64_t> first; // per segment
  explicit BinNumbering(const ProjDataInfo& p)
      : pdi(p)
  {
    int64_t n = 0;
    for (int s = p.get_min_segment_num(); s <= p.get_max_segment_num(); ++s)
      {
        first.push_back(n);
        n += int64_t(p.get_num_views()) * p.get_num_axial_poss(s) * p.get_num_tangential_poss();
      }
    first.push_back(n);
  }
  int64_t size() const { return first.back(); }
  Bin bin(int64_t i) const
  {
    int k = 0;
    while (first[k + 1] <= i)
      ++k;
    const int s = pdi.get_min_segment_num() + k;
    int64_t r = i - first[k];
    const int nt = pdi.get_num_tangential_poss(), na = pdi.get_num_axial_poss(s);
    const int t = int(r % nt);
    r /= nt;
    const int a = int(r % na);
    const int v = int(r / na);
    return Bin(s, pdi.get_min_view_num() + v, pdi.get_min_axial_pos_num(s) + a, pdi.get_min_tangential_pos_num() + t);
  }
};
} // namespace

int
main(int argc, char** argv)
{
  if (argc < 5 || argc > 6)
    {
      std::fprintf(stderr, "usage: %s EXPECTED.hs HEADER.l.hdr OUTPUT NUM_EVENTS [SEED]\n", argv[0]);
      return 2;
    }
  const std::string output = argv[3];
  const double num_events = std::atof(argv[4]);
  const uint64_t seed = argc > 5 ? std::strtoull(argv[5], nullptr, 10) : 1;
  if (!(num_events > 0) || num_events > 2e9)
    {
      std::fprintf(stderr, "starproj_make_listmode: NUM_EVENTS must be in 1 .. 2e9\n");
      return 2;
    }
  try
    {
      const auto t0 = std::chrono::steady_clock::now();
      shared_ptr<ProjData> expected = ProjData::read_from_file(argv[1]);
      const auto* pdi = dynamic_cast<const ProjDataInfoCylindricalNoArcCorr*>(expected->get_proj_data_info_sptr().get());
      if (!pdi || pdi->is_tof_data())
        {
          std::fprintf(stderr, "starproj_make_listmode: EXPECTED must be non-TOF cylindrical data without arc correction\n");
          return 1;
        }
      // the listmode file's own layout, from the header given (STIR's reader of it)
      shared_ptr<CListModeData> model = read_from_file<CListModeData>(argv[2]);
      const auto* lm_pdi = dynamic_cast<const ProjDataInfoCylindricalNoArcCorr*>(model->get_proj_data_info_sptr().get());
      if (!lm_pdi || lm_pdi->get_max_ring_difference(0) != lm_pdi->get_min_ring_difference(0))
        {
          std::fprintf(stderr, "starproj_make_listmode: HEADER must describe uncompressed (span 1) listmode data\n");
          return 1;
        }
      if (*pdi->get_scanner_sptr() != *lm_pdi->get_scanner_sptr())
        {
          std::fprintf(stderr, "starproj_make_listmode: EXPECTED and HEADER are of different scanners\n");
          return 1;
        }

      // the counts: Poisson draws of the scaled expected counts
      const BinNumbering numbering(*pdi);
      const int64_t num_bins = numbering.size();
      std::vector<float> counts(num_bins);
      double total = 0;
      for (int s = pdi->get_min_segment_num(); s <= pdi->get_max_segment_num(); ++s)
        {
          const SegmentByView<float> seg = expected->get_segment_by_view(s);
          float* out = &counts[numbering.first[s - pdi->get_min_segment_num()]];
          for (auto v = seg.begin_all_const(); v != seg.end_all_const(); ++v, ++out)
            {
              *out = std::max(*v, 0.F);
              total += *out;
            }
        }
      if (!(total > 0))
        {
          std::fprintf(stderr, "starproj_make_listmode: the expected counts are all 0\n");
          return 1;
        }
      const float scale = float(num_events / total);
      for (float& c : counts)
        c *= scale;
      if (sproj_poisson(counts.data(), counts.data(), num_bins, seed, 0) != SPROJ_OK)
        {
          std::fprintf(stderr, "starproj_make_listmode: sproj_poisson: %s\n", sproj_last_error());
          return 1;
        }
      std::vector<int64_t> events;
      events.reserve(std::size_t(num_events * 1.01) + 1000);
      for (int64_t b = 0; b < num_bins; ++b)
        for (int c = 0; c < int(counts[b]); ++c)
          events.push_back(b);
      std::vector<float>().swap(counts);
      const int64_t n = int64_t(events.size());
      for (int64_t i = n - 1; i > 0; --i) // Fisher-Yates, one splitmix64 value per place
        std::swap(events[i], events[mix(seed ^ mix(uint64_t(i))) % uint64_t(i + 1)]);
      std::printf("starproj_make_listmode: %lld prompts drawn from %lld bins in %.1f s\n", (long long)n, (long long)num_bins,
                  seconds_since(t0));

      // each prompt as a PETLINK word: offset of its uncompressed bin, the prompt bit (bit 30 set), type 0
      const std::vector<int> sequence = ecat::find_segment_sequence(*lm_pdi);
      std::vector<int64_t> segment_first_sinogram(lm_pdi->get_max_segment_num() - lm_pdi->get_min_segment_num() + 1);
      {
        int64_t z = 0;
        for (int s : sequence)
          {
            segment_first_sinogram[s - lm_pdi->get_min_segment_num()] = z;
            z += lm_pdi->get_num_axial_poss(s);
          }
      }
      const int64_t num_views = lm_pdi->get_num_views(), num_tang = lm_pdi->get_num_tangential_poss();
      std::vector<uint32_t> words(n);
      int failed = 0;
#ifdef _OPENMP
#  pragma omp parallel for schedule(dynamic, 65536) reduction(+ : failed)
#endif
      for (int64_t e = 0; e < n; ++e)
        {
          std::vector<DetectionPositionPair<>> pairs;
          pdi->get_all_det_pos_pairs_for_bin(pairs, numbering.bin(events[e]));
          Bin u;
          if (pairs.empty()
              || lm_pdi->get_bin_for_det_pos_pair(u, pairs[mix(seed + 7 + uint64_t(e)) % pairs.size()]) != Succeeded::yes)
            {
              ++failed;
              continue;
            }
          const int64_t z = segment_first_sinogram[u.segment_num() - lm_pdi->get_min_segment_num()] + u.axial_pos_num()
                            - lm_pdi->get_min_axial_pos_num(u.segment_num());
          const int64_t offset = (z * num_views + (u.view_num() - lm_pdi->get_min_view_num())) * num_tang
                                 + (u.tangential_pos_num() + num_tang / 2);
          words[e] = uint32_t(offset) | (1u << 30);
        }
      if (failed)
        {
          std::fprintf(stderr, "starproj_make_listmode: %d events have no detector pair in the listmode's sinogram\n", failed);
          return 1;
        }
      // the file: prompts, a time mark (type bit 31, milliseconds in bits 0-28) after every 1000
      const std::string data_name = output + ".l";
      {
        std::ofstream out(data_name, std::ios::binary);
        uint32_t ms = 0;
        for (int64_t e = 0; e < n; ++e)
          {
            out.write(reinterpret_cast<const char*>(&words[e]), 4);
            if (e % 1000 == 999)
              {
                const uint32_t tick = (1u << 31) | ++ms;
                out.write(reinterpret_cast<const char*>(&tick), 4);
              }
          }
        if (!out)
          {
            std::fprintf(stderr, "starproj_make_listmode: could not write %s\n", data_name.c_str());
            return 1;
          }
      }
      const int64_t num_words = n + n / 1000;
      {
        std::ifstream in(argv[2]);
        std::ofstream out(output + ".l.hdr");
        std::string line;
        const std::string base = data_name.substr(data_name.find_last_of('/') + 1);
        while (std::getline(in, line))
          {
            if (line.compare(0, 17, "name of data file") == 0)
              line = "name of data file:=" + base;
            else if (line.find("total listmode word counts") != std::string::npos)
              line = "%total listmode word counts:=" + std::to_string(num_words);
            out << line << '\n';
          }
        if (!out)
          {
            std::fprintf(stderr, "starproj_make_listmode: could not write %s.l.hdr\n", output.c_str());
            return 1;
          }
      }
      std::vector<uint32_t>().swap(words);

      // read back by STIR: the prompts' number, and the first ones' bins in EXPECTED's geometry
      shared_ptr<CListModeData> written = read_from_file<CListModeData>(output + ".l.hdr");
      shared_ptr<CListRecord> record = written->get_empty_record_sptr();
      int64_t prompts = 0, mismatched = 0;
      while (written->get_next_record(*record) == Succeeded::yes)
        {
          if (!record->is_event() || !record->event().is_prompt())
            continue;
          if (prompts < 100000)
            {
              Bin b;
              b.set_bin_value(1.F);
              record->event().get_bin(b, *pdi);
              const Bin want = numbering.bin(events[prompts]);
              if (b.get_bin_value() <= 0 || b.segment_num() != want.segment_num() || b.view_num() != want.view_num()
                  || b.axial_pos_num() != want.axial_pos_num() || b.tangential_pos_num() != want.tangential_pos_num())
                ++mismatched;
            }
          ++prompts;
        }
      std::printf("starproj_make_listmode: %s.l.hdr: %lld words, %lld prompts read back by STIR, %lld of the first %lld in "
                  "another bin than drawn (%.1f s)\n",
                  output.c_str(), (long long)num_words, (long long)prompts, (long long)mismatched,
                  (long long)std::min<int64_t>(n, 100000), seconds_since(t0));
      return prompts == n && mismatched == 0 ? 0 : 1;
    }
  catch (const std::exception& e)
    {
      std::fprintf(stderr, "starproj_make_listmode: %s\n", e.what());
      return 1;
    }
}

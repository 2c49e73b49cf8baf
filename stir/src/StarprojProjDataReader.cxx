// SPDX-License-Identifier: Apache-2.0
// Projection data read into starproj's arrays: straight from a ProjDataFromStream's stream, else through STIR's
// get_segment_by_view (StarprojProjDataReader.h).

#include "stir_starproj/StarprojProjDataReader.h"
#include "stir_starproj/StarprojObjectiveOnDevices.h"
#include "stir_starproj/StarprojRuntime.h"

#include "stir/ByteOrder.h"
#include "stir/NumericType.h"
#include "stir/ProjData.h"
#include "stir/ProjDataFromStream.h"
#include "stir/ProjDataInfo.h"
#include "stir/RelatedViewgrams.h"
#include "stir/SegmentByView.h"
#include "stir/ViewgramIndices.h"
#include "stir/error.h"
#include "stir/recon_buildblock/BinNormalisation.h"
#include "stir/recon_buildblock/BinNormalisationFromProjData.h"
#include "stir/recon_buildblock/ChainedBinNormalisation.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <typeinfo>
#include <istream>
#include <memory>

START_NAMESPACE_STIR

namespace
{
// ProjDataFromStream keeps its stream protected. A class derived from it may name that member, and the member pointer
// so formed applies to any ProjDataFromStream: the set-up reads the stream STIR opened, as STIR itself would.
struct StreamOf : ProjDataFromStream
{
  static std::iostream* get(const ProjDataFromStream& data) { return (data.*(&StreamOf::sino_stream)).get(); }
};

bool
by_view(ProjDataFromStream::StorageOrder order)
{
  return order == ProjDataFromStream::Segment_View_AxialPos_TangPos
         || order == ProjDataFromStream::Timing_Segment_View_AxialPos_TangPos;
}

bool
by_sinogram(ProjDataFromStream::StorageOrder order)
{
  return order == ProjDataFromStream::Segment_AxialPos_View_TangPos
         || order == ProjDataFromStream::Timing_Segment_AxialPos_View_TangPos;
}

//! values from which a copy is worth a parallel region
const int64_t parallel_values = int64_t(1) << 20;

inline float
converted(float raw, bool swap, float scale)
{
  if (swap)
    {
      uint32_t bits;
      std::memcpy(&bits, &raw, sizeof bits);
      bits = __builtin_bswap32(bits);
      std::memcpy(&raw, &bits, sizeof bits);
    }
  // STIR's get_segment_by_view multiplies by the scale factor (segment *= scale_factor), 1 included
  return raw * scale;
}
} // namespace

StarprojProjDataReader::StarprojProjDataReader(const ProjData& data, const std::string& what)
    : _data(data),
      _what(what)
{
  _pdfs = dynamic_cast<const ProjDataFromStream*>(&data);
  if (!_pdfs)
    {
      _why_not = "not read from a stream (ProjDataFromStream)";
      return;
    }
  if (!(_pdfs->get_data_type_in_stream() == NumericType(NumericType::FLOAT))
      || _pdfs->get_data_type_in_stream().size_in_bytes() != sizeof(float))
    _why_not = "its numbers are not 4-byte floats";
  else if (!by_view(_pdfs->get_storage_order()) && !by_sinogram(_pdfs->get_storage_order()))
    _why_not = "its storage order is not one of STIR's four";
  else if (!StreamOf::get(*_pdfs))
    _why_not = "it has no stream";
  else
    _stream = StreamOf::get(*_pdfs);
}

int
StarprojProjDataReader::values_per_lor() const
{
  return _data.get_proj_data_info_sptr()->get_num_tof_poss();
}

bool
StarprojProjDataReader::reads(const ProjData& data) const
{
  if (&data == &_data)
    return true;
  const ProjDataFromStream* pdfs = dynamic_cast<const ProjDataFromStream*>(&data);
  return _stream && pdfs && StreamOf::get(*pdfs) == _stream;
}

bool
StarprojProjDataReader::shares_source_with(const StarprojProjDataReader& other) const
{
  return reads(other._data) || other.reads(_data);
}

bool
StarprojProjDataReader::covers(const ProjDataInfo& layout, std::string& why) const
{
  const ProjDataInfo& have = *_data.get_proj_data_info_sptr();
  if (have.get_min_view_num() != layout.get_min_view_num() || have.get_num_views() != layout.get_num_views())
    why = "views " + std::to_string(have.get_min_view_num()) + " .. " + std::to_string(have.get_max_view_num()) + ", not "
          + std::to_string(layout.get_min_view_num()) + " .. " + std::to_string(layout.get_max_view_num());
  else if (have.get_min_tangential_pos_num() != layout.get_min_tangential_pos_num()
           || have.get_num_tangential_poss() != layout.get_num_tangential_poss())
    why = "tangential positions " + std::to_string(have.get_min_tangential_pos_num()) + " .. "
          + std::to_string(have.get_max_tangential_pos_num()) + ", not " + std::to_string(layout.get_min_tangential_pos_num())
          + " .. " + std::to_string(layout.get_max_tangential_pos_num());
  else if (have.get_num_tof_poss() > 1
           && (have.get_min_tof_pos_num() != layout.get_min_tof_pos_num()
               || have.get_num_tof_poss() != layout.get_num_tof_poss()))
    why = "other TOF positions";
  else
    for (int seg = layout.get_min_segment_num(); seg <= layout.get_max_segment_num() && why.empty(); ++seg)
      if (seg < have.get_min_segment_num() || seg > have.get_max_segment_num())
        why = "no segment " + std::to_string(seg);
      else if (have.get_min_axial_pos_num(seg) != layout.get_min_axial_pos_num(seg)
               || have.get_max_axial_pos_num(seg) != layout.get_max_axial_pos_num(seg))
        why = "other axial positions in segment " + std::to_string(seg);
  return why.empty();
}

void
StarprojProjDataReader::read(const ProjDataInfo& layout, const std::vector<int64_t>& first_lor, float* out, int threads) const
{
  std::string why;
  if (!covers(layout, why))
    error("Starproj: " + _what + " do not match the projection data's layout: " + why);
  if (first_lor.size() != std::size_t(layout.get_num_segments()) * layout.get_num_views())
    error("Starproj: the LOR layout given for " + _what + " does not have one start per viewgram");
  if (direct())
    read_direct(layout, first_lor, out, threads);
  else
    read_by_stir(layout, first_lor, out, threads);
}

void
StarprojProjDataReader::read_direct(const ProjDataInfo& layout,
                                    const std::vector<int64_t>& first_lor,
                                    float* out,
                                    int threads) const
{
  const ProjDataFromStream& pdfs = *_pdfs;
  const ProjDataInfo& file = *pdfs.get_proj_data_info_sptr();
  const bool view_order = by_view(pdfs.get_storage_order());
  const bool swap = !pdfs.get_byte_order_in_stream().is_native_order();
  const float scale = pdfs.get_scale_factor();
  const int num_views = file.get_num_views(), num_tang = file.get_num_tangential_poss();
  const int num_bins = values_per_lor();
  const int num_threads = starproj_threads_or_default(threads);
  const std::vector<int> sequence = pdfs.get_segment_sequence_in_stream();
  // small blocks on one thread: a parallel region costs more than their copy, and far more on a loaded machine
  std::vector<int> timing = pdfs.get_timing_poss_sequence_in_stream();
  if (num_bins == 1)
    timing.assign(1, file.get_min_tof_pos_num());
  // the bytes of one segment, and of all segments (one TOF position's data: STIR's offset_3d_data)
  auto segment_bytes = [&](int seg) { return std::streamoff(file.get_num_axial_poss(seg)) * num_views * num_tang * 4; };
  std::streamoff all_segments = 0;
  for (int seg = file.get_min_segment_num(); seg <= file.get_max_segment_num(); ++seg)
    all_segments += segment_bytes(seg);

  // the blocks to read: (TOF position, segment) in the order they lie in the stream
  struct Block
  {
    int seg, bin;
    std::streamoff start, bytes;
  };
  std::vector<Block> blocks;
  for (std::size_t k = 0; k < timing.size(); ++k)
    {
      std::streamoff start = pdfs.get_offset_in_stream() + (num_bins > 1 ? std::streamoff(k) * all_segments : 0);
      for (const int seg : sequence)
        {
          if (seg >= layout.get_min_segment_num() && seg <= layout.get_max_segment_num())
            blocks.push_back({ seg, timing[k] - file.get_min_tof_pos_num(), start, segment_bytes(seg) });
          start += segment_bytes(seg);
        }
    }
  std::streamoff needed = 0;
  for (const Block& b : blocks)
    needed = std::max(needed, b.start + b.bytes);
  std::iostream& s = *_stream;
  s.clear();
  s.seekg(0, std::ios::end);
  const std::streamoff size = s.tellg();
  if (!s || size < needed)
    error("Starproj: " + _what + ": the data file holds " + std::to_string(size) + " bytes where the description needs "
          + std::to_string(needed) + " (is it truncated?)");
  std::sort(blocks.begin(), blocks.end(), [](const Block& a, const Block& b) { return a.start < b.start; });

  std::vector<float> buffer;
  for (const Block& b : blocks)
    {
      const int num_axial = file.get_num_axial_poss(b.seg);
      const int64_t rows = int64_t(num_axial) * num_views;
      const int64_t* starts = &first_lor[std::size_t(b.seg - layout.get_min_segment_num()) * num_views];
      // without TOF, a file stored view by view holds each viewgram as one run, as the array does: each read
      // straight into its LORs (a segment's viewgrams follow each other in the file, not in the array, whose LORs lie
      // view by view)
      const bool in_place = view_order && num_bins == 1;
      if (!in_place)
        buffer.resize(std::size_t(rows) * num_tang);
      s.seekg(b.start);
      if (in_place)
        {
          const std::streamoff viewgram_bytes = std::streamoff(num_axial) * num_tang * 4;
          for (int v = 0; v < num_views && s; ++v)
            s.read(reinterpret_cast<char*>(out + starts[v]), viewgram_bytes);
        }
      else
        s.read(reinterpret_cast<char*>(buffer.data()), b.bytes);
      if (!s)
        error("Starproj: " + _what + ": reading segment " + std::to_string(b.seg) + " failed (" + std::to_string(b.bytes)
              + " bytes at " + std::to_string(b.start) + ")");
      const bool parallel = rows * num_tang >= parallel_values;
      if (in_place)
        {
          if (swap || scale != 1.F)
            {
#ifdef _OPENMP
#  pragma omp parallel for schedule(static) num_threads(num_threads) if (parallel)
#endif
              for (int64_t r = 0; r < rows; ++r)
                {
                  float* row = out + starts[r / num_axial] + (r % num_axial) * num_tang;
                  for (int t = 0; t < num_tang; ++t)
                    row[t] = converted(row[t], swap, scale);
                }
            }
          continue;
        }
        // rows of tangential positions, spread to their LORs: [view][axial] or [axial][view] in the file
#ifdef _OPENMP
#  pragma omp parallel for schedule(static) num_threads(num_threads) if (parallel)
#endif
      for (int64_t r = 0; r < rows; ++r)
        {
          const int v = view_order ? int(r / num_axial) : int(r % num_views);
          const int a = view_order ? int(r % num_axial) : int(r / num_views);
          const float* from = &buffer[std::size_t(r) * num_tang];
          float* to = out + (starts[v] + int64_t(a) * num_tang) * num_bins + b.bin;
          for (int t = 0; t < num_tang; ++t)
            to[int64_t(t) * num_bins] = converted(from[t], swap, scale);
        }
    }
}

void
StarprojProjDataReader::read_by_stir(const ProjDataInfo& layout,
                                     const std::vector<int64_t>& first_lor,
                                     float* out,
                                     int threads) const
{
  const ProjDataInfo& have = *_data.get_proj_data_info_sptr();
  const int num_views = layout.get_num_views(), num_tang = layout.get_num_tangential_poss();
  const int min_view = layout.get_min_view_num(), min_tang = layout.get_min_tangential_pos_num();
  const int num_bins = values_per_lor();
  const int num_threads = starproj_threads_or_default(threads);
  for (int seg = layout.get_min_segment_num(); seg <= layout.get_max_segment_num(); ++seg)
    for (int bin = 0; bin < num_bins; ++bin)
      {
        const SegmentByView<float> segment = _data.get_segment_by_view(seg, have.get_min_tof_pos_num() + bin);
        const int min_axial = layout.get_min_axial_pos_num(seg), num_axial = layout.get_num_axial_poss(seg);
        const int64_t* starts = &first_lor[std::size_t(seg - layout.get_min_segment_num()) * num_views];
        const bool parallel = int64_t(num_views) * num_axial * num_tang >= parallel_values;
#ifdef _OPENMP
#  pragma omp parallel for schedule(static) num_threads(num_threads) if (parallel)
#endif
        for (int v = 0; v < num_views; ++v)
          for (int a = 0; a < num_axial; ++a)
            {
              float* to = out + (starts[v] + int64_t(a) * num_tang) * num_bins + bin;
              for (int t = 0; t < num_tang; ++t)
                to[int64_t(t) * num_bins] = segment[min_view + v][min_axial + a][min_tang + t];
            }
      }
}

std::string
starproj_normalisation_factors(const BinNormalisation& normalisation,
                               const ProjDataInfo& data_info,
                               const ProjDataInfo& layout,
                               const std::vector<int64_t>& first_lor,
                               float* m,
                               int threads,
                               bool direct)
{
  const int num_threads = starproj_threads_or_default(threads);
  const int num_views = layout.get_num_views(), num_tang = layout.get_num_tangential_poss();
  const int num_chunks = static_cast<int>(first_lor.size());
  // f(m[lor]) for every LOR of layout, a viewgram at a time on the host's cores
  auto each_lor = [&](auto f) {
#ifdef _OPENMP
#  pragma omp parallel for schedule(static) num_threads(num_threads)
#endif
    for (int c = 0; c < num_chunks; ++c)
      {
        const int64_t n = int64_t(layout.get_num_axial_poss(layout.get_min_segment_num() + c / num_views)) * num_tang;
        for (int64_t i = first_lor[c]; i < first_lor[c] + n; ++i)
          f(m[i]);
      }
  };
  if (normalisation.is_trivial())
    {
      each_lor([](float& x) { x = 1.F; });
      return "trivial";
    }
  // exactly this class: a subclass may compute its factors otherwise
  if (direct && typeid(normalisation) == typeid(BinNormalisationFromProjData))
    {
      const shared_ptr<ProjData> factors
          = static_cast<const BinNormalisationFromProjData&>(normalisation).get_norm_proj_data_sptr();
      std::string why;
      if (factors)
        {
          const StarprojProjDataReader reader(*factors, "the normalisation's projection data");
          if (reader.direct() && reader.values_per_lor() == 1 && reader.covers(layout, why))
            {
              reader.read(layout, first_lor, m, threads);
              // undo() divides viewgrams of ones by these values. The division is STIR's own (RelatedViewgrams'
              // operator/=, compiled in STIR's library: with -ffast-math its vectorised division is a reciprocal and a
              // Newton step, not a division): the factors are undo()'s to the bit, made a viewgram at a time on every
              // core from the values read
              const ProjDataInfo& info = *factors->get_proj_data_info_sptr();
              const shared_ptr<DataSymmetriesForViewSegmentNumbers> trivial = starproj_trivial_viewgram_symmetries();
              const int min_tang = layout.get_min_tangential_pos_num();
#ifdef _OPENMP
#  pragma omp parallel for schedule(dynamic) num_threads(num_threads)
#endif
              for (int c = 0; c < num_chunks; ++c)
                {
                  const int seg = layout.get_min_segment_num() + c / num_views;
                  const int view = layout.get_min_view_num() + c % num_views;
                  const int min_axial = layout.get_min_axial_pos_num(seg), num_axial = layout.get_num_axial_poss(seg);
                  RelatedViewgrams<float> ones = info.get_empty_related_viewgrams(ViewgramIndices(view, seg), trivial);
                  RelatedViewgrams<float> values = ones;
                  ones.fill(1.F);
                  Viewgram<float>& vg = *values.begin();
                  float* row = m + first_lor[c];
                  for (int a = 0; a < num_axial; ++a)
                    for (int t = 0; t < num_tang; ++t)
                      vg[min_axial + a][min_tang + t] = row[int64_t(a) * num_tang + t];
                  ones /= values;
                  const Viewgram<float>& quotient = *ones.begin();
                  for (int a = 0; a < num_axial; ++a)
                    for (int t = 0; t < num_tang; ++t)
                      row[int64_t(a) * num_tang + t] = quotient[min_axial + a][min_tang + t];
                }
              return "read directly";
            }
        }
    }

  // undo() on viewgrams of ones, one at a time (STIR's normalisations need not be thread-safe); the factor of a LOR's
  // first TOF bin is kept and the others compared with it
  const shared_ptr<DataSymmetriesForViewSegmentNumbers> trivial = starproj_trivial_viewgram_symmetries();
  const int min_tang = layout.get_min_tangential_pos_num();
  bool tof_dependent = false;
  for (int seg = layout.get_min_segment_num(); seg <= layout.get_max_segment_num(); ++seg)
    for (int tof = data_info.get_min_tof_pos_num(); tof <= data_info.get_max_tof_pos_num(); ++tof)
      {
        const int64_t* starts = &first_lor[std::size_t(seg - layout.get_min_segment_num()) * num_views];
        const int min_axial = layout.get_min_axial_pos_num(seg), num_axial = layout.get_num_axial_poss(seg);
        const bool first_bin = tof == data_info.get_min_tof_pos_num();
#ifdef _OPENMP
#  pragma omp parallel for schedule(dynamic) num_threads(num_threads) reduction(|| : tof_dependent)
#endif
        for (int v = 0; v < num_views; ++v)
          {
            const int view = layout.get_min_view_num() + v;
            RelatedViewgrams<float> factors
                = data_info.get_empty_related_viewgrams(ViewgramIndices(view, seg, tof), trivial, false, tof);
            factors.fill(1.F);
#ifdef _OPENMP
#  pragma omp critical(STARPROJ_NORMALISATION)
#endif
            normalisation.undo(factors);
            const Viewgram<float>& vg = *factors.begin();
            for (int a = 0; a < num_axial; ++a)
              for (int t = 0; t < num_tang; ++t)
                {
                  float& to = m[starts[v] + int64_t(a) * num_tang + t];
                  const float f = vg[min_axial + a][min_tang + t];
                  if (first_bin)
                    to = f;
                  else if (std::fabs(f - to) > 1e-6F * std::fabs(to))
                    tof_dependent = true;
                }
          }
      }
  if (tof_dependent)
    error("Starproj: the normalisation differs between TOF bins of one LOR; starproj's forward model has one "
          "multiplicative factor per LOR");
  return "undo() per viewgram";
}

bool
starproj_normalisation_reads_apart(const BinNormalisation& normalisation, const StarprojProjDataReader& reader)
{
  if (const auto* chained = dynamic_cast<const ChainedBinNormalisation*>(&normalisation))
    {
      const shared_ptr<BinNormalisation> first = chained->get_first_norm(), second = chained->get_second_norm();
      return (!first || starproj_normalisation_reads_apart(*first, reader))
             && (!second || starproj_normalisation_reads_apart(*second, reader));
    }
  if (const auto* from_data = dynamic_cast<const BinNormalisationFromProjData*>(&normalisation))
    {
      const shared_ptr<ProjData> factors = from_data->get_norm_proj_data_sptr();
      return !factors || !reader.reads(*factors);
    }
  return true;
}

END_NAMESPACE_STIR

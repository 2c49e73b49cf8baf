// SPDX-License-Identifier: Apache-2.0
/*
  Projection data (measured counts, a normalisation, an additive term) read into starproj's arrays in its LOR order
  ([segment][view][axial position][tangential position], TOF bins innermost), for the objective functions' set-up.

  Projection data that STIR reads from a plain stream (ProjDataFromStream: Interfile's .hs/.s, by view or by
  sinogram, with or without TOF, floats of either byte order) are read straight from that stream: each segment (and
  TOF position) is one read of consecutive bytes, which goes into the array itself when the file's order is the
  array's, and is otherwise spread over the array by the host's cores. Other projection data (in memory, other file
  types, other number types) go through STIR's get_segment_by_view, whose values are copied on those cores.
*/
#ifndef STIR_STARPROJ_STARPROJPROJDATAREADER_H
#define STIR_STARPROJ_STARPROJPROJDATAREADER_H

#include "stir/common.h"

#include <cstdint>
#include <string>
#include <vector>

START_NAMESPACE_STIR

class BinNormalisation;
class ProjData;
class ProjDataInfo;
class ProjDataFromStream;

class StarprojProjDataReader
{
public:
  //! data: the projection data (kept by the caller while this reader is used); what: how messages name them (for
  //! instance "the input file prompts.hs")
  StarprojProjDataReader(const ProjData& data, const std::string& what);

  //! true when the data are read from their stream directly; else why_not() says why STIR's interface is used
  bool direct() const { return _stream != nullptr; }
  const std::string& why_not() const { return _why_not; }

  //! true when the data hold every segment of layout with layout's views, axial and tangential positions (and its
  //! TOF positions, when the data have TOF positions); else why says what differs
  bool covers(const ProjDataInfo& layout, std::string& why) const;

  //! Reads the segments of layout into out[lor * values_per_lor() + timing position offset], lor =
  //! first_lor[(segment - layout's min segment) * views + view offset] + axial offset * tangential positions +
  //! tangential offset (starproj's order, as StarprojGeometry lays out LORs). threads: OpenMP threads for the copies
  //! (0: OpenMP's default). A STIR error naming the data when they do not cover layout, or when their file holds fewer
  //! bytes than their description needs (a truncated file); out is then partly written.
  void read(const ProjDataInfo& layout, const std::vector<int64_t>& first_lor, float* out, int threads) const;

  //! values read() writes per LOR: the data's TOF positions (1 without TOF)
  int values_per_lor() const;

  //! true when this reader and other read the same projection data or the same stream: two such reads may not run at
  //! the same time (each seeks the stream)
  bool shares_source_with(const StarprojProjDataReader& other) const;
  //! true when this reader reads data (the same object, or data that read from this reader's stream)
  bool reads(const ProjData& data) const;

private:
  const ProjData& _data;
  std::string _what;
  const ProjDataFromStream* _pdfs = nullptr;
  std::iostream* _stream = nullptr;
  std::string _why_not;

  void read_direct(const ProjDataInfo& layout, const std::vector<int64_t>& first_lor, float* out, int threads) const;
  void read_by_stir(const ProjDataInfo& layout, const std::vector<int64_t>& first_lor, float* out, int threads) const;
};

//! The factor STIR's normalisation gives each LOR of layout (its undo() of ones, which the forward model multiplies by)
//! into m[lor], lor as in StarprojProjDataReader::read. A BinNormalisationFromProjData whose projection data are read
//! directly (StarprojProjDataReader) and have one value per LOR gives 1 / its value, as its undo() divides by it;
//! any other normalisation undo() on viewgrams of ones of data_info (the projection data it was set up for), one at a
//! time as STIR calls it. A STIR error when the factor differs between the TOF bins of a LOR (starproj's forward model
//! has one per LOR). direct false: always undo() (to compare). Returns how the factors were made: "trivial", "read
//! directly" or "undo() per viewgram".
std::string starproj_normalisation_factors(const BinNormalisation& normalisation,
                                           const ProjDataInfo& data_info,
                                           const ProjDataInfo& layout,
                                           const std::vector<int64_t>& first_lor,
                                           float* m,
                                           int threads,
                                           bool direct = true);

//! false when normalisation's undo() may read from reader's source (a BinNormalisationFromProjData on the same
//! projection data or stream, also inside a ChainedBinNormalisation): then the two may not read at the same time
bool starproj_normalisation_reads_apart(const BinNormalisation& normalisation, const StarprojProjDataReader& reader);

END_NAMESPACE_STIR

#endif

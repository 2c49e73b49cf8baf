// SPDX-License-Identifier: Apache-2.0
#ifndef STIR_STARPROJ_PROJECTORBYBINPAIRTIMED_H
#define STIR_STARPROJ_PROJECTORBYBINPAIRTIMED_H

// "Timed": a projector pair that wraps any other pair (given in its parameters) and measures the wall time spent
// inside the inner pair's projectors. Every call goes to the inner pair's projectors through their public API.

#include "stir/RegisteredParsingObject.h"
#include "stir/recon_buildblock/BackProjectorByBin.h"
#include "stir/recon_buildblock/ForwardProjectorByBin.h"
#include "stir/recon_buildblock/ProjectorByBinPair.h"

#include <string>

START_NAMESPACE_STIR

//! What the Timed projectors measured in this process (all Timed pairs together).
struct TimedProjectorTotals
{
  enum Kind
  {
    set_up,    //!< the inner pair's set_up
    set_input, //!< forward projector: set_input (the image to project)
    forward,   //!< forward projection of related viewgrams (or of a whole ProjData)
    start,     //!< back projector: start_accumulating_in_new_target
    back,      //!< back projection of related viewgrams (or of a whole ProjData)
    output,    //!< back projector: get_output
    num_kinds
  };
  long calls[num_kinds] = {};
  //! sum of the calls' wall times (calls from several threads at once each count in full)
  double summed_s[num_kinds] = {};
  //! wall time during which at least one call of this kind was running
  double busy_s[num_kinds] = {};
  //! wall time during which at least one call of any kind was running (no time counted twice)
  double any_busy_s = 0;
  static const char* name(int kind);
  std::string summary() const;
};

//! the totals so far (up to now for calls still running)
TimedProjectorTotals timed_projector_totals();

//! Forward projector that times the calls of another one.
class ForwardProjectorByBinTimed : public ForwardProjectorByBin
{
public:
  explicit ForwardProjectorByBinTimed(const shared_ptr<ForwardProjectorByBin>& inner, bool set_up_inner = true);
  std::string get_registered_name() const override { return "Timed"; }
  void set_up(const shared_ptr<const ProjDataInfo>& proj_data_info_sptr,
              const shared_ptr<const DiscretisedDensity<3, float>>& density_info_sptr) override;
  const DataSymmetriesForViewSegmentNumbers* get_symmetries_used() const override;
  void set_input(const DiscretisedDensity<3, float>&) override;
  void forward_project(ProjData&, int subset_num = 0, int num_subsets = 1, bool zero = true) override;

protected:
  void actual_forward_project(RelatedViewgrams<float>&, const int min_axial_pos_num, const int max_axial_pos_num,
                              const int min_tangential_pos_num, const int max_tangential_pos_num) override;

private:
  shared_ptr<ForwardProjectorByBin> _inner;
  bool _set_up_inner;
};

//! Back projector that times the calls of another one.
class BackProjectorByBinTimed : public BackProjectorByBin
{
public:
  explicit BackProjectorByBinTimed(const shared_ptr<BackProjectorByBin>& inner, bool set_up_inner = true);
  std::string get_registered_name() const override { return "Timed"; }
  void set_up(const shared_ptr<const ProjDataInfo>& proj_data_info_sptr,
              const shared_ptr<const DiscretisedDensity<3, float>>& density_info_sptr) override;
  const DataSymmetriesForViewSegmentNumbers* get_symmetries_used() const override;
  void back_project(const ProjData&, int subset_num = 0, int num_subsets = 1) override;
  void start_accumulating_in_new_target() override;
  void get_output(DiscretisedDensity<3, float>&) const override;
  BackProjectorByBinTimed* clone() const override;

protected:
  void actual_back_project(const RelatedViewgrams<float>&, const int min_axial_pos_num, const int max_axial_pos_num,
                           const int min_tangential_pos_num, const int max_tangential_pos_num) override;

private:
  shared_ptr<BackProjectorByBin> _inner;
  bool _set_up_inner;
};

//! The pair: `projector pair type := Timed`, the inner pair in `Timed Projector Pair Parameters`.
class ProjectorByBinPairTimed
    : public RegisteredParsingObject<ProjectorByBinPairTimed, ProjectorByBinPair, ProjectorByBinPair>
{
  typedef RegisteredParsingObject<ProjectorByBinPairTimed, ProjectorByBinPair, ProjectorByBinPair> base_type;

public:
  static const char* const registered_name;

  ProjectorByBinPairTimed();
  //! prints the totals (stir::info) when it goes
  ~ProjectorByBinPairTimed() override;
  //! sets up the inner pair (timed), then the wrappers
  Succeeded set_up(const shared_ptr<const ProjDataInfo>& proj_data_info_sptr,
                   const shared_ptr<const DiscretisedDensity<3, float>>& density_info_sptr) override;

private:
  void set_defaults() override;
  void initialise_keymap() override;
  bool post_processing() override;
  void wrap();
  shared_ptr<ProjectorByBinPair> _inner;
};

END_NAMESPACE_STIR

#endif

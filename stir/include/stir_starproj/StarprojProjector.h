// SPDX-License-Identifier: Apache-2.0
/*
  What the "Starproj" forward and back projectors share: StarprojResident, what a projector keeps registered between
  one set_up and the next (each projector adds its TOF bookkeeping), and StarprojProjector, the class between STIR's
  projector class and each of them: the settings of its .par section, STIR's trivial symmetries, the geometry (shared
  with the other projector when the pair sets them up) and set_up, written once for both.
*/
#ifndef STIR_STARPROJ_STARPROJPROJECTOR_H
#define STIR_STARPROJ_STARPROJPROJECTOR_H

#include "stir/DiscretisedDensity.h"
#include "stir/ProjDataInfo.h"
#include "stir/RegisteredParsingObject.h"
#include "stir/error.h"
#include "stir/recon_buildblock/TrivialDataSymmetriesForBins.h"
#include "stir/shared_ptr.h"
#include "stir_starproj/StarprojGeometry.h"
#include "stir_starproj/StarprojHostMemory.h"
#include "stir_starproj/StarprojImageCopy.h"
#include "stir_starproj/StarprojSettings.h"
#include "stir_starproj/StarprojSupported.h"
#include "stir_starproj/StarprojTimes.h"

#include <starproj.h>

#include <memory>
#include <string>
#include <vector>

START_NAMESPACE_STIR

//! What a projector keeps registered between one set_up and the next: its image buffer (pinned), its projection
//! values (one float per LOR and TOF bin, pinned when at most 2 GB), their starproj objects, and the times of its
//! per-image steps and of its related-viewgrams calls (reported on destruction with verbosity 2, under the name `who`).
struct StarprojResident
{
  std::shared_ptr<StarprojGeometry> geometry;
  StarprojHostBuffer image;
  std::vector<float> values; // [lor] or, for TOF, [lor][tof bin]
  StarprojPinnedRange pinned_values;
  sproj_image* img = nullptr;
  sproj_proj* proj = nullptr;
  StarprojStepTimes times;
  StarprojCallTimes call_times;
  StarprojCopyStats copy_stats;
  int copy_threads = 0; //!< threads of the image copies (0: OpenMP's default)
  int verbosity = 0;

  StarprojResident(const std::shared_ptr<StarprojGeometry>& g, const char* who);
  ~StarprojResident();
  StarprojResident(const StarprojResident&) = delete;
  StarprojResident& operator=(const StarprojResident&) = delete;

private:
  const char* _who;
};

//! The forward or back projector's common part: Base is STIR's ForwardProjectorByBin or BackProjectorByBin, Resident
//! the projector's StarprojResident. A projector derives from it through STIR's RegisteredParsingObject (as its Parent).
template <class Base, class Resident>
class StarprojProjector : public Base
{
public:
  //! who: the class's name in messages; section: its .par section (the start key, "End " + it the stop key)
  StarprojProjector(const char* who, const char* section)
      : _who(who),
        _section(section)
  {}
  //! copies the settings and shares the LOR registration; the resident data are the copy's own
  StarprojProjector(const StarprojProjector& other)
      : Base(other),
        _who(other._who),
        _section(other._section),
        _settings(other._settings),
        _symmetries_sptr(other._symmetries_sptr),
        _geometry(other._geometry)
  {
    if (_geometry)
      make_resident();
  }
  StarprojProjector& operator=(const StarprojProjector&) = delete;
  ~StarprojProjector() override { _resident.reset(); } // before the geometry whose LORs it uses

  //! keeps the geometry while the data and image are described the same (registers it anew otherwise, unless the
  //! pair gave the new one already), makes the resident data for it, and sends the projections to the devices asked for
  void set_up(const shared_ptr<const ProjDataInfo>& proj_data_info_sptr,
              const shared_ptr<const DiscretisedDensity<3, float>>& density_info_sptr) override
  {
    if (!_settings.check())
      error("Starproj: invalid settings");
    // what Starproj does not project stops here, before STIR's set_up, with a message naming it
    starproj_check_supported(*proj_data_info_sptr, *density_info_sptr);
    Base::set_up(proj_data_info_sptr, density_info_sptr);
    _symmetries_sptr.reset(new TrivialDataSymmetriesForBins(proj_data_info_sptr));
    if (!_geometry || !_geometry->matches(*proj_data_info_sptr, *density_info_sptr))
      {
        _resident.reset(); // the old registration goes before the new one is made
        _geometry.reset();
        _geometry = std::make_shared<StarprojGeometry>(proj_data_info_sptr, *density_info_sptr, _settings);
      }
    if (!_resident || _resident->geometry != _geometry)
      make_resident();
    _resident->verbosity = _settings.verbosity;
    _geometry->runtime()->use_devices(_settings.devices, _settings.verbosity);
  }

  const DataSymmetriesForViewSegmentNumbers* get_symmetries_used() const override
  {
    if (!this->_already_set_up)
      error(std::string(_who) + ": set_up has not been called");
    return _symmetries_sptr.get();
  }

  StarprojSettings& settings() { return _settings; }
  //! used by the pair: both projectors share one LOR registration
  void set_geometry(const std::shared_ptr<StarprojGeometry>& geometry) { _geometry = geometry; }

protected:
  void set_defaults() override
  {
    Base::set_defaults();
    _settings = StarprojSettings();
  }
  void initialise_keymap() override
  {
    Base::initialise_keymap(); // the pre or post data processor
    this->parser.add_start_key(_section);
    this->parser.add_stop_key(std::string("End ") + _section);
    _settings.add_keys(this->parser);
  }
  bool post_processing() override { return !_settings.check(); }

  //! the resident data, which exist once set_up has run (else STIR's error: `what` before set_up)
  Resident& resident(const char* what) const
  {
    if (!_resident)
      error(std::string(_who) + ": " + what + " before set_up");
    return *_resident;
  }
  //! STIR's rim truncation of the images (-1: none)
  int rim() const { return _settings.restrict_to_cylindrical_FOV ? _geometry->rim_truncation() : -1; }

  const char* _who;
  const char* _section;
  StarprojSettings _settings;
  shared_ptr<DataSymmetriesForViewSegmentNumbers> _symmetries_sptr;
  std::shared_ptr<StarprojGeometry> _geometry;
  std::unique_ptr<Resident> _resident;

private:
  void make_resident()
  {
    _resident.reset();
    _resident.reset(new Resident(_geometry));
    _resident->verbosity = _settings.verbosity;
  }
};

//! The base class of a "Starproj" projector: STIR's registered class on StarprojProjector.
template <class Derived, class Base, class Resident>
using StarprojRegisteredProjector = RegisteredParsingObject<Derived, Base, StarprojProjector<Base, Resident>>;

END_NAMESPACE_STIR

#endif

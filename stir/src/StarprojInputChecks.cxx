// SPDX-License-Identifier: Apache-2.0
// Checks of the objective functions' inputs before set_up reads them (StarprojInputChecks.h).

#include "stir_starproj/StarprojInputChecks.h"

#include "stir_starproj/StarprojRuntime.h"

#include "stir/ProjData.h"
#include "stir/ProjDataInfo.h"
#include "stir/Viewgram.h"
#include "stir/ViewgramIndices.h"
#include "stir/error.h"

#include <exception>

START_NAMESPACE_STIR

void
starproj_check_readable(const ProjData& proj_data, const char* who, const std::string& key, const std::string& name)
{
  const ProjDataInfo& info = *proj_data.get_proj_data_info_sptr();
  for (int seg = info.get_min_segment_num(); seg <= info.get_max_segment_num(); ++seg)
    for (int tof = info.get_min_tof_pos_num(); tof <= info.get_max_tof_pos_num(); ++tof)
      {
        const int view = info.get_max_view_num();
        try
          {
            proj_data.get_viewgram(ViewgramIndices(view, seg, tof));
          }
        catch (const std::exception& e)
          {
            error(std::string(who) + ": the " + key + " '" + name + "' cannot be read to its end (view " + std::to_string(view)
                  + " of segment " + std::to_string(seg) + ", timing position " + std::to_string(tof) + ": " + starproj_error_text(e.what())
                  + "); is its data file shorter than its header describes?");
          }
      }
}

END_NAMESPACE_STIR

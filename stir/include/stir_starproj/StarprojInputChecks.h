// SPDX-License-Identifier: Apache-2.0
// Checks of the objective functions' inputs made before set_up reads them, so that bad input stops with a message
// naming the file and the problem.
#ifndef STIR_STARPROJ_STARPROJINPUTCHECKS_H
#define STIR_STARPROJ_STARPROJINPUTCHECKS_H

#include "stir/common.h"

#include <string>

START_NAMESPACE_STIR

class ProjData;

//! Reads the last viewgram of every segment and timing position of proj_data: whatever its storage order, these hold
//! the end of each block of the file, so that a data file shorter than its header describes (a truncated copy) stops
//! here with a STIR error naming who, the key and the file (STIR's own read stops with "error reading data" alone,
//! part-way through set_up). Costs one viewgram per segment and timing position.
void starproj_check_readable(const ProjData& proj_data, const char* who, const std::string& key, const std::string& name);

END_NAMESPACE_STIR

#endif

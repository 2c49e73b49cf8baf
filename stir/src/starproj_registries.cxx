// SPDX-License-Identifier: Apache-2.0
// Registers the "Starproj" projectors, the "Timed" pair and the objective functions using Starproj with STIR's
// parsers. STIR's libraries are static and registration is done by these static objects: this file's object must be
// linked into every program (not taken from an archive).

#include "stir_starproj/BackProjectorByBinStarproj.h"
#include "stir_starproj/ForwardProjectorByBinStarproj.h"
#include "stir_starproj/PoissonLogLikelihoodWithLinearModelForMeanAndListModeDataStarproj.h"
#include "stir_starproj/PoissonLogLikelihoodWithLinearModelForMeanAndProjDataStarproj.h"
#include "stir_starproj/ProjectorByBinPairTimed.h"
#include "stir_starproj/ProjectorByBinPairUsingStarproj.h"

START_NAMESPACE_STIR

static ForwardProjectorByBinStarproj::RegisterIt starproj_forward_registration;
static BackProjectorByBinStarproj::RegisterIt starproj_back_registration;
static ProjectorByBinPairUsingStarproj::RegisterIt starproj_pair_registration;
static ProjectorByBinPairTimed::RegisterIt timed_pair_registration;
static PoissonLogLikelihoodWithLinearModelForMeanAndProjDataStarproj::RegisterIt starproj_objective_registration;
static PoissonLogLikelihoodWithLinearModelForMeanAndListModeDataStarproj::RegisterIt starproj_listmode_objective_registration;

END_NAMESPACE_STIR

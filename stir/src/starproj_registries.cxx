// SPDX-License-Identifier: Apache-2.0
// Registers the "Starproj" projectors, the "Timed" pair and the objective functions using Starproj with STIR's
// parsers, through static objects that run when this file's object is loaded: in libstir_starproj when STIR's
// libraries are shared (registering into the registries of STIR's libraries), else linked into every program (never
// taken from an archive) beside STIR's own registries.

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

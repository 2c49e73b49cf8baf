// SPDX-License-Identifier: Apache-2.0
// STIR's programs started by starproj-stir (STARPROJ_STIR_EXIT_ON_ERROR=1): an exception nothing caught ends the
// program with exit status 1 and its message, instead of std::terminate's abort.
//
// stir::error writes its message and throws; STIR's own programs (OSMAPOSL, forward_project, ...) catch nothing, so
// every error of theirs, bad input included, ends in std::terminate: SIGABRT, and a core file where those are on. This
// object runs when libstir_starproj is loaded and, only when the launcher asked for it, installs a terminate handler
// that reports the exception and leaves with _Exit (no static destructors: other threads, StarPU's workers among
// them, may still run, and nothing half-done is written at exit). Any other reason to terminate keeps the handler that
// was there.

#include "stir_starproj/StarprojRuntime.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>

namespace
{

std::terminate_handler previous_handler = nullptr;

[[noreturn]] void
exit_on_uncaught_exception()
{
  if (const std::exception_ptr e = std::current_exception())
    {
      std::string message;
      try
        {
          std::rethrow_exception(e);
        }
      catch (const std::exception& x)
        {
          message = stir::starproj_error_text(x.what());
        }
      catch (...)
        {
          message = "an exception of unknown type";
        }
      std::fflush(stdout);
      std::fprintf(stderr, "\n%s: stopped: %s\n", program_invocation_short_name, message.c_str());
      std::fflush(stderr);
      std::_Exit(EXIT_FAILURE);
    }
  if (previous_handler)
    previous_handler();
  std::abort();
}

struct ExitOnError
{
  ExitOnError()
  {
    const char* on = std::getenv("STARPROJ_STIR_EXIT_ON_ERROR");
    if (on && std::strcmp(on, "1") == 0)
      previous_handler = std::set_terminate(exit_on_uncaught_exception);
  }
};

const ExitOnError exit_on_error;

} // namespace

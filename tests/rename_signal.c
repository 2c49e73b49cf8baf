/* SPDX-License-Identifier: Apache-2.0 */
/* rename_signal.c: a test shim that check_programs.sh preloads into starproj-recon, to send it a signal at the one
 * instant a random kill almost never hits: while a raw header is being renamed into place. RENAME_SIGNAL_AT =
 * "before:NAME" or "after:NAME": the rename of a file to one named NAME (the last component) raises SIGTERM just
 * before it happens, or just after. Not part of any installed program. */
#define _GNU_SOURCE /* RTLD_NEXT */
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int rename(const char *from, const char *to)
{
  static int (*real)(const char *, const char *);
  if (!real)
    real = (int (*)(const char *, const char *))dlsym(RTLD_NEXT, "rename");
  const char *at = getenv("RENAME_SIGNAL_AT"), *name = strrchr(to, '/') ? strrchr(to, '/') + 1 : to;
  int before = at && strncmp(at, "before:", 7) == 0, after = at && strncmp(at, "after:", 6) == 0;
  int match = (before && strcmp(at + 7, name) == 0) || (after && strcmp(at + 6, name) == 0);
  if (match && before)
    raise(SIGTERM);
  int rc = real(from, to);
  if (match && after)
    raise(SIGTERM);
  return rc;
}

/* SPDX-License-Identifier: Apache-2.0 */
/* parallelproj_lib.h: libparallelproj 2.x loaded at run time (dlopen), for the benchmark programs that time it beside
 * starproj in one process: its OpenMP build (bench_cpu) or its CUDA build (bench_tof). The library is named on the
 * command line; nothing of it is built or linked into starproj. */
#ifndef SPROJ_PARALLELPROJ_LIB_H
#define SPROJ_PARALLELPROJ_LIB_H

#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>

/* The threads_per_block libparallelproj's CUDA calls take (its default); its OpenMP build ignores it. */
#define PP_THREADS_PER_BLOCK 64

/* Its projectors (include/parallelproj.h of its sources), all pointers host or, for the CUDA build, device. */
typedef void (*pp_fwd_fn)(const float *, const float *, const float *, const float *, const float *, float *, size_t,
                          const int *, int, int);
typedef void (*pp_back_fn)(const float *, const float *, float *, const float *, const float *, const float *, size_t,
                           const int *, int, int);
typedef void (*pp_tof_sino_fwd_fn)(const float *, const float *, const float *, const float *, const float *, float *,
                                   size_t, const int *, float, const float *, const float *, float, short,
                                   unsigned char, unsigned char, int, int);
typedef void (*pp_tof_sino_back_fn)(const float *, const float *, float *, const float *, const float *, const float *,
                                    size_t, const int *, float, const float *, const float *, float, short,
                                    unsigned char, unsigned char, int, int);
typedef void (*pp_tof_lm_fwd_fn)(const float *, const float *, const float *, const float *, const float *, float *,
                                 size_t, const int *, float, const float *, const float *, float, const short *, short,
                                 unsigned char, unsigned char, int, int);
typedef void (*pp_tof_lm_back_fn)(const float *, const float *, float *, const float *, const float *, const float *,
                                  size_t, const int *, float, const float *, const float *, float, const short *,
                                  short, unsigned char, unsigned char, int, int);

struct pp_lib {
  void *handle;
  const char *(*version)(void);
  int (*cuda_enabled)(void);
  pp_fwd_fn fwd;
  pp_back_fn back;
  pp_tof_sino_fwd_fn tof_sino_fwd;
  pp_tof_sino_back_fn tof_sino_back;
  pp_tof_lm_fwd_fn tof_lm_fwd;
  pp_tof_lm_back_fn tof_lm_back;
};

/* Loads the library at path into pp; 0 on success, else a message on stderr and -1. */
static inline int pp_lib_open(struct pp_lib *pp, const char *path, const char *prog)
{
  pp->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!pp->handle) {
    fprintf(stderr, "%s: cannot load libparallelproj: %s\n", prog, dlerror());
    return -1;
  }
  struct {
    const char *name;
    void **fn;
  } syms[] = {{"parallelproj_version", (void **)&pp->version},
              {"parallelproj_cuda_enabled", (void **)&pp->cuda_enabled},
              {"joseph3d_fwd", (void **)&pp->fwd},
              {"joseph3d_back", (void **)&pp->back},
              {"joseph3d_tof_sino_fwd", (void **)&pp->tof_sino_fwd},
              {"joseph3d_tof_sino_back", (void **)&pp->tof_sino_back},
              {"joseph3d_tof_lm_fwd", (void **)&pp->tof_lm_fwd},
              {"joseph3d_tof_lm_back", (void **)&pp->tof_lm_back}};
  for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
    *syms[i].fn = dlsym(pp->handle, syms[i].name);
    if (!*syms[i].fn) {
      fprintf(stderr, "%s: %s has no %s: not libparallelproj 2.x\n", prog, path, syms[i].name);
      dlclose(pp->handle);
      pp->handle = NULL;
      return -1;
    }
  }
  return 0;
}

#endif

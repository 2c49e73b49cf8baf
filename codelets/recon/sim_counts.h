/* SPDX-License-Identifier: Apache-2.0 */
/* sim_counts.h: simulated data, one value at a time (host + CUDA): the expected counts s*m*p + a of a forward value p,
 * and a Poisson sample of them that depends only on the seed and the value's index.
 *
 * The same counts on any device: every value draws from its own counter-based stream (splitmix64 started at a hash of
 * the seed and the value's index), and the samplers use only operations that IEEE 754 rounds exactly (+ - * / sqrt,
 * floor, frexp, ldexp) with no contraction into FMA (the library is built with -ffp-contract=off and nvcc's
 * -fmad=false): exp and log are computed here rather than taken from libm or CUDA's maths library, whose last bits
 * differ. A CPU worker and a GPU therefore write bit-identical counts for the same expected values. */
#ifndef SPROJ_SIM_COUNTS_H
#define SPROJ_SIM_COUNTS_H
#include <math.h>
#include <stdint.h>
#include <stddef.h>
#include "host_device.h"

/* splitmix64 (Steele, Lea and Flood, 2014): its increment, the golden ratio's bits, and below its output function,
 * whose shifts and multipliers are the algorithm's own. */
#define SIM_GAMMA UINT64_C(0x9e3779b97f4a7c15)

SPROJ_HD uint64_t sim_mix(uint64_t z)
{
  z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
  return z ^ (z >> 31);
}

/* The stream of value k: its state starts at a hash of (seed, k), so that neighbouring values' streams do not
 * overlap, and advances by the splitmix64 increment. The hash scatters k by a 64-bit LCG step (multiplier from
 * Steele and Vigna's tables, an odd increment) before mixing. */
SPROJ_HD uint64_t sim_stream(uint64_t seed, uint64_t k)
{
  return sim_mix(sim_mix(seed + SIM_GAMMA) ^ (k * UINT64_C(0xd1342543de82ef95) + UINT64_C(0x2545f4914f6cdd1d)));
}

/* uniform in [0, 1) with 53 random bits */
SPROJ_HD double sim_uniform(uint64_t *state)
{
  *state += SIM_GAMMA;
  return (double)(sim_mix(*state) >> 11) * 0x1.0p-53;
}

#define SIM_LN2_HI 6.93147180369123816490e-01 /* ln 2, its high 32 bits: n * SIM_LN2_HI is exact for |n| < 2^20 */
#define SIM_LN2_LO 1.90821492927058770002e-10
#define SIM_SQRT_HALF 0.70710678118654752440
#define SIM_LN_SQRT_2PI 0.91893853320467274178 /* Stirling's constant term */

/* exp(-x): 2^(-j/SIM_EXP2_STEPS) tabled for j < SIM_EXP2_STEPS; exp(-x) is below the smallest double beyond
 * SIM_EXP_NEG_MAX */
#define SIM_EXP2_BITS 5
#define SIM_EXP2_STEPS (1 << SIM_EXP2_BITS)
#define SIM_STEPS_PER_LN2 46.166241308446828384 /* SIM_EXP2_STEPS / ln 2 */
#define SIM_EXP_NEG_MAX 745.0

/* exp(-x) for 0 <= x <= 745 (0 beyond), relative error below 4e-16: x = (32 n + j) ln2 / 32 + r with |r| <= ln2 / 64,
 * exp(-x) = 2^-n 2^(-j/32) exp(-r), the 32 powers 2^(-j/32) correctly rounded in a table (one for the host, one in
 * a GPU's constant memory), and exp(-r) by its Taylor series to r^6 / 6! (the next term is below 4e-18).
 * Multiplications only: a chain of divisions made the sampler's rare exp cost more than all its common work. */
#define SIM_EXP2_TABLE                                                                                              \
  0x1.0000000000000p+0, 0x1.f50765b6e4540p-1, 0x1.ea4afa2a490dap-1, 0x1.dfc97337b9b5fp-1,  \
  0x1.d5818dcfba487p-1, 0x1.cb720dcef9069p-1, 0x1.c199bdd85529cp-1, 0x1.b7f76f2fb5e47p-1,  \
  0x1.ae89f995ad3adp-1, 0x1.a5503b23e255dp-1, 0x1.9c49182a3f090p-1, 0x1.93737b0cdc5e5p-1,  \
  0x1.8ace5422aa0dbp-1, 0x1.82589994cce13p-1, 0x1.7a11473eb0187p-1, 0x1.71f75e8ec5f74p-1,  \
  0x1.6a09e667f3bcdp-1, 0x1.6247eb03a5585p-1, 0x1.5ab07dd485429p-1, 0x1.5342b569d4f82p-1,  \
  0x1.4bfdad5362a27p-1, 0x1.44e086061892dp-1, 0x1.3dea64c123422p-1, 0x1.371a7373aa9cbp-1,  \
  0x1.306fe0a31b715p-1, 0x1.29e9df51fdee1p-1, 0x1.2387a6e756238p-1, 0x1.1d4873168b9aap-1,  \
  0x1.172b83c7d517bp-1, 0x1.11301d0125b51p-1, 0x1.0b5586cf9890fp-1, 0x1.059b0d3158574p-1

static const double sim_exp2_host[SIM_EXP2_STEPS] __attribute__((unused)) = {SIM_EXP2_TABLE};
#ifdef __CUDACC__
__constant__ static const double sim_exp2_gpu[SIM_EXP2_STEPS] = {SIM_EXP2_TABLE};
#endif

SPROJ_HD double sim_exp2_neg_frac(int j)
{
#ifdef __CUDA_ARCH__
  return sim_exp2_gpu[j];
#else
  return sim_exp2_host[j];
#endif
}

SPROJ_HD double sim_exp_neg(double x)
{
  if (x > SIM_EXP_NEG_MAX)
    return 0.0;
  double k = floor(x * SIM_STEPS_PER_LN2 + 0.5); /* x / (ln2 / SIM_EXP2_STEPS) */
  double r = (x - k * (SIM_LN2_HI / (double)SIM_EXP2_STEPS)) - k * (SIM_LN2_LO / (double)SIM_EXP2_STEPS);
  int ki = (int)k;
  double p = 1.0 + r * (-1.0 + r * (0.5 + r * (-1.0 / 6.0 + r * (1.0 / 24.0 + r * (-1.0 / 120.0 + r * (1.0 / 720.0))))));
  return ldexp(sim_exp2_neg_frac(ki & (SIM_EXP2_STEPS - 1)) * p, -(ki >> SIM_EXP2_BITS));
}

/* log(x) for x > 0 finite: x = 2^e f with sqrt(1/2) <= f < sqrt(2), log f = 2 atanh(s), s = (f - 1) / (f + 1), by
 * its series to s^SIM_LOG_SERIES_LAST (|s| <= 0.172: the next term is below 1e-20). */
#define SIM_LOG_SERIES_LAST 25
SPROJ_HD double sim_log(double x)
{
  int e;
  double f = frexp(x, &e);
  if (f < SIM_SQRT_HALF) {
    f *= 2.0;
    e -= 1;
  }
  double s = (f - 1.0) / (f + 1.0), s2 = s * s, t = 0.0;
  for (int j = SIM_LOG_SERIES_LAST; j >= 3; j -= 2)
    t = (t + 1.0 / (double)j) * s2;
  double lf = 2.0 * s * (1.0 + t);
  return (double)e * SIM_LN2_HI + ((double)e * SIM_LN2_LO + lf);
}

/* log(k!) for whole k >= 0: sums below SIM_LOG_FACTORIAL_SUMS, Stirling's series (error < 1e-12) above */
#define SIM_LOG_FACTORIAL_SUMS 16.0
SPROJ_HD double sim_log_factorial(double k)
{
  if (k < SIM_LOG_FACTORIAL_SUMS) {
    double s = 0.0;
    for (int i = 2; i <= (int)k; i++)
      s += sim_log((double)i);
    return s;
  }
  double x = k + 1.0, x2 = x * x;
  return (x - 0.5) * sim_log(x) - x + SIM_LN_SQRT_2PI +
         (1.0 / 12.0 - (1.0 / 360.0 - 1.0 / (1260.0 * x2)) / x2) / x;
}

/* One Poisson sample of mean mu from the stream at *state: 0 for mu <= 0, NaN for NaN, exact samplers otherwise
 * (inversion for means below SIM_INVERSION_BELOW, Hoermann's PTRS, "The transformed rejection method for generating
 * Poisson random variables" (1993), above; the numbers of its setup and tests are the paper's own). */
#define SIM_INVERSION_BELOW 10.0
#define SIM_INVERSION_MAX_STEPS 1000.0 /* a bound only: inversion takes about mu + 1 steps */
#define SIM_ZERO_MARGIN 0x1.0p-50      /* a few rounding errors of 1 - mu */
SPROJ_HD double sim_poisson(uint64_t *state, double mu)
{
  if (mu != mu)
    return mu;
  if (mu <= 0.0)
    return 0.0;
  if (mu < SIM_INVERSION_BELOW) {
    double u = sim_uniform(state);
    /* exp(-mu) > 1 - mu: below 1 - mu (with a margin of a few rounding errors) the count is 0 without exp, which
     * is almost every value of a sparse TOF sinogram */
    if (u < (1.0 - mu) - SIM_ZERO_MARGIN)
      return 0.0;
    /* inversion by sequential search: about mu + 1 steps */
    double p = sim_exp_neg(mu), cdf = p, k = 0.0;
    while (u > cdf && k < SIM_INVERSION_MAX_STEPS) {
      k += 1.0;
      p *= mu / k;
      cdf += p;
    }
    return k;
  }
  double smu = sqrt(mu), b = 0.931 + 2.53 * smu, a = -0.059 + 0.02483 * b;
  double inv_alpha = 1.1239 + 1.1328 / (b - 3.4), vr = 0.9277 - 3.6224 / (b - 2.0);
  double log_mu = sim_log(mu);
  for (;;) {
    double u = sim_uniform(state) - 0.5, v = sim_uniform(state);
    double us = 0.5 - fabs(u);
    double k = floor((2.0 * a / us + b) * u + mu + 0.43);
    if (us >= 0.07 && v <= vr)
      return k;
    if (k < 0.0 || (us < 0.013 && v > us))
      continue;
    if (sim_log(v * inv_alpha / (a / (us * us) + b)) <= -mu + k * log_mu - sim_log_factorial(k))
      return k;
  }
}

/* The expected counts of a forward value p: scale * m * p + a, in float, in this order. */
SPROJ_HD float sim_expected(float p, float m, float a, float scale)
{
  return m * p * scale + a;
}

/* Value k of the data (global index g in the whole vector): its expected counts, replaced by a Poisson sample with
 * noise. */
SPROJ_HD float sim_value(float p, float m, float a, float scale, int noise, uint64_t seed, uint64_t g)
{
  float e = sim_expected(p, m, a, scale);
  if (!noise)
    return e;
  uint64_t state = sim_stream(seed, g);
  return (float)sim_poisson(&state, (double)e);
}
/* LOR i of a piece of drawn counts (num_bins values per LOR): its events' TOF bins, each bin as many times as its
 * count, from place off[i] of the piece's events on. */
SPROJ_HD void sim_emit_lor(const float *counts, const int32_t *off, int16_t *out, int num_bins, size_t i)
{
  int32_t o = off[i];
  for (int b = 0; b < num_bins; b++)
    for (int c = (int)counts[i * (size_t)num_bins + (size_t)b]; c > 0; c--)
      out[o++] = (int16_t)b;
}
#endif

#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Scaling over the GPUs of one node: runs the non-TOF benchmark (whole-sinogram forward and back), the TOF listmode
# benchmark (20 M events) and one OSEM iteration (34 subsets) with 1, 2, 4 and 8 GPUs (those present), each setting
# in a process of its own (STARPU_NCUDA=N), and prints the speed-up over one GPU, the share of the back projection
# spent after its tasks (the reduction of the per-worker images across GPUs and the copy home), and each GPU's
# share of the LORs. Logs go to $OUT (or /tmp/scaling).
# usage: scripts/bench-scaling.sh [BUILD_DIR]   (default: .device/build when present, else build)
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-}
[ -n "$build" ] || { [ -d "$root/.device/build" ] && build=$root/.device/build || build=$root/build; }
out=${OUT:-/tmp/scaling}
mkdir -p "$out"
export LD_LIBRARY_PATH="$root/.device/lib:$build/.libs:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export STARPU_SILENT=1
gpus=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | wc -l)
if [ "$gpus" -lt 1 ]; then
  echo "scaling: no GPU found (nvidia-smi lists none)" >&2
  exit 1
fi
settings=""
for n in 1 2 4 8; do [ "$n" -le "$gpus" ] && settings="$settings $n"; done
echo "scaling: $gpus GPUs ($(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)); settings:$settings"

declare -A fwd back backhost lmf lmb osem share
for n in $settings; do
  export STARPU_NCUDA=$n STARPU_HOME=$out/home-$n
  timeout 600 "$build/bench/bench_nontof" --only none --repeats 3 --warmups 1 >"$out/nontof-$n.log" 2>&1
  fwd[$n]=$(awk '$1 == "fwd" && $2 == "1" && $3 == "request" {print $9}' "$out/nontof-$n.log")
  back[$n]=$(awk '$1 == "back" && $2 == "1" && $3 == "request" {print $9}' "$out/nontof-$n.log")
  backhost[$n]=$(awk '$1 == "back" && $2 == "1" && $3 == "request" {print $10}' "$out/nontof-$n.log")
  share[$n]=$(awk '/^#   back 1 request/ {$1 = $2 = $3 = $4 = ""; print}' "$out/nontof-$n.log" | xargs)
  timeout 600 "$build/bench/bench_tof" --repeats 3 --warmups 1 >"$out/tof-$n.log" 2>&1
  lmf[$n]=$(awk '/^TOF LM fwd, 1 request/ {print $7}' "$out/tof-$n.log")
  lmb[$n]=$(awk '/^TOF LM back, 1 request/ {print $7}' "$out/tof-$n.log")
  timeout 600 "$build/bench/bench_recon" --no-host --iterations 3 >"$out/recon-$n.log" 2>&1
  osem[$n]=$(awk -F'|' '/one OSEM iteration, resident/ {gsub(/ /, "", $3); print $3}' "$out/recon-$n.log")
  echo "scaling: $n GPUs done (fwd ${fwd[$n]:-?} s, back ${back[$n]:-?} s, TOF LM ${lmf[$n]:-?} / ${lmb[$n]:-?} s," \
       "OSEM ${osem[$n]:-?} s)"
done

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0 && b > 0) printf "%.2fx", a / b; else printf "-" }'; }
echo
echo "| GPUs | fwd | back | fwd+back speed-up | back after its tasks | TOF LM fwd / back speed-up | OSEM iteration | GPU shares of the back projection (%) |"
echo "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"
for n in $settings; do
  fb1=$(awk -v a="${fwd[1]:-0}" -v b="${back[1]:-0}" 'BEGIN {print a + b}')
  fbn=$(awk -v a="${fwd[$n]:-0}" -v b="${back[$n]:-0}" 'BEGIN {print a + b}')
  red=$(awk -v d="${back[$n]:-0}" -v h="${backhost[$n]:-0}" 'BEGIN { if (h > 0) printf "%.1f%%", 100 * (h - d) / h; else printf "-" }')
  echo "| $n | ${fwd[$n]:--} s | ${back[$n]:--} s | $(ratio "$fb1" "$fbn") | $red | $(ratio "${lmf[1]:-0}" "${lmf[$n]:-0}") / $(ratio "${lmb[1]:-0}" "${lmb[$n]:-0}") | ${osem[$n]:--} s ($(ratio "${osem[1]:-0}" "${osem[$n]:-0}")) | ${share[$n]:--} |"
done
echo "targets: fwd+back >= 3.8x on 4 GPUs and >= 7.4x on 8; back after its tasks <= 10%; TOF listmode >= 3.5x on 4"

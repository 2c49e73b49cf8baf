#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The variants of the TOF projectors (SPROJ_TOF_GPU / SPROJ_TOF_CPU, codelets/codelets.h) checked and timed on a GPU
# machine in one run, beside libparallelproj's CUDA and OpenMP builds: first every variant's values (check_tof against
# the double-precision reference, check_cuda's TOF case against the CPU workers, check_tof_kernels on the CPU), then
# bench_tof and bench_recon --tof per GPU variant, bench_cpu on the host's cores (the CPU variants against
# libparallelproj's OpenMP build), Nsight Compute counts of each TOF kernel old and new when ncu is there and time is
# left, and one table last. Builds nothing; logs go to $OUT/tof-variants (or /tmp/out/...).
#
# usage: scripts/bench-tof-variants.sh stage
#          here, after scripts/device-bundle.sh --with-parallelproj SRC: copies the programs, libstarproj, the libraries
#          a bare GPU machine lacks and both libparallelproj builds into .device/tofv (~25 MB), the one path to carry
#        scripts/bench-tof-variants.sh [--variants LIST] [--seconds N] [--small]
#          on the GPU machine from the repository root: LIST is the GPU variants, space-separated (default: old table
#          slide table,slide table,slide,copies; each variant named here is checked and given an OS-EM iteration, of
#          the default list three are); the run keeps within N seconds (default 420): a step that would
#          start after 0.85 N is skipped and says so, each program has a timeout within what is left; --small: the
#          small scanner everywhere, to try the script on a development machine
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tofv=$root/.device/tofv
programs="check_tof check_tof_kernels check_cuda bench_tof bench_recon bench_cpu"

if [ "${1:-}" = stage ]; then
  build=$root/.device/build pp=$root/.device/parallelproj
  for p in $programs; do
    for dir in tests bench; do [ -x "$build/$dir/$p" ] && src=$build/$dir/$p; done
    [ -x "${src:-}" ] || { echo "bench-tof-variants: $p is not built in $build (scripts/device-bundle.sh)" >&2; exit 1; }
    unset src
  done
  for f in "$build/.libs/libstarproj.so.0" "$build/.libs/libstarproj-io.so.0" "$pp/lib/libparallelproj.so.2" \
           "$pp/omp/libparallelproj.so.2"; do
    [ -f "$f" ] || { echo "bench-tof-variants: $f is missing (scripts/device-bundle.sh --with-parallelproj SRC)" >&2; exit 1; }
  done
  rm -rf "$tofv" && mkdir -p "$tofv/bin" "$tofv/lib" "$tofv/pp-cuda" "$tofv/pp-omp" || exit 1
  for p in $programs; do
    for dir in tests bench; do [ -x "$build/$dir/$p" ] && cp -L "$build/$dir/$p" "$tofv/bin/"; done
  done
  cp -L "$build/.libs/libstarproj.so.0" "$build/.libs/libstarproj-io.so.0" "$tofv/lib/" || exit 1
  cp -L "$root"/.device/lib/*.so.* "$tofv/lib/" || exit 1
  cp -L "$pp"/lib/*.so.* "$tofv/pp-cuda/" && cp -L "$pp"/omp/*.so.* "$tofv/pp-omp/" || exit 1
  echo "bench-tof-variants: staged $(du -sh "$tofv" | cut -f1) in .device/tofv"
  exit 0
fi

variants="old table slide table,slide table,slide,copies" budget=420 small=() named=0
while [ $# -gt 0 ]; do
  case "$1" in
    --small) small=(--small); shift ;;
    --variants) variants=$2; named=1; shift 2 ;;
    --seconds) budget=$2; shift 2 ;;
    *) echo "bench-tof-variants: unknown argument '$1' (see the usage at the top of the script)" >&2; exit 2 ;;
  esac
done
case "$budget" in ''|*[!0-9]*) echo "bench-tof-variants: --seconds needs a whole number" >&2; exit 2 ;; esac
for v in $variants; do
  case ",$v," in *[!a-z,]*) echo "bench-tof-variants: variant '$v' is not a list of names" >&2; exit 2 ;; esac
done
[ -x "$tofv/bin/bench_tof" ] || { echo "bench-tof-variants: no .device/tofv (run 'scripts/bench-tof-variants.sh stage' and carry it)" >&2; exit 1; }
out=${OUT:-/tmp/out}/tof-variants
mkdir -p "$out" || exit 1
# the CUDA runtime libparallelproj's build links comes last: the machine's own toolkit first
export LD_LIBRARY_PATH="$tofv/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}:$tofv/pp-cuda"
export STARPU_SILENT=1
bin=$tofv/bin
start=$SECONDS
left() { echo $((budget - (SECONDS - start))); }
# run NAME LIMIT COMMAND...: under timeout within what is left, output in $out/NAME.log, exit status echoed; a step
# that would start after 0.85 of the budget is skipped
run() {
  local name=$1 limit=$2 rest
  shift 2
  rest=$(left)
  if [ $((SECONDS - start)) -gt $((budget * 85 / 100)) ] || [ "$rest" -lt 10 ]; then
    echo "skipped (budget)" >"$out/$name.log"
    echo "$name: skipped, $rest s of the budget left"
    return 124
  fi
  [ "$limit" -gt "$rest" ] && limit=$rest
  timeout "$limit" "$@" >"$out/$name.log" 2>&1
  local rc=$?
  echo "$name: exit $rc ($((SECONDS - start)) s)"
  return $rc
}
tag() { echo "$1" | tr ',' '+'; }
ncores=$(nproc)
echo "== $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -n 1); $ncores cores" \
  "($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')); budget $budget s"

summary() { grep -oE 'Checks: [0-9]+, Failures: [0-9]+, Errors: [0-9]+|SKIPPED' "$1" 2>/dev/null | tail -n 1 | grep . || echo "no result"; }
# the variants checked against the references and given an OS-EM iteration: every one named with --variants, else
# three of the default list (the others are compared through bench_tof's checksums: slide gives the old kernels'
# bits, table the bits of every variant with the table)
main_variants=""
for v in old table,slide table,slide,copies; do case " $variants " in *" $v "*) main_variants+="$v " ;; esac; done
[ "$named" = 1 ] && main_variants="$variants"

# ---- 1. values: the variants against the double reference and the CPU, before anything is timed ----
declare -A check
run check_tof_kernels 60 "$bin/check_tof_kernels"
check[cpu]=$(summary "$out/check_tof_kernels.log")
grep -E '^TOF (table|lanes|sinogram forward with)' "$out/check_tof_kernels.log" | sed 's/^/  /'
for v in $main_variants; do
  t=$(tag "$v")
  run "check_tof-$t" 120 env SPROJ_TOF_GPU="$v" STARPU_HOME="/tmp/starpu-tofv-$t" "$bin/check_tof"
  run "check_cuda-$t" 120 env SPROJ_TOF_GPU="$v" STARPU_HOME="/tmp/starpu-tofv-$t" CK_RUN_CASE=tof "$bin/check_cuda"
  check[$v]="check_tof $(summary "$out/check_tof-$t.log"); check_cuda (TOF case) $(summary "$out/check_cuda-$t.log")"
  grep -hE '^TOF (sinogram|listmode) .*(CPU vs CUDA|copies on)|^TOF sinogram vs reference \(scalar\)' "$out/check_cuda-$t.log" \
    "$out/check_tof-$t.log" | sed "s/^/  [$v] /"
  grep -hE ':[FE]:' "$out/check_tof-$t.log" "$out/check_cuda-$t.log" | head -n 3 | sed "s/^/  [$v] /"
done

# ---- 2. bench_tof per GPU variant; libparallelproj's CUDA build in the first run ----
declare -A tof_done recon_iter sums
jobs=("TOF sino fwd (subset)" "TOF sino back (subset)" "TOF LM fwd, 1 request" "TOF LM back, 1 request"
      "TOF LM fwd, events in order" "TOF LM back, events in order")
first=1
for v in $variants; do
  t=$(tag "$v") pparg=()
  [ $first = 1 ] && pparg=(--parallelproj "$tofv/pp-cuda/libparallelproj.so.2")
  run "bench_tof-$t" 150 env SPROJ_TOF_GPU="$v" STARPU_HOME="/tmp/starpu-tofv-$t" "$bin/bench_tof" --repeats 3 \
    --warmups 1 "${pparg[@]}" "${small[@]}"
  for j in "${jobs[@]}"; do
    tof_done[$v|$j]=$(grep -F "$j" "$out/bench_tof-$t.log" | grep -v '^#' | awk '{print $(NF-4)}' | head -n 1)
    [ $first = 1 ] && tof_done[pp|$j]=$(grep -F "$j" "$out/bench_tof-$t.log" | grep -v '^#' | awk '{print $(NF-2)}' | head -n 1)
  done
  sums[$v]=$(sed -n 's/^# checksums: sinogram forward \([0-9a-f]*\).*back projection of it \([-+.0-9e]*\); listmode forward \([0-9a-f]*\).*/\1 \3 (back sum \2)/p' \
    "$out/bench_tof-$t.log")
  grep -E '^# (check|checksums|libparallelproj)' "$out/bench_tof-$t.log" | sed "s/^/  [$v] /"
  first=0
done

# ---- 3. one TOF OS-EM iteration on resident data: the old kernels and the combinations ----
for v in $main_variants; do
  t=$(tag "$v")
  run "bench_recon-$t" 120 env SPROJ_TOF_GPU="$v" STARPU_HOME="/tmp/starpu-tofv-$t" "$bin/bench_recon" --tof \
    --no-host --iterations 2 ${small[0]:+--scanner small}
  recon_iter[$v]=$(grep -F 'one OSEM iteration, resident' "$out/bench_recon-$t.log" | awk -F'|' '{print $3}' | tr -d ' ')
done

# ---- 4. the host's cores: the CPU variants against libparallelproj's OpenMP build in one process ----
cpu_args=(--views 1 --tof --events 1000000 --repeats 3 --warmups 1 "${small[@]}")
run bench_cpu-new 150 env STARPU_NCUDA=0 STARPU_NCPU="$ncores" OMP_NUM_THREADS="$ncores" \
  STARPU_HOME=/tmp/starpu-tofv-cpu "$bin/bench_cpu" "${cpu_args[@]}" --parallelproj "$tofv/pp-omp/libparallelproj.so.2"
run bench_cpu-old 90 env SPROJ_TOF_CPU=old STARPU_NCUDA=0 STARPU_NCPU="$ncores" STARPU_HOME=/tmp/starpu-tofv-cpu-old \
  "$bin/bench_cpu" "${cpu_args[@]}"

# ---- 5. Nsight Compute: one launch of each TOF kernel, old and the combination, on the small scanner ----
ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -n 1)
ncu_variants="old table,slide"
if [ -n "$ncu" ]; then
  for v in $ncu_variants; do
    t=$(tag "$v")
    for k in tof_sino_fwd tof_sino_back tof_lm_fwd tof_lm_back; do
      run "ncu-$t-$k" 60 env SPROJ_TOF_GPU="$v" STARPU_HOME="/tmp/starpu-tofv-$t" "$ncu" --clock-control none \
        --section SpeedOfLight --section WarpStateStats --section InstructionStats --section MemoryWorkloadAnalysis \
        -k "regex:${k}_kernel" -c 1 --csv --page raw "$bin/bench_tof" --small --repeats 1 --warmups 0
    done
  done
else
  echo "ncu: not found, no counts"
fi

# ---- the table ----
echo
echo "== values (before any time below)"
echo "| variant | checks |"
echo "| --- | --- |"
echo "| CPU (check_tof_kernels) | ${check[cpu]:-none} |"
for v in $variants; do echo "| GPU $v | ${check[$v]:-none} |"; done
echo
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)
echo "== ${gpu:-no GPU}: TOF jobs, done seconds (bench_tof --repeats 3, medians; 20 M events; libparallelproj measured in" \
  "the same run)"
printf '| %-24s | %9s | %9s | %9s | %9s | %11s | %11s | %9s | %s |\n' variant "sino fwd" "sino back" "LM fwd" \
  "LM back" "LM fwd ord" "LM back ord" "OSEM it" "forward bits: sinogram, listmode (sinogram back sum)"
printf '| %-24s | %9s | %9s | %9s | %9s | %11s | %11s | %9s | %s |\n' --- ---: ---: ---: ---: ---: ---: ---: ---
for v in pp $variants; do
  name=$v
  [ "$v" = pp ] && name="libparallelproj (CUDA)"
  printf '| %-24s | %9s | %9s | %9s | %9s | %11s | %11s | %9s | %s |\n' "$name" "${tof_done[$v|${jobs[0]}]:--}" \
    "${tof_done[$v|${jobs[1]}]:--}" "${tof_done[$v|${jobs[2]}]:--}" "${tof_done[$v|${jobs[3]}]:--}" \
    "${tof_done[$v|${jobs[4]}]:--}" "${tof_done[$v|${jobs[5]}]:--}" "${recon_iter[$v]:--}" "${sums[$v]:--}"
done
echo "# targets: sino fwd <= 0.0080, back <= 0.0100; LM >= 1.6x / 2.0x libparallelproj (random), >= 2.5x ordered;"
echo "# OS-EM iteration (34 subsets, resident) <= 0.60 s. libparallelproj's ordered columns are its random-order times."
echo "# forward bits: slide must give old's, every variant with the table the same as table's"
echo
echo "== the host's $ncores cores against libparallelproj's OpenMP build (bench_cpu, view 0, 1 M events; default CPU variants)"
sed -n '/^| job | LORs | starproj s/,/^# ratio/p' "$out/bench_cpu-new.log"
echo "# the same jobs with SPROJ_TOF_CPU=old (median s):"
grep -E '^\| (tof_|fwd|back)' "$out/bench_cpu-old.log" | awk -F'|' '{printf "#   %s %s\n", $2, $4}'
if [ -n "$ncu" ]; then
  echo
  echo "== Nsight Compute, one launch of each kernel (small scanner): raw CSV in $out/ncu-*.log"
  if command -v python3 >/dev/null 2>&1; then
    python3 - "$out" $ncu_variants <<'EOF'
import csv, glob, os, sys
out, variants = sys.argv[1], sys.argv[2:]
cols = [("gpu__time_duration.sum", "time"), ("smsp__inst_executed.sum", "warp instr"),
        ("sm__inst_executed.avg.per_cycle_active", "IPC"), ("smsp__thread_inst_executed_per_inst_executed.ratio", "lanes"),
        ("lts__throughput.avg.pct_of_peak_sustained_elapsed", "L2 %"),
        ("l1tex__data_pipe_lsu_wavefronts_mem_shared.sum", "shared wavefronts")]
stalls = ["long_scoreboard", "short_scoreboard", "mio_throttle", "lg_throttle", "not_selected", "barrier", "wait",
          "math_pipe_throttle"]
print("| kernel | variant | " + " | ".join(c[1] for c in cols) + " | top stalls (per issue) |")
print("| --- | --- |" + " ---: |" * len(cols) + " --- |")
for k in ["tof_sino_fwd", "tof_sino_back", "tof_lm_fwd", "tof_lm_back"]:
    for v in variants:
        path = os.path.join(out, "ncu-%s-%s.log" % (v.replace(",", "+"), k))
        try:
            lines = [l for l in open(path) if l.startswith('"')]
            rows = list(csv.reader(lines))
            head, vals = rows[0], rows[2] if len(rows) > 2 else rows[-1]
            get = lambda m: vals[head.index(m)] if m in head else "-"
            st = []
            for s in stalls:
                m = "smsp__average_warps_issue_stalled_%s_per_issue_active.ratio" % s
                try:
                    st.append((float(get(m).replace(",", "")), s))
                except ValueError:
                    pass
            top = ", ".join("%s %.2f" % (s, x) for x, s in sorted(st, reverse=True)[:3])
            print("| %s | %s | %s | %s |" % (k, v, " | ".join(get(c[0]) for c in cols), top or "-"))
        except (OSError, IndexError, StopIteration):
            print("| %s | %s |%s -" % (k, v, " - |" * len(cols)))
EOF
  fi
fi
echo "== total $((SECONDS - start)) s; logs in $out"

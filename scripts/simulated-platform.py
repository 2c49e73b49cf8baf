#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Derives the platform of a simulated node with N GPUs from one recorded on a real machine (doc/simulation.md).

The source is a platform folder as scripts/calibrate-models.sh records it (codelets/ and bus/ of one host, e.g.
perfmodels/h200-1gpu); the result is a folder of the same form under a new host name, which
`starproj-bench --simulate` takes. What is kept and what is assumed:
  - the codelets' models are copied under the new name: every simulated GPU runs a task as fast as the GPU measured
    (starproj-bench sets STARPU_PERF_MODEL_HOMOGENEOUS_CUDA=1, so the model of device 0 serves all of them);
  - each GPU gets its own host link with the bandwidth and latency measured between the host and the source's GPU 0,
    in each direction; the host side (the "Interconnect" link every host transfer crosses) carries N times that, so
    that the GPUs' PCIe links, not the host's memory, bound concurrent copies (--host-gbs caps it);
  - GPU to GPU copies cross a link out of the sending GPU and one into the receiving GPU (an NVSwitch: each GPU's
    NVLink bandwidth shared by all its peers): --nvlink-gbs per direction, default 450 GB/s (an H200's 900 GB/s NVLink
    bandwidth is the sum of both directions); with --pair DIR, a folder recorded on two GPUs, its measured GPU 0 to
    GPU 1 bandwidth and latency instead;
  - the host's cores are the source's (--cores N otherwise), with one memory node: StarPU over SimGrid counts the
    NUMA nodes of the machine it runs on, not of the one simulated, and reads the matrices' rows by that count.
--test-gpus-from-cpu S is for tests only (CI's simulated run before a GPU machine was recorded): the source needs no
GPU, and its GPUs are made up, each running a task S times faster than one of the source's CPU workers (the CPU
models' times / S; the projection models as a straight line through the CPU's measured sizes, used at every size),
with host links of 50 GB/s. Nothing of such a machine is measured.

Codelets the source has no model of, which several simulated GPUs run and one never does (the slabs of OS-EM over
several devices: starproj_slab_split, starproj_slab_gather, starproj_slab_update, starproj_slab_halve), get one
assumed from the source's image kernels (image_zero, image_add, em_update): each is a memory-bound pass over its
buffers, so its time is a fixed cost plus the bytes it moves (its size, codelets/recon/image_slabs.c: the bytes it reads
and writes) at the bandwidth those kernels reached, fixed cost and bandwidth fitted to them (the new MACHINE says
which).

--fit-sizes: a projection or ratio model whose curve StarPU could not fit (a, b, c NaN; it then knows only the sizes
it measured, and a simulation stops at any other) gets the straight line a size + c through its measured sizes' means
(least squares, weighted by their counts), valid from half the smallest (--fit-below K: the smallest / K) to twice the
largest size measured; the new
MACHINE gives each line and its largest difference to a measured mean. StarPU then uses the line at every size in
that range, measured or not. For the task sizes of several devices' owned shares, which a one-GPU recording did not
cut; an assumption until a recording covers them. A slab codelet recorded with a curve (StarPU's fit, or the line
above; a recording with the GPU presented as several devices) has it used from 1 byte on: the sizes of a
distributed reconstruction's slabs (one slab per device instead of a pair's two) lie below those measured. With
--fit-below K the other curves StarPU fitted are used down to their smallest size / K as well.

--fill-unmeasured: a task size StarPU saw but never measured (a history entry with 0 measurements: the run stops
there, "not calibrated enough") gets the mean of the nearest measured size of its codelet scaled by the size ratio,
and the new MACHINE lists each such entry. An assumption, for predictions only; recording more calibration runs is
the cure.

--hidden SYMBOL=US (repeatable): several CUDA workers per GPU, which StarPU's simulator cannot run (it runs one: its
drivers block in simulation), as a correction of the models: every task of codelet SYMBOL on a GPU takes US
microseconds less than recorded with one worker, the part of it that the next task, run beside it by another worker
of the same GPU, hides (the kernel's tail, the worker's issue and synchronisation). US is measured on the real GPU as
(T1 - Tk) / n over a workload of n tasks of that codelet alone, once with one worker and once with k (doc/simulation.md
gives the values and their validation). The correction holds where a GPU has another task ready beside each one; the
new MACHINE lists each.

usage: scripts/simulated-platform.py --from DIR --gpus N [--host NAME] [--out DIR] [--pair DIR] [--nvlink-gbs B]
                                     [--nvlink-latency-us L] [--host-gbs B] [--cores N] [--test-gpus-from-cpu S]
                                     [--fill-unmeasured] [--fit-sizes [--fit-below K]] [--hidden SYMBOL=US ...]
  --out DIR  where the new folder goes (default: next to --from, named after --host; default host
             <source host>-<N>gpu-derived)
"""
import argparse
import math
import os
import re
import shutil
import sys

MAXNODES = 16  # StarPU's --enable-maxnodes, as scripts/install-deps.sh builds it


def fail(msg):
    print("simulated-platform: " + msg, file=sys.stderr)
    sys.exit(2)


def one_host(folder):
    """The host whose bus/<host>.platform.v4.xml the folder holds (exactly one)."""
    bus = os.path.join(folder, "bus")
    if not os.path.isdir(bus) or not os.path.isdir(os.path.join(folder, "codelets")):
        fail(f"{folder} is not a platform folder (no bus/ or codelets/)")
    hosts = sorted(f[: -len(".platform.v4.xml")] for f in os.listdir(bus) if f.endswith(".platform.v4.xml"))
    if len(hosts) != 1:
        fail(f"{folder}/bus holds {len(hosts)} platforms ({', '.join(hosts) or 'none'}): one is needed")
    return hosts[0]


def read_config(folder, host):
    counts = {}
    with open(os.path.join(folder, "bus", host + ".config")) as f:
        for line in f:
            m = re.match(r"\s*(\d+)\s*#\s*Number of (\S+)", line)
            if m:
                counts[m.group(2)] = int(m.group(1))
    return counts


def read_matrix(path):
    """Rows of numbers (nan where no route), comments dropped."""
    rows = []
    with open(path) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            rows.append([float(v) for v in line.split()])
    return rows


def test_gpu_model(model, speedup):
    """A model file (format 45) with one CPU combination, plus a made-up CUDA one: the CPU's times / speedup; for the
    regression-based models a line a x + c fitted through the CPU's (size, mean) pairs, valid at every size."""
    m = re.search(r"# number of combinations\n(\d+)\n", model)
    start = model.find("####################\n# COMB_0\n")
    if not m or m.group(1) != "1" or start < 0:
        fail("--test-gpus-from-cpu: a model file with other than one combination")
    comb = model[start:].replace("# COMB_0", "# COMB_1").replace("(Comb0)", "(Comb1)").replace("cpu0_impl", "cuda0_impl")
    comb = re.sub(r"(# device type \([^\n]*\)\n)0\n", r"\g<1>1\n", comb)
    lines = comb.split("\n")
    hist = [ln.split() for ln in lines if len(ln.split()) == 8 and re.fullmatch(r"[0-9a-f]{8}", ln.split()[0])]
    regression = any(ln.startswith("# a\t") for ln in lines) and len(hist) > 0
    pts = [(float(h[1]), float(h[3]), float(h[7])) for h in hist]
    sw = sum(w for _, _, w in pts) or 1.0
    mx = sum(x * w for x, _, w in pts) / sw
    my = sum(y * w for _, y, w in pts) / sw
    vx = sum(w * (x - mx) ** 2 for x, _, w in pts)
    slope = sum(w * (x - mx) * (y - my) for x, y, w in pts) / vx if vx > 0 else (my / mx if mx > 0 else 0.0)
    icpt = my - slope * mx
    if slope <= 0 or icpt < 0:
        slope, icpt = (sum(w * x * y for x, y, w in pts) / sum(w * x * x for x, _, w in pts), 0.0) if mx > 0 else (0.0, my)
    out = []
    for i, line in enumerate(lines):
        f = line.split()
        prev = lines[i - 1] if i else ""
        if len(f) == 8 and re.fullmatch(r"[0-9a-f]{8}", f[0]):  # hash size flops mean dev sum sum2 n
            mean, dev, sm, sm2 = (float(v) for v in f[3:7])
            line = "\t".join(f[:3] + [f"{mean / speedup:e}", f"{dev / speedup:e}", f"{sm / speedup:e}",
                                       f"{sm2 / speedup ** 2:e}", f[7]])
        elif regression and prev.startswith("# sumlnx") and len(f) == 9:  # its statistics: valid from 1 to 10^12
            line = "\t".join(f[:6] + ["100", "1", "1000000000000"])
        elif regression and prev.startswith("# a\t") and len(f) == 3:  # a x^b + c
            line = f"{slope / speedup:e}\t{1.0:e}\t{icpt / speedup:e}"
        out.append(line)
    head = model[:start].replace(m.group(0), "# number of combinations\n2\n")
    return head + model[start:] + "\n".join(out)


def gpu_props(folder, host, test=None):
    with open(os.path.join(folder, "bus", host + ".platform.v4.xml")) as f:
        xml = f.read()
    if test:
        return {"model": f"made-up test GPU (CPU models / {test:g})", "memsize": "150000000000"}, \
            len(re.findall(r'<host id="CPU\d+"', xml))
    m = re.search(r'<host id="CUDA0"[^>]*>(.*?)</host>', xml, re.S)
    cpus = len(re.findall(r'<host id="CPU\d+"', xml))
    if not m:
        fail(f"{folder}/bus/{host}.platform.v4.xml has no GPU (CUDA0): calibrate on a machine with a GPU")
    props = dict(re.findall(r'<prop id="([^"]+)" value="([^"]*)"', m.group(1)))
    cpus = len(re.findall(r'<host id="CPU\d+"', xml))
    return props, cpus


def fill_unmeasured(model):
    """History entries (hash size flops mean dev sum sum2 n) with n = 0 get the nearest measured size's mean, scaled
    by the size ratio; returns the new text and a description of each filled entry."""
    lines = model.split("\n")
    rows = []
    for i, line in enumerate(lines):
        w = line.split()
        if len(w) == 8 and not line.startswith("#") and re.fullmatch(r"[0-9a-f]{8}", w[0]):
            rows.append((i, w))
    measured = [(int(w[1]), float(w[3])) for _, w in rows if int(w[7]) > 0 and float(w[3]) > 0]
    filled = []
    for i, w in rows:
        if int(w[7]) == 0 and measured:
            size = int(w[1])
            s0, m0 = min(measured, key=lambda x: abs(x[0] - size))
            m = m0 * size / s0
            w[3:8] = [f"{m:e}", "0", f"{10 * m:e}", f"{10 * m * m:e}", "10"]
            lines[i] = "\t".join(w)
            filled.append(f"size {size}: {m:.1f} us from size {s0} ({m0:.1f} us)")
    return "\n".join(lines), filled


HIST = re.compile(r"[0-9a-f]{8}")


def cuda_history(model):
    """(size, mean, n) of the measured history entries of a model's CUDA implementation (its cuda0_impl0 section)."""
    at = model.find("# Model for cuda0_impl0")
    if at < 0:
        return []
    rows = []
    for line in model[at:].split("\n")[1:]:
        if line.startswith("# Model for"):
            break
        w = line.split()
        if len(w) == 8 and HIST.fullmatch(w[0]) and int(w[7]) > 0 and float(w[3]) > 0:
            rows.append((float(w[1]), float(w[3]), int(w[7])))
    return rows


def hide(model, us):
    """The model with us microseconds taken off every measured mean of its CUDA implementation and off the constant
    of its fitted curve (a x^b + c, when a and b are numbers), and a description; None when a mean would not stay
    above half of what was recorded."""
    at = model.find("# Model for cuda0_impl0")
    if at < 0:
        return model, None
    head, lines = model[:at], model[at:].split("\n")
    means = []
    for i, line in enumerate(lines[1:], 1):
        if line.startswith("# Model for"):
            break
        w = line.split()
        if line.startswith("# a\t") and i + 1 < len(lines):
            abc = lines[i + 1].split()
            if len(abc) == 3 and not any("nan" in v for v in abc[:2]):
                lines[i + 1] = "\t".join(abc[:2] + [f"{float(abc[2]) - us:e}"])
        elif len(w) == 8 and HIST.fullmatch(w[0]) and int(w[7]) > 0 and float(w[3]) > 0:
            mean, dev, n = float(w[3]), float(w[4]), int(w[7])
            if mean - us < 0.5 * mean:
                return model, None
            means.append(mean)
            m = mean - us
            w[3:7] = [f"{m:e}", f"{dev:e}", f"{m * n:e}", f"{(dev * dev + m * m) * n:e}"]
            lines[i] = "\t".join(w)
    if not means:
        return model, None
    return head + "\n".join(lines), (f"{us:g} us less per task (several CUDA workers per GPU, --hidden), "
                                     f"{len(means)} sizes of {min(means):.1f} .. {max(means):.1f} us recorded")


def fit_sizes(model, below=2.0):
    """The model with a line a x + c in place of a NaN curve (see --fit-sizes), valid from the smallest size measured
    / below to twice the largest, and a description, or (model, None)."""
    lines = model.split("\n")
    for i, line in enumerate(lines):
        if not line.startswith("# a\t") or i + 1 >= len(lines):
            continue
        abc = lines[i + 1].split()
        if len(abc) != 3 or not any("nan" in v for v in abc):
            continue
        pts = cuda_history(model)
        if len(pts) < 2:
            return model, None
        sw = sum(w for _, _, w in pts)
        mx = sum(x * w for x, _, w in pts) / sw
        my = sum(y * w for _, y, w in pts) / sw
        vx = sum(w * (x - mx) ** 2 for x, _, w in pts)
        slope = sum(w * (x - mx) * (y - my) for x, y, w in pts) / vx if vx > 0 else 0.0
        icpt = my - slope * mx
        if slope <= 0 or icpt < 0:
            return model, None  # no sensible line: the measured sizes only, as before
        worst = max(abs(icpt + slope * x - y) / y for x, y, _ in pts)
        lines[i + 1] = f"{slope:e}\t{1.0:e}\t{icpt:e}"
        # the regression statistics line before: n and the range StarPU checks a size against (0.9 minx .. 1.1 maxx)
        for j in range(i - 1, 0, -1):
            if lines[j - 1].startswith("# sumlnx"):
                f = lines[j].split()
                lo, hi = min(x for x, _, _ in pts), max(x for x, _, _ in pts)
                lines[j] = "\t".join(f[:6] + [str(max(int(f[6]), sum(w for _, _, w in pts))), str(int(lo / below)),
                                             str(int(hi * 2))])
                break
        desc = (f"{slope * 1e6:.4g} us per million + {icpt:.1f} us over {len(pts)} sizes {min(x for x, _, _ in pts):.4g}"
                f" .. {max(x for x, _, _ in pts):.4g}, at most {100 * worst:.1f}% from a measured mean")
        return "\n".join(lines), desc
    return model, None


# the bytes a memory-bound image kernel moves (read plus written, as the slab codelets' sizes count them,
# codelets/recon/image_slabs.c) for each byte StarPU counts as its size: image_zero writes one image, image_add reads
# two and writes one (its first read-write), em_update reads three and writes one
IMAGE_KERNELS = {"starproj_image_zero": 1.0, "starproj_image_add": 1.5, "starproj_em_update": 4.0 / 3.0}
SLAB_CODELETS = ("starproj_slab_split", "starproj_slab_gather", "starproj_slab_update", "starproj_slab_halve")


def widen_curve(model, below=None):
    """The model with its curve's range (StarPU checks a size against 0.9 minx .. 1.1 maxx) starting at 1 byte, or at
    the smallest size / below, and a description; (model, None) when it has no valid curve."""
    lines = model.split("\n")
    for i, line in enumerate(lines):
        if not line.startswith("# sumlnx") or i + 3 >= len(lines) or not lines[i + 2].startswith("# a\t"):
            continue
        f, abc = lines[i + 1].split(), lines[i + 3].split()
        if len(f) != 9 or len(abc) != 3 or any("nan" in v for v in abc):
            return model, None
        lo, hi = float(f[7]), float(f[8])
        new_lo = max(1, int(lo / below)) if below else 1
        if new_lo >= lo:
            return model, None
        lines[i + 1] = "\t".join(f[:7] + [str(new_lo), str(int(hi))])
        a, b, c = (float(v) for v in abc)
        return "\n".join(lines), f"{a:.4g} size^{b:.4g} + {c:.3g} us, valid {lo:.4g} .. {hi:.4g} bytes, now from {new_lo}"
    return model, None


def slab_model(fixed_us, us_per_byte):
    """A model file (format 45) of one CUDA implementation with no measurement and the line fixed + bytes / bandwidth,
    valid from 1 byte to 1 TB."""
    return "\n".join([
        "##################", "# Performance Model Version", "45", "", "####################", "# COMBs",
        "# number of combinations", "1", "####################", "# COMB_0", "# number of types devices", "1",
        "####################", "# DEV_0", "# device type (CPU - 0, CUDA - 1, OPENCL - 2, MPI_MS - 5, TCPIP_MS - 6)", "1",
        "####################", "# DEV_0", "# device id ", "0", "####################", "# DEV_0", "# number of cores ",
        "1", "##########", "# number of implementations", "1", "#####", "# Model for cuda0_impl0 (Comb0)",
        "# number of entries", "0",
        "# sumlnx\tsumlnx2\t\tsumlny\t\tsumlnxlny\talpha\t\tbeta\t\tn\tminx\t\tmaxx",
        "0.000000e+00\t0.000000e+00\t0.000000e+00\t0.000000e+00\tnan\tnan\t100\t1\t1000000000000",
        "# a\t\tb\t\tc", f"{us_per_byte:e}\t{1.0:e}\t{fixed_us:e}", "# not multiple-regression-base", "0",
        "# hash\t\tsize\t\tflops\t\tmean (us or J)\tdev (us or J)\tsum\t\tsum2\t\tn", ""])


def assumed_slabs(cdst, host):
    """Writes the slab codelets' models the folder lacks (see the module's help); returns the description or None."""
    d45 = os.path.join(cdst, "45")
    if not os.path.isdir(d45) or all(os.path.exists(os.path.join(d45, f"{c}.{host}")) for c in SLAB_CODELETS):
        return None
    pts = []
    for name, per_byte in IMAGE_KERNELS.items():
        path = os.path.join(d45, f"{name}.{host}")
        if os.path.exists(path):
            with open(path) as f:
                pts += [(size * per_byte, mean, name) for size, mean, _ in cuda_history(f.read())]
    if not pts:
        return None
    # the fixed cost: a little below the quickest of them (a launch and a synchronisation); the bandwidth: what they
    # moved over what they took beyond it, pooled
    fixed = 0.9 * min(4.0, min(t for _, t, _ in pts))
    us_per_byte = sum(t - fixed for _, t, _ in pts) / sum(b for b, _, _ in pts)
    for c in SLAB_CODELETS:
        with open(os.path.join(d45, f"{c}.{host}"), "w") as f:
            f.write(slab_model(fixed, us_per_byte))
    return (f"{fixed:.1f} us + bytes moved at {1e-6 / us_per_byte:.2f} TB/s, from "
            + ", ".join(f"{n[9:]} {b / 1e6:.1f} MB in {t:.1f} us" for b, t, n in pts))


def write_matrix(path, title, n, value):
    with open(path, "w") as f:
        f.write("# " + "\t".join(f"to {title(j)}" for j in range(n)) + "\n")
        for i in range(MAXNODES):
            cells = []
            for j in range(MAXNODES):
                v = value(i, j) if i < n and j < n else math.nan
                cells.append("nan" if math.isnan(v) else f"{v:e}")
            f.write("\t".join(cells) + "\n")


def main():
    ap = argparse.ArgumentParser(add_help=False)
    ap.add_argument("--from", dest="src", required=True)
    ap.add_argument("--gpus", type=int, required=True)
    ap.add_argument("--host")
    ap.add_argument("--out")
    ap.add_argument("--pair")
    ap.add_argument("--nvlink-gbs", type=float, default=450.0)
    ap.add_argument("--nvlink-latency-us", type=float)
    ap.add_argument("--host-gbs", type=float)
    ap.add_argument("--cores", type=int)
    ap.add_argument("--test-gpus-from-cpu", type=float)
    ap.add_argument("--fill-unmeasured", action="store_true")
    ap.add_argument("--fit-sizes", action="store_true")
    ap.add_argument("--fit-below", type=float, default=2.0)
    ap.add_argument("--hidden", action="append", default=[])
    ap.add_argument("-h", "--help", action="store_true")
    if "-h" in sys.argv[1:] or "--help" in sys.argv[1:]:
        print(__doc__)
        return 0
    try:
        a = ap.parse_args()
    except SystemExit:
        fail("bad arguments (see --help)")
    if not 1 <= a.gpus <= 8:
        fail("--gpus takes 1 to 8 (StarPU is built for at most 8 CUDA devices)")
    if not 1.0 <= a.fit_below <= 1e6:
        fail("--fit-below takes a factor from 1 to 1000000")
    hidden = {}
    for h in a.hidden:
        m = re.fullmatch(r"(starproj_[a-z0-9_]+)=([0-9]+(?:\.[0-9]*)?)", h)
        if not m or not 0.0 <= float(m.group(2)) <= 1e6:
            fail(f"--hidden takes SYMBOL=US (a codelet's model symbol, microseconds from 0 to 1000000), not '{h}'")
        hidden[m.group(1)] = float(m.group(2))
    src = os.path.abspath(a.src)
    shost = one_host(src)
    cfg = read_config(src, shost)
    numas = cfg.get("NUMA", 1)
    test = a.test_gpus_from_cpu
    if test is not None and not 1.0 <= test <= 1e4:
        fail("--test-gpus-from-cpu takes a speed-up from 1 to 10000")
    props, cpus = gpu_props(src, shost, test)
    cores = a.cores or cpus
    if not 1 <= cores <= 128:
        fail("--cores takes 1 to 128")
    bw = read_matrix(os.path.join(src, "bus", shost + ".bandwidth"))
    lat = read_matrix(os.path.join(src, "bus", shost + ".latency"))
    g0 = numas  # raw node index of the source's GPU 0: NUMA nodes come first
    if test:
        h2d_bw = d2h_bw = 50000.0  # MB/s
        h2d_lat = d2h_lat = 10.0  # us
    else:
        h2d_bw, d2h_bw = bw[0][g0], bw[g0][0]  # MB/s
        h2d_lat, d2h_lat = lat[0][g0], lat[g0][0]  # us
    if any(math.isnan(v) or v <= 0 for v in (h2d_bw, d2h_bw)):
        fail(f"{src}/bus/{shost}.bandwidth has no host to GPU 0 bandwidth")
    d2d_bw, d2d_lat = a.nvlink_gbs * 1000.0, a.nvlink_latency_us
    if a.pair:
        phost = one_host(os.path.abspath(a.pair))
        pnuma = read_config(a.pair, phost).get("NUMA", 1)
        pbw = read_matrix(os.path.join(a.pair, "bus", phost + ".bandwidth"))
        plat = read_matrix(os.path.join(a.pair, "bus", phost + ".latency"))
        d2d_bw = min(pbw[pnuma][pnuma + 1], pbw[pnuma + 1][pnuma])
        if a.nvlink_latency_us is None:
            d2d_lat = max(plat[pnuma][pnuma + 1], plat[pnuma + 1][pnuma])
    if d2d_lat is None:
        d2d_lat = min(h2d_lat, d2h_lat)  # an NVLink copy is issued like a PCIe one
    host = a.host or f"{shost}-{a.gpus}gpu-derived"
    if not re.fullmatch(r"[A-Za-z0-9._-]+", host):
        fail("--host takes letters, digits, '.', '_' and '-'")
    out = os.path.abspath(a.out or os.path.join(os.path.dirname(src), host))
    if out == src:
        fail("--out is the source folder")
    host_bw = (a.host_gbs * 1000.0) if a.host_gbs else a.gpus * max(h2d_bw, d2h_bw)

    os.makedirs(os.path.join(out, "bus"), exist_ok=True)
    cdst = os.path.join(out, "codelets")
    if os.path.isdir(cdst):
        shutil.rmtree(cdst)
    copied = 0
    filled, fitted, widened, hid = [], [], [], []
    for dirpath, _, files in os.walk(os.path.join(src, "codelets")):
        rel = os.path.relpath(dirpath, os.path.join(src, "codelets"))
        for f in files:
            if f.endswith("." + shost):
                os.makedirs(os.path.join(cdst, rel), exist_ok=True)
                dst = os.path.join(cdst, rel, f[: -len(shost)] + host)
                symbol = f[: -len(shost) - 1]
                if test or a.fill_unmeasured or a.fit_sizes or symbol in hidden:
                    with open(os.path.join(dirpath, f)) as fi:
                        text = fi.read()
                    if test:
                        text = test_gpu_model(text, test)
                    if a.fill_unmeasured:
                        text, done = fill_unmeasured(text)
                        filled += [f"{symbol} {d}" for d in done]
                    if a.fit_sizes:
                        text, line = fit_sizes(text, a.fit_below)
                        if line:
                            fitted.append(f"{symbol}: {line}")
                        slab = symbol in SLAB_CODELETS
                        if slab or a.fit_below != 2.0:
                            text, line = widen_curve(text, None if slab else a.fit_below)
                            if line:
                                widened.append(f"{symbol}: {line}")
                    if symbol in hidden:
                        text, line = hide(text, hidden[symbol])
                        if not line:
                            fail(f"--hidden {symbol}: its model has no CUDA sizes, or one would lose half its time or "
                                 "more")
                        hid.append(f"{symbol}: {line}")
                    with open(dst, "w") as fo:
                        fo.write(text)
                else:
                    shutil.copyfile(os.path.join(dirpath, f), dst)
                copied += 1
    missing = sorted(set(hidden) - {h.split(":")[0] for h in hid})
    if missing:
        fail(f"--hidden names codelets {src} has no model of: {', '.join(missing)}")
    slabs = assumed_slabs(cdst, host)
    bus = os.path.join(out, "bus", host)
    with open(bus + ".config", "w") as f:
        f.write("# Current configuration\n")
        f.write(f"{cores} # Number of CPUs\n1 # Number of NUMA nodes\n{a.gpus} # Number of CUDA nodes\n")
        for kind in ("OpenCL", "FPGA", "Disk", "MPI_MS", "TCPIP_MS", "HIP"):
            f.write(f"0 # Number of {kind} nodes\n")
    with open(bus + ".affinity", "w") as f:
        f.write("# GPU\tNUMA0\n")
        for g in range(a.gpus):
            f.write(f"{g}\t0\t\n")
    n = 1 + a.gpus

    def name(j):
        return "NUMA 0" if j == 0 else f"CUDA {j - 1}"

    def link(i, j, h2d, d2h, d2d):
        return 0.0 if i == j else h2d if i == 0 else d2h if j == 0 else d2d

    def bandwidth(i, j):
        return link(i, j, h2d_bw, d2h_bw, d2d_bw)

    def latency(i, j):
        return link(i, j, h2d_lat, d2h_lat, d2d_lat)

    write_matrix(bus + ".bandwidth", name, n, bandwidth)
    write_matrix(bus + ".latency", name, n, latency)
    # SimGrid's units: bytes per second and seconds; StarPU's files: MB/s and microseconds
    lines = ["<?xml version='1.0'?>",
             "<!DOCTYPE platform SYSTEM 'https://simgrid.org/simgrid.dtd'>",
             '<platform version="4.1">',
             f"<!-- derived by scripts/simulated-platform.py from {shost}: {a.gpus} GPUs, each with {shost}'s host link;"
             f" GPU to GPU {d2d_bw / 1000:.1f} GB/s per direction through a switch -->",
             ' <config id="General">',
             '   <prop id="network/TCP-gamma" value="-1"></prop>',
             '   <prop id="network/latency-factor" value="1"></prop>',
             '   <prop id="network/bandwidth-factor" value="1"></prop>',
             '   <prop id="network/crosstraffic" value="0"></prop>',
             '   <prop id="network/weight-S" value="0.0"></prop>',
             " </config>",
             ' <zone id="AS0" routing="Full">',
             '   <host id="MAIN" speed="1f"/>']
    lines += [f'   <host id="CPU{c}" speed="2000000000f"/>' for c in range(cores)]
    for g in range(a.gpus):
        lines.append(f'   <host id="CUDA{g}" speed="2000000000f">')
        for k in ("model", "memsize"):
            if k in props:
                lines.append(f'     <prop id="{k}" value="{props[k]}"/>')
        lines.append('     <prop id="memcpy_peer" value="1"/>')
        lines.append("   </host>")
    lines.append('   <host id="RAM" speed="1f"/>')
    lines.append(f'   <link id="Interconnect" bandwidth="{host_bw * 1e6:f}Bps" latency="0.000000s"/>')
    for g in range(a.gpus):
        lines.append(f'   <link id="RAM-CUDA{g}" bandwidth="{h2d_bw * 1e6:f}Bps" latency="{h2d_lat / 1e6:f}s"/>')
        lines.append(f'   <link id="CUDA{g}-RAM" bandwidth="{d2h_bw * 1e6:f}Bps" latency="{d2h_lat / 1e6:f}s"/>')
        if a.gpus > 1:
            lines.append(f'   <link id="CUDA{g}-out" bandwidth="{d2d_bw * 1e6:f}Bps" latency="{d2d_lat / 1e6:f}s"/>')
            lines.append(f'   <link id="CUDA{g}-in" bandwidth="{d2d_bw * 1e6:f}Bps" latency="0.000000s"/>')
    for g in range(a.gpus):
        for src_, dst_, link in (("RAM", f"CUDA{g}", f"RAM-CUDA{g}"), (f"CUDA{g}", "RAM", f"CUDA{g}-RAM")):
            lines += [f'   <route src="{src_}" dst="{dst_}" symmetrical="NO">',
                      f'     <link_ctn id="{link}"/>', '     <link_ctn id="Interconnect"/>', "   </route>"]
    for i in range(a.gpus):
        for j in range(a.gpus):
            if i != j:
                lines += [f'   <route src="CUDA{i}" dst="CUDA{j}" symmetrical="NO">',
                          f'     <link_ctn id="CUDA{i}-out"/>', f'     <link_ctn id="CUDA{j}-in"/>', "   </route>"]
    lines += [" </zone>", "</platform>", ""]
    with open(bus + ".platform.v4.xml", "w") as f:
        f.write("\n".join(lines))
    with open(os.path.join(out, "MACHINE"), "w") as f:
        f.write(f"host name: {host}\n")
        f.write(f"derived from: {shost} (scripts/simulated-platform.py --gpus {a.gpus}"
                f"{' --pair ' + os.path.basename(os.path.abspath(a.pair)) if a.pair else ''})\n")
        f.write(f"gpus: {a.gpus} x {props.get('model', 'GPU')}, host links {h2d_bw / 1000:.1f} / {d2h_bw / 1000:.1f} GB/s "
                f"(to / from the GPU, measured on {shost}), GPU to GPU {d2d_bw / 1000:.1f} GB/s, {d2d_lat:.1f} us "
                f"({'measured on ' + os.path.basename(os.path.abspath(a.pair)) if a.pair else 'assumed'})\n")
        f.write(f"cores: {cores}\n")
        # what the source's models were recorded with (scripts/smpi-run.sh takes nodes recorded for bench_mpi)
        try:
            with open(os.path.join(src, "MACHINE")) as fm:
                for line in fm:
                    if line.startswith("program: "):
                        f.write("source " + line)
        except OSError:
            pass
        for d in filled:
            f.write(f"unmeasured task size filled (--fill-unmeasured, assumed): {d}\n")
        for d in fitted:
            f.write(f"line through the measured sizes (--fit-sizes, assumed between them, and from the smallest / "
                    f"{a.fit_below:g}): {d}\n")
        for d in widened:
            f.write(f"curve used below its sizes (--fit-sizes, assumed; slab codelets from 1 byte, others to the "
                    f"smallest / --fit-below): {d}\n")
        if slabs:
            f.write(f"slab codelets (not recorded, assumed memory-bound): {slabs}\n")
        for d in hid:
            f.write(f"correction for several CUDA workers per GPU (--hidden, measured on the source's GPU): {d}\n")
    print(f"simulated-platform: {out} ({host}: {a.gpus} GPUs, {cores} cores, {copied} models"
          f"{', %d unmeasured sizes filled' % len(filled) if filled else ''})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

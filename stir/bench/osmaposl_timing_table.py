#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Reads the logs of stir/bench/osmaposl-timing.sh (one per pair and number of subsets) and prints a markdown table:
# time per sub-iteration, the part of it spent in the projector pair (the "Timed" pair's busy time), the rest, one
# iteration, the set-up, and the projector time per sub-iteration relative to 1 subset. Means over the
# sub-iterations after the first (which also warms up), when there are others; with more than one iteration, the
# last iteration's time too. With two pairs (neither of them Listmode), the relative L2 difference between their
# final images (and between STIR's own OSMAPOSL and starproj_OSMAPOSL, "STIROwn" and "Objective"); for the listmode
# objective function ("Listmode") a table of its own with the events per second; for "Long", the memory after
# iteration 2 and after the last.
# usage: osmaposl_timing_table.py WORKDIR PAIRS SUBSETS   (PAIRS, SUBSETS: space-separated lists)
import math
import os
import re
import sys
from array import array

SUB = re.compile(r"^(?:starproj_OSMAPOSL|starproj_OSSPS|OSMAPOSL \(STIR's own\)): sub-iteration (\d+): update ([0-9.eE+-]+) s, in projectors ([0-9.eE+-]+) s, "
                 r"end of sub-iteration ([0-9.eE+-]+) s(?: \(forward projector ([0-9.eE+-]+) s, back projector ([0-9.eE+-]+) s\))?")
TOTAL = re.compile(r"^Total Wall clock time: ([0-9.eE+-]+) seconds")
MEMORY = re.compile(r"iteration (\d+) \(sub-iteration (\d+)\) memory: host resident set ([0-9.]+) MiB(.*)")
GPU_MEMORY = re.compile(r"GPU (\d+): ([0-9.]+) MiB used")
EVENTS = re.compile(r"ListModeData using Starproj: (\d+) prompts of (\d+) records .* read in ([0-9.eE+-]+) s")


def parse(path):
    subs, total = {}, None
    if not os.path.exists(path):
        return subs, total
    with open(path, errors="replace") as f:
        for line in f:
            m = SUB.match(line)
            if m:
                subs[int(m.group(1))] = tuple(float(m.group(i) or "nan") for i in (2, 3, 4, 5, 6))
            m = TOTAL.match(line)
            if m:
                total = float(m.group(1))
    return subs, total


def parse_events(path):
    """the listmode objective function's prompts and the seconds STIR's reader took for the list (None: not listmode)"""
    if not os.path.exists(path):
        return None
    with open(path, errors="replace") as f:
        for line in f:
            m = EVENTS.search(line)
            if m:
                return int(m.group(1)), float(m.group(3))
    return None


def parse_memory(path):
    """the memory lines of a run with verbosity 1: [(iteration, resident set MiB, {gpu: MiB used})]"""
    rows = []
    if not os.path.exists(path):
        return rows
    with open(path, errors="replace") as f:
        for line in f:
            m = MEMORY.search(line)
            if m:
                gpus = {int(g): float(v) for g, v in GPU_MEMORY.findall(m.group(4))}
                rows.append((int(m.group(1)), float(m.group(3)), gpus))
    return rows


def memory_summary(pair, n, rows):
    """one line: the resident set and each GPU's memory after iteration 2 and after the last, and their growth"""
    second = [r for r in rows if r[0] == 2]
    if not second or len(rows) < 3:
        return "%s, %d subsets: %d memory lines, too few to compare" % (pair, n, len(rows))
    first, last = second[0], rows[-1]
    text = "%s, %d subsets: after iteration 2 and after iteration %d: resident set %.2f / %.2f MiB (%+.2f)" % (
        pair, n, last[0], first[1], last[1], last[1] - first[1])
    for g in sorted(last[2]):
        if g in first[2]:
            text += "; GPU %d %.2f / %.2f MiB (%+.2f)" % (g, first[2][g], last[2][g], last[2][g] - first[2][g])
    return text


def read_image(hv):
    """the float32 data of an Interfile image STIR wrote (little-endian, one file)"""
    data = None
    with open(hv, errors="replace") as f:
        for line in f:
            if line.lower().replace(" ", "").startswith("nameofdatafile:="):
                data = line.split(":=", 1)[1].strip()
    if data is None:
        return None
    path = os.path.join(os.path.dirname(hv), data)
    try:
        import numpy
        return numpy.fromfile(path, dtype="<f4").astype("f8")
    except ImportError:
        a = array("f")
        with open(path, "rb") as f:
            a.frombytes(f.read())
        if sys.byteorder != "little":
            a.byteswap()
        return a


def rel_l2(a, b):
    try:
        import numpy
        return float(numpy.linalg.norm(a - b) / numpy.linalg.norm(a))
    except ImportError:
        num = sum((x - y) * (x - y) for x, y in zip(a, b))
        den = sum(x * x for x in a)
        return math.sqrt(num / den) if den > 0 else float("nan")


def main():
    work, pairs, subsets = sys.argv[1], sys.argv[2].split(), [int(s) for s in sys.argv[3].split()]
    rows, proj_per_sub, listmode = [], {}, []
    for pair in pairs:
        for n in subsets:
            subs, total = parse(os.path.join(work, "OSMAPOSL_%s_%d.log" % (pair, n)))
            if not subs:
                rows.append("| %s | %d | - | (no sub-iteration: failed or skipped, see OSMAPOSL_%s_%d.log) | | | | | |"
                            % (pair, n, pair, n))
                continue
            done = sorted(subs)
            # the first sub-iteration also warms up (first use of the GPU kernels, allocations): left out of the
            # means when there are others
            timed = [k for k in done if k > 1] or done
            update = sum(subs[k][0] for k in timed) / len(timed)
            proj = sum(subs[k][1] for k in timed) / len(timed)
            fwd = sum(subs[k][3] for k in timed) / len(timed)
            back = sum(subs[k][4] for k in timed) / len(timed)
            proj_per_sub[(pair, n)] = proj
            first_iteration = [k for k in done if k <= n]
            iteration = (sum(subs[k][0] + subs[k][2] for k in first_iteration)
                         if len(first_iteration) == n else float("nan"))
            # the last iteration, when the run did more than one: no first use of anything in it
            last_iteration = [k for k in done if k > done[-1] - n] if len(done) >= 2 * n and n > 1 else []
            later = (sum(subs[k][0] + subs[k][2] for k in last_iteration) if len(last_iteration) == n else float("nan"))
            setup = total - sum(v[0] + v[2] for v in subs.values()) if total is not None else float("nan")
            rows.append((pair, n, len(done), update, proj, fwd, back, update - proj, iteration, later, setup))
            lm = parse_events(os.path.join(work, "OSMAPOSL_%s_%d.log" % (pair, n)))
            if lm:
                listmode.append((pair, n, lm[0], update, iteration, later, setup, lm[1]))
    print("| pair | subsets | sub-iterations | s per sub-iteration | projector s per sub-iteration "
          "| of which forward / back | rest s | iteration s | last iteration s | set-up s "
          "| projector time vs 1 subset (1/subsets) |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        if isinstance(r, str):
            print(r)
            continue
        pair, n, done, update, proj, fwd, back, rest, iteration, later, setup = r
        base = proj_per_sub.get((pair, 1))
        ratio = "%.3f (%.3f)" % (proj / base, 1.0 / n) if base else "- (%.3f)" % (1.0 / n)
        later_text = "%.2f" % later if later == later else "-"
        print("| %s | %d | %d | %.3f | %.3f | %.3f / %.3f | %.3f | %.2f | %s | %.1f | %s |"
              % (pair, n, done, update, proj, fwd, back, rest, iteration, later_text, setup, ratio))
    if listmode:
        print()
        print("| listmode | subsets | prompts | s per sub-iteration | events per s (a subset's events / its "
              "sub-iteration) | iteration s | last iteration s | set-up s | of which reading the list s |")
        print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        for pair, n, events, update, iteration, later, setup, read in listmode:
            later_text = "%.2f" % later if later == later else "-"
            print("| %s | %d | %d | %.3f | %.3g | %.2f | %s | %.1f | %.1f |"
                  % (pair, n, events, update, events / n / update, iteration, later_text, setup, read))
    memory = [memory_summary(pair, n, parse_memory(os.path.join(work, "OSMAPOSL_%s_%d.log" % (pair, n))))
              for pair in pairs for n in subsets if pair == "Long"]
    if memory:
        print()
        for line in memory:
            print("memory, " + line)
    # the final images of two runs: the two pairs when there are two (listmode data are Poisson draws: another
    # image), and STIR's own OSMAPOSL against starproj_OSMAPOSL on the same objective function
    compared = []
    if len(pairs) == 2 and "Listmode" not in pairs and "Long" not in pairs:
        compared.append(tuple(pairs))
    if "Objective" in pairs and "STIROwn" in pairs and ("Objective", "STIROwn") not in compared:
        compared.append(("Objective", "STIROwn"))
    for two in compared:
        print()
        for n in subsets:
            images = []
            for pair in two:
                subs, _ = parse(os.path.join(work, "OSMAPOSL_%s_%d.log" % (pair, n)))
                last = max(subs) if subs else 0
                images.append(os.path.join(work, "recon_%s_%d_%d.hv" % (pair, n, last)))
            if all(os.path.exists(p) for p in images):
                a, b = read_image(images[0]), read_image(images[1])
                if a is not None and b is not None and len(a) == len(b):
                    print("final images, %d subsets: relative L2 difference %s vs %s: %.3g"
                          % (n, two[1], two[0], rel_l2(a, b)))
                    continue
            print("final images, %d subsets: not compared (missing or different sizes)" % n)


if __name__ == "__main__":
    main()

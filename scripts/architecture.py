#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""architecture.py: starproj's structure drawn from a built tree (the file-level call graph from the library objects'
symbols, the include graph from the sources' quoted includes) as graphviz files, and the check of its rules.

The call graph is exact: file A -> file B when A's object needs (nm -u) a global symbol that B's object defines
(nm --defined-only); a static function or variable never appears, so a call inside a file draws nothing. Only the
libraries' objects count (src/ and codelets/), not the tests' or programs' own. Run through scripts/architecture.sh.
"""
import argparse
import filecmp
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import defaultdict

# The layers, lowest first: a folder may call into and include from folders of a lower rank only, never one of its
# own rank or above (include/ is the public API, open to every folder). src/io and src/mpi are libraries of their own
# that see of libstarproj only its public headers and src/core/shared.h (OUTER).
RANK = {"codelets": 0, "src/core": 1, "src/recon": 2, "src/io": 3, "src/mpi": 3}
OUTER = {"src/io", "src/mpi"}
OUTER_MAY_INCLUDE = {"src/core/shared.h"}
MAX_LINES = 900
# Calls against the layers that are known and due to go, with why they are still there: the check accepts exactly
# these symbols between exactly these folders (drawn dashed), names them on every run, and fails once one is gone so
# that the entry goes with it.
EXCEPTIONS = {}
# symbol types of nm that are a definition other objects can bind to (weak ones are left out: inline C++ of the CUDA
# objects, which every object may carry)
STRONG = set("TDBRCGS")
INCLUDE_RE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)


def folder_of(path):
    """The folder a repository file belongs to: its directory, or codelets for anything under codelets/."""
    if path.startswith("codelets/"):
        return "codelets"
    return os.path.dirname(path)


def parse_deps(text):
    """The first rule of a dependency file written by the compiler (.Plo / .Po): target and prerequisites."""
    text = text.replace("\\\n", " ")
    for line in text.splitlines():
        if ":" in line and not line.lstrip().startswith("#"):
            target, _, prereqs = line.partition(":")
            return target.strip(), prereqs.split()
    return None, []


def library_objects(root, build):
    """{source path (relative to root): object file} for every object of the libraries, found through the dependency
    files automake keeps beside them (.deps), and nvcc's objects (codelets/.libs/NAME_cu.o from codelets/NAME.cu)."""
    objects = {}
    for top in ("src", "codelets"):
        for dirpath, dirnames, filenames in os.walk(os.path.join(build, top)):
            dirnames.sort()
            if os.path.basename(dirpath) == ".libs":
                for f in sorted(filenames):
                    if f.endswith("_cu.o"):
                        rel = os.path.relpath(os.path.join(os.path.dirname(dirpath), f[:-5] + ".cu"), build)
                        if os.path.exists(os.path.join(root, rel)):
                            objects[rel] = os.path.join(dirpath, f)
            if os.path.basename(dirpath) != ".deps":
                continue
            for f in sorted(filenames):
                # the libraries' objects only (libtool names them after their target: libstarproj*_la-NAME)
                if not f.startswith("libstarproj") or not f.endswith((".Plo", ".Po")):
                    continue
                with open(os.path.join(dirpath, f), encoding="utf-8", errors="replace") as fh:
                    target, prereqs = parse_deps(fh.read())
                if not target or not prereqs:
                    continue  # a placeholder for an object not built
                src = os.path.normpath(os.path.join(build, prereqs[0]))
                rel = os.path.relpath(src, root)
                if rel.startswith("..") or not os.path.exists(os.path.join(root, rel)):
                    continue  # outside the tree, or a source since removed whose object a build still holds
                base = os.path.join(build, target)
                if base.endswith(".lo"):
                    pic = os.path.join(os.path.dirname(base), ".libs", os.path.basename(base)[:-3] + ".o")
                    obj = pic if os.path.exists(pic) else base[:-3] + ".o"
                else:
                    obj = base
                if os.path.exists(obj):
                    objects[rel] = obj
    return objects


def nm(args, obj):
    out = subprocess.run(["nm"] + args + [obj], check=True, capture_output=True, text=True).stdout
    rows = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 2:
            rows.append((parts[-2], parts[-1]))
    return rows


def call_graph(objects):
    """{(A, B): sorted symbols} for every file A whose object needs a symbol that file B's object defines."""
    defined = defaultdict(list)
    needed = {}
    for src, obj in sorted(objects.items()):
        for kind, name in nm(["--defined-only", "-g"], obj):
            if kind in STRONG:
                defined[name].append(src)
        needed[src] = {name for kind, name in nm(["-u"], obj) if kind == "U"}
    edges = defaultdict(set)
    for src, names in needed.items():
        for name in names:
            for where in defined.get(name, ()):
                if where != src:
                    edges[(src, where)].add(name)
    return {e: sorted(s) for e, s in edges.items()}


def include_dirs(root):
    """The folders the library's sources are compiled with (-I$(top_srcdir)/X in Makefile.am)."""
    dirs = []
    with open(os.path.join(root, "Makefile.am"), encoding="utf-8") as fh:
        for d in re.findall(r"-I\$\(top_srcdir\)/([\w/.+-]+)", fh.read()):
            if d not in dirs:
                dirs.append(d)
    return dirs


def repo_files(root):
    files = []
    for top in ("src", "codelets", "include"):
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
            dirnames.sort()
            for f in sorted(filenames):
                if f.endswith((".c", ".h", ".cu")):
                    files.append(os.path.relpath(os.path.join(dirpath, f), root))
    return files


def include_graph(root, files):
    """{file: set of repository files it includes directly}, resolved as the compiler does for quoted includes: the
    including file's folder first, then the -I folders. Includes under #if count as well (the stricter reading)."""
    dirs = include_dirs(root)
    graph = {}
    for f in files:
        with open(os.path.join(root, f), encoding="utf-8", errors="replace") as fh:
            names = INCLUDE_RE.findall(fh.read())
        targets = set()
        for name in names:
            for d in [os.path.dirname(f)] + dirs:
                cand = os.path.normpath(os.path.join(d, name))
                if os.path.exists(os.path.join(root, cand)):
                    targets.add(cand)
                    break
        graph[f] = targets
    return graph


def reach(graph, start):
    seen, todo = set(), [start]
    while todo:
        for g in graph.get(todo.pop(), ()):
            if g not in seen:
                seen.add(g)
                todo.append(g)
    return seen


def sccs(nodes, edges):
    """Strongly connected components of more than one node (Tarjan's algorithm, iterative), each sorted."""
    succ = defaultdict(list)
    for a, b in edges:
        succ[a].append(b)
    index, low, stack, on_stack, out, counter = {}, {}, [], set(), [], [0]
    for v0 in sorted(nodes):
        if v0 in index:
            continue
        work = [(v0, iter(sorted(succ[v0])))]
        index[v0] = low[v0] = counter[0]
        counter[0] += 1
        stack.append(v0)
        on_stack.add(v0)
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(succ[w]))))
                    advanced = True
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return sorted(out)


def quote(s):
    """A graphviz string (its escapes, such as \\n in a label, are left to graphviz)."""
    return '"' + s.replace('"', '\\"') + '"'


def tooltip(symbols, limit=40):
    shown = symbols[:limit] + (["... %d more" % (len(symbols) - limit)] if len(symbols) > limit else [])
    return "&#10;".join(shown)


HEADER = ["  graph [rankdir=BT, fontname=Helvetica, fontsize=11, nodesep=0.25, ranksep=0.45];",
          "  node [shape=box, style=\"rounded,filled\", fillcolor=white, fontname=Helvetica, fontsize=10];",
          "  edge [color=gray30, arrowsize=0.6];"]


def dot_folder(folder, files, calls):
    """One folder's files and the calls among them (A -> B: A calls what B defines; B drawn below A), files of a
    circle in red, calls into the files that most of the folder calls pale; the tooltip of an edge names the symbols."""
    inside = {e: s for e, s in calls.items() if folder_of(e[0]) == folder and folder_of(e[1]) == folder}
    circles = sccs(files, inside.keys())
    in_circle = {f: i for i, c in enumerate(circles) for f in c}
    out = ["digraph %s {" % quote("calls " + folder)]
    out += HEADER
    out.append("  label=%s; labelloc=t;" % quote("%s: calls between its files (A -> B: A calls B)" % folder))
    for f in files:
        color = ', color=red, fontcolor=red' if f in in_circle else ""
        out.append("  %s [label=%s%s];" % (quote(f), quote(os.path.basename(f)), color))
    # the files most of the folder calls (errors, the runtime's state) would hide the rest: edges into them are pale
    callers = defaultdict(int)
    for a, b in inside:
        callers[b] += 1
    common = {b for b, n in callers.items() if n >= max(4, len(files) // 2)}
    for (a, b), syms in sorted(inside.items()):
        red = in_circle.get(a) is not None and in_circle.get(a) == in_circle.get(b)
        look = ", color=red" if red else ", color=gray80" if b in common else ""
        out.append("  %s -> %s [tooltip=%s%s];" % (quote(a), quote(b), quote("%s -> %s: %s" % (
            os.path.basename(a), os.path.basename(b), tooltip(syms))), look))
    out.append("}")
    return "\n".join(out) + "\n", circles


def dot_folders(folders, calls, nfiles):
    """The folders and the calls between them, each edge labelled with its symbols and file pairs."""
    between = defaultdict(lambda: [set(), 0])
    for (a, b), syms in calls.items():
        fa, fb = folder_of(a), folder_of(b)
        if fa != fb:
            between[(fa, fb)][0].update(syms)
            between[(fa, fb)][1] += 1
    against = {e for e in between if RANK.get(e[0], -1) <= RANK.get(e[1], -1)}
    excused = {e for e in against if between[e][0] <= EXCEPTIONS.get(e, set())}
    bad = against - excused
    out = ["digraph \"calls between folders\" {"]
    out += HEADER
    out.append("  label=\"folders: calls between them (A -> B: A calls B; symbols, file pairs)\"; labelloc=t;")
    for f in folders:
        out.append("  %s [label=%s];" % (quote(f), quote("%s\\n%d files" % (f, nfiles[f]))))
    for (a, b), (syms, pairs) in sorted(between.items()):
        out.append("  %s -> %s [label=%s, tooltip=%s%s];" % (quote(a), quote(b), quote("%d, %d" % (len(syms), pairs)),
                                                              quote(tooltip(sorted(syms))),
                                                              ", color=red, fontcolor=red" if (a, b) in bad else
                                                              ", style=dashed, color=orange3" if (a, b) in excused
                                                              else ""))
    out.append("}")
    unused = {e: sorted(syms - (between[e][0] if e in between else set())) for e, syms in EXCEPTIONS.items()}
    stale = sorted((e, syms) for e, syms in unused.items() if syms)
    return "\n".join(out) + "\n", sorted(bad), sorted(excused), stale, between


def include_node(f):
    """Node of the include figure: a header of include/ or src/ itself; the sources of a src/ folder as one node;
    codelets/ (headers and sources) as one."""
    if f.startswith("codelets/"):
        return "codelets"
    if f.endswith(".h"):
        return f
    return folder_of(f) + "/*.c"


def dot_includes(incl):
    edges = set()
    nodes = set()
    for f, targets in incl.items():
        a = include_node(f)
        nodes.add(a)
        for t in targets:
            b = include_node(t)
            nodes.add(b)
            if a != b:
                edges.add((a, b))
    out = ["digraph includes {"]
    out += HEADER
    out.append("  label=\"includes (A -> B: a file of A includes B; the sources of a folder as one box)\"; labelloc=t;")
    clusters = defaultdict(list)
    for n in sorted(nodes):
        clusters["codelets" if n == "codelets" else os.path.dirname(n)].append(n)
    for i, (c, members) in enumerate(sorted(clusters.items())):
        out.append("  subgraph %s {" % quote("cluster_%d" % i))
        out.append("    label=%s; style=rounded; color=gray60; fontname=Helvetica; fontsize=10;" % quote(c + "/"))
        for n in members:
            shape = ", fillcolor=gray92" if n.endswith("*.c") or n == "codelets" else ""
            label = os.path.basename(n) if n != "codelets" else "codelets/*"
            out.append("    %s [label=%s%s];" % (quote(n), quote(label), shape))
        out.append("  }")
    for a, b in sorted(edges):
        out.append("  %s -> %s;" % (quote(a), quote(b)))
    out.append("}")
    return "\n".join(out) + "\n"


def include_violations(incl):
    """Includes (direct or through other headers) that point up or sideways across the layers."""
    bad = []
    for f in sorted(incl):
        fa = folder_of(f)
        if fa not in RANK or f.startswith("include/"):
            continue
        for t in sorted(reach(incl, f)):
            fb = folder_of(t)
            if fb == fa or t.startswith("include/"):
                continue
            if fa in OUTER:
                if t not in OUTER_MAY_INCLUDE:
                    bad.append((f, t))
            elif fb not in RANK or RANK[fb] >= RANK[fa]:
                bad.append((f, t))
    return bad


def draw(root, build, out):
    objects = library_objects(root, build)
    if not any(s.startswith("src/") for s in objects):
        sys.exit("architecture: no library objects under %s (build the tree first: bash scripts/build.sh)" % build)
    calls = call_graph(objects)
    files_of = defaultdict(list)
    for s in sorted(objects):
        files_of[folder_of(s)].append(s)
    incl = include_graph(root, repo_files(root))
    os.makedirs(out, exist_ok=True)
    report = {"circles": {}, "folder_edges": [], "include_bad": include_violations(incl), "long": [],
              "unknown": sorted(f for f in files_of if f not in RANK), "calls": calls}
    report["partial"] = partial_build(root, build, objects)
    written = []
    for folder in sorted(f for f in files_of if f.startswith("src/")):
        text, circles = dot_folder(folder, files_of[folder], calls)
        name = "calls-" + folder.replace("/", "-") + ".dot"
        written.append(name)
        with open(os.path.join(out, name), "w", encoding="utf-8") as fh:
            fh.write(text)
        report["circles"][folder] = circles
    text, bad, excused, stale, between = dot_folders(sorted(files_of), calls, {f: len(v) for f, v in files_of.items()})
    report["folder_edges"] = bad
    report["excused"] = excused
    report["stale_exceptions"] = stale
    report["between"] = between
    with open(os.path.join(out, "calls-folders.dot"), "w", encoding="utf-8") as fh:
        fh.write(text)
    written.append("calls-folders.dot")
    with open(os.path.join(out, "includes.dot"), "w", encoding="utf-8") as fh:
        fh.write(dot_includes(incl))
    written.append("includes.dot")
    for f in repo_files(root):
        if f.startswith("src/"):
            with open(os.path.join(root, f), encoding="utf-8", errors="replace") as fh:
                n = sum(1 for _ in fh)
            if n > MAX_LINES:
                report["long"].append((f, n))
    return written, report


def partial_build(root, build, objects):
    """Why this build cannot give the committed figures (they are drawn from a build with the CUDA codelets and every
    library), or None: one without CUDA or without libstarproj-io or -mpi calls and defines other symbols."""
    config = os.path.join(build, "config.h")
    cuda = False
    if os.path.exists(config):
        with open(config, encoding="utf-8", errors="replace") as fh:
            cuda = re.search(r"^#define SPROJ_USE_CUDA 1", fh.read(), re.M) is not None
    if not cuda:
        return "it has no CUDA codelets"
    built = {folder_of(s) for s in objects}
    missing = sorted(d for d in {folder_of(f) for f in repo_files(root) if f.startswith("src/") and f.endswith(".c")}
                     if d not in built)
    return "it has no objects of " + ", ".join(missing) if missing else None


def summary(report):
    calls = report["calls"]
    ok = True
    for folder, circles in sorted(report["circles"].items()):
        if not circles:
            print("architecture: %-10s no circle among its files" % folder)
        for c in circles:
            ok = False
            print("architecture: %-10s CIRCLE of %d files: %s" % (folder, len(c), " ".join(os.path.basename(f) for f in c)))
            for a in c:
                for b in c:
                    if (a, b) in calls:
                        print("    %s -> %s: %s" % (os.path.basename(a), os.path.basename(b), " ".join(calls[(a, b)])))
    for a, b in report["folder_edges"]:
        ok = False
        syms = sorted(report["between"][(a, b)][0])
        print("architecture: %s calls up or sideways into %s: %s" % (a, b, " ".join(syms)))
        for (fa, fb), s in sorted(calls.items()):
            if folder_of(fa) == a and folder_of(fb) == b:
                print("    %s -> %s: %s" % (fa, fb, " ".join(s)))
    for a, b in report["excused"]:
        print("architecture: %s calls up into %s, a known exception (EXCEPTIONS in scripts/architecture.py): %s"
              % (a, b, " ".join(sorted(report["between"][(a, b)][0]))))
    for (a, b), syms in report["stale_exceptions"]:
        ok = False
        print("architecture: the exception for %s -> %s no longer applies (%s): remove it from EXCEPTIONS in "
              "scripts/architecture.py" % (a, b, " ".join(syms)))
    for f, t in report["include_bad"]:
        ok = False
        print("architecture: %s includes %s (directly or through a header), against the layers" % (f, t))
    for f in report["unknown"]:
        ok = False
        print("architecture: folder %s has no place among the layers (RANK in scripts/architecture.py)" % f)
    for f, n in report["long"]:
        ok = False
        print("architecture: %s has %d lines (at most %d)" % (f, n, MAX_LINES))
    return ok


def render(out, names):
    for name in names:
        dot = os.path.join(out, name)
        subprocess.run(["dot", "-Tsvg", dot, "-o", dot[:-4] + ".svg"], check=True)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=os.path.dirname(here), help="the source tree (default: this script's)")
    ap.add_argument("--build", help="its built tree (default: ROOT/build)")
    ap.add_argument("--out", help="where the figures go (default: ROOT/doc/architecture)")
    ap.add_argument("--check", action="store_true",
                    help="fail on a circle, a call or include against the layers, a file over %d lines, or figures "
                         "that differ from the committed ones; writes nothing" % MAX_LINES)
    ap.add_argument("--no-svg", action="store_true", help="write the .dot files only")
    args = ap.parse_args()
    root = os.path.abspath(args.root)
    build = os.path.abspath(args.build or os.path.join(root, "build"))
    out = os.path.abspath(args.out or os.path.join(root, "doc", "architecture"))
    if not args.check:
        written, report = draw(root, build, out)
        ok = summary(report)
        if report["partial"]:
            print("architecture: this build cannot give the committed figures: %s" % report["partial"])
        if not args.no_svg:
            render(out, written)
        print("architecture: %d figures in %s%s" % (len(written), os.path.relpath(out),
                                                     "" if ok else " (the rules do not hold: see above)"))
        return 0
    tmp = tempfile.mkdtemp(prefix="architecture.")
    try:
        written, report = draw(root, build, tmp)
        ok = summary(report)
        if report["partial"]:
            print("architecture: the figures were not compared: %s (they are drawn from a build with the CUDA "
                  "codelets and every library)" % report["partial"])
            written = []
        for name in written:
            committed = os.path.join(out, name)
            if not os.path.exists(committed):
                ok = False
                print("architecture: %s is missing: run bash scripts/architecture.sh and commit it"
                      % os.path.relpath(committed, root))
            elif not filecmp.cmp(committed, os.path.join(tmp, name), shallow=False):
                ok = False
                print("architecture: %s differs from the code's structure: run bash scripts/architecture.sh and "
                      "commit it" % os.path.relpath(committed, root))
                diff = subprocess.run(["diff", "-u", "--label", "committed " + name, "--label", "from the code " + name,
                                       committed, os.path.join(tmp, name)], capture_output=True, text=True)
                sys.stdout.write("".join(diff.stdout.splitlines(True)[:40]))
    finally:
        shutil.rmtree(tmp)
    done = "the structure holds to its rules" + (" (figures not compared)" if report["partial"] else
                                                  " and matches the figures")
    print("architecture: %s" % (done if ok else "FAILED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The tables of stir/bench/time-to-image.sh from its work folder: each run's set-up (the program's start to its first
update), the objective function's own set-up steps, its iterations and the whole run (the program's start to its end,
the image on disk); then the whole runs of the three ways to reconstruct span 11 side by side.

usage: time_to_image_table.py WORK SUBSETS ITERATIONS"""
import os
import re
import sys


def steps_of(text):
    """The objective function's set-up steps, as (name, seconds): its 'steps, seconds in all' line when the set-up
    ends, and from the next one that has them (verbosity 1: once the last subset's sensitivity is handed over) the
    parts of the sensitivities' hand-over to STIR, which comes after ('sensitivities to STIR: ...'; logs of versions
    before name one step 'sensitivities handed to STIR', in the line when the objective function goes)."""
    lines = re.findall(r'steps, seconds in all \(calls\):(.*)', text)
    if not lines:
        return []
    found = re.findall(r' ([^;]+?) ([0-9.]+) \(\d+\);', lines[0])
    steps = [(name.replace('set_up: ', ''), float(s)) for name, s in found if name.startswith('set_up: ')]
    for line in lines[1:]:
        later = [(name, float(s)) for name, s in re.findall(r' ([^;]+?) ([0-9.]+) \(\d+\);', line)
                 if name.startswith('sensitivities to STIR') or name == 'sensitivities handed to STIR']
        if later:
            steps += later
            break
    return steps


def subiterations_of(text):
    """Seconds of each sub-iteration: its update and its end-of-sub-iteration work."""
    return [float(u) + float(e) for u, e in
            re.findall(r'sub-iteration \d+: update ([0-9.]+) s, in projectors [0-9.]+ s, end of sub-iteration ([0-9.]+) s',
                       text)]


def main():
    if len(sys.argv) != 4:
        raise SystemExit(__doc__)
    work, subsets, iterations = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    rows = []
    with open(os.path.join(work, 'cases.tsv')) as f:
        for line in f:
            name, what, rc, t0, t1 = line.rstrip('\n').split('\t')
            text = ''
            path = os.path.join(work, name + '.log')
            if os.path.exists(path):
                with open(path, errors='replace') as g:
                    text = g.read()
            first = re.search(r'first update starts at ([0-9.]+) s', text)
            t0, t1 = float(t0), float(t1)
            rows.append({'name': name, 'what': what, 'rc': rc, 'whole': t1 - t0 if rc != 'skipped' else None,
                         'setup': float(first.group(1)) - t0 if first else None, 'steps': steps_of(text),
                         'subs': subiterations_of(text)})

    def fmt(x, digits=1):
        return '-' if x is None else '%.*f' % (digits, x)

    def iteration_times(r):
        subs = r['subs']
        return [sum(subs[k * subsets:(k + 1) * subsets]) for k in range(len(subs) // subsets)]

    print('| run | set-up s | the objective function\'s set-up steps, s | iterations s | whole run s | exit |')
    print('| --- | ---: | --- | --- | ---: | --- |')
    for r in rows:
        steps = r['steps']
        part = ', '.join('%s %.2f' % (n, s) for n, s in steps)
        if steps and r['setup'] is not None:
            part += '; STIR and the rest %.2f' % (r['setup'] - sum(s for _, s in steps))
        its = iteration_times(r)
        it = ' / '.join('%.2f' % t for t in its) if its else ('%d sub-iteration(s): %.2f' % (len(r['subs']), sum(r['subs']))
                                                             if r['subs'] else '-')
        print('| %s | %s | %s | %s | %s | %s |' % (r['what'], fmt(r['setup'], 2), part or '-', it, fmt(r['whole']), r['rc']))

    print()
    print('Span 11 (72.6 M bins, 344 x 344 x 127 voxels), OSMAPOSL %d iterations x %d subsets, the same .par (data, '
          'normalisation and additive term from files, subset sensitivities computed); from the program\'s start to the '
          'image on disk:' % (iterations, subsets))
    print()
    print('| objective function and projectors | whole run s | set-up s | s per iteration (first / later) |')
    print('| --- | ---: | ---: | --- |')
    labels = {'span11_computed': 'objective function using Starproj, updates on the GPU',
              'span11_read': 'the same, subset sensitivities read from files',
              'span11_parallelproj': "STIR's, Parallelproj pair (libparallelproj's CUDA build)",
              'span11_raytracing': "STIR's, its ray-tracing matrix on the host's cores"}
    for r in rows:
        if r['name'] in labels:
            its = iteration_times(r)
            per = ' / '.join('%.2f' % t for t in its[:1] + its[1:]) if its else '-'
            whole = fmt(r['whole']) if r['rc'] == '0' else '%s (%s)' % (fmt(r['whole']), r['rc'])
            print('| %s | %s | %s | %s |' % (labels[r['name']], whole, fmt(r['setup'], 2), per))
    images = os.path.join(work, 'images.txt')
    if os.path.exists(images):
        print()
        with open(images) as f:
            for line in f:
                print(line.rstrip())


if __name__ == '__main__':
    main()

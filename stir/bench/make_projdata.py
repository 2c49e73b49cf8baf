#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Projection data of a STIR Interfile template's size for the set-up benchmarks: a normalisation or an additive term
as STIR reads them from files ("Bin Normalisation From ProjData", "additive sinogram").

usage: make_projdata.py TEMPLATE.hs OUT LO HI
Writes OUT.hs (the template's header naming OUT.s) and OUT.s, floats in [LO, HI) in a fixed pattern (no two
neighbours alike), one per bin of every segment (and TOF position) the header describes. Python's standard library
only: the array is a pattern of 100003 values repeated, so that a few hundred million floats take seconds."""
import array
import os
import re
import sys


def bins(header):
    def size(axis):
        m = re.search(r'!matrix size \[%d\] *:= *(.*)' % axis, header)
        if not m:
            raise SystemExit('make_projdata: no "!matrix size [%d]" in the template' % axis)
        return [int(v) for v in re.findall(r'\d+', m.group(1))]
    dims = int(re.search(r'number of dimensions *:= *(\d+)', header).group(1))
    n = sum(size(2)) * size(3)[0] * size(1)[0]
    if dims == 5:
        n *= size(5)[0]
    return n


def main():
    if len(sys.argv) != 5:
        raise SystemExit(__doc__)
    template, out, lo, hi = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
    with open(template) as f:
        header = f.read()
    n = bins(header)
    period = 100003
    pattern = array.array('f', [lo + (hi - lo) * ((i * 7919) % period) / period for i in range(period)])
    values = pattern * (n // period + 1)
    del values[n:]
    with open(out + '.s', 'wb') as f:
        values.tofile(f)
    name = os.path.basename(out) + '.s'
    header = re.sub(r'name of data file *:= *.*', 'name of data file := ' + name, header)
    with open(out + '.hs', 'w') as f:
        f.write(header)
    print('make_projdata: %s.hs, %d floats in [%g, %g)' % (out, n, lo, hi))


if __name__ == '__main__':
    main()

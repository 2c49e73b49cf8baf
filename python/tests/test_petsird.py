# test_petsird.py: the PETSIRD LM-OSEM example on a file written with petsird's own generator (skipped without petsird).
import math
import os
import sys

import numpy as np
import pytest

import starproj as sp

petsird = pytest.importorskip("petsird")
generator = pytest.importorskip("petsird.helpers.generator")
from petsird.helpers import geometry  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples"))
import petsird_lmosem as ex  # noqa: E402

# a small cylindrical scanner of one module type in the generator's own description (its demo scanner has 2.5 M
# crystal pairs: too many for a quick test)
SMALL = generator.CylindricalBlocksInfo(
    radius=100.0, crystal_length=(10.0, 4.0, 4.0), num_crystals_per_module=(1, 4, 3), num_modules_along_ring=16,
    num_modules_along_axis=1, arc=2 * math.pi, start_angle=0.0, module_spacing_along_axis=0.0,
    number_of_tof_bins=7, tof_resolution=30.0, LLD=430.0, ULD=650.0, number_of_event_energy_bins=2,
    energy_resolution=0.1, material_id=1)


def plausible_tof_idx(header, event, rng):
    """The generator draws TOF bins uniformly over +-(sum of the radii), mostly outside the scanner: redraw the bin from
    a point of the LOR (PETSIRD's (t1 - t2) c / 2 is the displacement from the midpoint towards the second bin)."""
    sc = header.scanner
    ends = [np.mean([c.c for c in geometry.get_detecting_box(sc, 0, petsird.helpers.expand_detection_bin(sc, 0, b))
                     .corners], axis=0) for b in event.detection_bins[:2]]
    half = 0.5 * np.linalg.norm(ends[1] - ends[0])
    edges = np.asarray(sc.tof_bin_edges[0][0].edges)
    s = rng.uniform(-0.8 * half, 0.8 * half)
    return int(np.clip(np.searchsorted(edges, s) - 1, 0, len(edges) - 2))


@pytest.fixture(scope="module")
def petsird_file(tmp_path_factory):
    header = petsird.Header(exam=petsird.ExamInformation(), scanner=generator.get_scanner_info([SMALL]))
    path = str(tmp_path_factory.mktemp("petsird") / "small.petsird")
    pair = petsird.TypeOfModulePair((0, 0))
    rng = np.random.default_rng(0)
    with petsird.BinaryPETSIRDWriter(path) as w:
        w.write_header(header)
        blocks = []
        for t in range(2):
            # get_events yields one event object whose detection_bins list it reuses for every event: copy each
            events = [petsird.CoincidenceEvent(detection_bins=list(e.detection_bins), tof_idx=e.tof_idx)
                      for e in generator.get_events(header, pair, 250)]
            for e in events:
                e.tof_idx = plausible_tof_idx(header, e, rng)
            blocks.append(petsird.TimeBlock.EventTimeBlock(petsird.EventTimeBlock(
                time_interval=petsird.TimeInterval(start=t, stop=t + 1), prompt_events=[[events]])))
        w.write_time_blocks(blocks)
    return path, header


def test_event_geometry_against_petsird_helpers(petsird_file):
    path, _ = petsird_file
    header, prompts = ex.read_file(path)
    events = prompts[(0, 0)]
    assert len(events) == 500
    xs, xe, tof_bin, m = ex.event_arrays(header, events, 0, 0)
    sc = header.scanner
    for k in range(0, 500, 61):
        for bin_, x in ((events[k].detection_bins[0], xs[k]), (events[k].detection_bins[1], xe[k])):
            box = geometry.get_detecting_box(sc, 0, petsird.helpers.expand_detection_bin(sc, 0, bin_))
            centre = np.mean([c.c for c in box.corners], axis=0)
            np.testing.assert_allclose(x, centre, atol=1e-3)
        assert tof_bin[k] == events[k].tof_idx
        eff = petsird.helpers.get_detection_efficiency(sc, petsird.TypeOfModulePair((0, 0)), events[k],
                                                       with_calibration_factor=False)
        assert eff > 0 and m[k] > 0
    n, width, sigma, offset = ex.tof_parameters(sc, 0, 0)
    assert n == 7 and abs(width - 400.0 / 7) < 1e-3 and abs(offset) < 1e-3 and abs(sigma - 30 / 2.3548) < 1e-3


def test_lmosem_of_generated_file(rt, petsird_file):
    path, _ = petsird_file
    obj = []
    x, dims, vs, origin, n = ex.reconstruct(path, iterations=2, subsets=2, voxel_size=5.0,
                                            callback=lambda p: obj.append(p["objective"]))
    assert n == 500 and x.shape == dims
    assert np.isfinite(x).all() and (x >= 0).all() and x.sum() > 0
    assert len(obj) == 2 and obj[1] < obj[0]

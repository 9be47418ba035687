"""pymoten's motion energy of raw RGB24 frames, for tests/qualia/motion_energy.rs.

Usage: python pymoten_reference.py FRAMES WIDTH HEIGHT FPS ROWS COLS OUT_PREFIX

FRAMES holds n RGB24 frames of WIDTH x HEIGHT (the clip as the model decodes it). The frames
are turned into luminance by pymoten itself (PIL Lanczos resize to ROWS x COLS, CIE L*), and
projected on pymoten's own MotionEnergyPyramid with the scales, directions and speeds of
brainscan's bank. Writes OUT_PREFIX.json (the filters' parameters, in pymoten's order) and
OUT_PREFIX.f32 (n x filters energies, sqrt(sin^2 + cos^2), little-endian float32).
"""
import json
import sys

import numpy as np
import moten
from moten.io import imagearray2luminance


def main():
    frames, width, height, fps, rows, cols, out = sys.argv[1:8]
    width, height, fps, rows, cols = int(width), int(height), int(fps), int(rows), int(cols)
    raw = np.fromfile(frames, dtype=np.uint8)
    n = raw.size // (width * height * 3)
    rgb = raw[: n * width * height * 3].reshape(n, height, width, 3)
    luminance = imagearray2luminance(rgb, size=(rows, cols))
    pyramid = moten.pyramids.MotionEnergyPyramid(
        stimulus_vhsize=(rows, cols),
        stimulus_fps=fps,
        temporal_frequencies=[2, 4],
        spatial_frequencies=[2, 4, 8],
        spatial_directions=[0, 45, 90, 135, 180, 225, 270, 315],
    )
    sin, cos = pyramid.raw_project_stimulus(luminance, dtype="float64")
    energy = np.sqrt(sin**2 + cos**2).astype("<f4")
    energy.tofile(out + ".f32")
    keys = ["centerh", "centerv", "direction", "spatial_freq", "temporal_freq"]
    filters = [{k: float(f[k]) for k in keys} for f in pyramid.filters]
    with open(out + ".json", "w") as f:
        json.dump({"frames": n, "filters": filters, "taps": int(pyramid.filters[0]["filter_temporal_width"])}, f)


if __name__ == "__main__":
    main()

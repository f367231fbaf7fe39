#!/usr/bin/env python3
"""Side-by-side speed of the ANNY package's torch forward and hailo-edge's Rust forward.

In one invocation: times the package's forward (float32, batch 1, torch limited to one
thread, and again with torch's default thread count), then runs the Rust criterion bench
`benches/bench_body.rs` (single thread), reads its estimates, and prints both with the ratios.

Two torch figures are measured:
  - `full`: `model(pose, phenotype)`, what the package does per call (phenotype -> rest mesh
    and skeleton, forward kinematics, skinning);
  - `pose-only`: forward kinematics + skinning on a rest state computed beforehand, the same
    work as the Rust `mesh_forward`.

Setup: python3 -m venv tools/.venv && tools/.venv/bin/pip install anny==0.6.2 torch
Run:   ANNY_CACHE_DIR=tools/.venv/anny_cache tools/.venv/bin/python tools/bench_anny_torch.py
"""

import json
import os
import pathlib
import subprocess
import sys
import time

import torch
import roma

import anny

ROOT = pathlib.Path(__file__).resolve().parent.parent


def best_time(fn, repeat=200, warmup=20):
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t)
    samples.sort()
    return samples[len(samples) // 2]  # median, seconds


def torch_figures(threads):
    torch.set_num_threads(threads)
    model = anny.Anny().to(torch.float32)
    bones = len(model.bone_labels)
    gen = torch.Generator().manual_seed(0)
    rotvec = torch.randn(bones, 3, generator=gen) * 0.25
    pose = torch.eye(4).repeat(1, bones, 1, 1)
    pose[0, :, :3, :3] = roma.rotvec_to_rotmat(rotvec)
    pose[0, 0, :3, 3] = torch.tensor([0.1, -0.2, 1.0])
    phenotype = {label: torch.tensor([0.4]) for label in model.phenotype_labels}

    def full():
        with torch.no_grad():
            model(pose_parameters=pose, phenotype_kwargs=phenotype)

    with torch.no_grad():
        coeffs = model._get_phenotype_blendshape_coefficients(
            model._parse_parameter_kwargs(phenotype, model.phenotype_labels, 0.5, "phenotype"),
            torch.zeros(1, 0),
            torch.zeros(1, 0),
        )
        rest = model.get_rest_model(coeffs)

    def pose_only():
        with torch.no_grad():
            transforms, _ = model.get_bone_transforms(pose, rest["rest_bone_poses"])
            model.get_skinned_vertices(rest["rest_vertices"], transforms)

    return {"full": best_time(full), "pose_only": best_time(pose_only)}


def rust_figures():
    env = dict(os.environ)
    subprocess.run(
        ["cargo", "bench", "--bench", "bench_body", "--", "--noplot"],
        cwd=ROOT,
        env=env,
        check=True,
        stdout=sys.stderr,
    )
    target = pathlib.Path(env.get("CARGO_TARGET_DIR", ROOT / "target"))
    out = {}
    for name in [
        "keypoint_forward",
        "mesh_forward",
        "rest_from_phenotype",
        "rest_keypoints_only",
        "full_forward_with_phenotype",
    ]:
        estimates = target / "criterion" / f"body_{name}" / "new" / "estimates.json"
        data = json.loads(estimates.read_text())
        out[name] = data["median"]["point_estimate"] * 1e-9  # ns -> s
    return out


LOAD_BEFORE = os.getloadavg()


def main():
    torch1 = torch_figures(1)
    torch_n = torch_figures(os.cpu_count() or 1)
    rust = rust_figures()
    us = lambda s: f"{s * 1e6:10.1f} us"
    print(f"load average before/after: {LOAD_BEFORE} / {os.getloadavg()}")
    print(f"torch {torch.__version__}, anny {anny.models.model_data.ANNY_VERSION}, float32, batch 1")
    print(f"  torch full forward, 1 thread          {us(torch1['full'])}")
    print(f"  torch full forward, {os.cpu_count()} threads         {us(torch_n['full'])}")
    print(f"  torch pose-only forward, 1 thread     {us(torch1['pose_only'])}")
    print("hailo-edge (Rust, f64, 1 thread)")
    for name, value in rust.items():
        print(f"  {name:36s}{us(value)}")
    print("ratios (torch / Rust, 1 thread)")
    print(f"  mesh forward (pose-only vs pose-only):  {torch1['pose_only'] / rust['mesh_forward']:6.1f}x")
    print(f"  mesh forward vs torch full forward:     {torch1['full'] / rust['mesh_forward']:6.1f}x")
    print(
        f"  full forward incl. phenotype -> rest:   "
        f"{torch1['full'] / rust['full_forward_with_phenotype']:6.1f}x"
    )


if __name__ == "__main__":
    main()

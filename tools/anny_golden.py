#!/usr/bin/env python3
"""Golden samples of the ANNY package's own forward, for tests/body_golden.rs.

Runs the real `anny` 0.6.2 package (torch, float64, default `Anny()`: rig `anny`, topology
`anny`, default phenotypes, `local-ref` pose parameterisation, the package's default skinning)
on a few deterministic poses and phenotypes, and writes a small safetensors file with the
inputs (per-bone delta rotation matrices, root translation, phenotype sliders) and outputs
(23 COCO keypoints, bone poses, every third posed vertex).

Setup (once):
    python3 -m venv tools/.venv
    tools/.venv/bin/pip install anny==0.6.2 torch
Run:
    ANNY_CACHE_DIR=tools/.venv/anny_cache tools/.venv/bin/python tools/anny_golden.py \
        tests/data/anny_golden.safetensors
"""

import hashlib
import json
import sys

import numpy as np
import torch
import roma
from safetensors.numpy import save_file

import anny
from anny.keypoints import KeypointsRegressor

VERTEX_STRIDE = 3
PHENOTYPE_LABELS = ["gender", "age", "muscle", "weight", "height", "proportions"]


def samples(bone_count):
    rng = np.random.default_rng(20261129)
    out = [("rest", np.full(6, 0.5), np.zeros((bone_count, 3)), np.zeros(3))]
    out.append(("random", rng.uniform(0, 1, 6), rng.normal(0, 0.25, (bone_count, 3)), rng.normal(0, 0.5, 3)))
    out.append(
        ("extremes", np.array([1.0, 0.0, 1.0, 0.0, 1.0, 0.0]), rng.normal(0, 0.4, (bone_count, 3)), rng.normal(0, 0.5, 3))
    )
    # A negative age reaches the newborn targets (anchors start at -1/3).
    out.append(
        ("newborn", np.array([0.3, -0.2, 0.6, 0.8, 0.2, 0.9]), rng.normal(0, 0.3, (bone_count, 3)), rng.normal(0, 0.5, 3))
    )
    out.append(("large", rng.uniform(0, 1, 6), rng.normal(0, 0.8, (bone_count, 3)), rng.normal(0, 2.0, 3)))
    return out


def main(path):
    torch.manual_seed(0)
    model = anny.Anny().to(torch.float64)
    assert list(model.phenotype_labels) == PHENOTYPE_LABELS, model.phenotype_labels
    regressor = KeypointsRegressor.coco(model)
    bone_count = len(model.bone_labels)
    tensors = {}
    names = []
    for name, phenotype, rotvecs, translation in samples(bone_count):
        rot = roma.rotvec_to_rotmat(torch.as_tensor(rotvecs, dtype=torch.float64))
        delta = torch.eye(4, dtype=torch.float64).repeat(1, bone_count, 1, 1)
        delta[0, :, :3, :3] = rot
        delta[0, 0, :3, 3] = torch.as_tensor(translation, dtype=torch.float64)
        kwargs = {label: torch.tensor([float(v)], dtype=torch.float64) for label, v in zip(PHENOTYPE_LABELS, phenotype)}
        with torch.no_grad():
            output = model(pose_parameters=delta, phenotype_kwargs=kwargs)
            keypoints = regressor(output)
            default_vertices = output["vertices"].clone()
            model.set_skinning_method("lbs")
            lbs_vertices = model(pose_parameters=delta, phenotype_kwargs=kwargs)["vertices"]
            model.set_skinning_method(None)
        diff = (default_vertices - lbs_vertices).abs().max().item()
        print(f"{name}: default skinning vs dense lbs max |dv| = {diff:.3e} m", file=sys.stderr)
        vertices = output["vertices"][0, ::VERTEX_STRIDE].numpy()
        tensors[f"{name}.phenotype"] = phenotype.astype(np.float64)
        tensors[f"{name}.rotations"] = rot.numpy().copy()
        tensors[f"{name}.translation"] = translation.astype(np.float64)
        tensors[f"{name}.keypoints"] = keypoints[0].numpy().copy()
        tensors[f"{name}.bone_poses"] = output["bone_poses"][0].numpy().copy()
        tensors[f"{name}.vertices"] = np.ascontiguousarray(vertices)
        names.append(name)
    meta = {
        "anny_version": anny.models.model_data.ANNY_VERSION,
        "torch_version": torch.__version__,
        "samples": json.dumps(names),
        "vertex_stride": str(VERTEX_STRIDE),
        "keypoint_labels": json.dumps(list(regressor.labels)),
        "bone_labels": json.dumps(list(model.bone_labels)),
        "bone_parents": json.dumps([int(p) for p in model.bone_parents]),
        # Triangles as little-endian u32 rows, hashed: the topology must match exactly.
        "faces_sha256": hashlib.sha256(model.faces.numpy().astype("<u4").tobytes()).hexdigest(),
        "face_count": str(int(model.faces.shape[0])),
    }
    save_file(tensors, path, metadata=meta)
    print(f"wrote {path}", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tests/data/anny_golden.safetensors")

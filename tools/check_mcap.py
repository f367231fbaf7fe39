#!/usr/bin/env python3
"""Check an MCAP recording of hailo-edge with the independent Python `mcap` reader.

usage: check_mcap.py FILE.mcap EXPECT.json

EXPECT.json holds:
- "frames": each image topic to a list of [capture_ns, sequence, byte_length] in
  recorded order;
- "schemas" (optional): topic to the schema name its channel must declare;
- "wall_offset_ns" (optional, with tolerance "wall_tolerance_ns"): log_time must be
  capture time plus this offset.

Every channel must be protobuf with one of Foxglove's well-known schemas (or the
JSON `/results` channel), every protobuf message must decode with the schema the
file embeds (mcap-protobuf-support), chunks must be zstd, stamps inside messages
must equal log_time, publish_time must be the capture time, and camera 0's
calibration must be a plumb_bob calibration. Exit status 0 only when everything
matches.
"""
import json
import sys

from mcap.reader import make_reader
from mcap_protobuf.decoder import DecoderFactory

WELL_KNOWN = {
    "foxglove.RawImage",
    "foxglove.CompressedImage",
    "foxglove.CameraCalibration",
    "foxglove.ImageAnnotations",
    "foxglove.SceneUpdate",
    "foxglove.FrameTransforms",
}


def stamp(ts) -> int:
    return ts.seconds * 1_000_000_000 + ts.nanos


def main() -> int:
    path, expect_path = sys.argv[1], sys.argv[2]
    with open(expect_path) as f:
        expect = json.load(f)
    frames_expected = expect["frames"]
    failures = []
    got = {}
    calibrations = {}
    schemas = {}
    with open(path, "rb") as f:
        reader = make_reader(f, decoder_factories=[DecoderFactory()])
        summary = reader.get_summary()
        compressions = {c.compression for c in summary.chunk_indexes}
        if compressions != {"zstd"}:
            failures.append(f"chunk compression {sorted(compressions)}, expected zstd")
        for schema, channel, message, decoded in reader.iter_decoded_messages():
            schemas[channel.topic] = (schema.name, channel.message_encoding)
            if channel.message_encoding == "json":
                continue
            if channel.message_encoding != "protobuf" or schema.name not in WELL_KNOWN:
                failures.append(f"{channel.topic}: {channel.message_encoding} {schema.name}")
                continue
            if "wall_offset_ns" in expect:
                off = message.log_time - message.publish_time - expect["wall_offset_ns"]
                if abs(off) > expect.get("wall_tolerance_ns", 0):
                    failures.append(f"{channel.topic}: log_time - publish_time off by {off} ns")
            if schema.name == "foxglove.CameraCalibration":
                calibrations[channel.topic] = decoded
            if schema.name in ("foxglove.RawImage", "foxglove.CompressedImage"):
                if stamp(decoded.timestamp) != message.log_time:
                    failures.append(
                        f"{channel.topic}: stamp {stamp(decoded.timestamp)} != log_time {message.log_time}"
                    )
                got.setdefault(channel.topic, []).append(
                    [message.publish_time, message.sequence, len(decoded.data)]
                )
    for topic, frames in frames_expected.items():
        have = got.get(topic, [])
        # The header keeps the sequence's low 32 bits.
        want = [[t, s % 2**32, n] for t, s, n in frames]
        if have != want:
            diff = next(((i, a, b) for i, (a, b) in enumerate(zip(want, have)) if a != b), None)
            failures.append(
                f"{topic}: expected {len(want)} frames, read {len(have)}; first difference {diff}"
            )
    extra = set(got) - set(frames_expected)
    if extra:
        failures.append(f"unexpected image topics: {sorted(extra)}")
    for topic, name in expect.get("schemas", {}).items():
        if schemas.get(topic, (None,))[0] != name:
            failures.append(f"{topic}: schema {schemas.get(topic)}, expected {name}")
    cal = calibrations.get("/cam0/calibration")
    if cal is None or cal.distortion_model != "plumb_bob" or len(cal.K) != 9:
        failures.append(f"/cam0/calibration missing or malformed: {cal}")
    total = sum(len(v) for v in got.values())
    names = sorted({s for s, _ in schemas.values()})
    print(f"{path}: {total} image messages on {len(got)} topics; schemas {', '.join(names)}")
    for f in failures:
        print(f"FAIL {f}")
    print(f"{len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

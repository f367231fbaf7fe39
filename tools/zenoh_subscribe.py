#!/usr/bin/env python3
"""Read what `hailo-edge run --publish zenoh` publishes, with eclipse-zenoh.

usage: zenoh_subscribe.py [ENDPOINT [SECONDS]]    e.g. tcp/192.168.1.20:7447 10

Prints one JSON line per message ({"key", "schema", ...}); a payload that is not a
hailo-edge message is counted and reported on stderr with its key. Ends with a summary
line {"bodies", "views", "skeletons", "malformed"}. pip install eclipse-zenoh.
"""
import json
import sys
import time

import zenoh


def main() -> int:
    endpoint = sys.argv[1] if len(sys.argv) > 1 else None
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else float("inf")
    conf = zenoh.Config()
    if endpoint:
        conf.insert_json5("connect/endpoints", json.dumps([endpoint]))
        conf.insert_json5("scouting/multicast/enabled", "false")
    counts = {"bodies": 0, "views": 0, "skeletons": 0, "malformed": 0}
    kinds = {"hailo-edge.body/1": "bodies", "hailo-edge.view/1": "views",
             "hailo-edge.skeleton/1": "skeletons"}
    with zenoh.open(conf) as session:
        sub = session.declare_subscriber("hailo-edge/**")
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            sample = sub.try_recv()
            if sample is None:
                time.sleep(0.005)
                continue
            key = str(sample.key_expr)
            try:
                msg = json.loads(sample.payload.to_bytes())
                kind = kinds[msg["schema"]]
            except (ValueError, KeyError, TypeError) as e:
                counts["malformed"] += 1
                print(f"{key}: not a hailo-edge message ({e!r}); skipped", file=sys.stderr)
                continue
            counts[kind] += 1
            if kind == "bodies":
                print(json.dumps({"key": key, "schema": msg["schema"], "capture_ns": msg["capture_ns"],
                                  "keypoints": len(msg["keypoints_3d"])}))
            elif kind == "views":
                print(json.dumps({"key": key, "schema": msg["schema"], "camera": msg["camera"],
                                  "keypoints": len(msg["keypoints"])}))
    print(json.dumps(counts))
    return 0


if __name__ == "__main__":
    sys.exit(main())

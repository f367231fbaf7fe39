#!/usr/bin/env python3
"""Check an MCAP recording of hailo-edge with the independent Python `mcap` reader.

usage: check_mcap.py FILE.mcap EXPECT.json

EXPECT.json maps each image topic to a list of [capture_ns, sequence, byte_length]
in recorded order. The script checks message counts, log times (= capture
times), the sequence numbers (MCAP header and message body), the decoded
frame lengths, and that camera 0's calibration channel holds a plumb_bob
calibration. Exit status 0 only when everything matches.
"""
import base64
import json
import sys

from mcap.reader import make_reader


def main() -> int:
    path, expect_path = sys.argv[1], sys.argv[2]
    with open(expect_path) as f:
        expect = json.load(f)
    got = {}
    calibrations = {}
    schemas = {}
    with open(path, "rb") as f:
        reader = make_reader(f)
        for schema, channel, message in reader.iter_messages():
            body = json.loads(message.data)
            if channel.topic.endswith("/calibration"):
                calibrations[channel.topic] = body
                continue
            schemas[channel.topic] = schema.name
            data = base64.b64decode(body["data"])
            ts = body["timestamp"]["sec"] * 1_000_000_000 + body["timestamp"]["nsec"]
            if ts != message.log_time:
                print(f"{channel.topic}: body timestamp {ts} != log_time {message.log_time}")
                return 1
            if message.sequence != body["sequence"] % 2**32:
                print(f"{channel.topic}: header sequence {message.sequence} != {body['sequence']}")
                return 1
            got.setdefault(channel.topic, []).append([message.log_time, body["sequence"], len(data)])
    failures = 0
    for topic, frames in expect.items():
        have = got.get(topic, [])
        if have != frames:
            failures += 1
            print(f"{topic}: expected {len(frames)} frames, read {len(have)}; first difference:")
            for i, (a, b) in enumerate(zip(frames, have)):
                if a != b:
                    print(f"  #{i}: expected {a}, read {b}")
                    break
    extra = set(got) - set(expect)
    if extra:
        failures += 1
        print(f"unexpected topics: {sorted(extra)}")
    cal = calibrations.get("/cam0/calibration")
    if not cal or cal.get("distortion_model") != "plumb_bob" or len(cal.get("K", [])) != 9:
        failures += 1
        print(f"/cam0/calibration missing or malformed: {cal}")
    total = sum(len(v) for v in got.values())
    print(f"{path}: {total} image messages on {len(got)} topics ({', '.join(sorted(set(schemas.values())))})")
    print(f"{len(expect) + 1 - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

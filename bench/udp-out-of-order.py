#!/usr/bin/env python3
"""Per run of a lab report's CBR UDP workloads: iperf3's out-of-order count at the receiver
(which the lab's table leaves out; its goodput and loss columns have the rest).
Usage: bench/udp-out-of-order.py LAB_OUT_DIR"""
import json
import pathlib
import sys


def find(node, key):
    """Every value of `key` anywhere in a JSON tree."""
    if isinstance(node, dict):
        for k, v in node.items():
            if k == key:
                yield v
            yield from find(v, key)
    elif isinstance(node, list):
        for v in node:
            yield from find(v, key)


def receiver_sum(run):
    """The receiving side's end.sum: the server's for uploads, the client's for -R."""
    reverse = run.get("start", {}).get("test_start", {}).get("reverse", 0)
    side = run if reverse else run.get("server_output_json", {})
    return side.get("end", {}).get("sum", {}), side


def main(out):
    print(f"{'workload':24s} {'run':22s} {'out-of-order':>12s}")
    for f in sorted(pathlib.Path(out, "raw").glob("cbr-*/*.json")):
        if f.name.endswith("-status.json"):
            continue
        run = json.loads(f.read_text())
        _, side = receiver_sum(run)
        ooo = sum(v for v in find(side.get("end", {}), "out_of_order") if isinstance(v, int))
        print(f"{f.parent.name:24s} {f.stem:22s} {ooo:12d}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "lab-out/three-udp")

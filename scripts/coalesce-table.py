#!/usr/bin/env python3
"""Turns BenchmarkCoalescePaired / BenchmarkWriteBehind output (go test -bench) into the markdown tables of
BENCHMARKS.md. Usage: scripts/coalesce-table.py benchmarks/coalesce-*.txt"""
import re, sys

def parse(paths):
    cells = []
    for path in paths:
        for line in open(path):
            m = re.match(r'Benchmark(\w+)/(\w+)/w=(\d+)/records=(\d+)-\d+\s+\d+\s+\d+ ns/op\s+(.*)', line)
            if not m:
                continue
            vals = dict((k, float(v)) for v, k in re.findall(r'([\d.e+-]+) (\S+)', m.group(5)))
            cells.append((m.group(1), m.group(2), int(m.group(3)), int(m.group(4)), vals))
    return cells

def k(v):
    return f'{v/1000:.1f}k' if v >= 1000 else f'{v:.0f}'

cells = parse(sys.argv[1:])
print('| db | writers | records | coalesced ops/s | per-op | single-row | redis INCR | coalesced / per-op (min–max) | coalesced / redis | writes per batch | allocs/op coalesced, per-op |')
print('|---|---|---|---|---|---|---|---|---|---|---|')
for bench, db, w, r, v in cells:
    if bench != 'CoalescePaired':
        continue
    print(f"| {db} | {w} | {r} | {k(v['coalesced-ops/s'])} | {k(v['per-op-ops/s'])} | {k(v['single-row-ops/s'])} | "
          f"{k(v.get('redis-ops/s', 0))} | **{v['coalesced/per-op']:.2f}** ({v['min-coalesced/per-op']:.2f}–{v['max-coalesced/per-op']:.2f}) | "
          f"{v.get('coalesced/redis', 0):.2f} | {v.get('writes/batch', 0):.1f} | {v['coalesced-allocs/op']:.1f}, {v['per-op-allocs/op']:.1f} |")
extra = [(db, w, r, v) for b, db, w, r, v in cells if b == 'CoalescePaired' and any(x.startswith('coalesced-d') for x in v)]
if extra:
    ds = sorted({int(m.group(1)) for _, _, _, v in extra for x in v for m in [re.match(r'coalesced-d(\d+)/per-op', x)] if m})
    print()
    print('| db | writers | records | default / per-op | ' + ' | '.join(f'MaxInFlight {d} / per-op' for d in ds) + ' |')
    print('|---|---|---|---|' + '---|' * len(ds))
    for db, w, r, v in extra:
        print(f"| {db} | {w} | {r} | {v['coalesced/per-op']:.2f} | " + ' | '.join(f"{v.get(f'coalesced-d{d}/per-op', float('nan')):.2f}" for d in ds) + ' |')
wb = [(db, w, r, v) for b, db, w, r, v in cells if b == 'WriteBehind']
if wb:
    print()
    print('| db | writers | records | write-behind Add ops/s | p50 | p99 | allocs/op | coalesced Increment ops/s | p50 | p99 |')
    print('|---|---|---|---|---|---|---|---|---|---|')
    for db, w, r, v in wb:
        print(f"| {db} | {w} | {r} | {k(v['write-behind-ops/s'])} | {v['write-behind-p50-µs']:.2f} µs | {v['write-behind-p99-µs']:.2f} µs | "
              f"{v['write-behind-allocs/op']:.1f} | {k(v['coalesced-ops/s'])} | {v['coalesced-p50-µs']/1000:.2f} ms | {v['coalesced-p99-µs']/1000:.1f} ms |")

#!/usr/bin/env python3
"""Session 12: per configuration of rmsnorm_repeat.yaml (12 REP copies of it, each its own measurement in one process),
the kernel times (CUPTI trimmed mean, us) of the copies measured once (32 samples) and of those measured again by the
confirmation (200 samples), sorted. Usage: repeat_summary.py DB..."""
import re
import sqlite3
import sys

for path in sys.argv[1:]:
    rows = sqlite3.connect(path).execute(
        "SELECT p.key, c.key, length(m.cupti_samples) / 8, m.kernel_us FROM measurements m "
        "JOIN problems p ON p.id = m.problem_id JOIN configurations c ON c.id = m.configuration_id "
        "WHERE m.status = 'ok' ORDER BY m.id").fetchall()
    by = {}
    for problem, config, n, kernel_us in rows:
        by.setdefault((problem, re.sub(r",REP=\d+", "", config)), []).append((kernel_us, n))
    for (problem, config), v in sorted(by.items()):
        once = sorted(k for k, n in v if n < 200)
        again = sorted(k for k, n in v if n >= 200)
        print(f"{path.split('/')[-1]:<12} {problem:<18} {config:<40} 32 samples: {' '.join(f'{x:.3f}' for x in once)}"
              f" | 200 samples: {' '.join(f'{x:.3f}' for x in again)}")

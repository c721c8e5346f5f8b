#!/usr/bin/env python3
"""Prints each loop of a kernel's SASS (nvdisasm -c output): its length in instructions and the counts of a few
opcode families, a loop being the instructions from a label to the branch back to it. Used for the quant linear main
loop's instruction count per step (sass.sh)."""
import re
import sys

ins, labels = [], {}
for line in open(sys.argv[1]).read().split("\n"):
    m = re.match(r"\s*(\.L_x_\d+):", line)
    if m:
        labels[m.group(1)] = len(ins)
        continue
    m = re.match(r"\s+/\*([0-9a-f]{4})\*/\s+(.*?);", line)
    if m:
        ins.append(m.group(2))
for i, t in enumerate(ins):
    m = re.search(r"BRA.*`\((\.L_x_\d+)\)", t)
    if m and labels.get(m.group(1), len(ins)) < i:
        body = ins[labels[m.group(1)]:i + 1]
        count = lambda p: sum(1 for x in body if re.search(p, x))  # noqa: E731
        print(f"loop {m.group(1)}: {len(body)} instructions; HMMA {count('HMMA')} LDG {count('LDG')} "
              f"(128-bit {count('LDG.*128')}) ISETP {count('ISETP')} IADD/LEA/IMAD {count('IADD|LEA|IMAD')} "
              f"LOP3 {count('LOP')} FFMA {count('FFMA')}")

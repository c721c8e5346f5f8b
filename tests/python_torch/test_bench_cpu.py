"""Smoke tests of the end-to-end benchmarks on CPU (bench/e2e, tiny models): decode.py, serve.py and train.py run their
code paths, write their JSON and say that the ktune model's greedy tokens equal the baseline's. Run by
tests/python_torch/run.sh cpu."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

bench = Path(__file__).resolve().parents[2] / "bench" / "e2e"


def test_decode_tiny_on_cpu(tmp_path):
    pytest.importorskip("transformers")
    out = tmp_path / "decode.json"
    done = subprocess.run([sys.executable, str(bench / "decode.py"), "--tiny", "--device", "cpu", "--batch", "1", "2",
                           "--prompt", "8", "--steps", "6", "--check", "4", "--weights", "bf16",
                           "--json", str(out)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    data = json.loads(out.read_text())
    rows = {(r["batch"], r["mode"]) for r in data["results"]}
    assert rows == {(1, "eager"), (2, "eager"), (1, "ktune"), (2, "ktune")}, rows
    assert all(r["agreement"] == "equal 4/4, logits within tol" for r in data["results"] if r["mode"] == "ktune"), data["results"]
    table = subprocess.run([sys.executable, str(bench / "decode.py"), "--table", str(out)], capture_output=True,
                           text=True, timeout=60)
    assert "| 2 | bf16 | ktune |" in table.stdout, table.stdout


def test_serve_tiny_on_cpu(tmp_path):
    pytest.importorskip("transformers")
    out = tmp_path / "serve.json"
    done = subprocess.run([sys.executable, str(bench / "serve.py"), "--tiny", "--device", "cpu", "--prompt", "8",
                           "--new-tokens", "3", "--cache-len", "0", "--slots", "2", "--seconds", "1.5",
                           "--concurrency", "1", "3", "--json", str(out)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    data = json.loads(out.read_text())
    assert {(r["server"], r["concurrency"]) for r in data["results"]} == {
        ("baseline", 1), ("baseline", 3), ("ktune", 1), ("ktune", 3)}
    assert all(r["requests"] > 0 and r["errors"] == 0 for r in data["results"]), data["results"]
    assert any("equal over all 3" in n for n in data["notes"]), data["notes"]
    assert "vs_baseline_pct" in next(r for r in data["results"] if r["server"] == "ktune")


def test_train_tiny_on_cpu(tmp_path):
    pytest.importorskip("transformers")
    out = tmp_path / "train.json"
    done = subprocess.run([sys.executable, str(bench / "train.py"), "--tiny", "--device", "cpu", "--layers", "1",
                           "--batch", "1", "--iters", "1", "--warmup", "1", "--variants", "eager,ktune",
                           "--json", str(out)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    data = json.loads(out.read_text())
    assert [r["variant"] for r in data["results"]] == ["eager", "ktune"], data
    assert any("fused qkv projection + RoPE" in n for n in data["notes"]), data["notes"]
    # the patched layers' input gradient against eager's (fp32 on the CPU): "max |diff| D (max |grad| G)"
    diff, grad = (float(v) for v in re.findall(r"[-+0-9.e]+(?=\)?$|\s\()", data["results"][1]["grad_vs_eager"])[:2])
    assert diff <= 1e-5 * grad, data["results"][1]

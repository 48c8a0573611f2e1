#!/usr/bin/env python3
"""`attnviz run --attribute --contrast --lens --corrupted-ids` on checkpoints transformers 5.17
itself wrote (tests/model/transformers_oracle.py write: every family attnviz reads, including
those reference.py has no forward for: cohere2's parallel blocks, exaone4's and olmo2's post-only
norms, glm4's sandwich, granite's residual and logit multipliers, smollm3, seed_oss).

    /usr/bin/python3 tests/model/test_why_families.py build/attnviz build/transformers5

For each folder, on 9 ids (the target: the likeliest next token, the contrast: the least likely):
  1. attribution's parts (embeddings, heads, MLPs, biases) sum to its total within 1e-4 relative,
     and the total is the logit difference of the plain run's logits (attribution's total is
     the difference before a final soft-cap: gemma2's is not compared);
  2. the lens' last row at the last position is the plain run's prediction, rank 1;
  3. patching the last stream row of the clean run into a run on other ids restores 1 (1e-5),
     and the rows after the last layer before the last position restore 0.
Exits 1 on any failure.
"""
import json
import os
import subprocess
import sys

binary, root = sys.argv[1], sys.argv[2]
failures, checked = [], 0


def run(args):
    p = subprocess.run([binary, "run"] + args, capture_output=True, text=True)
    if p.returncode:
        failures.append(f"{' '.join(args[:1])}: exit {p.returncode}: {p.stderr.strip()[:200]}")
        return None
    return json.loads(p.stdout)


for name in sorted(os.listdir(root)):
    folder = os.path.join(root, name)
    if not os.path.isfile(os.path.join(folder, "config.json")):
        continue
    cfg = json.load(open(os.path.join(folder, "config.json")))
    V = min(cfg.get("vocab_size") or cfg.get("text_config", {}).get("vocab_size", 100), 1000)
    ids = [(i * 37 + 5) % V for i in range(9)]
    other = [(i * 53 + 11) % V for i in range(9)]
    plain = run([folder, "--ids", ",".join(map(str, ids)), "--json"])
    if not plain:
        continue
    z = plain["logits"]
    target, contrast = max(range(len(z)), key=z.__getitem__), min(range(len(z)), key=z.__getitem__)
    why = run([folder, "--ids", ",".join(map(str, ids)), "--lens", "--attribute", f"#{target}", "--contrast", f"#{contrast}",
               "--corrupted-ids", ",".join(map(str, other)), "--json"])
    if not why:
        continue
    a, lens, p = why["attribution"], why["lens"], why["patching"]
    parts = a["embed"] + a["bias"] + sum(map(sum, a["heads"])) + sum(a["mlps"])
    scale = max(1.0, abs(a["total"]))
    capped = (cfg.get("final_logit_softcapping") or 0) > 0
    notes = []
    if abs(parts - a["total"]) > 1e-4 * scale:
        notes.append(f"parts {parts} != total {a['total']}")
    if not capped and abs(a["total"] - (z[target] - z[contrast])) > 1e-4 * scale:
        notes.append(f"total {a['total']} != the logit difference {z[target] - z[contrast]}")
    if lens[-1][-1]["target"] != target or lens[-1][-1]["target_rank"] != 1:
        notes.append(f"lens' last cell {lens[-1][-1]['target']} rank {lens[-1][-1]['target_rank']}, the prediction {target}")
    if abs(p["resid"][-1][-1] - 1) > 1e-5 or any(abs(v) > 1e-12 for v in p["resid"][-1][:-1]):
        notes.append(f"patching's last stream row {p['resid'][-1]}")
    for n in notes:
        failures.append(f"{name}: {n}")
    checked += 1
    print(f"{'FAIL' if notes else 'ok  '} {name} ({cfg.get('model_type')}): total {a['total']:.5f}, parts {parts:.5f}, "
          f"logit difference {z[target] - z[contrast]:.5f}{' (soft-capped)' if capped else ''}")

if checked < 20:
    failures.append(f"only {checked} checkpoints checked in {root}")
for f in failures:
    print("FAIL:", f)
print(f"{checked} checkpoints; {'FAILED: ' + str(len(failures)) if failures else 'all passed'}")
sys.exit(1 if failures else 0)

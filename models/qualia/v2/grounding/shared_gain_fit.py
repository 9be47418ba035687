#!/usr/bin/env python3
"""Alice first half: one gain per construct, shared by the six ROIs, fitted by ridge toward the
prior's pattern and scored held out within block (nested contiguous-block CV, as
`brainscan model eval` scores its per-ROI ridge). The model card reports its result (0.295,
below the prior's 0.320), and why the shipped weights stay the prior.

    brainscan model alice --out /tmp/alice
    python3 models/qualia/v2/grounding/shared_gain_fit.py /tmp/alice models/qualia/v2/model.json

Needs numpy (the test tools' pymoten venv has it). Reads design.csv and targets.csv.
"""
import json
import re
import sys

import numpy as np

OUTER, INNER, GAP = 5, 4, 5
LAMBDAS = [0.01, 0.1, 1, 10, 100, np.inf]


def r(a, b):
    return np.corrcoef(a, b)[0, 1] if a.std() > 0 and b.std() > 0 else np.nan


def main(out, model_path):
    with open(f"{out}/design.csv") as f:
        header = f.readline().strip().split(",")
    design = np.loadtxt(f"{out}/design.csv", delimiter=",", skiprows=1)
    with open(f"{out}/targets.csv") as f:
        target_header = f.readline().strip().split(",")[2:]
    targets = np.loadtxt(f"{out}/targets.csv", delimiter=",", skiprows=1)[:, 2:]
    features = [h for h in header[2:] if not h.startswith("net:")]
    x = design[:, 2 : 2 + len(features)]
    model = json.load(open(model_path))
    networks = model["networks"]
    weights = np.zeros((len(networks), len(features)))
    construct = {}
    for w in model["weights"]:
        weights[networks.index(w["network"]), features.index(w["feature"])] = w["weight"]
        construct[w["feature"]] = re.search(r"profile `(\w+)`", w["reason"]).group(1)
    constructs = sorted(set(construct.values()))
    roi_network = [networks.index(h.split("@")[1]) for h in target_header]
    # Per ROI: each construct's contribution to its network's prediction (rows x constructs).
    parts = []
    for n in roi_network:
        cols = []
        for c in constructs:
            ks = [features.index(f) for f, cc in construct.items() if cc == c]
            cols.append(x[:, ks] @ weights[n, ks])
        parts.append(np.array(cols).T)
    live = [j for j in range(len(constructs)) if max(p[:, j].std() for p in parts) > 1e-6]
    rows = len(targets)
    fold = np.arange(rows) * OUTER // rows

    def fit(train, lam):
        a = np.vstack([parts[i][train][:, live] - parts[i][train][:, live].mean(0) for i in range(len(parts))])
        b = np.concatenate([targets[train, i] - targets[train, i].mean() for i in range(len(parts))])
        prior = a.sum(1)
        g0 = np.full(len(live), (prior @ b) / (prior @ prior))
        if np.isinf(lam):
            return g0
        k = lam * len(b) / 100
        return np.linalg.solve(a.T @ a + k * np.eye(len(live)), a.T @ b + k * g0)

    def score(g, idx):
        return np.mean([r(parts[i][idx][:, live] @ g, targets[idx, i]) for i in range(len(parts))])

    def outside(idx, test):
        lo, hi = test.min() - GAP, test.max() + GAP
        return idx[(idx < lo) | (idx > hi)]

    held = []
    for k in range(OUTER):
        test = np.arange(rows)[fold == k]
        train = outside(np.arange(rows), test)
        inner = np.arange(len(train)) * INNER // len(train)
        best = max(
            LAMBDAS,
            key=lambda lam: np.mean(
                [score(fit(outside(train[inner != j], train[inner == j]), lam), train[inner == j]) for j in range(INNER)]
            ),
        )
        g = fit(train, best)
        held.append([r(parts[i][test][:, live] @ g, targets[test, i]) for i in range(len(parts))])
        print(f"fold {k}: lambda {best}, gains relative to the prior",
              dict(zip([constructs[j] for j in live], np.round(g / fit(train, np.inf)[0], 2))))
    held = np.array(held).mean(0)
    print("held out within block, per ROI:", dict(zip(target_header, np.round(held, 3))))
    print(f"mean {held.mean():.3f}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

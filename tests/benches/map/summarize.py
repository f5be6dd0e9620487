#!/usr/bin/env python3
"""Summarize Aider's repository map and the BM25 baseline on the localization cases.

Usage:
    summarize.py AIDER_RESULTS_JSONL BM25_RESULTS_JSONL HEADER_MD > aider_summary.md

Only the cases whose request does not name an answer file count (`names_file` false). A case
counts as visible when EVERY answer file's path is in the map ("all"); "any" counts a case when
at least one is. Token figures are the exact count of the map text with the model's tokenizer
(Aider's own estimate is in the results too).
"""

import json
import statistics
import sys
from collections import OrderedDict

BUDGETS = (1024, 2048, 4096, 8192)
KS = (5, 10, 20, 50)


def load(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def by_repo(rows):
    groups = OrderedDict()
    for row in rows:
        groups.setdefault(row["repo"], []).append(row)
    groups["**all**"] = list(rows)
    return groups


def pct(part, whole):
    return f"{100 * part / whole:.0f}%" if whole else "-"


def budget_row(rows, budget):
    return [r for case in rows for r in case["budgets"] if r["map_tokens"] == budget]


def aider_tables(results):
    out = ["## Aider's map: answer visible, over the cases that don't name the file", ""]
    head = "| repository | cases | " + " | ".join(f"{b} all (any)" for b in BUDGETS)
    head += " | " + " | ".join(f"median tokens @{b}" for b in BUDGETS) + " |"
    out += [head, "|---|---:|" + "---:|" * (2 * len(BUDGETS))]
    for repo, rows in by_repo(results).items():
        cells = [repo, str(len(rows))]
        for b in BUDGETS:
            rs = budget_row(rows, b)
            cells.append(f"{pct(sum(r['all_visible'] for r in rs), len(rs))} "
                         f"({pct(sum(r['any_visible'] for r in rs), len(rs))})")
        for b in BUDGETS:
            rs = budget_row(rows, b)
            cells.append(f"{statistics.median(r['tokens_exact'] for r in rs):,.0f}" if rs else "-")
        out.append("| " + " | ".join(cells) + " |")
    out += ["", "## Aider's map time (seconds, median over the cases; first map of a repository cold)", ""]
    out += ["| repository | files | cold (first map) | " + " | ".join(f"warm @{b}" for b in BUDGETS) + " |",
            "|---|---:|---:|" + "---:|" * len(BUDGETS)]
    for repo, rows in by_repo(results).items():
        if repo == "**all**":
            continue
        cold = [r["seconds"] for case in rows for r in case["budgets"] if r["cold"]]
        cells = [repo, f"{statistics.median(c['files'] for c in rows):,.0f}",
                 f"{cold[0]:.1f}" if cold else "-"]
        for b in BUDGETS:
            warm = [r["seconds"] for r in budget_row(rows, b) if not r["cold"]]
            cells.append(f"{statistics.median(warm):.2f}" if warm else "-")
        out.append("| " + " | ".join(cells) + " |")
    return out


def recall(rows, key, k):
    hit_all = sum(all(v is not None and v <= k for v in r[key].values()) for r in rows)
    hit_any = sum(any(v is not None and v <= k for v in r[key].values()) for r in rows)
    return f"{pct(hit_all, len(rows))} ({pct(hit_any, len(rows))})"


def bm25_tables(results):
    out = ["## Plain BM25 over file text: recall@k, over the cases that don't name the file", ""]
    out += ["Each cell: all answer files in the top k (at least one in the top k).", ""]
    head = "| repository | cases | " + " | ".join(f"@{k} all files" for k in KS)
    head += " | " + " | ".join(f"@{k} source only" for k in KS)
    head += " | median size of the top 5 / top 10 source files (chars/4) |"
    out += [head, "|---|---:|" + "---:|" * (2 * len(KS)) + "---:|"]
    for repo, rows in by_repo(results).items():
        cells = [repo, str(len(rows))]
        cells += [recall(rows, "rank_all", k) for k in KS]
        cells += [recall(rows, "rank_source", k) for k in KS]
        t5 = statistics.median(r["top_chars_source"]["5"] for r in rows) / 4
        t10 = statistics.median(r["top_chars_source"]["10"] for r in rows) / 4
        cells.append(f"{t5:,.0f} / {t10:,.0f}")
        out.append("| " + " | ".join(cells) + " |")
    return out


def main():
    aider = [r for r in load(sys.argv[1]) if not r["names_file"]]
    bm25 = [r for r in load(sys.argv[2]) if not r["names_file"]]
    with open(sys.argv[3]) as f:
        header = f.read().rstrip("\n")
    lines = [header, ""] + aider_tables(aider) + [""] + bm25_tables(bm25)
    print("\n".join(lines))


if __name__ == "__main__":
    main()

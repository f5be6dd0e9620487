#!/usr/bin/env python3
"""A plain BM25 ranking of a case's files against its request: how far lexical ranking gets.

Usage:
    bm25_baseline.py CASES_JSONL TREES OUT_JSONL

TREES is the OUT directory of materialize.py. Each tracked text file of the parent tree is a
document made of its path and its text; a token is a run of letters, digits and underscores,
lower-cased, plus the parts of a snake_case or camelCase token (so `get_parameter_source` and
`ParameterSource` both match "parameter source"). Okapi BM25 (k1 = 1.2, b = 0.75) scores every
file for the request's tokens. Two rankings are recorded: all files, and source files only
(the answer's own definition of source, from select_cases.py). Per case: the rank of each
answer file, and the text size of the top 5/10/20 files (what sending them whole would cost).
"""

import argparse
import json
import math
import os
import re
import subprocess
import sys
from collections import Counter

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from select_cases import is_source  # noqa: E402

K1 = 1.2
B = 0.75
MAX_BYTES = 1 << 20  # larger files are data, not code: left out as documents
WORD = re.compile(r"[A-Za-z0-9_]+")
CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")


def tokens(text):
    """Lower-cased words plus the parts of snake_case and camelCase words."""
    out = []
    for word in WORD.findall(text):
        out.append(word.lower())
        parts = [p for chunk in word.split("_") for p in CAMEL.findall(chunk)]
        if len(parts) > 1:
            out.extend(p.lower() for p in parts)
    return out


CACHE = {}  # (path, blob id) -> document, shared by the cases of one run


def documents(tree):
    """(path, token counter, length in tokens, chars) for every tracked text file."""
    out = subprocess.run(["git", "-C", tree, "ls-files", "-s", "-z"], check=True, capture_output=True)
    docs = []
    for rec in out.stdout.decode("utf-8", "replace").split("\0"):
        if not rec:
            continue
        meta, path = rec.split("\t", 1)
        key = (path, meta.split()[1])
        if key not in CACHE:
            CACHE[key] = document(tree, path)
        if CACHE[key] is not None:
            docs.append(CACHE[key])
    return docs


def document(tree, path):
    """One file as a document, or None for a binary, missing or oversized file."""
    full = os.path.join(tree, path)
    if not os.path.isfile(full) or os.path.getsize(full) > MAX_BYTES:
        return None
    with open(full, "rb") as f:
        data = f.read()
    if b"\0" in data[:8192]:
        return None
    text = data.decode("utf-8", "replace")
    toks = tokens(path.replace("/", " ") + " " + text)
    return (path, Counter(toks), len(toks), len(text))


def rank(docs, query):
    """Paths sorted by BM25 score for QUERY (ties by path)."""
    n = len(docs)
    avg = sum(d[2] for d in docs) / max(n, 1)
    terms = set(tokens(query))
    df = {t: sum(1 for d in docs if t in d[1]) for t in terms}
    scored = []
    for path, tf, length, _chars in docs:
        score = 0.0
        for t in terms:
            f = tf.get(t, 0)
            if not f:
                continue
            idf = math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5))
            score += idf * f * (K1 + 1) / (f + K1 * (1 - B + B * length / avg))
        scored.append((-score, path))
    scored.sort()
    return [p for _s, p in scored]


def answer_ranks(order, answer):
    pos = {p: i + 1 for i, p in enumerate(order)}
    return {a: pos.get(a) for a in answer}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cases")
    ap.add_argument("trees")
    ap.add_argument("out")
    args = ap.parse_args()
    with open(args.cases) as f:
        cases = [json.loads(line) for line in f if line.strip()]
    with open(args.out, "w") as out:
        for case in cases:
            docs = documents(os.path.realpath(os.path.join(args.trees, case["id"])))
            chars = {d[0]: d[3] for d in docs}
            order = rank(docs, case["request"])
            src_order = [p for p in order if is_source(p)]
            row = {
                "id": case["id"],
                "repo": case["repo"],
                "names_file": case["names_file"],
                "answer": case["answer"],
                "rank_all": answer_ranks(order, case["answer"]),
                "rank_source": answer_ranks(src_order, case["answer"]),
                "top_chars_all": {k: sum(chars[p] for p in order[:k]) for k in (5, 10, 20)},
                "top_chars_source": {k: sum(chars[p] for p in src_order[:k]) for k in (5, 10, 20)},
            }
            out.write(json.dumps(row) + "\n")
            print(case["id"], row["rank_all"], row["rank_source"], file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()

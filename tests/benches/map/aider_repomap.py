#!/usr/bin/env python3
"""Run Aider's repository map on the localization cases: the peer figures for the map benchmark.

Usage (with aider-chat installed in a virtualenv outside the repository, and no network):
    unshare -n AIDER_VENV/bin/python aider_repomap.py CASES_JSONL TREES OUT_JSONL [--only PREFIX...]

TREES is the OUT directory of materialize.py (`TREES/<case id>` is the case's parent tree).
For each case and each budget in BUDGETS, a fresh `aider.repomap.RepoMap` (map_tokens = the
budget, refresh="always", no context window so the budget is not multiplied) is asked, as
Aider's chat asks it for a first message with no file in the chat:

    get_repo_map(chat_files=[], other_files=<every tracked file>,
                 mentioned_fnames=<get_file_mentions(request) | get_ident_filename_matches(...)>,
                 mentioned_idents=<get_ident_mentions(request)>)

The mentions are computed by Aider's own `Coder` methods (base_coder.py), bound to a stand-in
that knows the tracked files.

Caches: Aider caches a file's tags by path and mtime (on disk, in the tree) and its rendered
outline by path and mtime (in memory, per RepoMap). Here the tags are cached on disk outside the
tree (TAGS_DIR/<owner>+<name>, a diskcache that several runs can share) keyed by the file's path
and git blob id, and the outlines in memory for the whole run keyed the same way, so a file is
parsed once per content, as Aider's own cache does for a file that did not change, and nothing is
written into the tree. Aider reads the files through a root that stays the same for one
repository's cases (a symlink `/tmp/aider-roots/<pid>/<owner>+<name>` re-pointed at each case's
tree, one per process). The ranking (`get_ranked_tags`: the graph and its PageRank) does not
depend on the budget, so it is computed once per case and reused by the four budgets; the map
itself is built afresh for each budget (a fresh RepoMap, refresh="always"). `cold` marks the
first map of a repository in a run; every other time is warm.

Per case and budget it records: whether each answer file's path is a line of the map, Aider's
own token_count of the map (an estimate from sampled lines), the exact count with the same
tokenizer, len(text)/4, and the seconds taken. Results are appended as JSON lines; cases already
in OUT_JSONL are skipped, so an interrupted run can continue.
"""

import argparse
import json
import os
import subprocess
import sys
import time

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no model-price download

from aider.coders.base_coder import Coder  # noqa: E402
from diskcache import Cache  # noqa: E402
from aider.io import InputOutput  # noqa: E402
from aider.models import Model  # noqa: E402
from aider.repomap import RepoMap  # noqa: E402

BUDGETS = (1024, 2048, 4096, 8192)
MODEL = "gpt-4o"


class QuietIO:
    """The parts of Aider's InputOutput the repo map uses, without a terminal."""

    encoding = "utf-8"

    def read_text(self, filename, silent=False):
        return InputOutput.read_text(self, filename, silent=True)

    def tool_output(self, *args, **kwargs):
        pass

    def tool_warning(self, *args, **kwargs):
        pass

    def tool_error(self, *args, **kwargs):
        pass


class Mentions:
    """A stand-in for Aider's Coder with no file in the chat, so that Aider's own
    get_file_mentions / get_ident_mentions / get_ident_filename_matches run unchanged."""

    def __init__(self, root, rel_files):
        self.root = root
        self.rel_files = rel_files
        self.abs_read_only_fnames = set()

    def get_all_relative_files(self):
        return sorted(set(self.rel_files))

    def get_addable_relative_files(self):
        return self.get_all_relative_files()

    def get_inchat_relative_files(self):
        return []

    def get_rel_fname(self, fname):
        return os.path.relpath(fname, self.root)

    def mentions(self, text):
        """(mentioned_fnames, mentioned_idents) as Coder.get_repo_map computes them."""
        fnames = Coder.get_file_mentions(self, text)
        idents = Coder.get_ident_mentions(self, text)
        fnames.update(Coder.get_ident_filename_matches(self, idents))
        return fnames, idents


def tracked_blobs(tree):
    """{path: blob id} for every file git tracks in TREE."""
    out = subprocess.run(["git", "-C", tree, "ls-files", "-s", "-z"], check=True, capture_output=True)
    blobs = {}
    for rec in out.stdout.decode("utf-8", "replace").split("\0"):
        if rec:
            meta, path = rec.split("\t", 1)
            blobs[path] = meta.split()[1]
    return blobs


TAGS_DIR = os.environ.get("AIDER_BENCH_TAGS", "/tmp/aider-bench-tags")


class BenchRepoMap(RepoMap):
    """Aider's RepoMap with its tag and outline caches shared across one repository's cases
    and validated by blob id instead of mtime (see the module comment)."""

    shared = {}  # repo -> (tags cache on disk, tree context cache in memory)
    blobs = {}  # absolute path under the stable root -> blob id, for the current case
    repo = None
    ranked = {}  # case id -> ranked tags, shared by the budgets of one case
    case_id = None

    def load_tags_cache(self):
        if self.repo not in self.shared:
            path = os.path.join(TAGS_DIR, self.repo.replace("/", "+"))
            self.shared[self.repo] = (Cache(path), {})
        self.TAGS_CACHE, self.shared_contexts = self.shared[self.repo]

    def get_mtime(self, fname):
        return self.blobs.get(fname)

    def get_tags(self, fname, rel_fname):
        """Tags by (path, blob id), with `fname` set to this run's root on the way out."""
        key = (rel_fname, self.get_mtime(fname))
        data = self.TAGS_CACHE.get(key)
        if data is None:
            data = list(self.get_tags_raw(fname, rel_fname))
            self.TAGS_CACHE[key] = data
        return [t._replace(fname=fname) for t in data]

    def get_ranked_tags(self, *args, **kwargs):
        if self.case_id not in self.ranked:
            BenchRepoMap.ranked = {self.case_id: super().get_ranked_tags(*args, **kwargs)}
        return self.ranked[self.case_id]


ROOTS = f"/tmp/aider-roots/{os.getpid()}"


def stable_root(repo, tree):
    """A path that names the current case's tree and is the same for every case of REPO."""
    os.makedirs(ROOTS, exist_ok=True)  # per process: two runs must not re-point each other's
    link = os.path.join(ROOTS, repo.replace("/", "+"))
    if os.path.islink(link):
        os.remove(link)
    os.symlink(os.path.realpath(tree), link)
    return link


def visible(text, path):
    """True when PATH is one of the map's file lines (`path:` or `path`; Aider cuts every line
    of the map at 100 characters)."""
    wanted = {path[:100], (path + ":")[:100]}
    return any(line.rstrip() in wanted for line in text.splitlines())


def run_case(case, tree, model, io):
    root = stable_root(case["repo"], tree)
    blobs = tracked_blobs(root)
    rel_files = sorted(blobs)
    abs_files = [os.path.join(root, f) for f in rel_files]
    fnames, idents = Mentions(root, rel_files).mentions(case["request"])
    BenchRepoMap.repo = case["repo"]
    BenchRepoMap.case_id = case["id"]
    BenchRepoMap.blobs = {os.path.join(root, p): b for p, b in blobs.items()}
    cold = case["repo"] not in BenchRepoMap.shared
    rows = []
    for n, budget in enumerate(BUDGETS):
        rm = BenchRepoMap(
            map_tokens=budget, root=root, main_model=model, io=io,
            max_context_window=None, refresh="always",
        )
        rm.tree_context_cache = rm.shared_contexts
        start = time.perf_counter()
        text = rm.get_repo_map(
            set(), set(abs_files), mentioned_fnames=set(fnames), mentioned_idents=set(idents)
        ) or ""
        seconds = time.perf_counter() - start
        vis = {a: visible(text, a) for a in case["answer"]}
        rows.append({
            "map_tokens": budget,
            "cold": cold and n == 0,
            "seconds": round(seconds, 3),
            "tokens_aider": round(rm.token_count(text)) if text else 0,
            "tokens_exact": model.token_count(text) if text else 0,
            "chars": len(text),
            "chars_div4": len(text) // 4,
            "visible": vis,
            "all_visible": all(vis.values()),
            "any_visible": any(vis.values()),
            "files_in_map": sum(
                1 for line in text.splitlines()
                if line and not line[0].isspace() and not line.startswith(("│", "⋮"))
            ),
        })
    return {
        "id": case["id"],
        "repo": case["repo"],
        "lang": case["lang"],
        "names_file": case["names_file"],
        "files": len(rel_files),
        "answer": case["answer"],
        "mentioned_fnames": sorted(fnames),
        "mentioned_idents": len(idents),
        "budgets": rows,
    }


def prewarm(case, tree, model, io):
    """Fill the tag cache from the last file to the first (see --prewarm-reverse)."""
    root = stable_root(case["repo"], tree)
    blobs = tracked_blobs(root)
    BenchRepoMap.repo = case["repo"]
    BenchRepoMap.blobs = {os.path.join(root, p): b for p, b in blobs.items()}
    rm = BenchRepoMap(map_tokens=1024, root=root, main_model=model, io=io)
    start = time.perf_counter()
    for rel in sorted(blobs, reverse=True):
        full = os.path.join(root, rel)
        if os.path.isfile(full):
            rm.get_tags(full, rel)
    print(f"prewarm {case['repo']}: {time.perf_counter() - start:.1f}s", file=sys.stderr, flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cases")
    ap.add_argument("trees")
    ap.add_argument("out")
    ap.add_argument("--only", nargs="*", default=[])
    ap.add_argument(
        "--prewarm-reverse", action="store_true",
        help="parse the first case's files into the tag cache in reverse path order first, so "
        "that a second run started beside a cold one shares the parsing instead of repeating it",
    )
    args = ap.parse_args()

    with open(args.cases) as f:
        cases = [json.loads(line) for line in f if line.strip()]
    if args.only:
        cases = [c for c in cases if any(c["id"].startswith(p) for p in args.only)]
    done = set()
    if os.path.exists(args.out):
        with open(args.out) as f:
            done = {json.loads(line)["id"] for line in f if line.strip()}
    model = Model(MODEL)
    io = QuietIO()
    todo = [c for c in cases if c["id"] not in done]
    if args.prewarm_reverse and todo:
        prewarm(todo[0], os.path.join(args.trees, todo[0]["id"]), model, io)
    for case in cases:
        if case["id"] in done:
            continue
        result = run_case(case, os.path.join(args.trees, case["id"]), model, io)
        with open(args.out, "a") as f:
            f.write(json.dumps(result) + "\n")
        b = result["budgets"]
        print(
            case["id"], " ".join(f"{r['map_tokens']}:{int(r['all_visible'])}/{r['tokens_exact']}/{r['seconds']:.1f}s" for r in b),
            file=sys.stderr, flush=True,
        )


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Check out the parent tree of every repository-map benchmark case.

Usage:
    materialize.py CASES_JSONL GIT_DIRS OUT [--only ID_PREFIX...]

GIT_DIRS holds one git directory per repository, named `<owner>+<name>`: either the git
directory itself (a bare mirror or clone), a directory holding it as `repo/` (how the search
tool's fetch lays out its mirrors: `/work/.mirror/<owner>+<name>/repo`), or a work tree with
`.git/`. The script reads those git directories and never writes into them.

Layout produced under OUT:
    OUT/.trees/<owner>+<name>/<parent sha>/   one checkout per distinct parent commit: a
                                               `git clone --shared` of the mirror with the
                                               parent checked out on a detached HEAD, every
                                               ref and reflog removed (so `git log --all`
                                               cannot show the answer commit), a fresh index
    OUT/<case id> -> .trees/<owner>+<name>/<parent sha>   a relative symlink per case

Running it again reuses finished trees (a tree is finished when `.git/pai-bench-done` exists).
Blobs a snapshot lacks (files of 4 MiB and more) are left out of the checkout with a sparse
pattern and listed in `.git/pai-bench-missing`; the tree is otherwise the parent commit.
"""

import argparse
import json
import os
import subprocess
import sys


def run(*args, cwd=None, stdin=None):
    """Run a command, failing with its stderr when it fails."""
    proc = subprocess.run(args, cwd=cwd, input=stdin, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed in {cwd or '.'}: {proc.stderr.strip()}")
    return proc.stdout


def git_dir_of(git_dirs, repo):
    """The git directory for OWNER/NAME under GIT_DIRS, in any of the supported layouts."""
    base = os.path.join(git_dirs, repo.replace("/", "+"))
    for cand in (os.path.join(base, "repo"), os.path.join(base, ".git"), base):
        if os.path.isfile(os.path.join(cand, "HEAD")):
            return os.path.abspath(cand)
    raise SystemExit(f"no git directory for {repo} under {git_dirs} (expected {base}[/repo])")


def missing_blobs(tree, parent):
    """Paths of the parent commit whose blobs the (snapshot) object store lacks."""
    listing = run("git", "ls-tree", "-r", "-z", parent, cwd=tree)
    entries = []
    for rec in listing.split("\0"):
        if not rec:
            continue
        meta, path = rec.split("\t", 1)
        _mode, kind, sha = meta.split()
        if kind == "blob":
            entries.append((sha, path))
    checks = run(
        "git", "cat-file", "--batch-check", cwd=tree, stdin="".join(s + "\n" for s, _ in entries)
    ).splitlines()
    return [path for (sha, path), line in zip(entries, checks) if line.endswith(" missing")]


def strip_refs(tree):
    """Delete every ref and reflog so only the detached parent is reachable."""
    refs = run("git", "for-each-ref", "--format=%(refname)", cwd=tree).split()
    if refs:
        run("git", "update-ref", "--stdin", cwd=tree, stdin="".join(f"option no-deref\ndelete {r}\n" for r in refs))
    run("git", "reflog", "expire", "--expire=now", "--all", cwd=tree)
    run("git", "config", "--unset-all", "remote.origin.fetch", cwd=tree)


def make_tree(git_dir, parent, tree):
    """Create TREE as a detached checkout of PARENT, unless a finished one is there."""
    done = os.path.join(tree, ".git", "pai-bench-done")
    if os.path.exists(done):
        return
    if os.path.exists(tree):
        run("rm", "-rf", tree)  # an unfinished tree from an interrupted run
    os.makedirs(os.path.dirname(tree), exist_ok=True)
    run("git", "clone", "--quiet", "--shared", "--no-checkout", git_dir, tree)
    missing = missing_blobs(tree, parent)
    if missing:
        run("git", "config", "core.sparseCheckout", "true", cwd=tree)
        patterns = "/*\n" + "".join(f"!/{p}\n" for p in missing)
        with open(os.path.join(tree, ".git", "info", "sparse-checkout"), "w") as f:
            f.write(patterns)
        with open(os.path.join(tree, ".git", "pai-bench-missing"), "w") as f:
            f.write("".join(p + "\n" for p in missing))
    run("git", "-c", "advice.detachedHead=false", "checkout", "--quiet", "--detach", parent, cwd=tree)
    strip_refs(tree)
    with open(done, "w") as f:
        f.write(parent + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cases")
    ap.add_argument("git_dirs")
    ap.add_argument("out")
    ap.add_argument("--only", nargs="*", default=[], help="case id prefixes to materialize")
    args = ap.parse_args()

    with open(args.cases) as f:
        cases = [json.loads(line) for line in f if line.strip()]
    if args.only:
        cases = [c for c in cases if any(c["id"].startswith(p) for p in args.only)]
    os.makedirs(args.out, exist_ok=True)
    for n, case in enumerate(cases, 1):
        slug = case["repo"].replace("/", "+")
        rel = os.path.join(".trees", slug, case["parent"])
        make_tree(git_dir_of(args.git_dirs, case["repo"]), case["parent"], os.path.join(args.out, rel))
        link = os.path.join(args.out, case["id"])
        if os.path.islink(link) and os.readlink(link) != rel:
            os.remove(link)
        if not os.path.islink(link):
            os.symlink(rel, link)
        print(f"[{n}/{len(cases)}] {case['id']} -> {rel}", file=sys.stderr)


if __name__ == "__main__":
    main()

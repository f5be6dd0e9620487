#!/usr/bin/env python3
"""Select localization cases for the repository-map benchmark from one repository's git history.

A case is a non-merge commit that modifies 1-3 existing source files (tests, docs, changelogs,
lock files and generated files may change too but are not part of the answer). The request is
the commit's subject plus its first body paragraph with PR/issue numbers and trailers removed;
the answer is the list of changed non-test source files. Only git history is read: no file of
the repository is checked out, built or run.

Usage:
    select_cases.py GIT_DIR OWNER/NAME LANG ID_PREFIX [--count N] [--years Y]
                    [--since DATE] [--until DATE] > cases.jsonl

The cases are spread evenly over the eligible commits of the last Y years (counted back from
the repository's newest commit), oldest first, and printed one JSON object per line.
--since and --until (ISO dates, UTC midnight) replace that window with an explicit one, for a
repository whose tree had the size a set needs only in a stretch of its history.
"""

import argparse
import datetime as dt
import json
import re
import subprocess
import sys

# File name endings that count as source code. Anything else (markdown, toml, yaml, templates,
# lock files...) may change in a case but never becomes part of its answer.
SOURCE_EXTENSIONS = (
    ".py", ".rs", ".js", ".mjs", ".cjs", ".jsx", ".ts", ".tsx", ".go", ".java", ".kt",
    ".c", ".h", ".cc", ".cpp", ".cxx", ".hpp", ".hh", ".rb",
)

# Directory names whose files are tests, docs, examples, tooling or vendored code, never the
# product source a request is about.
NON_SOURCE_DIRS = {
    "test", "tests", "spec", "specs", "__tests__", "testdata", "testing_utils", "fixtures",
    "doc", "docs", "docs_src", "guides", "example", "examples", "bench", "benches", "benchmark",
    "benchmarks", "scripts", "script", "tools", "support", "ci", ".github", ".circleci",
    "vendor", "third_party", "thirdparty", "node_modules", "dist", "build", "brew", "packaging",
    "debian",
}

TEST_FILE_PATTERNS = [
    re.compile(p)
    for p in (
        r"(^|/)test_[^/]*\.py$", r"_test\.py$", r"(^|/)conftest\.py$", r"_test\.go$",
        r"Tests?\.java$", r"_spec\.rb$", r"_test\.rb$", r"(^|/)test_helper\.rb$",
        r"\.(test|spec)\.[cm]?[jt]sx?$", r"(^|/)tests?\.rs$",
        r"_(unit)?tests?\.(c|cc|cpp|cxx|h|hh|hpp)$",
    )
]

GENERATED_PATTERNS = [re.compile(p) for p in (r"\.pb\.go$", r"_generated\.", r"\.min\.js$")]

# Subjects that say the commit is not a request a user would type to a coding agent.
SKIP_SUBJECT = re.compile(
    r"(^revert|^merge |typo|^bump |^release|^prepare|^version|^v?\d+\.\d+(\.\d+)?\b|"
    r"\bformat(ting)?\b|\bfmt\b|rustfmt|\bblack\b|\bruff\b|\blint(ing)?\b|\bclippy\b|"
    r"whitespace|\bstyle:|dependenc|\bdeps?\b|changelog|\[ci[- ]skip\]|\[skip[- ]ci\]|"
    r"\bv\d+\.\d+|@\^?\d+\.\d+|"
    r"pre-commit|copyright|\bupdate .* to v?\d)",
    re.IGNORECASE,
)

BOT_AUTHOR = re.compile(r"(\[bot\]|\bbot\b|dependabot|renovate|github-actions|pre-commit-ci)", re.I)

TRAILER = re.compile(r"^[A-Za-z][A-Za-z-]*[A-Za-z]:\s")
ISSUE_REFS = [
    re.compile(r"\b(fix(es|ed|ing)?|clos(e|es|ed|ing)|resolv(e|es|ed|ing)|ref(s)?|see|part of|related to|follow-up to|follow up to)\b:?\s*(#\d+|GH-\d+|https?://\S+)(,?\s*(and\s+)?(#\d+|GH-\d+))*", re.I),
    re.compile(r"\(\s*(#\d+|GH-\d+)(,\s*(#\d+|GH-\d+))*\s*\)"),
    re.compile(r"https?://github\.com/\S+/(pull|issues)/\d+\S*"),
    re.compile(r"(?<![\w&])(#\d+|GH-\d+)\b"),
]
GITMOJI = re.compile(r"^(:[a-z0-9_+-]+:\s*|[\U0001F000-\U0001FFFF\u2600-\u27BF\u2B00-\u2BFF\uFE0F\u200D]+\s*)+")
HTML_COMMENT = re.compile(r"<!--.*?-->", re.S)
SPHINX_ROLE = re.compile(r":[a-z_]+:`")
BULLET = re.compile(r"^\s*[*-]\s+")


def git(git_dir, *args):
    """Run git against GIT_DIR and return its standard output as text."""
    out = subprocess.run(
        ["git", "--git-dir", git_dir, *args], check=True, capture_output=True
    ).stdout
    return out.decode("utf-8", errors="replace")


def is_source(path):
    """True for product source: a source extension outside test/doc/tooling folders."""
    if not path.endswith(SOURCE_EXTENSIONS):
        return False
    parts = path.split("/")
    if any(p.lower() in NON_SOURCE_DIRS for p in parts[:-1]):
        return False
    if any(p.search(path) for p in TEST_FILE_PATTERNS):
        return False
    return not any(p.search(path) for p in GENERATED_PATTERNS)


def clean_text(text):
    """Remove issue/PR references, gitmoji and stray punctuation from a request line."""
    text = HTML_COMMENT.sub("", text)
    text = SPHINX_ROLE.sub("`", text)
    for pattern in ISSUE_REFS:
        text = pattern.sub("", text)
    text = GITMOJI.sub("", text.strip())
    text = re.sub(r",\s*\)", ")", text)
    text = re.sub(r"\(\s*\)", "", text)
    text = re.sub(r"[ \t]+", " ", text)
    text = re.sub(r"\s+([.,;:])(?=\s|$)", r"\1", text)
    return text.strip(" \t-:")


def norm(text):
    """Lower-case words only, for comparing a squashed commit's bullet with the subject."""
    return " ".join(re.findall(r"[a-z0-9]+", text.lower()))


def drop_repeats(lines, subject):
    """Remove lines that only repeat the subject (GitHub's squash bodies list the branch's
    commits as bullets, the first of which is usually the subject again) and '#' notes."""
    kept = []
    for line in lines:
        if line.lstrip().startswith("#"):
            continue
        text = norm(re.sub(r"^\w+(\([^)]*\))?!?:\s*", "", BULLET.sub("", line)))
        if text and (text in norm(subject) or norm(subject) in text):
            continue
        kept.append(line)
    return kept


def first_paragraph(body, subject=""):
    """The first body paragraph that is prose: not trailers, not a PR template, not a list of
    squashed commits' ids."""
    body = HTML_COMMENT.sub("", body)
    for para in re.split(r"\n\s*\n", body):
        lines = [l for l in para.strip().splitlines() if l.strip()]
        if not lines:
            continue
        if all(TRAILER.match(l) for l in lines):
            return ""  # trailers come last: there is no prose paragraph
        if lines[0].lstrip().startswith(("---", "```", "|", "Revert", "This reverts")):
            return ""  # a PR template, table or revert note: not the author's own words
        lines = drop_repeats([l for l in lines if not TRAILER.match(l)], subject)
        if not lines:
            continue
        return " ".join(BULLET.sub("", l).strip() for l in lines)
    return ""


def build_request(subject, body):
    """The request a user would type: subject plus first prose paragraph, cleaned."""
    para = clean_text(first_paragraph(body, subject))
    subject = clean_text(subject)
    if len(re.findall(r"[A-Za-z]\w*", para)) < 2:
        para = ""  # only a reference was left, e.g. "Fixes #12."
    if para and subject and not subject.endswith((".", "!", "?", ":")):
        subject += "."
    return (subject + " " + para).strip() if para else subject


def names_file(request, answer):
    """Strict rule: an answer file's path or its file name with extension is in the request."""
    low = request.lower()
    for path in answer:
        base = path.rsplit("/", 1)[-1].lower()
        for needle in (path.lower(), base):
            if re.search(r"(?<![\w./-])" + re.escape(needle) + r"(?![\w])", low):
                return True
    return False


def parse_log(git_dir, since):
    """Yield (commit, parents, author, date, subject, body, changes) for non-merge commits."""
    fmt = "%x1e%H%x1f%P%x1f%an <%ae>%x1f%cI%x1f%s%x1f%b%x1f"
    raw = git(
        git_dir, "log", "--no-merges", f"--since={since}", "--name-status",
        "--no-renames", f"--format={fmt}", "HEAD",
    )
    for rec in raw.split("\x1e")[1:]:
        fields = rec.split("\x1f")
        commit, parents, author, date, subject, body = fields[:6]
        changes = []
        for line in fields[6].strip().splitlines():
            cols = line.split("\t")
            if len(cols) >= 2:
                changes.append((cols[0], cols[-1], cols[1]))
        yield commit, parents.split(), author, date, subject, body, changes


def eligible(author, subject, request, changes):
    """The answer files of an eligible commit, or None when the commit is not a case."""
    if BOT_AUTHOR.search(author) or SKIP_SUBJECT.search(subject):
        return None
    if SKIP_SUBJECT.search(GITMOJI.sub("", subject.strip())):  # e.g. "⏪️ Revert ..."
        return None
    if len(re.findall(r"[A-Za-z]\w*", request)) < 4 or len(changes) > 15:
        return None
    answer = []
    for status, path, old in changes:
        touches_source = is_source(path) or is_source(old)
        if not touches_source:
            continue
        if status != "M":
            # An added or deleted source file (a rename shows as both, since rename detection
            # is off: it would read blobs a snapshot may lack): not a case.
            return None
        answer.append(path)
    if not 1 <= len(answer) <= 3:
        return None
    return sorted(answer)


def spread(items, count):
    """Pick COUNT items evenly spaced over ITEMS (oldest first)."""
    if len(items) <= count:
        return items
    step = len(items) / count
    return [items[int(i * step + step / 2)] for i in range(count)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("git_dir")
    ap.add_argument("repo", help="owner/name")
    ap.add_argument("lang")
    ap.add_argument("id_prefix")
    ap.add_argument("--count", type=int, default=18)
    ap.add_argument("--years", type=float, default=3.0)
    ap.add_argument("--since", help="first commit date (ISO date, UTC) instead of --years")
    ap.add_argument("--until", help="commits before this date (ISO date, UTC) only")
    args = ap.parse_args()

    head_date = dt.datetime.fromisoformat(git(args.git_dir, "log", "-1", "--format=%cI", "HEAD").strip())
    since = (head_date - dt.timedelta(days=365.25 * args.years)).date().isoformat()
    lower = upper = None
    if args.since:
        lower = dt.datetime.fromisoformat(args.since).replace(tzinfo=dt.timezone.utc)
        # git's date-only --since keeps the current time of day: ask for a day more, then
        # cut exactly below.
        since = (lower - dt.timedelta(days=1)).date().isoformat()
    if args.until:
        upper = dt.datetime.fromisoformat(args.until).replace(tzinfo=dt.timezone.utc)

    candidates = []
    for commit, parents, author, date, subject, body, changes in parse_log(args.git_dir, since):
        if len(parents) != 1:
            continue
        when = dt.datetime.fromisoformat(date)
        if (lower and when < lower) or (upper and when >= upper):
            continue
        request = build_request(subject, body)
        answer = eligible(author, subject, request, changes)
        if answer is None:
            continue
        candidates.append((date, commit, parents[0], request, answer))
    candidates.sort()
    chosen = spread(candidates, args.count)
    window = f"{args.since or since}..{args.until or 'now'}"
    print(f"{args.repo}: {len(candidates)} eligible in {window}, {len(chosen)} chosen", file=sys.stderr)

    for n, (date, commit, parent, request, answer) in enumerate(chosen, 1):
        files = len(git(args.git_dir, "ls-tree", "-r", "--name-only", parent).splitlines())
        case = {
            "id": f"{args.id_prefix}-{n:02d}",
            "repo": args.repo,
            "url": f"https://github.com/{args.repo}",
            "lang": args.lang,
            "commit": commit,
            "parent": parent,
            "date": date,
            "request": request,
            "answer": answer,
            "names_file": names_file(request, answer),
            "files": files,
        }
        print(json.dumps(case, ensure_ascii=False))


if __name__ == "__main__":
    main()

"""The test venv kept once per machine, not once per checkout: `make test-deps` links `.venv` to a
venv in a cache directory that holds the same pins, and builds one there only when none does.

    python3 -m tests.support.venv_cache link    # .venv -> the cached venv for these pins; 1 if none
    python3 -m tests.support.venv_cache begin   # .venv -> a new, empty build directory in the cache
    python3 -m tests.support.venv_cache keep    # that build becomes the cached venv for these pins

Every fresh clone (CI's, `make bench-suite`'s, a second worktree) otherwise installs the same
pinned wheels again: `make test-deps` took 3.41 s there (5.9 s of CPU) where a link takes 0.20 s,
and fresh-clone `make test` took 0.88 of its time before (docs/development.md has the figures).
A venv is keyed by what decides its contents, the bytes of tests/requirements.txt, the
interpreter that runs this module (the one the venv is made from: its path and version) and
LAYOUT, the version of the Makefile's recipe; pip's own wheel cache is what the first build on a
machine reads, as before.

A build happens in a directory of its own (`build-*`) that `.venv` points to while the Makefile's
recipe installs through `.venv/...` as it always has; `keep` renames it to its key only once
the recipe has finished, so a key's directory is always a whole venv, and two builds of one key
at once both finish: the second finds the first's and links to that. Paths inside a venv made
with `--without-pip` are relative (bin/python is a link to the base interpreter, site
directories are found from sys.prefix), so the rename moves nothing that matters. The cache
keeps the KEEP venvs linked most recently and build directories younger than STALE_BUILD_S
(an interrupted build's is removed after that); a checkout whose venv was removed from the cache
gets it back at its next `make test-deps`.

TRIAGE_TEST_VENV_CACHE names the cache directory (default: $XDG_CACHE_HOME or ~/.cache, then
triage-agent/test-venvs); set to nothing, the venv is built in the checkout as before (`link`
answers 1, `keep` leaves `.venv` alone, `begin` only removes a link `.venv` may be, so that no
build writes into a venv other checkouts use), and so it is where the cache cannot be written
(`begin` says so on stderr). A `.venv` that is a directory of its own
(made before this, or with the cache off) is kept while it is whole: the Makefile asks this
module only when `.venv` does not hold the pins.
"""

import hashlib
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
REQUIREMENTS = "tests/requirements.txt"
LAYOUT = "1: venv --without-pip, rest/ by pip --target, schemas/unpacked"
KEEP = 4
STALE_BUILD_S = 3600


def cache_dir(environ=os.environ):
    """The cache directory, or None when TRIAGE_TEST_VENV_CACHE is set to nothing."""
    if "TRIAGE_TEST_VENV_CACHE" in environ:
        named = environ["TRIAGE_TEST_VENV_CACHE"]
        return Path(named).resolve() if named else None
    base = environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "triage-agent" / "test-venvs"


def key(requirements, *, executable=sys.executable, version=sys.version):
    """The name of the cached venv for these pins (bytes), made from this interpreter."""
    digest = hashlib.sha256()
    for part in (requirements, os.path.realpath(executable).encode(), version.encode(),
                 LAYOUT.encode()):
        digest.update(len(part).to_bytes(8, "big") + part)
    return "venv-" + digest.hexdigest()[:20]


def point(venv, target):
    """Make `venv` (a checkout's .venv) a link to `target`, replacing whatever it was."""
    if venv.is_symlink() or venv.is_file():
        venv.unlink()
    elif venv.exists():
        shutil.rmtree(venv)
    venv.symlink_to(target, target_is_directory=True)


def kept(checkout, cache):
    """Where the cache keeps the venv of the checkout's pins."""
    return cache / key((checkout / REQUIREMENTS).read_bytes())


def link(checkout, cache):
    """.venv -> the cache's venv for the checkout's pins: True, or False when there is none."""
    if cache is None:
        return False
    found = kept(checkout, cache)
    if not found.is_dir():
        return False
    os.utime(found)   # recently used: prune() keeps it
    point(checkout / ".venv", found)
    print(f"using the test venv kept for these pins: .venv -> {found}")
    return True


def begin(checkout, cache):
    """.venv -> a new, empty build directory in the cache. A venv kept for these pins that is
    there all the same is not whole (else the Makefile had linked it and stopped): it goes, so
    that this build can take its place. Without a cache, .venv is left to the Makefile to build
    in the checkout; a link (into a cache) is removed first, since other checkouts may use the
    venv it names."""
    if (checkout / ".venv").is_symlink():
        (checkout / ".venv").unlink()
    if cache is None:
        return
    try:
        cache.mkdir(parents=True, exist_ok=True)
        build = tempfile.mkdtemp(prefix="build-", dir=cache)
    except OSError as exc:   # a home one cannot write to: the checkout's own .venv, as before
        print(f"venv_cache: {cache} cannot be written ({exc.strerror}): building .venv in the"
              " checkout", file=sys.stderr)
        return
    shutil.rmtree(kept(checkout, cache), ignore_errors=True)
    prune(cache)
    point(checkout / ".venv", build)


def keep(checkout, cache):
    """The finished build .venv points to becomes the cached venv of the checkout's pins, and
    .venv links to that (another build's, if one of the same pins finished first)."""
    venv = checkout / ".venv"
    if cache is None or not venv.is_symlink():
        return
    build = Path(os.readlink(venv))
    final = kept(checkout, cache)
    try:
        build.rename(final)
    except OSError:   # another build of these pins finished first: use that one
        if not final.is_dir():
            raise
        shutil.rmtree(build, ignore_errors=True)
    point(venv, final)
    prune(cache, keep_also=final)


def prune(cache, *, keep_also=None, now=None):
    """Remove all but the KEEP venvs used last, and builds older than STALE_BUILD_S."""
    now = time.time() if now is None else now
    venvs = sorted((p for p in _aged(cache, "venv-*") if p[1] != keep_also), reverse=True)
    old = [path for _, path in venvs[KEEP - (keep_also is not None):]]
    old += [path for mtime, path in _aged(cache, "build-*") if now - mtime > STALE_BUILD_S]
    for path in old:
        shutil.rmtree(path, ignore_errors=True)


def _aged(cache, pattern):
    """[(mtime, path)] of the entries matching `pattern` that are still there (another
    checkout's make may be removing some at the same time)."""
    found = []
    for path in cache.glob(pattern):
        try:
            found.append((path.stat().st_mtime, path))
        except FileNotFoundError:
            pass
    return found


def main(argv=None, *, checkout=ROOT, environ=os.environ):
    """The Makefile's entry: link (exit 1 when there is no cached venv), begin, keep."""
    argv = sys.argv[1:] if argv is None else argv
    verbs = {"link": link, "begin": begin, "keep": keep}
    if len(argv) != 1 or argv[0] not in verbs:
        print("usage: python3 -m tests.support.venv_cache link|begin|keep", file=sys.stderr)
        return 2
    try:
        done = verbs[argv[0]](Path(checkout), cache_dir(environ))
    except OSError as exc:
        print(f"venv_cache {argv[0]}: {exc}", file=sys.stderr)
        return 1
    return 1 if done is False else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env bash
# Install Debian packages that the tests drive, each given as COMMAND=PACKAGE: the package is
# installed only when COMMAND is not on PATH, with one `apt-get update` for all of them. A
# COMMAND that starts with / is a file pattern instead (for a package with no command), and the
# package is installed when no file matches it.
#   chromium=chromium   the leaderboard's browser tests (Playwright drives /usr/bin/chromium)
#   bwrap=bubblewrap    the `bwrap` sandbox (harness/sandbox/bwrap.py, tests/sandbox/)
#   '/usr/lib/python3/dist-packages/seccomp*.so=python3-seccomp'
#                       libseccomp's binding, which builds the sandbox's seccomp filter
# Usage: scripts/install-debian-packages.sh chromium=chromium bwrap=bubblewrap
set -euo pipefail

NAME=install-debian-packages.sh

# present COMMAND: COMMAND is on PATH, or (when it starts with /) a file matches the pattern
present() {
    if [[ "$1" == /* ]]; then
        compgen -G "$1" >/dev/null
    else
        command -v "$1" >/dev/null 2>&1
    fi
}
missing=()
for pair in "$@"; do
    if [[ "$pair" != *=* ]]; then
        echo "$NAME: expected COMMAND=PACKAGE, got '$pair'" >&2
        exit 2
    fi
    if ! present "${pair%%=*}"; then
        missing+=("$pair")
    fi
done
if [[ ${#missing[@]} -eq 0 ]]; then
    exit 0
fi
packages=("${missing[@]#*=}")

if [[ "$(id -u)" -eq 0 ]]; then
    SUDO=()
elif command -v sudo >/dev/null 2>&1; then
    SUDO=(sudo)
else
    echo "$NAME: ${packages[*]} missing, and we are not root and have no sudo;" \
        "install with: apt-get install ${packages[*]}" >&2
    exit 1
fi

echo "$NAME: installing ${packages[*]} with apt-get (about a minute)" >&2
# apt's own errors go to stderr; dpkg's progress lines (stdout) are dropped
if ! "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null \
    || ! "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -qq "${packages[@]}" >/dev/null; then
    echo "$NAME: apt-get could not install ${packages[*]}; install by hand" \
        "(apt-get install ${packages[*]}) and rerun" >&2
    exit 1
fi

status=0
for pair in "${missing[@]}"; do
    if ! present "${pair%%=*}"; then
        echo "$NAME: apt-get installed ${pair#*=}, but ${pair%%=*} is still not there" >&2
        status=1
    fi
done
exit $status

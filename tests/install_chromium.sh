#!/bin/sh
# Start installing Debian's chromium (for the HTML tests, tests/browser.py) in the background, so
# that on a fresh machine the install (about 70 s in CI) runs beside `make test`'s pip install,
# ruff and mypy instead of inside the first browser test. It holds the lock that tests/browser.py
# takes before its own install (flock(2) on the same file), so a test that needs chromium waits
# for this install to end; if this one fails, the test installs it itself and names what failed.
# Nothing to do where chromium is installed, or where this user cannot run apt-get.
set -u
command -v chromium >/dev/null 2>&1 && exit 0
command -v chromium-browser >/dev/null 2>&1 && exit 0
[ "$(id -u)" = 0 ] || exit 0
command -v apt-get >/dev/null 2>&1 || exit 0
command -v flock >/dev/null 2>&1 || exit 0
lock="${TMPDIR:-/tmp}/calipers-tests-chromium-install.lock"
log="${TMPDIR:-/tmp}/calipers-tests-chromium-install.log"
echo "make test: installing chromium in the background (log: $log)"
DEBIAN_FRONTEND=noninteractive nohup flock "$lock" sh -c \
    'command -v chromium >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq chromium; }' \
    >"$log" 2>&1 </dev/null &
exit 0

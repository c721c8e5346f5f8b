#!/usr/bin/env bash
# Checks an HTML report the way a reader will see it, in headless Chromium (Debian: apt-get install chromium):
#   1. the file is self-contained: no script, no external URL, nothing it would have to fetch;
#   2. it loads with no console message (errors, warnings and logs all count);
#   3. the browser's DOM holds the SVG charts;
#   4. a screenshot is taken, for a person to look at.
# Usage: reports/check_html.sh REPORT.html [SCREENSHOT.png] [WIDTHxHEIGHT]   (default screenshot: REPORT.png,
# size 1400x2000). Exits 0 when every check passes, 1 when one fails, 2 on bad usage or a missing browser.
set -euo pipefail

if [[ $# -lt 1 || $# -gt 3 ]]; then
    echo "usage: $0 REPORT.html [SCREENSHOT.png] [WIDTHxHEIGHT]" >&2
    exit 2
fi
report=$(realpath "$1")
shot=${2:-${report%.*}.png}
size=${3:-1400x2000}
[[ -f $report ]] || { echo "check_html: no such file: $1" >&2; exit 2; }

browser=""
for b in chromium chromium-browser google-chrome; do
    if command -v "$b" >/dev/null 2>&1; then browser=$b; break; fi
done
[[ -n $browser ]] || { echo "check_html: no Chromium found (Debian: apt-get install chromium)" >&2; exit 2; }

failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { echo "ok:   $*"; }

# 1. Self-contained. The SVG namespace (xmlns="http://www.w3.org/2000/svg") is a name, never fetched.
external=$(grep -noE '<script|<iframe|<object|<embed|@import|url\(|src=|href="(https?:|//)[^"]*"' "$report" || true)
if [[ -n $external ]]; then
    fail "the report refers to something outside itself:"
    echo "$external" | head -n 10 | sed 's/^/      /'
else
    pass "self-contained (no script, no external URL)"
fi

# A private profile, no network services, no first-run dialogs: the check sees only the file.
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
flags=(--headless --no-sandbox --disable-gpu --no-first-run --no-default-browser-check --disable-extensions
       --disable-background-networking --disable-sync --user-data-dir="$profile" --window-size="${size/x/,}")

# 2 and 3. Console messages appear in Chromium's log as lines with ":CONSOLE".
dom="$profile/dom.html"
log="$profile/console.log"
if ! timeout 120 "$browser" "${flags[@]}" --enable-logging=stderr --v=0 --dump-dom "file://$report" >"$dom" \
        2>"$log"; then
    fail "$browser could not load the report (see below)"
    grep -v -e dbus -e vaapi -e sandbox_linux -e idle_linux "$log" | tail -n 10 | sed 's/^/      /'
fi
console=$(grep -E ':CONSOLE' "$log" || true)
if [[ -n $console ]]; then
    fail "console messages while loading:"
    echo "$console" | head -n 20 | sed 's/^/      /'
else
    pass "no console messages"
fi
svgs=$({ grep -o '<svg' "$dom" || true; } | wc -l)
shapes=$({ grep -oE '<(rect|line|circle|polyline|path)[ >]' "$dom" || true; } | wc -l)
if grep -q '</html>' "$dom" && [[ $svgs -gt 0 && $shapes -gt 0 ]]; then
    pass "the DOM holds $svgs SVG charts with $shapes shapes"
else
    fail "the DOM holds $svgs SVG charts with $shapes shapes (expected some)"
fi

# 4. The screenshot.
rm -f "$shot"
timeout 120 "$browser" "${flags[@]}" --hide-scrollbars --screenshot="$shot" "file://$report" >/dev/null 2>&1 || true
if [[ -s $shot ]] && [[ $(head -c 8 "$shot" | od -An -tx1 | tr -d ' \n') == 89504e470d0a1a0a ]]; then
    pass "screenshot $shot ($(stat -c %s "$shot") bytes); look at it"
else
    fail "no screenshot written to $shot"
fi

if [[ $failures -gt 0 ]]; then
    echo "check_html: $failures check(s) failed for $1"
    exit 1
fi
echo "check_html: $1 passed"

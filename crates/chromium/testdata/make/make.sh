#!/bin/sh
# Regenerates the golden Chromium profile data in ../golden from page.html.
# Needs chromium (Debian's headless build) and python3.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out="$here/../golden"
port=8765
profile=$(mktemp -d)
trap 'kill "$server" 2>/dev/null || true; rm -rf "$profile"' EXIT

cd "$here"
python3 server.py "$port" "$profile/report.json" &
server=$!
sleep 1

run_chromium() {
    chromium --headless=new --no-sandbox --disable-gpu --no-first-run \
        --user-data-dir="$profile/user" "$1" >"$profile/chromium.log" 2>&1 &
    pid=$!
    sleep "$2"
    kill -TERM "$pid"
    wait "$pid" || true
}

# First run writes everything; sessionStorage and localStorage commit on a timer, so it stays
# up long enough for their writes to land, then shuts down cleanly on SIGTERM.
run_chromium "http://127.0.0.1:$port/page.html" 30
# Second run only reopens the origin's databases: LevelDB recovers the first run's logs into
# sorted table files written by Chromium's own comparator.
run_chromium "http://127.0.0.1:$port/reopen.html" 15

chromium --version >"$profile/version.txt"
rm -rf "$out"
mkdir -p "$out"
cp -r "$profile/user/Default/IndexedDB" "$out/"
cp -r "$profile/user/Default/Local Storage" "$out/local_storage"
cp -r "$profile/user/Default/Session Storage" "$out/session_storage"
cp "$profile/report.json" "$profile/version.txt" "$out/"
find "$out" \( -name LOCK -o -name "LOG*" \) -delete
find "$out" -type f | sort

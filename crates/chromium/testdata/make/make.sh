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

# Chromium writes everything, stays up long enough for the Local Storage and Session Storage
# commit timers to fire, and is then killed: a clean shutdown would close the tab and delete
# its Session Storage namespace. LevelDB's logs survive a kill (that is what they are for).
chromium --headless=new --no-sandbox --disable-gpu --no-first-run \
    --user-data-dir="$profile/user" "http://127.0.0.1:$port/page.html" \
    >"$profile/chromium.log" 2>&1 &
pid=$!
sleep 30
kill -KILL "$pid"
wait "$pid" || true
sleep 1

chromium --version >"$profile/version.txt"
rm -rf "$out"
mkdir -p "$out"
cp -r "$profile/user/Default/IndexedDB" "$out/"
cp -r "$profile/user/Default/Local Storage" "$out/local_storage"
cp -r "$profile/user/Default/Session Storage" "$out/session_storage"
cp "$profile/report.json" "$profile/version.txt" "$out/"
find "$out" \( -name LOCK -o -name "LOG*" \) -delete
find "$out" -type f | sort

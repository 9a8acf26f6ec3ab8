#!/bin/sh
# Regenerates ../live from live.html. Needs chromium (Debian's headless build) and python3.
#
# - live/IndexedDB: the origin's IndexedDB directory (LevelDB and blob files) copied while the
#   page pauses after storing the values Blink compressed.
# - live/copies/*: the LevelDB directory copied with plain `cp -r` while the page writes to
#   it, over and over (a few thousand copies); torn.py says what is inconsistent in each and
#   up to three of those of at most 150 KB are kept: the first with the most inconsistencies
#   (`most`), the first whose log ends in a record cut short (`torn_log`) and the first with
#   a table file shorter than the MANIFEST says (`short_table`). Each has a `problems.txt`
#   (torn.py's findings and cp's complaints about files that vanished while it copied).
#
# Every run catches different moments: the tests' expectations about the copies follow the
# copies committed.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out="$here/../live"
port=8766
origin="http_127.0.0.1_$port"
profile=$(mktemp -d)
trap 'kill "$server" 2>/dev/null || true; rm -rf "$profile"' EXIT

cd "$here"
python3 server.py "$port" "$profile/report.json" &
server=$!
sleep 1

chromium --headless=new --no-sandbox --disable-gpu --no-first-run \
    --user-data-dir="$profile/user" "http://127.0.0.1:$port/live.html" \
    >"$profile/chromium.log" 2>&1 &
pid=$!
idb="$profile/user/Default/IndexedDB"

wait_for() {
    i=0
    while [ ! -e "$1" ] && [ $i -lt 600 ]; do
        sleep 0.1
        i=$((i + 1))
    done
}

# The pause: nothing is being written.
wait_for "$profile/report.json.paused"
sleep 0.5
cp -r "$idb" "$profile/paused"

# The write loop: copy until the page reports.
mkdir "$profile/copies"
n=0
while [ $n -lt 5000 ] && [ ! -e "$profile/report.json" ]; do
    cp -r "$idb/$origin.indexeddb.leveldb" "$profile/copies/$n" 2>"$profile/copies/$n.err" || true
    n=$((n + 1))
done
wait_for "$profile/report.json"
sleep 1
kill -KILL "$pid"
wait "$pid" || true

python3 torn.py $(ls -dv "$profile"/copies/* | grep -v '\.err$') >"$profile/torn.txt"
grep -v ': consistent$' "$profile/torn.txt" || true

chromium --version >"$profile/version.txt"
rm -rf "$out"
mkdir -p "$out/copies"
cp -r "$profile/paused" "$out/IndexedDB"
for name in most torn_log short_table; do
    pick=$(sed -n "s/^$name //p" "$profile/torn.txt")
    [ "$pick" = None ] && continue
    cp -r "$pick" "$out/copies/$name"
    { sed -n "s|^$pick: ||p" "$profile/torn.txt"; sed "s|$profile/user/Default/IndexedDB/||" "$pick.err"; } \
        >"$out/copies/$name/problems.txt"
done
cp "$profile/report.json" "$profile/version.txt" "$out/"
find "$out" \( -name LOCK -o -name "LOG*" \) -delete
find "$out" -type f | sort | xargs ls -l

#!/bin/sh
# Writes an IndexedDB database of RECORDS (default 100000) messages with headless Chromium
# into OUT (default /tmp/leveltable-idb-bench): OUT/<origin>.indexeddb.leveldb.
# Needs chromium and python3.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
records=${RECORDS:-100000}
out=${1:-/tmp/leveltable-idb-bench}
port=8766
profile=$(mktemp -d)
trap 'kill "$server" 2>/dev/null || true; rm -rf "$profile"' EXIT

cd "$here"
python3 ../testdata/make/server.py "$port" "$profile/report.json" &
server=$!
sleep 1
chromium --headless=new --no-sandbox --disable-gpu --no-first-run \
    --user-data-dir="$profile/user" "http://127.0.0.1:$port/page.html?records=$records" \
    >"$profile/chromium.log" 2>&1 &
pid=$!
# Wait for the page's report, then give LevelDB a moment; a kill keeps the logs.
for _ in $(seq 1 240); do
    [ -s "$profile/report.json" ] && break
    sleep 1
done
sleep 3
kill -KILL "$pid"
wait "$pid" || true
cat "$profile/report.json"; echo
rm -rf "$out"
mkdir -p "$out"
cp -r "$profile/user/Default/IndexedDB/http_127.0.0.1_${port}.indexeddb.leveldb" "$out/"
# dfindexeddb wants the blob directory beside the database, even when there are no blobs.
mkdir -p "$out/http_127.0.0.1_${port}.indexeddb.blob"
find "$out" \( -name LOCK -o -name "LOG*" \) -delete
du -sh "$out"

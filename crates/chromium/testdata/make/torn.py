"""Says what is inconsistent in copies of a LevelDB directory taken while it was written, and
picks up to three of them (see main): python3 torn.py COPY...

Problems: CURRENT missing or naming a MANIFEST the copy lacks; a table file the MANIFEST
lists missing or shorter than the MANIFEST says; no log as new as the MANIFEST's; a log file
(the MANIFEST's log or a newer one) whose last record is cut short; a MANIFEST whose last
record is cut short."""
import os
import sys

BLOCK = 32768


def records(data):
    """The log's records (fragments joined), and whether it ends in a cut-short record."""
    out, pending, pos = [], b"", 0
    while pos < len(data):
        left = BLOCK - pos % BLOCK
        if left < 7:
            pos += left
            continue
        header = data[pos:pos + 7]
        if len(header) < 7:
            return out, True
        length = header[4] | header[5] << 8
        kind = header[6]
        if kind == 0 and length == 0:  # zero padding: the writer's preallocated tail
            return out, bool(pending)
        payload = data[pos + 7:pos + 7 + length]
        if len(payload) < length:
            return out, True
        pos += 7 + length
        if kind == 1:
            out.append(payload)
        elif kind == 2:
            pending = payload
        elif kind == 3:
            pending += payload
        elif kind == 4:
            out.append(pending + payload)
            pending = b""
    return out, bool(pending)


def varint(b, i):
    v = shift = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        shift += 7
        if c < 0x80:
            return v, i


def files_of(manifest):
    """The table files (number: size) and the log number the MANIFEST's edits leave."""
    live, log_number = {}, 0
    recs, _ = records(manifest)
    for r in recs:
        i = 0
        while i < len(r):
            tag, i = varint(r, i)
            if tag == 1:
                n, i = varint(r, i)
                i += n
            elif tag in (2, 3, 4, 9):
                v, i = varint(r, i)
                if tag == 2:
                    log_number = v
            elif tag == 5:
                _, i = varint(r, i)
                n, i = varint(r, i)
                i += n
            elif tag == 6:
                _, i = varint(r, i)
                number, i = varint(r, i)
                live.pop(number, None)
            elif tag == 7:
                _, i = varint(r, i)
                number, i = varint(r, i)
                size, i = varint(r, i)
                for _ in range(2):
                    n, i = varint(r, i)
                    i += n
                live[number] = size
            else:
                raise ValueError(f"tag {tag}")
    return live, log_number


def problems(d):
    out = []
    try:
        current = open(os.path.join(d, "CURRENT")).read().strip()
    except FileNotFoundError:
        return ["no CURRENT"]
    try:
        manifest = open(os.path.join(d, current), "rb").read()
    except FileNotFoundError:
        return [f"CURRENT names {current}, which is missing"]
    if records(manifest)[1]:
        out.append(f"{current}: last record cut short")
    live, log_number = files_of(manifest)
    names = set(os.listdir(d))
    for number, size in sorted(live.items()):
        name = f"{number:06d}.ldb"
        if name not in names:
            out.append(f"{name} (in the MANIFEST) missing")
        elif os.path.getsize(os.path.join(d, name)) < size:
            out.append(f"{name}: {os.path.getsize(os.path.join(d, name))} bytes, MANIFEST says {size}")
    logs = [int(n[:-4]) for n in names if n.endswith(".log") and n[:-4].isdigit()]
    if not any(n >= log_number for n in logs):
        out.append(f"{log_number:06d}.log (the MANIFEST's log) missing")
    for name in sorted(names):
        if name.endswith(".log") and name[:-4].isdigit() and int(name[:-4]) >= log_number:
            if records(open(os.path.join(d, name), "rb").read())[1]:
                out.append(f"{name}: last record cut short")
    return out


MAX_BYTES = 150_000


def size(d):
    return sum(os.path.getsize(os.path.join(d, n)) for n in os.listdir(d))


def main():
    """Prints each copy's problems, then three picks among the copies of at most MAX_BYTES:
    `most DIR`, the first with the most problems; `torn_log DIR`, the first whose log ends
    in a record cut short; `short_table DIR`, the first with a table file shorter than the
    MANIFEST says (`None` when there is none)."""
    most, most_count, torn_log, short_table = None, 0, None, None
    for d in sys.argv[1:]:
        p = problems(d)
        print(f"{d}: {'; '.join(p) or 'consistent'}")
        if size(d) > MAX_BYTES:
            continue
        if len(p) > most_count:
            most, most_count = d, len(p)
        if torn_log is None and any(x.endswith(".log: last record cut short") for x in p):
            torn_log = d
        if short_table is None and any("MANIFEST says" in x for x in p):
            short_table = d
    print("most", most)
    print("torn_log", torn_log)
    print("short_table", short_table)


if __name__ == "__main__":
    main()

#!/usr/bin/env bash
# Issue 33, item 5: how many flow records a second `netops serve` (release, embedded store,
# demo data) takes in through POST /collect/flow and /collect/gateway-flow, aggregates
# included, with the sender (curl, batches made beforehand) on the same machine. Each batch
# is about 4 MB of NDJSON (the limit as sent), every line distinct, dated over the last 6
# hours, over the demo tenant acme's machines and its first gateway. Batches go one after
# another (SENDERS=1) or SENDERS at a time. Also: the server's CPU time (user + system, from
# /proc) per batch, and the rows each batch adds, read from the store afterwards
# (bench/collect-results.md turns them into DynamoDB write units).
# OTHER_KINDS=1 also posts every other kind: for each, batches of about 4 MB made from its
# sample line in events/collect/ (the API Gateway events the tests route), each line dated
# anew over the last 6 hours (a distinct observation a line), OTHER_BATCHES (2) per kind.
set -euo pipefail
cd "$(dirname "$0")/.."
BATCHES=${BATCHES:-8}
SENDERS=${SENDERS:-1}
OTHER_KINDS=${OTHER_KINDS:-0}
OTHER_BATCHES=${OTHER_BATCHES:-2}
cargo build --release -q -p netops --bin netops
# shellcheck source=bench/_demo_server.sh
source bench/_demo_server.sh
collect=$("$bin" token create --db "$dir/netops.db" --tenant acme --name bench-collect --scopes collect | tail -1)
curl -fsS -H "Authorization: Bearer $token" "$base/machines?limit=500" -o "$dir/machines.json"
curl -fsS -H "Authorization: Bearer $token" "$base/firewall/devices" -o "$dir/devices.json"

python3 - "$dir" "$BATCHES" <<'PY'
import json, random, sys, datetime as dt
d, batches = sys.argv[1], int(sys.argv[2])
machines = [(m["hostname"], m["ip"]) for m in json.load(open(f"{d}/machines.json"))["data"]]
device = json.load(open(f"{d}/devices.json"))["data"][0]
rng = random.Random(33)
now = dt.datetime.now(dt.timezone.utc)
remotes = [(f"{rng.randrange(31, 223)}.{rng.randrange(256)}.{rng.randrange(256)}.{rng.randrange(1, 255)}",
            rng.choice([None, f"srv{i}.example.net"])) for i in range(3000)]
processes = ["chrome.exe", "msedge.exe", "ms-teams.exe", "outlook.exe", "svchost.exe", "onedrive.exe"]
def stamp(t): return t.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
def flow(i):
    host, ip = rng.choice(machines)
    rip, rhost = rng.choice(remotes)
    start = now - dt.timedelta(seconds=rng.randrange(60, 6 * 3600))
    line = {"start": stamp(start), "end": stamp(start + dt.timedelta(seconds=rng.randrange(1, 60))),
            "machine": host, "process": rng.choice(processes), "user": "bench.user",
            "local_port": 49152 + i % 16000, "remote_ip": rip, "remote_port": rng.choice([443, 443, 443, 80, 8443]),
            "protocol": "TCP", "direction": "outbound", "bytes": rng.randrange(200, 2_000_000), "packets": rng.randrange(2, 900)}
    if rhost: line["remote_host"] = rhost
    return line
def gateway(i):
    _, ip = rng.choice(machines) if i % 4 == 0 else (None, f"10.{rng.randrange(10, 14)}.50.{rng.randrange(2, 250)}")
    rip, _ = rng.choice(remotes)
    start = now - dt.timedelta(seconds=rng.randrange(60, 6 * 3600))
    return {"start": stamp(start), "end": stamp(start + dt.timedelta(seconds=rng.randrange(1, 60))),
            "exporter": device["ip"], "input_if": 1, "output_if": 2, "src_ip": ip, "src_port": 49152 + i % 16000,
            "dst_ip": rip, "dst_port": 443, "protocol": 6, "bytes": rng.randrange(200, 2_000_000), "packets": rng.randrange(2, 900)}
for kind, make in (("flow", flow), ("gateway-flow", gateway)):
    n = 0
    for b in range(batches):
        out, size = [], 0
        while True:
            line = json.dumps(make(n), separators=(",", ":"))
            if size + len(line) + 1 > 4_000_000: break
            out.append(line); size += len(line) + 1; n += 1
        open(f"{d}/{kind}-{b}.ndjson", "w").write("\n".join(out) + "\n")
        open(f"{d}/{kind}-{b}.lines", "w").write(str(len(out)))
PY
kinds="flow gateway-flow"
if [ "$OTHER_KINDS" = 1 ]; then
  kinds="$kinds $(python3 - "$dir" "$OTHER_BATCHES" <<'PY'
import base64, datetime as dt, glob, json, sys
d, batches = sys.argv[1], int(sys.argv[2])
now = dt.datetime.now(dt.timezone.utc)
TIMES = ("at", "detected_at", "login_at", "last_request_at", "start", "end")
def stamp(t): return t.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
kinds = []
for path in sorted(glob.glob("events/collect/collect_*.json")):
    event = json.load(open(path))
    kind = event["rawPath"].rsplit("/", 1)[1]
    if kind in ("flow", "gateway-flow"):
        continue
    body = event["body"]
    if event.get("isBase64Encoded"):
        body = base64.b64decode(body).decode()
    sample = json.loads(body.splitlines()[0])
    n = 0
    for b in range(batches):
        out, size = [], 0
        while True:
            # A distinct time a line, a millisecond apart, over the last 6 hours.
            t = now - dt.timedelta(seconds=60) - dt.timedelta(milliseconds=n * 7 % (6 * 3600 * 1000))
            line = dict(sample)
            for k in TIMES:
                if k in line:
                    line[k] = stamp(t)
            text = json.dumps(line, separators=(",", ":"))
            if size + len(text) + 1 > 4_000_000: break
            out.append(text); size += len(text) + 1; n += 1
        open(f"{d}/{kind}-{b}.ndjson", "w").write("\n".join(out) + "\n")
        open(f"{d}/{kind}-{b}.lines", "w").write(str(len(out)))
    kinds.append(kind)
print(" ".join(kinds))
PY
)"
fi

cpu() { awk '{print $14 + $15}' "/proc/$server/stat"; }
tck=$(getconf CLK_TCK)
for kind in $kinds; do
  lines=0
  for f in "$dir/$kind"-[0-9]*.lines; do lines=$((lines + $(cat "$f"))); done
  c0=$(cpu)
  t0=$(date +%s.%N)
  ls "$dir/$kind"-[0-9]*.ndjson | xargs -P "$SENDERS" -I{} sh -c \
    "curl -sS -o {}.answer -w '%{http_code}\n' -H 'Authorization: Bearer $collect' -H 'Content-Type: application/x-ndjson' --data-binary @{} '$base/collect/$kind'" \
    >"$dir/$kind.codes"
  t1=$(date +%s.%N)
  c1=$(cpu)
  bad=$(grep -vc '^200$' "$dir/$kind.codes" || true)
  batches=$(ls "$dir/$kind"-[0-9]*.ndjson | wc -l)
  python3 - "$kind" "$lines" "$t0" "$t1" "$c0" "$c1" "$tck" "$batches" "$SENDERS" "$bad" "$dir" <<'PY'
import glob, json, sys
kind, lines, t0, t1, c0, c1, tck, batches, senders, bad, d = sys.argv[1:]
lines, secs, cpu = int(lines), float(t1) - float(t0), (int(c1) - int(c0)) / int(tck)
accepted = 0
for answer in glob.glob(f"{d}/{kind}-[0-9]*.ndjson.answer"):
    try:
        accepted += json.load(open(answer))["data"]["accepted"]
    except (ValueError, KeyError, TypeError):
        pass
print(f"{kind}: {batches} batches of ~4 MB, {lines} lines ({accepted} accepted), {senders} sender(s): "
      f"{secs:.2f} s, {lines / secs:,.0f} lines/s; server CPU {cpu:.2f} s, {cpu / int(batches):.2f} s a batch; "
      f"non-200 answers: {bad}")
PY
done
# DynamoDB write units, from the items' sizes as DynamoDB counts them (each attribute's name
# and value, a number about one byte per two digits plus one; the model of
# store/dynamodb/src/read_costs.rs), for the items the DynamoDB adapter would write:
# - a record: PutItem of pk, sk, gp, gs, p, ts, id, b, ttl, once in the table and once in the
#   `by_partition` index (projection ALL): 2 x ceil(size / 1 KB);
# - a rollup row: UpdateItem of pk, sk, d, hr, rk, ttl, once and m_<measure> each, billed on
#   the larger of the item before and after: ceil(size / 1 KB) for every row a batch adds to.
kill "$server"; wait "$server" 2>/dev/null || true
python3 - "$dir/netops.db" <<'PY'
import json, math, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
def num(v): return len(str(int(v)) if float(v).is_integer() else repr(v)) // 2 + 1
def record_size(series, part, ts, id_, body):
    pk = f"acme|S|{series}|{ts // 86_400_000}"
    sk = f"{ts:015}|{id_}\x01{part}"
    gp = f"acme|S|{series}|p|{part}"
    return (2 + len(pk) + 2 + len(sk) + 2 + len(gp) + 2 + len(sk) + 1 + len(part) + 2 + num(ts)
            + 2 + len(id_) + 1 + len(body) + 3 + num(ts // 1000 + 90 * 86_400))
for series, prefix in (("flows.records", "fl-"), ("flows.gateway", "gw-")):
    sizes = [record_size(series, p, ts, i, b) for p, ts, i, b in db.execute(
        "select part, ts, id, body from series where tenant='acme' and series=? and id like ?",
        (series, prefix + "%"))]
    if sizes:
        wcu = sum(2 * math.ceil(s / 1024) for s in sizes) / len(sizes)
        print(f"{series}: {len(sizes)} records of {sum(sizes) / len(sizes):.0f} bytes on average, "
              f"{wcu:.2f} write units a record (table and index)")
day = max(h for (h,) in db.execute("select max(hour) from rollups where tenant='acme' and series like 'flows.%'"))
rows = {}
for series, hour, key, dims, measures in db.execute(
        "select series, hour, key, dims, measures from rollups where tenant='acme' and series like 'flows.%' "
        "and series not like 'flows.fw%' and hour >= ?", (day - 86_400_000,)):
    m = json.loads(measures)
    size = (2 + len(f"acme|R|{series}") + 2 + 16 + len(key) + 1 + len(dims) + 2 + num(hour) + 2 + len(key)
            + 3 + num(hour // 1000) + 4 + 16 + sum(2 + len(k) + num(v) for k, v in m.items()))
    n, units, biggest = rows.get(series.split("/")[0], (0, 0, 0))
    rows[series.split("/")[0]] = (n + 1, units + math.ceil(size / 1024), max(biggest, size))
print("flows rollup rows of the two UTC days the batches fall in (as the store holds them at the end of the run):")
total = 0
for series, (n, units, biggest) in sorted(rows.items()):
    total += units
    print(f"  {series}: {n} rows, {units} write units to add to every one, largest {biggest / 1024:.1f} KB")
print(f"  all: {total} write units for a batch that adds to every one of these rows")
PY

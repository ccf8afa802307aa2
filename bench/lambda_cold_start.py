"""Start-to-first-answer of a function binary under the Lambda Runtime API protocol.

Usage: python3 bench/lambda_cold_start.py [FUNCTION_BINARY] [NETOPS_BINARY] [RUNS]
Defaults: the release fleet and netops binaries, 20 runs. Prints min / median / max in ms.
"""

import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "python"))
from lambda_runtime import apigw_event, run_function  # noqa: E402

root = os.path.join(os.path.dirname(__file__), "..")
function = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "target", "lambda", "fleet")
netops = sys.argv[2] if len(sys.argv) > 2 else os.path.join(root, "target", "release", "netops")
runs = int(sys.argv[3]) if len(sys.argv) > 3 else 20

with tempfile.TemporaryDirectory() as tmp:
    db = os.path.join(tmp, "netops.db")
    subprocess.run([netops, "seed", "--db", db, "--days", "1"], check=True, capture_output=True)
    token = subprocess.run([netops, "token", "create", "--tenant", "acme", "--name", "bench", "--scopes", "all", "--db", db],
                           check=True, capture_output=True, text=True).stdout.strip()
    times = []
    for _ in range(runs):
        started, api = run_function(function, [apigw_event("/api/v1/machines", token, "limit=100")], {"NETOPS_DB": db})
        answered, response = api.responses["req-0"]
        assert response["statusCode"] == 200, response
        times.append((answered - started) * 1000)
    print(f"{os.path.basename(function)}: start to first answer over {runs} cold starts: "
          f"min {min(times):.1f} ms, median {statistics.median(times):.1f} ms, max {max(times):.1f} ms")
    print(f"binary size: {os.path.getsize(function) / 1e6:.2f} MB")

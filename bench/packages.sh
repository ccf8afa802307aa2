#!/usr/bin/env bash
# Every Lambda package built as `sam build` builds it (`cargo lambda build --release --arm64
# --bin <name>` in the function's own folder, the profile of `[workspace.metadata.lambda.build]`),
# then each bootstrap's size and its size zipped as SAM uploads it (deflate), as a Markdown
# table (bench/lambda-results.md). Needs cargo-lambda and zig (infra/README.md) on the PATH.
# FROM_ROOT=1 builds every function in one `cargo lambda build` from the workspace root
# instead: the same content is expected, whatever the folder it is built from.
set -euo pipefail
cd "$(dirname "$0")/.."
target=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
functions=$(ls functions)
if [ "${FROM_ROOT:-}" = 1 ]; then
  cargo lambda build --release --arm64 $(for f in $functions; do printf -- '--bin %s ' "$f"; done) >/dev/null 2>&1
else
  for f in $functions; do
    (cd "functions/$f" && cargo lambda build --release --arm64 --bin "$f" >/dev/null 2>&1)
  done
fi
python3 - "$target/lambda" $functions <<'PY'
import io, os, sys, zipfile
root, names = sys.argv[1], sys.argv[2:]
print("| function | bootstrap (MB) | zipped (MB) |")
print("|---|---|---|")
for name in names:
    path = os.path.join(root, name, "bootstrap")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.write(path, "bootstrap")
    print(f"| {name} | {os.path.getsize(path) / 1e6:.3f} | {len(buf.getvalue()) / 1e6:.3f} |")
PY

#!/usr/bin/env bash
# Refreshes the Swagger UI files served by /docs from the npm registry's swagger-ui-dist
# package. They are committed so that builds and the page need no network.
set -euo pipefail
version=${1:-5.35.0}
cd "$(dirname "$0")"
tmp=$(mktemp -d)
(cd "$tmp" && npm pack --silent "swagger-ui-dist@$version" >/dev/null && tar xzf swagger-ui-dist-*.tgz)
cp "$tmp"/package/{swagger-ui-bundle.js,swagger-ui.css,LICENSE,NOTICE} .
echo "$version" > VERSION
rm -rf "$tmp"

#!/usr/bin/env bash
# Databases routes on 1,000 machines (see _records_lib.sh); instance 190001 is the first one.
cd "$(dirname "$0")" && ./_records_lib.sh <<'URLS'
/databases/instances
/databases/instances/190001/metrics
/databases/instances/190001/metrics?period=30d
/databases/instances/190001/metrics?from=2000-01-01T00:00:00Z
/databases/instances/190001/slow-queries?period=7d
/databases/instances/190001/top-queries?period=7d
/databases/instances/190001/sessions?period=7d
/databases/instances/190001/blocking?period=7d
/databases/alerts?status=all&period=30d
/databases/alerts?status=open
/databases/checks
/databases/checks/195001/results?period=7d
URLS

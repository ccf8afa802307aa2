#!/usr/bin/env bash
# Inventory routes, first pages, on 1,000 machines (see _records_lib.sh).
cd "$(dirname "$0")" && ./_records_lib.sh <<'URLS'
/inventory/assets
/inventory/assets?q=ubuntu
/inventory/assets/1500
/inventory/software
/inventory/software?eol=1&has_cve=1
/inventory/cves
/inventory/cves?min_cvss=9&status=open
URLS

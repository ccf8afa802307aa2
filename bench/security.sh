#!/usr/bin/env bash
# Security routes, first pages, on 1,000 machines and 5,000 accounts (see _records_lib.sh).
cd "$(dirname "$0")" && ./_records_lib.sh <<'URLS'
/security/logons
/security/logons?period=7d
/security/logons?result=failure&period=7d
/security/logons?user=julie&period=7d
/security/lockouts
/security/lockouts?period=30d
/security/account-changes
/security/account-changes?type=group&period=30d
/security/risky-accounts
/security/risky-accounts?limit=200
/security/anomalies?period=7d
/security/incidents?status=open
/security/rules
URLS

#!/usr/bin/env python3
"""The real bill of a deployment, computed from infra/template.yaml at stated prices.

Two figures, as a Markdown report on stdout (bench/bill-results.md holds the last one; run it
again after changing the template):

- the fixed monthly floor of an idle deployment: what the stack costs with no request at all
  (alarms, the cursor secret, stored logs and tables), and the ceiling the custom metrics
  reach once every route is called at least once an hour (CloudWatch bills a metric for the
  hours it receives data, so an idle stack pays none);
- the cost per million requests, logs and metrics included.

What is read from the template: the functions and their memory size, the routes of each
function (its `Metadata.Scopes`, one per operation id), the alarms and the metrics each one
reads, the log groups and their retention, whether the stack creates its secret, the
dashboards. What the metrics line emits per function and per route is
`shared/src/metrics.rs` (BY_FUNCTION and BY_ROUTE: 5 and 2; its unit test holds them to the
line). Prices: us-east-1, public list prices as of 2026 (on-demand DynamoDB after the
November 2024 cut); check them before relying on the result. Free tiers are left out.

Usage: bench/bill.py [template] [--requests-per-month N]
"""

import argparse
import json
import math
import os
import sys

import yaml

# Prices (USD, us-east-1).
PRICE = {
    "metric_month": 0.30,  # custom metric, first 10,000
    "alarm_metric_month": 0.10,  # standard-resolution alarm, per metric it reads
    "dashboard_month": 3.00,
    "secret_month": 0.40,
    "secret_10k_calls": 0.05,
    "logs_ingest_gb": 0.50,
    "logs_store_gb_month": 0.03,
    "apigw_http_million": 1.00,
    "lambda_million": 0.20,
    "lambda_arm_gb_s": 0.0000133334,
    "ddb_wru_million": 0.625,
    "ddb_rru_million": 0.125,
    "ddb_store_gb_month": 0.25,
    "ddb_pitr_gb_month": 0.20,
    "egress_gb": 0.09,
}

# The metrics line (shared/src/metrics.rs): metrics by function, and by function and route.
BY_FUNCTION = 5
BY_ROUTE = 2

# A representative request's log lines: the metrics line (its shape is shared/src/metrics.rs's
# `line`, the values a typical routed read's), Lambda's START/END/REPORT lines (plain text, as
# the runtime writes them), the API's access log line (the template's format, typical values).
SAMPLE_METRICS_LINE = {
    "_aws": {"Timestamp": 1795000000000, "CloudWatchMetrics": [
        {"Namespace": "netops", "Dimensions": [["Function"]], "Metrics": [
            {"Name": m, "Unit": "Milliseconds" if m == "Latency" else "Count"}
            for m in ("Latency", "Fault", "DynamoCalls", "ReadUnits", "WriteUnits")]},
        {"Namespace": "netops", "Dimensions": [["Function", "Route"]], "Metrics": [
            {"Name": "Latency", "Unit": "Milliseconds"}, {"Name": "Fault", "Unit": "Count"}]}]},
    "Function": "fleet", "Route": "list_machines", "Latency": 14.512, "Fault": 0,
    "DynamoCalls": 3, "ReadUnits": 8.5, "WriteUnits": 1.0, "status": 200,
    "request_id": "Ab1CdEfGhIjKlMn=",
}
REQUEST_ID = "8f5b2c1e-3d4a-4b6c-9e8f-0a1b2c3d4e5f"
PLATFORM_LINES = (
    f"START RequestId: {REQUEST_ID} Version: $LATEST\n"
    f"END RequestId: {REQUEST_ID}\n"
    f"REPORT RequestId: {REQUEST_ID}\tDuration: 14.51 ms\tBilled Duration: 15 ms\t"
    "Memory Size: 256 MB\tMax Memory Used: 31 MB\t\n"
)
ACCESS_LOG_VALUES = {
    "requestId": "Ab1CdEfGhIjKlMn=", "extendedRequestId": "Ab1CdEfGhIjKlMn=",
    "requestTime": "28/Nov/2026:16:00:02 +0000", "identity.sourceIp": "203.0.113.42",
    "identity.userAgent": "python-httpx/0.28.1", "httpMethod": "GET",
    "path": "/api/v1/machines", "routeKey": "GET /api/v1/machines", "status": "200",
    "protocol": "HTTP/1.1", "responseLength": "11873", "responseLatency": "17",
    "integrationLatency": "15", "integrationStatus": "200", "integrationErrorMessage": "-",
}

# Per request, the assumptions of infra/README.md's cost model.
ASSUME = {
    "billed_ms": 20,  # average warm duration
    "token_cache_hit": 0.9,
    "page_kb": 30,  # a page of answer
    "page_rru": 8,  # 30 KB read strongly consistent
    "gzip_ratio": 5,  # JSON pages compress about fivefold
    "gzip_share": 0.8,  # answers asked with Accept-Encoding: gzip
}


class Loader(yaml.SafeLoader):
    """YAML with CloudFormation's short tags (`!Ref`, `!Sub`, ...) kept as plain values."""


def _tag(loader, suffix, node):
    if isinstance(node, yaml.ScalarNode):
        return {suffix: loader.construct_scalar(node)}
    if isinstance(node, yaml.SequenceNode):
        return {suffix: loader.construct_sequence(node, deep=True)}
    return {suffix: loader.construct_mapping(node, deep=True)}


Loader.add_multi_constructor("!", _tag)


def default(template, value):
    """A property's value, a parameter's default in place of its `!Ref`."""
    if isinstance(value, dict) and "Ref" in value:
        return template["Parameters"][value["Ref"]]["Default"]
    return value


def resources(template, kind):
    return {k: r for k, r in template["Resources"].items() if r["Type"] == kind}


def alarm_metrics(alarm):
    """The metrics an alarm reads: one, or each metric of its math expression."""
    props = alarm["Properties"]
    if "Metrics" in props:
        return sum(1 for m in props["Metrics"] if "MetricStat" in m)
    return 1


def money(x):
    return f"${x:,.2f}"


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser()
    parser.add_argument("template", nargs="?", default=os.path.join(here, "..", "infra", "template.yaml"))
    parser.add_argument("--requests-per-month", type=float, default=10e6)
    args = parser.parse_args()
    with open(args.template) as f:
        t = yaml.load(f, Loader=Loader)

    functions = resources(t, "AWS::Serverless::Function")
    memory_gb = t["Globals"]["Function"]["MemorySize"] / 1024
    # Route values of the metrics line: each function's operations, and "none" for what
    # reaches the catch-all (docs) function outside the route table.
    routes = sum(len(f.get("Metadata", {}).get("Scopes", {})) for f in functions.values()) + 1
    metrics = BY_FUNCTION * len(functions) + BY_ROUTE * routes
    # A log metric filter publishes one metric of its own (the 429 count), in use or not.
    filters = sum(len(f["Properties"]["MetricTransformations"])
                  for f in resources(t, "AWS::Logs::MetricFilter").values())
    alarms = resources(t, "AWS::CloudWatch::Alarm")
    alarm_count = sum(alarm_metrics(a) for a in alarms.values())
    dashboards = len(resources(t, "AWS::CloudWatch::Dashboard"))
    secret = 1 if "CreateCursorSecret" in t.get("Conditions", {}) else 0
    log_groups = resources(t, "AWS::Logs::LogGroup")
    retention_days = default(t, next(iter(log_groups.values()))["Properties"]["RetentionInDays"])

    print("# The bill of a deployment (bench/bill.py)\n")
    print(f"From `infra/template.yaml`: {len(functions)} functions of {memory_gb * 1024:.0f} MB, "
          f"{routes - 1} operations (+1 route value for requests outside the table), "
          f"{len(alarms)} alarms reading {alarm_count} metrics, {dashboards} dashboard(s), "
          f"{secret} secret, {len(log_groups)} log groups kept {retention_days} days. "
          "Prices: us-east-1 list prices, free tiers left out.\n")

    print("## Fixed monthly floor\n")
    print("| Item | Count | Per month |\n|---|---|---|")
    floor = [
        ("Alarms (standard, per metric read)", alarm_count, alarm_count * PRICE["alarm_metric_month"]),
        ("Cursor secret (Secrets Manager; read at cold starts: 3 calls, $0.05 per 10,000 calls)", secret, secret * PRICE["secret_month"]),
        ("Dashboards", dashboards, dashboards * PRICE["dashboard_month"]),
        ("Log metric filters (their metric gets a 0 when a log arrives; idle: none)", filters, 0.0),
    ]
    for name, count, cost in floor:
        print(f"| {name} | {count} | {money(cost)} |")
    idle = sum(c for _, _, c in floor)
    print(f"| **Idle deployment** (no request: no metric data, no log ingested) | | **{money(idle)}** |")
    metrics += filters
    print(f"| Custom metrics once every route is called each hour: {BY_FUNCTION} × {len(functions)} "
          f"functions + {BY_ROUTE} × {routes} routes + {filters} from log filters | {metrics} | "
          f"{money(metrics * PRICE['metric_month'])} |")
    print(f"| **Floor in use** | | **{money(idle + metrics * PRICE['metric_month'])}** |")
    print("\nStored data adds its size: DynamoDB "
          f"{money(PRICE['ddb_store_gb_month'])} per GB-month (+{money(PRICE['ddb_pitr_gb_month'])} "
          "with point-in-time recovery), logs "
          f"{money(PRICE['logs_store_gb_month'])} per GB-month for {retention_days} days.\n")

    print("## Per million requests\n")
    access = t["Resources"]["HttpApi"]["Properties"]["AccessLogSettings"]["Format"]
    for key, value in ACCESS_LOG_VALUES.items():
        access = access.replace(f"$context.{key}", value)
    # CloudWatch Logs bills 26 bytes of metadata per event on top of its text.
    lines = {
        "metrics line": len(json.dumps(SAMPLE_METRICS_LINE, separators=(",", ":"))) + 1 + 26,
        "Lambda platform lines": len(PLATFORM_LINES) + 3 * 26,
        "access log line": len(access) + 1 + 26,
    }
    log_bytes = sum(lines.values())
    log_gb = log_bytes * 1e6 / 1e9
    store_months = retention_days / 30.4
    egress_gb = ASSUME["page_kb"] * 1e6 / 1e6 * (
        1 - ASSUME["gzip_share"] + ASSUME["gzip_share"] / ASSUME["gzip_ratio"])
    rows = [
        ("API Gateway HTTP API", PRICE["apigw_http_million"]),
        ("Lambda requests", PRICE["lambda_million"]),
        (f"Lambda duration ({ASSUME['billed_ms']} ms × {memory_gb:.2f} GB, arm64)",
         1e6 * memory_gb * ASSUME["billed_ms"] / 1000 * PRICE["lambda_arm_gb_s"]),
        ("DynamoDB rate-limit count (1 WRU)", PRICE["ddb_wru_million"]),
        (f"DynamoDB token reads ({1 - ASSUME['token_cache_hit']:.0%} cache misses × 1 RRU)",
         (1 - ASSUME["token_cache_hit"]) * PRICE["ddb_rru_million"]),
        (f"DynamoDB page read ({ASSUME['page_kb']} KB consistent = {ASSUME['page_rru']} RRU)",
         ASSUME["page_rru"] * PRICE["ddb_rru_million"]),
        (f"Logs ingested ({log_bytes} bytes a request: "
         + ", ".join(f"{k} {v}" for k, v in lines.items()) + ")",
         log_gb * PRICE["logs_ingest_gb"]),
        (f"Logs stored {retention_days} days", log_gb * PRICE["logs_store_gb_month"] * store_months),
        ("Metrics from the metrics line (EMF: billed as logs above, no PutMetricData)", 0.0),
        (f"Egress ({ASSUME['page_kb']} KB pages, {ASSUME['gzip_share']:.0%} asked gzip, "
         f"{ASSUME['gzip_ratio']}× smaller: {egress_gb:.1f} GB)", egress_gb * PRICE["egress_gb"]),
    ]
    print("| Item | Per million |\n|---|---|")
    for name, cost in rows:
        print(f"| {name} | {money(cost)} |")
    per_million = sum(c for _, c in rows)
    print(f"| **Total** | **{money(per_million)}** |")

    n = args.requests_per_month
    month = idle + metrics * PRICE["metric_month"] + per_million * n / 1e6
    print(f"\nAt {n / 1e6:g} million requests a month: {money(month)} "
          f"(floor in use {money(idle + metrics * PRICE['metric_month'])}, "
          f"requests {money(per_million * n / 1e6)}).")
    if not math.isfinite(month):
        sys.exit(1)


if __name__ == "__main__":
    main()

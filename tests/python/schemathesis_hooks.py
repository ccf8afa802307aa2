"""Schemathesis hooks for the media types of this API that it does not serialize itself: a
collect batch as NDJSON (`application/x-ndjson`), one JSON value per line."""

import json

import schemathesis


@schemathesis.serializer("application/x-ndjson")
def ndjson(ctx, value):
    if isinstance(value, bytes):
        return {"data": value}
    lines = value if isinstance(value, list) else [value]
    return {"data": "".join(json.dumps(line) + "\n" for line in lines).encode("utf-8")}

"""moto's server (the DynamoDB-protocol server of the test command), with two changes.

One DynamoDB call at a time: moto's threaded server runs calls side by side without locks,
so two conditional transactions could both pass their condition (DynamoDB never lets them),
and a transaction's backup copy of a table fails when another call changes the table
meanwhile. moto computes under Python's global lock anyway, so nothing is lost in speed.

And two changes of speed, none of behaviour. A transaction keeps a copy of the items it
touches to put them back if it fails, where moto copies whole tables (seconds per
transaction with the demo data). And:

moto 5.2 answers every Query by listing all the items of the table and sorting them, then
keeping the partition asked for: with the demo data (about 200,000 items per table) each
query costs seconds of CPU, and the suite's DynamoDB pass would not end in CI's time. Here a
query on the table's own key reads only the items of its partition, and a query on an index
reads the items unsorted (moto sorts the matching ones by the index key afterwards anyway).
Scans, and everything else, are untouched.

Usage: python tests/moto_server.py -H 127.0.0.1 -p PORT (the arguments of moto_server).
"""

import copy
import inspect
import threading

import moto.dynamodb.models as backend_module

from moto.dynamodb.models import DynamoDBBackend
from moto.dynamodb.models.dynamo_type import DynamoType
from moto.dynamodb.models.table import Table
from moto.dynamodb.responses import DynamoHandler
from moto.server import main

_query = threading.local()
_all_items = Table.all_items
_original_query = Table.query
_query_signature = inspect.signature(_original_query)


def all_items(self):
    mode = getattr(_query, "mode", None)
    if mode is None:
        return _all_items(self)
    kind, hash_key = mode
    if kind == "table" and self.range_key_attr:
        return list(self.items.get(hash_key, {}).values())
    items = []
    for group in self.items.values():
        items.extend(group.values() if self.range_key_attr else [group])
    return items


def query(self, *args, **kwargs):
    call = _query_signature.bind(self, *args, **kwargs).arguments
    index_name, hash_key = call.get("index_name"), call.get("hash_key")
    _query.mode = ("index", None) if index_name else ("table", hash_key)
    try:
        return _original_query(self, *args, **kwargs)
    finally:
        _query.mode = None


class _NoTableCopy:
    """moto's `copy` module inside a transaction: tables are not copied (the touched items
    are, by `transact_write_items` below)."""

    def __getattr__(self, name):
        return getattr(copy, name)

    @staticmethod
    def deepcopy(value, memo=None):
        return value if isinstance(value, Table) else copy.deepcopy(value, memo)


_transact = DynamoDBBackend.transact_write_items


def transact_write_items(self, transact_items):
    saved = []
    for entry in transact_items:
        op = next(iter(entry.values()))
        table = self.tables.get(op.get("TableName"))
        key = op.get("Key") or op.get("Item")
        if table is None or key is None or table.hash_key_attr not in key:
            continue
        h = DynamoType(key[table.hash_key_attr])
        r = DynamoType(key[table.range_key_attr]) if table.range_key_attr in key else None
        group = table.items.get(h)
        before = (group or {}).get(r) if table.range_key_attr else group
        saved.append((table, h, r, copy.deepcopy(before)))
    backend_module.copy = _NoTableCopy()
    try:
        return _transact(self, transact_items)
    except Exception:
        for table, h, r, before in reversed(saved):
            if table.range_key_attr:
                if before is None:
                    table.items.get(h, {}).pop(r, None)
                else:
                    table.items[h][r] = before
            elif before is None:
                table.items.pop(h, None)
            else:
                table.items[h] = before
        raise
    finally:
        backend_module.copy = copy


_one_call = threading.Lock()
_call_action = DynamoHandler.call_action


def call_action(self):
    with _one_call:
        return _call_action(self)


Table.all_items = all_items
Table.query = query
DynamoHandler.call_action = call_action
DynamoDBBackend.transact_write_items = transact_write_items

if __name__ == "__main__":
    main()

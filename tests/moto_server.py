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

And one change of what it reports: moto answers a fixed `ConsumedCapacity` (1 unit a Query,
0.5 a GetItem, whatever they read), where DynamoDB bills the size of what was read: the
items of a Query summed and rounded up to 4 KB, an item of a GetItem rounded up to 4 KB, one
unit per 4 KB strongly consistent and half that eventually consistent (an index is always
eventually consistent), at least one 4 KB block even when nothing is found. Here Query and
GetItem report that, so the read units the adapters count per request are the ones DynamoDB
would bill. The adapters send no FilterExpression on these calls, so the items a Query
returns are the items it read.

Writes too: moto answers 1 unit a write whatever it wrote (and nothing for a transaction),
where DynamoDB bills each item written by its size, the larger of before and after, rounded
up to 1 KB, once in the table and once in each global secondary index holding it (its
projection's size), twice in a transaction. Here PutItem, UpdateItem, DeleteItem,
BatchWriteItem and TransactWriteItems report that, so the write units the adapters count
are the ones DynamoDB would bill (a write refused by its condition, which DynamoDB bills
too, reports nothing: it answers an error).

Usage: python tests/moto_server.py -H 127.0.0.1 -p PORT (the arguments of moto_server).
"""

import base64
import copy
import functools
import inspect
import threading

import moto.dynamodb.models as backend_module

from moto.dynamodb.models import DynamoDBBackend
from moto.dynamodb.models.dynamo_type import DynamoType, Item
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


def _value_size(value):
    """A value's size by DynamoDB's rules ("Item sizes and formats" in its guide)."""
    (kind, v), = value.items()
    if kind == "S":
        return len(v.encode("utf-8"))
    if kind == "N":
        digits = v.lstrip("-").replace(".", "").strip("0") or "0"
        return (len(digits) + 1) // 2 + 1
    if kind == "B":
        return len(base64.b64decode(v)) if isinstance(v, str) else len(v)
    if kind in ("BOOL", "NULL"):
        return 1
    if kind in ("SS", "NS", "BS"):
        return sum(_value_size({kind[0]: e}) for e in v)
    if kind == "L":
        return 3 + sum(_value_size(e) + 1 for e in v)
    if kind == "M":
        return 3 + sum(len(k.encode("utf-8")) + _value_size(e) + 1 for k, e in v.items())
    return 0


def _item_size(item):
    return sum(len(name.encode("utf-8")) + _value_size(v) for name, v in item.items())


def _billed_reads(read):
    """`read` (a handler's Query or GetItem) reporting the read units DynamoDB bills."""

    @functools.wraps(read)
    def billed(self):
        result = read(self)
        body = result.result
        capacity = body.get("ConsumedCapacity") if isinstance(body, dict) else None
        if capacity is not None:
            items = body.get("Items", [body["Item"]] if "Item" in body else [])
            blocks = max(1, -(-sum(_item_size(i) for i in items) // 4096))
            strong = self.body.get("ConsistentRead") and not self.body.get("IndexName")
            units = blocks * (1.0 if strong else 0.5)
            capacity["CapacityUnits"] = units
            if "Table" in capacity:
                capacity["Table"]["CapacityUnits"] = units
        return result

    return billed


def _units(size, block):
    return max(1, -(-size // block))


def _key(table, item):
    keys = {table.hash_key_attr: item[table.hash_key_attr]}
    if table.range_key_attr is not None:
        keys[table.range_key_attr] = item[table.range_key_attr]
    return keys


def _stored(handler, table_name, keys):
    item = handler.dynamodb_backend.get_item(table_name, keys)
    return item.to_json()["Attributes"] if item is not None else None


def _written_units(table, before, after):
    """The write units of one item's change, by DynamoDB's rules (see the top)."""
    sizes = [_item_size(i) for i in (before, after) if i is not None]
    units = _units(max(sizes, default=0), 1024)
    for index in table.global_indexes:
        held = []
        for item in (before, after):
            if item is not None and all(k in item for k in index.schema_key_attrs):
                projected = index.project(Item(None, None, item))
                held.append(_item_size(projected.to_json()["Attributes"]))
        if held:
            units += _units(max(held), 1024)
    return units


def _changes(body, action):
    """(table name, key or item, whether it is a whole item) of each item a write names."""
    if action in ("put_item",):
        return [(body["TableName"], body["Item"], True)]
    if action in ("update_item", "delete_item"):
        return [(body["TableName"], body["Key"], False)]
    if action == "batch_write_item":
        out = []
        for name, requests in body["RequestItems"].items():
            for request in requests:
                if "PutRequest" in request:
                    out.append((name, request["PutRequest"]["Item"], True))
                else:
                    out.append((name, request["DeleteRequest"]["Key"], False))
        return out
    out = []
    for entry in body["TransactItems"]:
        for kind in ("Put", "Update", "Delete"):
            if kind in entry:
                op = entry[kind]
                whole = kind == "Put"
                out.append((op["TableName"], op["Item"] if whole else op["Key"], whole))
    return out


def _billed_writes(action):
    """`action` (a handler's write) reporting the write units DynamoDB bills."""
    write = getattr(DynamoHandler, action)

    @functools.wraps(write)
    def billed(self):
        named = []
        for table_name, key_or_item, whole in _changes(self.body, action):
            table = self.dynamodb_backend.get_table(table_name)
            keys = _key(table, key_or_item) if whole else key_or_item
            named.append((table_name, table, keys, _stored(self, table_name, keys)))
        result = write(self)
        body = result.result
        if not isinstance(body, dict) or self.body.get("ReturnConsumedCapacity", "NONE") == "NONE":
            return result
        factor = 2 if action == "transact_write_items" else 1
        per_table = {}
        for table_name, table, keys, before in named:
            after = _stored(self, table_name, keys)
            units = factor * _written_units(table, before, after)
            per_table[table_name] = per_table.get(table_name, 0) + units
        capacity = [
            {"TableName": name, "CapacityUnits": float(units), "Table": {"CapacityUnits": float(units)}}
            for name, units in per_table.items()
        ]
        if action in ("batch_write_item", "transact_write_items"):
            body["ConsumedCapacity"] = capacity
        elif capacity:
            body["ConsumedCapacity"] = {"TableName": capacity[0]["TableName"], "CapacityUnits": capacity[0]["CapacityUnits"]}
        return result

    return billed


_one_call = threading.Lock()
_call_action = DynamoHandler.call_action


def call_action(self):
    with _one_call:
        return _call_action(self)


Table.all_items = all_items
Table.query = query
DynamoHandler.call_action = call_action
DynamoDBBackend.transact_write_items = transact_write_items
DynamoHandler.query = _billed_reads(DynamoHandler.query)
DynamoHandler.get_item = _billed_reads(DynamoHandler.get_item)
for _action in ("put_item", "update_item", "delete_item", "batch_write_item", "transact_write_items"):
    setattr(DynamoHandler, _action, _billed_writes(_action))

if __name__ == "__main__":
    main()

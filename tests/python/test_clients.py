"""Clients generated from the served OpenAPI document, as a user would make them: the
generators raise no warning about the document, name every class after a component (no
numbered twins such as `Datum25`), and every component schema is used; then every GET
operation goes through the generated Python client against the real server and its answer
parses through the generated models (the PDF report as bytes)."""

import importlib
import json
import pathlib
import re
import subprocess
import sys

import attrs
import pytest

from conftest import ROOT

NODE_BIN = ROOT / "tests" / "node" / "node_modules" / ".bin"
PACKAGE = "network_operations_public_api_client"


def document(server, tmp_path) -> pathlib.Path:
    res = server.get("/openapi.json", token="")
    assert res.status_code == 200
    path = tmp_path / "openapi.json"
    path.write_bytes(res.content)
    return path


def refs(node):
    if isinstance(node, dict):
        if isinstance(node.get("$ref"), str):
            yield node["$ref"]
        for v in node.values():
            yield from refs(v)
    elif isinstance(node, list):
        for v in node:
            yield from refs(v)


def unreferenced(doc) -> list[str]:
    """Component schemas that no operation reaches, directly or through other components."""
    schemas = doc["components"]["schemas"]
    roots = [doc["paths"]] + [doc["components"].get(k, {}) for k in ("responses", "parameters", "headers")]
    reached, todo = set(), list(roots)
    while todo:
        for r in refs(todo.pop()):
            name = r.removeprefix("#/components/schemas/")
            if name != r and name not in reached:
                reached.add(name)
                todo.append(schemas.get(name, {}))
    return sorted(set(schemas) - reached)


def numbered_twins(names) -> list[str]:
    """Class names a generator numbered to tell apart shapes it could not name: `Datum25`
    beside `Datum` or `Datum24`."""
    names = set(names)
    out = []
    for n in names:
        m = re.fullmatch(r"(.*\D)\d+", n)
        if m and (m.group(1) in names or any(o != n and re.fullmatch(re.escape(m.group(1)) + r"\d+", o) for o in names)):
            out.append(n)
    return sorted(out)


def test_every_component_schema_is_referenced(server, tmp_path):
    doc = json.loads(document(server, tmp_path).read_text())
    assert unreferenced(doc) == []
    assert "Period" in doc["components"]["schemas"]
    # No operation declares an enum a component names or another operation declares too.
    seen = {json.dumps(s["enum"]): "a component" for s in doc["components"]["schemas"].values() if "enum" in s}
    for path, item in doc["paths"].items():
        for method, op in item.items():
            for p in op.get("parameters", []):
                values = p.get("schema", {}).get("enum")
                if values is None:
                    continue
                where = f"{method} {path} {p.get('name')}"
                assert json.dumps(values) not in seen, f"{where}: {values} as in {seen.get(json.dumps(values))}"
                seen[json.dumps(values)] = where


def run(cmd, **kw):
    out = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=600, **kw)
    text = out.stdout + out.stderr
    print(text[-10000:])
    assert out.returncode == 0, text[-10000:]
    return text


@pytest.fixture(scope="session")
def python_client(server, tmp_path_factory):
    """The Python client openapi-python-client generates from the served document, with the
    configuration the README gives (the PDF read as bytes)."""
    tmp = tmp_path_factory.mktemp("client")
    doc = document(server, tmp)
    out = tmp / PACKAGE
    text = run([pathlib.Path(sys.executable).parent / "openapi-python-client", "generate",
                "--path", doc, "--output-path", out, "--meta", "none",
                "--config", ROOT / "tests" / "python" / "openapi-python-client.yaml"])
    return out, text


def test_openapi_python_client_generates_without_warnings(python_client):
    out, text = python_client
    assert "warning" not in text.lower(), text
    classes = [re.search(r"^class (\w+)", p.read_text(), re.M).group(1)
               for p in (out / "models").glob("*.py") if p.stem != "__init__"]
    assert "Machine" in classes and "EnvelopeVecMachine" in classes
    assert numbered_twins(classes) == []


def test_datamodel_code_generator_names_every_class(server, tmp_path):
    doc = document(server, tmp_path)
    out = tmp_path / "models.py"
    text = run([pathlib.Path(sys.executable).parent / "datamodel-codegen", "--input", doc,
                "--input-file-type", "openapi", "--output", out, "--output-model-type", "pydantic_v2.BaseModel",
                "--openapi-scopes", "schemas", "paths", "parameters", "--formatters", "builtin"])
    assert "warn" not in text.lower(), text
    classes = re.findall(r"^class (\w+)\(", out.read_text(), re.M)
    assert "Machine" in classes
    assert numbered_twins(classes) == []


@pytest.mark.skipif(not (NODE_BIN / "openapi-typescript").exists(), reason="tests/run.sh installs it")
def test_openapi_typescript_generates_types_that_compile(server, tmp_path):
    doc = document(server, tmp_path)
    out = tmp_path / "api.d.ts"
    text = run([NODE_BIN / "openapi-typescript", doc, "--output", out])
    assert "warn" not in text.lower() and "error" not in text.lower(), text
    ts = out.read_text()
    assert '"application/pdf": string;' in ts and '"application/pdf": number[]' not in ts
    run([NODE_BIN / "tsc", "--noEmit", "--strict", "--skipLibCheck", out])


def links_to(doc) -> dict:
    """operationId → {parameter: (list path, JSON pointer in its body)}, from the links."""
    out = {}
    for path, item in doc["paths"].items():
        for op in item.values():
            for link in op.get("responses", {}).get("200", {}).get("links", {}).values():
                for name, expr in link["parameters"].items():
                    out.setdefault(link["operationId"], {})[name] = (path, expr.removeprefix("$response.body#"))
    return out


def pointer(body, ptr):
    for part in ptr.strip("/").split("/"):
        body = body[int(part)] if isinstance(body, list) else body[part]
    return body


def undeclared(value, where="") -> list[str]:
    """Keys the server sent that the model of their object does not declare (a model that
    declares fields keeps the others in `additional_properties`)."""
    out = []
    if isinstance(value, list):
        for i, v in enumerate(value):
            out += undeclared(v, f"{where}/{i}")
    elif attrs.has(type(value)):
        fields = [f.name for f in attrs.fields(type(value)) if f.name != "additional_properties"]
        extra = getattr(value, "additional_properties", {})
        if fields and extra:
            out.append(f"{where} ({type(value).__name__}): {sorted(extra)}")
        for f in fields:
            out += undeclared(getattr(value, f), f"{where}/{f}")
    return out


def test_every_get_operation_parses_through_the_generated_client(python_client, server, tmp_path):
    out, _ = python_client
    sys.path.insert(0, str(out.parent))
    try:
        client_mod = importlib.import_module(f"{PACKAGE}.client")
        client = client_mod.AuthenticatedClient(base_url=server.base_url, token=server.token,
                                                raise_on_unexpected_status=True, timeout=60)
        doc = json.loads(document(server, tmp_path).read_text())
        sources = links_to(doc)
        checked = []
        for path, item in doc["paths"].items():
            op = item.get("get")
            if op is None or op.get("security") == []:
                continue  # the public document and docs page are no client's business
            if op["tags"][0] == "agent":
                # The agent API answers agent credentials only (403 to this public token); its
                # routes are called through HTTP with enrolled agents in tests/api/agent.rs.
                continue
            args = {}
            for name in re.findall(r"{(\w+)}", path):
                source = sources.get(op["operationId"], {}).get(name)
                assert source, f"{op['operationId']}: no link gives {name}"
                args[name] = str(pointer(server.get(source[0]).json(), source[1]))
            module = importlib.import_module(f"{PACKAGE}.api.{op['tags'][0]}.{op['operationId']}")
            res = module.sync_detailed(client=client, **args)
            assert res.status_code == 200, (path, res.status_code, res.content[:500])
            if path.endswith(".pdf"):
                assert isinstance(res.parsed, bytes) and res.parsed.startswith(b"%PDF"), path
            else:
                assert hasattr(res.parsed, "data") and hasattr(res.parsed, "meta"), (path, res.parsed)
                assert undeclared(res.parsed) == [], path
            checked.append(op["operationId"])
    finally:
        sys.path.remove(str(out.parent))
    assert len(checked) >= 60, checked

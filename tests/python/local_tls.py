"""A local certificate authority, a server certificate it signs for 127.0.0.1, and moto (the
AWS-protocol server of the tests, tests/moto_server.py) serving HTTPS with it: what the AWS
clients of the functions and of the CLI are made to trust through NETOPS_EXTRA_CA_FILE
(docs/configuration.md). Shared by tests/python/test_extra_ca.py and bench/cold_start.py.

The keys are RSA 2048 like those of the AWS endpoints (Amazon's regional certificates), so a
handshake costs the client about what it costs against AWS."""

import asyncio
import datetime
import ipaddress
import os
import ssl
import subprocess
import sys
import time
import urllib.request

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID
from lambda_watch import free_port

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def _key():
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _write(path, data):
    with open(path, "wb") as f:
        f.write(data)
    return path


def make_certificates(directory):
    """Writes ca.pem (the CA's certificate), server.pem and server.key (a certificate for
    127.0.0.1 and localhost that the CA signs) into `directory`; returns their paths."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key, server_key = _key(), _key()
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "netops test CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1)).not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=False, content_commitment=False, key_encipherment=False,
                                     data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                     crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    server = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
        .issuer_name(ca_name).public_key(server_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1)).not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                                                    x509.DNSName("localhost")]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    return {
        "ca": _write(os.path.join(directory, "ca.pem"), ca.public_bytes(pem)),
        "cert": _write(os.path.join(directory, "server.pem"), server.public_bytes(pem)),
        "key": _write(os.path.join(directory, "server.key"), server_key.private_bytes(
            pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())),
    }


def _wait_up(proc, endpoint, context):
    for _ in range(400):
        try:
            urllib.request.urlopen(endpoint + "/moto-api/", context=context)
            return
        except OSError:
            if proc.poll() is not None:
                break
            time.sleep(0.05)
    raise RuntimeError(f"nothing answers on {endpoint}")


def start_moto(log, certificates=None, front="moto"):
    """moto on a free port of 127.0.0.1; returns (processes, endpoint) once it answers.

    Without `certificates` (make_certificates), plain HTTP. With them, HTTPS: `front="moto"`
    has moto serve it itself (`--ssl-cert`); moto's server (werkzeug's) closes the connection
    after every answer, so each request then pays a handshake of its own, which DynamoDB's
    endpoints, keeping connections alive, never ask. `front="proxy"` keeps them alive as
    DynamoDB does: HTTPS is served by a proxy (`python local_tls.py proxy`, its own process)
    that keeps each client's connection and passes every request to moto on a fresh local
    one."""
    port = free_port()
    args = [sys.executable, os.path.join(ROOT, "tests", "moto_server.py"), "-H", "127.0.0.1", "-p", str(port)]
    if certificates and front == "moto":
        args += ["--ssl-cert", certificates["cert"], "--ssl-key", certificates["key"]]
    procs = [subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)]
    try:
        context = ssl.create_default_context(cafile=certificates["ca"]) if certificates else None
        endpoint = f"{'https' if certificates and front == 'moto' else 'http'}://127.0.0.1:{port}"
        _wait_up(procs[0], endpoint, context)
        if certificates and front == "proxy":
            listen = free_port()
            procs.append(subprocess.Popen([sys.executable, os.path.abspath(__file__), "proxy", str(listen), str(port),
                                           certificates["cert"], certificates["key"]],
                                          stdout=log, stderr=subprocess.STDOUT))
            endpoint = f"https://127.0.0.1:{listen}"
            _wait_up(procs[1], endpoint, context)
    except Exception:
        stop(procs)
        raise
    return procs, endpoint


def stop(procs):
    for proc in procs:
        proc.kill()
        proc.wait()


def _header(head, name):
    for line in head.split(b"\r\n")[1:]:
        key, _, value = line.partition(b":")
        if key.strip().lower() == name:
            return value.strip().lower()
    return None


async def _pass_on(reader, writer, backend):
    """One client connection: each request (its head and its Content-Length body) to moto on a
    new connection, each answer back without moto's `Connection: close`."""
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            body = await reader.readexactly(int(_header(head, b"content-length") or 0))
            moto_reader, moto_writer = await asyncio.open_connection("127.0.0.1", backend)
            moto_writer.write(head + body)
            await moto_writer.drain()
            answer = await moto_reader.readuntil(b"\r\n\r\n")
            length = _header(answer, b"content-length")
            # moto sets the length of its answers; without one, the answer ends with the connection.
            rest = await (moto_reader.readexactly(int(length)) if length is not None else moto_reader.read())
            moto_writer.close()
            lines = [line for line in answer.split(b"\r\n") if not line.lower().startswith(b"connection:")]
            writer.write(b"\r\n".join(lines) + rest)
            await writer.drain()
            if length is None or _header(head, b"connection") == b"close":
                break
    except (asyncio.IncompleteReadError, ConnectionError, ssl.SSLError):
        pass
    finally:
        writer.close()


async def _proxy(listen, backend, cert, key):
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    server = await asyncio.start_server(lambda r, w: _pass_on(r, w, backend), "127.0.0.1", listen, ssl=context)
    await server.serve_forever()


if __name__ == "__main__" and sys.argv[1:2] == ["proxy"]:
    listen, backend, cert, key = sys.argv[2:6]
    asyncio.run(_proxy(int(listen), int(backend), cert, key))

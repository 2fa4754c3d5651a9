"""A real git remote over HTTPS for tests: ``git http-backend`` (smart HTTP, CGI)
behind a stdlib server on 127.0.0.1 with TLS and HTTP Basic authentication.

Every request, fetch or push, needs the credentials, like a private GitHub
repository.  The certificate is self-signed for 127.0.0.1/localhost and made per
session with ``cryptography`` (a dependency of PyGithub's JWT extra), so git can
only talk to the server when the user's configuration trusts it
(``http.sslCAInfo``) — one more setting that must come from the user's global
configuration.  ``log`` records (method, path, query, status, user) per request.
"""

from __future__ import annotations

import base64
import datetime
import ipaddress
import os
import ssl
import subprocess
import threading
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

SERVER_GIT_ENV = {
    "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "LC_ALL": "C",
}


def make_cert(directory: Path) -> tuple[Path, Path]:
    """A self-signed certificate (and key) for 127.0.0.1 and localhost."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "ixtool test git server")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([
                x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = directory / "server.pem", directory / "server.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


class GitHTTPS:
    """Serves every bare repository under ``root`` at ``https://127.0.0.1:PORT/NAME``."""

    def __init__(self, root: Path, cert: Path, key: Path, *, user: str, password: str) -> None:
        self.root = root
        self.user, self.password = user, password
        self.log: list[tuple[str, str, str, int, str]] = []
        self.anonymous_fetch = False  # True: like a public repository (push needs auth)
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.server.daemon_threads = True
        self.server.block_on_close = False
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert, key)
        self.server.socket = ctx.wrap_socket(self.server.socket, server_side=True)
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.02,),
                                       daemon=True)

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.server.server_address[1]}"

    def start(self) -> GitHTTPS:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def pushes(self) -> list[tuple[str, str, str, int, str]]:
        """Authenticated receive-pack POSTs (the requests that change refs)."""
        return [e for e in self.log if e[0] == "POST" and e[1].endswith("/git-receive-pack")]

    def authorized(self, header: str | None) -> str | None:
        want = base64.b64encode(f"{self.user}:{self.password}".encode()).decode()
        return self.user if header == f"Basic {want}" else None


def _cgi_env(req: BaseHTTPRequestHandler, root: Path, user: str, length: int
             ) -> Mapping[str, str]:
    path, _, query = req.path.partition("?")
    env = dict(SERVER_GIT_ENV, GIT_PROJECT_ROOT=str(root), GIT_HTTP_EXPORT_ALL="1",
               REQUEST_METHOD=req.command, PATH_INFO=path, QUERY_STRING=query,
               REMOTE_USER=user or "anonymous", REMOTE_ADDR="127.0.0.1", CONTENT_LENGTH=str(length),
               GATEWAY_INTERFACE="CGI/1.1", SERVER_PROTOCOL="HTTP/1.1")
    for header, var in (("Content-Type", "CONTENT_TYPE"),
                        ("Content-Encoding", "HTTP_CONTENT_ENCODING"),
                        ("Git-Protocol", "HTTP_GIT_PROTOCOL")):
        if req.headers.get(header):
            env[var] = req.headers[header]
    return env


def _handler(srv: GitHTTPS) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            return

        def _body(self) -> bytes:
            if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                out = bytearray()
                while True:
                    size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                    if size == 0:
                        self.rfile.readline()
                        return bytes(out)
                    out += self.rfile.read(size)
                    self.rfile.readline()
            n = int(self.headers.get("Content-Length") or 0)
            return self.rfile.read(n) if n else b""

        def _reply(self, status: int, headers: list[tuple[str, str]], body: bytes,
                   user: str) -> None:
            self.send_response(status)
            for k, v in headers:
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            path, _, query = self.path.partition("?")
            with srv.lock:
                srv.log.append((self.command, path, query, status, user))

        def _serve(self) -> None:
            body = self._body()
            user = srv.authorized(self.headers.get("Authorization"))
            pushing = "git-receive-pack" in self.path
            if user is None and srv.anonymous_fetch and not pushing:
                user = ""
            if user is None:
                self._reply(401, [("WWW-Authenticate", 'Basic realm="git"'),
                                  ("Content-Type", "text/plain")], b"authentication required\n",
                            "")
                return
            proc = subprocess.run(["git", "http-backend"], input=body, capture_output=True,
                                  env=dict(_cgi_env(self, srv.root, user, len(body))),
                                  timeout=120, check=False)
            raw = proc.stdout
            sep = raw.find(b"\r\n\r\n")
            cut = 4
            if sep < 0:
                sep, cut = raw.find(b"\n\n"), 2
            head, payload = (raw[:sep], raw[sep + cut:]) if sep >= 0 else (b"", raw)
            status, headers = 200, []
            for line in head.decode("latin-1").splitlines():
                k, _, v = line.partition(":")
                if k.lower() == "status":
                    status = int(v.strip().split()[0])
                elif k:
                    headers.append((k.strip(), v.strip()))
            if proc.returncode != 0 and not head:
                status, payload = 500, proc.stderr
            self._reply(status, headers, payload, user)

        def do_GET(self) -> None:
            self._serve()

        def do_POST(self) -> None:
            self._serve()

    return Handler

"""A real SMTP submission server for the email channel tests (aiosmtpd, Debian's python3-aiosmtpd).

Run with the system Python: /usr/bin/python3 test/support/smtpServer.py --mode starttls|implicit --cert C --key K --out F
with the one accepted login in the environment (SMTP_TEST_USER, SMTP_TEST_PASSWORD). It listens on 127.0.0.1, port 0,
and prints the chosen port as its first stdout line ("PORT 12345").

- starttls: plain SMTP that requires STARTTLS before anything but EHLO/HELO/NOOP/QUIT, and AUTH (TLS only) before MAIL.
- implicit: TLS from the first byte (the controller's ssl_context), AUTH required before MAIL.

AUTH PLAIN and LOGIN accept exactly the given user and password. Each accepted message is appended to the output file
as one JSON line: the envelope, the raw message, whether the session was TLS (and its version), who logged in, and the
message parsed by Python's `email` package (subject, from, to, headers, the text and HTML parts, every part's type).
Each refusal (any 5xx reply: a command before STARTTLS, AUTH with a wrong password, MAIL before AUTH) is a line
{"event": "refused", ...}.
"""

import argparse
import asyncio
import email
import email.policy
import json
import os
import signal
import ssl
import sys

from aiosmtpd.controller import UnthreadedController
from aiosmtpd.smtp import SMTP, AuthResult, LoginPassword


def tls_facts(server):
    """(tls, version) of the server's current transport."""
    transport = server.transport
    ssl_object = transport.get_extra_info("ssl_object") if transport is not None else None
    if ssl_object is None:
        return False, None
    return True, ssl_object.version()


def login_of(session):
    data = getattr(session, "auth_data", None)
    if isinstance(data, LoginPassword):
        return data.login.decode("utf-8", "replace")
    if isinstance(data, (bytes, bytearray)):
        return data.decode("utf-8", "replace")
    return data if isinstance(data, str) else None


def parse_message(raw):
    """The facts of a message as a reader's mail client would see them."""
    try:
        message = email.message_from_bytes(raw, policy=email.policy.default)
        headers = {}
        for name, value in message.items():
            headers.setdefault(name.lower(), str(value))

        def part(kind):
            body = message.get_body(preferencelist=(kind,))
            return None if body is None else body.get_content()

        return {
            "subject": str(message["subject"]) if message["subject"] is not None else None,
            "from": str(message["from"]) if message["from"] is not None else None,
            "to": str(message["to"]) if message["to"] is not None else None,
            "headers": headers,
            "textPart": part("plain"),
            "htmlPart": part("html"),
            "contentTypes": [p.get_content_type() for p in message.walk()],
            "defects": [type(d).__name__ for p in message.walk() for d in p.defects],
        }
    except Exception as error:  # a malformed message is recorded, not lost
        return {"parseError": repr(error)}


class Recorder:
    def __init__(self, path):
        self.path = path

    def write(self, record):
        with open(self.path, "a", encoding="utf-8") as out:
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
            out.flush()


class Handler:
    def __init__(self, recorder):
        self.recorder = recorder

    async def handle_DATA(self, server, session, envelope):
        raw = envelope.original_content or envelope.content
        if isinstance(raw, str):
            raw = raw.encode("utf-8")
        tls, version = tls_facts(server)
        record = {
            "event": "accepted",
            "mailFrom": envelope.mail_from,
            "rcptTos": list(envelope.rcpt_tos),
            "data": raw.decode("utf-8", "replace"),
            "tls": tls,
            "tlsVersion": version,
            "authenticated": bool(session.authenticated),
            "login": login_of(session),
        }
        record.update(parse_message(raw))
        self.recorder.write(record)
        return "250 2.0.0 Message accepted"


class Authenticator:
    def __init__(self, user, password):
        self.user = user.encode("utf-8")
        self.password = password.encode("utf-8")

    def __call__(self, server, session, envelope, mechanism, auth_data):
        if isinstance(auth_data, LoginPassword):
            server.attempted_login = auth_data.login.decode("utf-8", "replace")
            if auth_data.login == self.user and auth_data.password == self.password:
                return AuthResult(success=True, auth_data=auth_data)
        # handled=False: aiosmtpd then answers 535 itself.
        return AuthResult(success=False, handled=False)


class RecordingSMTP(SMTP):
    """SMTP that records every 5xx reply it gives as a refusal."""

    recorder = None
    attempted_login = None

    async def push(self, status):
        text = status.decode("utf-8", "replace") if isinstance(status, bytes) else status
        if text.startswith("5") and self.recorder is not None:
            tls, version = tls_facts(self)
            session = getattr(self, "session", None)
            self.recorder.write(
                {
                    "event": "refused",
                    "reply": text,
                    "tls": tls,
                    "tlsVersion": version,
                    "authenticated": bool(session is not None and session.authenticated),
                    "login": login_of(session) if session is not None else None,
                    "attemptedLogin": self.attempted_login,
                }
            )
        await super().push(status)


class Controller(UnthreadedController):
    def __init__(self, recorder, **kwargs):
        super().__init__(**kwargs)
        self.recorder = recorder

    def factory(self):
        server = RecordingSMTP(self.handler, **self.SMTP_kwargs)
        server.recorder = self.recorder
        return server


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--mode", choices=["starttls", "implicit"], required=True)
    parser.add_argument("--cert", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    user = os.environ.get("SMTP_TEST_USER", "")
    password = os.environ.get("SMTP_TEST_PASSWORD", "")

    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(args.cert, args.key)

    recorder = Recorder(args.out)
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    common = dict(
        handler=Handler(recorder),
        hostname="127.0.0.1",
        port=0,
        loop=loop,
        server_hostname="localhost",
        authenticator=Authenticator(user, password),
        auth_required=True,
        # Nothing is left to the defaults of the day: 8-bit and UTF-8 addresses are fine, 10 MiB is plenty.
        data_size_limit=10 * 1024 * 1024,
        enable_SMTPUTF8=True,
    )
    if args.mode == "starttls":
        controller = Controller(
            recorder, tls_context=context, require_starttls=True, auth_require_tls=True, **common
        )
    else:
        # aiosmtpd's auth_require_tls only knows STARTTLS: with it, an implicit-TLS session would not be offered AUTH.
        # Every byte of this session is TLS already.
        controller = Controller(recorder, ssl_context=context, auth_require_tls=False, **common)
    controller.begin()
    port = controller.server.sockets[0].getsockname()[1]
    print(f"PORT {port}", flush=True)
    loop.add_signal_handler(signal.SIGTERM, loop.stop)
    loop.add_signal_handler(signal.SIGINT, loop.stop)
    try:
        loop.run_forever()
    finally:
        controller.end()
        loop.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""An independent verifier of an aegis chain, written from SPEC.md alone.

usage: spec_verify.py DIR PUBLIC_KEY_PEM [--all-signatures]
       spec_verify.py --batch

Prints one line: "ok entries=N signed=M torn=T" or "break KIND seq=S: why".
With --batch, each line of stdin is a JSON array of the arguments of one
run (["DIR", "PUBLIC_KEY_PEM"] or with "--all-signatures"), and each
verdict is printed on a line of its own, as a JSON string, in order: one
process for many chains, as Python's start is most of a run's time.
The Go tests run it beside chain.Verify and compare the verdicts, so that
SPEC.md stays enough to verify a chain without aegis's code.
"""
import hashlib
import json
import os
import re
import sys

from cryptography.hazmat.primitives.serialization import load_pem_public_key
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from cryptography.hazmat.primitives import serialization

ENTRY_DOMAIN = b"aegis.chain.v1\x00"
CKPT_DOMAIN = b"aegis.chain.checkpoint.v1\x00"
MAX_SEQ = 2**53 - 1
SEG = re.compile(r"^chain-(\d{20})\.jsonl$")
HEX64 = re.compile(r"^[0-9a-f]{64}$")


class Break(Exception):
    def __init__(self, kind, seq, why):
        super().__init__(why)
        self.kind, self.seq, self.why = kind, seq, why


def jcs(v):
    # RFC 8785 for the values of this format: Python's serialiser with sorted
    # keys, no whitespace and no ASCII escaping matches JCS for strings,
    # integers and booleans (keys here are ASCII, so code point order is
    # UTF-16 order).
    return json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def entry(line, next_seq):
    try:
        obj = json.loads(line.decode("utf-8"))
    except Exception as e:
        raise Break("malformed", next_seq, "not JSON: %s" % e)
    if not isinstance(obj, dict) or not isinstance(obj.get("hash"), str):
        raise Break("malformed", next_seq, "no hash")
    h = obj.pop("hash")
    try:
        canon = jcs(obj)
    except Exception as e:
        raise Break("malformed", next_seq, "cannot encode: %s" % e)
    stored = canon[:-1] + b',"hash":"' + h.encode() + b'"}'
    if stored != line:
        raise Break("malformed", next_seq, "not in stored form")
    if obj.get("v") != 1:
        raise Break("malformed", next_seq, "version %r" % obj.get("v"))
    for k in ("seq",):
        if type(obj.get(k)) is not int:
            raise Break("malformed", next_seq, "bad " + k)
    if not HEX64.match(h) or not HEX64.match(obj.get("prev", "")):
        raise Break("malformed", next_seq, "bad hash or prev")
    return obj, h, hashlib.sha256(ENTRY_DOMAIN + canon).hexdigest()


def checkpoint(line, next_seq):
    try:
        obj = json.loads(line.decode("utf-8"))
    except Exception as e:
        raise Break("malformed", next_seq, "checkpoint not JSON: %s" % e)
    if not isinstance(obj, dict) or sorted(obj) != ["checkpoint", "hash", "key", "sig"] or jcs(obj) != line:
        raise Break("malformed", next_seq, "checkpoint not in stored form")
    if type(obj["checkpoint"]) is not int or not 1 <= obj["checkpoint"] <= MAX_SEQ or not HEX64.match(obj["hash"]) or not re.match(r"^[0-9a-f]{16}$", obj["key"]) or not re.match(r"^[0-9a-f]{128}$", obj["sig"]):
        raise Break("malformed", next_seq, "checkpoint fields")
    return obj


def ack(line, next_seq):
    try:
        obj = json.loads(line.decode("utf-8"))
    except Exception as e:
        raise Break("malformed", next_seq, "ack not JSON: %s" % e)
    if not isinstance(obj, dict) or sorted(obj) != ["ack", "hash", "mac"] or jcs(obj) != line:
        raise Break("malformed", next_seq, "ack not in stored form")
    if type(obj["ack"]) is not int or not 1 <= obj["ack"] <= MAX_SEQ or not HEX64.match(obj["hash"]) or not HEX64.match(obj["mac"]):
        raise Break("malformed", next_seq, "ack fields")
    return obj


def signed_ok(pub, ck):
    msg = CKPT_DOMAIN + ck["checkpoint"].to_bytes(8, "big") + bytes.fromhex(ck["hash"])
    try:
        pub.verify(bytes.fromhex(ck["sig"]), msg)
        return True
    except Exception:
        return False


def verify(d, pub, all_sigs):
    raw = pub.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    kid = hashlib.sha256(raw).hexdigest()[:16]
    segs = []
    for name in os.listdir(d):
        if name.startswith("chain-") and name.endswith(".jsonl"):
            m = SEG.match(name)
            if not m:
                raise SystemExit("bad segment name " + name)
            segs.append((int(m.group(1)), name))
    segs.sort()
    if not segs:
        raise SystemExit("no segments")
    nxt, prev, last_ck, last_ack, torn = 1, "0" * 64, None, None, 0
    for i, (first, name) in enumerate(segs):
        last = i == len(segs) - 1
        if first != nxt:
            raise Break("sequence", nxt, "segment %s" % name)
        data = open(os.path.join(d, name), "rb").read()
        lines = data.split(b"\n")
        tail = lines.pop()  # after the last newline
        before = None  # the kind of the line before in this segment
        for line in lines:
            if line.startswith(b'{"checkpoint":'):
                ck = checkpoint(line, nxt)
                if before not in ("entry", "ack") or ck["checkpoint"] != nxt - 1 or ck["hash"] != prev:
                    raise Break("checkpoint", ck["checkpoint"], "misplaced")
                if ck["key"] != kid or (all_sigs and not signed_ok(pub, ck)):
                    raise Break("signature", ck["checkpoint"], "bad signature")
                last_ck, last_ack, before = ck, None, "checkpoint"
            elif line.startswith(b'{"ack":'):
                a = ack(line, nxt)
                if before != "entry" or a["ack"] != nxt - 1 or a["hash"] != prev:
                    raise Break("checkpoint", a["ack"], "misplaced ack")
                last_ack, before = a, "ack"
            else:
                obj, h, computed = entry(line, nxt)
                if obj["seq"] != nxt:
                    raise Break("sequence", nxt, "found seq %d" % obj["seq"])
                if obj["prev"] != prev:
                    raise Break("link", obj["seq"], "prev")
                if computed != h:
                    raise Break("hash", obj["seq"], "hash")
                prev, nxt, before = h, nxt + 1, "entry"
        if tail:
            if not last:
                raise Break("malformed", nxt, "segment ends mid-line")
            torn = len(tail)
        if not last and before in ("entry", "ack"):
            raise Break("checkpoint", nxt - 1, "segment ends unsigned")
    signed = 0
    if last_ck is not None:
        if not signed_ok(pub, last_ck):
            raise Break("signature", last_ck["checkpoint"], "bad signature")
        signed = last_ck["checkpoint"]
    return nxt - 1, signed, torn, last_ack["ack"] if last_ack else 0


def verdict(args):
    d, keyfile = args[0], args[1]
    pub = load_pem_public_key(open(keyfile, "rb").read())
    if not isinstance(pub, Ed25519PublicKey):
        raise SystemExit("not an Ed25519 key")
    try:
        n, signed, torn, acked = verify(d, pub, "--all-signatures" in args[2:])
        return "ok entries=%d signed=%d torn=%d acked=%d" % (n, signed, torn, acked)
    except Break as b:
        return "break %s seq=%d: %s" % (b.kind, b.seq, b.why)


def main():
    if sys.argv[1:] == ["--batch"]:
        for line in sys.stdin:
            print(json.dumps(verdict(json.loads(line))))
    else:
        print(verdict(sys.argv[1:]))


if __name__ == "__main__":
    main()

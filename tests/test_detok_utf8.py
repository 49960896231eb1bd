#!/usr/bin/env python3
"""test_detok_utf8.py - the decoder's text against Python's bytes.decode("utf-8", errors="replace")
(the outside oracle; Hugging Face's decode replaces ill-formed UTF-8 the same way, by maximal
subparts). Qwen3's byte-level vocabulary has a token for every single byte, so random id sequences
of byte tokens (lead bytes, continuation bytes, bytes that lead nothing, surrogates' and overlong
forms' second bytes) and whole-word tokens make every kind of cut and broken character; each
sequence goes through `zipage tokenize --decode`, whose decoding is the streaming decoder's
(zp_tokenizer_decode_stream, then zp_tokenizer_decode_flush), and must equal the oracle byte for byte.
Usage: test_detok_utf8.py ZIPAGE MODEL_DIR TMPDIR"""
import json, random, subprocess, sys

z, model, tmp = sys.argv[1:4]

def bytes_to_unicode():  # GPT-2's byte-level alphabet (the published table, rebuilt)
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b); cs.append(256 + n); n += 1
    return {chr(c): b for b, c in zip(bs, cs)}

inv = bytes_to_unicode()
vocab = json.load(open(f"{model}/vocab.json", encoding="utf-8"))
raw = {i: bytes(inv[ch] for ch in tok) for tok, i in vocab.items()}
byte_tok = {r[0]: i for i, r in raw.items() if len(r) == 1}
assert len(byte_tok) == 256, f"{len(byte_tok)} single-byte tokens, expected 256"
words = [i for i, r in raw.items() if len(r) > 1]
interesting = [0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xE1, 0xEC, 0xED, 0xEE,
               0xEF, 0xF0, 0xF1, 0xF3, 0xF4, 0xF5, 0xF8, 0xFF]
rng = random.Random(1234)
cases = []
for k in range(48):
    ids = []
    for _ in range(rng.randint(1, 240)):
        u = rng.random()
        ids.append(byte_tok[rng.choice(interesting)] if u < 0.6 else byte_tok[rng.randrange(256)] if u < 0.8 else rng.choice(words))
    cases.append(ids)
cases += [[byte_tok[b] for b in s] for s in (b"\xf3\xa0 x", b"\xe2\x82\xac", b"\xe2\x82", b"\xed\xa0\x80", b"\xe0\x80\x80", b"\xf4\x90\x80\x80",
                                             b"\xc3", b"\xf0\x9f\x98\x80\xf0\x9f", b"\x80\xbf\xc2\xa9")]
fails = 0
for ids in cases:
    path = f"{tmp}/detok_ids"
    open(path, "w").write(",".join(map(str, ids)))
    got = subprocess.run([z, "tokenize", "--model", model, "--decode", path], check=True, capture_output=True).stdout
    want = b"".join(raw[i] for i in ids).decode("utf-8", errors="replace").encode()
    if got != want:
        fails += 1
        if fails <= 5:
            print(f"FAIL: ids {ids}: bytes {b''.join(raw[i] for i in ids)!r}: got {got!r}, want {want!r}")
print(f"test_detok_utf8: {len(cases)} sequences, {fails} differ from Python's decode")
sys.exit(1 if fails else 0)

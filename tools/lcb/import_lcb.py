#!/usr/bin/env python3
"""import_lcb.py - LiveCodeBench's official release files into this harness's dataset format.

The release files are the JSONL files of the Hugging Face dataset
livecodebench/code_generation_lite (test.jsonl ... test6.jsonl), which a user downloads; this
project ships none of their private tests. Each row's fields are read as LiveCodeBench's own
loader reads them (LiveCodeBench/LiveCodeBench lcb_runner/benchmarks/code_generation.py at
28fef95: public_test_cases a JSON list; private_test_cases a JSON list or, failing that,
base64 of zlib of a pickled JSON string; metadata a JSON object whose func_name makes a problem
functional). The pickle is read opcode by opcode and must hold one string: nothing in a
downloaded file is ever unpickled.

    python3 tools/lcb/import_lcb.py test5.jsonl [test6.jsonl ...] --out livecodebench_private.jsonl \
        [--select datasets/data/livecodebench.jsonl]

Without --select every problem of the release files is written. With --select, only the
problems of that file, in its order, keeping its extra fields (prompts, references); the public
tests are replaced by the official ones (the count that differed is printed) and the private
tests filled in. The output name must contain "livecodebench" for the harness to grade it as
code. Errors name the file, the line and the field, and exit 1.
"""
import argparse
import base64
import json
import os
import sys
import zlib


class LcbError(Exception):
    pass


def pickled_string(data):
    """The one str a pickle holds (protocols 2-5: PROTO, FRAME, *BINUNICODE*, MEMOIZE/PUT, STOP)."""
    i, value = 0, None
    while i < len(data):
        op = data[i]
        i += 1
        if op == 0x80:            # PROTO
            i += 1
        elif op == 0x95:          # FRAME
            i += 8
        elif op in (0x8C, 0x58, 0x8D):  # SHORT_BINUNICODE, BINUNICODE, BINUNICODE8
            size = {0x8C: 1, 0x58: 4, 0x8D: 8}[op]
            if i + size > len(data):
                raise LcbError("pickle cut short")
            n = int.from_bytes(data[i:i + size], "little")
            i += size
            if value is not None or i + n > len(data):
                raise LcbError("pickle holds more than one string, or is cut short")
            value = data[i:i + n].decode("utf-8")
            i += n
        elif op == 0x94:          # MEMOIZE
            pass
        elif op == 0x71:          # BINPUT
            i += 1
        elif op == 0x72:          # LONG_BINPUT
            i += 4
        elif op == 0x2E:          # STOP
            if value is None or i != len(data):
                raise LcbError("pickle without a string, or with bytes after STOP")
            return value
        else:
            raise LcbError("pickle opcode 0x%02x is not part of a pickled string" % op)
    raise LcbError("pickle without STOP")


def private_tests(text):
    try:
        return json.loads(text)
    except ValueError:
        pass
    raw = zlib.decompress(base64.b64decode(text.encode("ascii"), validate=True))
    return json.loads(pickled_string(raw))


def tests_of(value, what):
    if not isinstance(value, list):
        raise LcbError("%s is not a list" % what)
    out = []
    for k, t in enumerate(value, 1):
        if not isinstance(t, dict) or not isinstance(t.get("input"), str) or not isinstance(t.get("output"), str):
            raise LcbError("%s entry %d needs string input and output" % (what, k))
        if t.get("testtype") not in ("stdin", "functional"):
            raise LcbError("%s entry %d: testtype %r is neither stdin nor functional" % (what, k, t.get("testtype")))
        out.append({"input": t["input"], "output": t["output"]})
    return out


def convert(row, where):
    for key in ("question_id", "question_title", "question_content", "platform", "contest_id", "contest_date",
                "starter_code", "difficulty", "public_test_cases", "private_test_cases", "metadata"):
        if not isinstance(row.get(key), str):
            raise LcbError("%s: field %s is missing or not a string" % (where, key))
    try:
        public = tests_of(json.loads(row["public_test_cases"]), "public_test_cases")
        private = tests_of(private_tests(row["private_test_cases"]), "private_test_cases")
        meta = json.loads(row["metadata"])
    except (ValueError, zlib.error, UnicodeDecodeError, LcbError) as e:
        raise LcbError("%s: %s" % (where, e))
    if not isinstance(meta, dict):
        raise LcbError("%s: metadata is not a JSON object" % where)
    fn = meta.get("func_name") or None  # LiveCodeBench: a function name makes the problem call-based
    if fn is not None and not isinstance(fn, str):
        raise LcbError("%s: metadata.func_name is not a string" % where)
    return {
        "id": "lcb-" + row["question_id"], "question_id": row["question_id"], "platform": row["platform"],
        "contest_id": row["contest_id"], "release_date": row["contest_date"], "difficulty": row["difficulty"],
        "question_title": row["question_title"], "question": row["question_content"], "starter_code": row["starter_code"],
        "test_type": "functional" if fn else "stdin", "fn_name": fn, "public_tests": public,
        "public_tests_source": "official", "private_tests": private, "private_tests_available": True,
        "source": "LiveCodeBench release file %s" % os.path.basename(where.rsplit(":", 1)[0]),
    }


def read_official(paths):
    rows = {}
    for path in paths:
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                where = "%s:%d" % (path, n)
                try:
                    row = json.loads(line)
                except ValueError as e:
                    raise LcbError("%s: not JSON (%s)" % (where, e))
                if not isinstance(row, dict):
                    raise LcbError("%s: not a JSON object" % where)
                item = convert(row, where)
                if item["question_id"] in rows:
                    raise LcbError("%s: question_id %s appears twice" % (where, item["question_id"]))
                rows[item["question_id"]] = item
    return rows


def select(rows, base_path):
    out, differ = [], 0
    with open(base_path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            base = json.loads(line)
            qid = base.get("question_id")
            if qid not in rows:
                raise LcbError("%s:%d: question_id %r is in no release file given" % (base_path, n, qid))
            off = rows[qid]
            if (base.get("fn_name") or None) != off["fn_name"]:
                raise LcbError("%s:%d: fn_name %r, the release file says %r" % (base_path, n, base.get("fn_name"), off["fn_name"]))
            differ += base.get("public_tests") != off["public_tests"]
            item = dict(base)
            for key in ("public_tests", "public_tests_source", "private_tests", "private_tests_available", "test_type"):
                item[key] = off[key]
            out.append(item)
    return out, differ


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("release", nargs="+", help="official release JSONL files")
    ap.add_argument("--out", required=True, help="output JSONL (its name must contain 'livecodebench')")
    ap.add_argument("--select", help="keep only this dataset's problems, in its order, with its extra fields")
    a = ap.parse_args()
    if "livecodebench" not in os.path.basename(a.out):
        sys.exit("import_lcb: --out %s: the name must contain 'livecodebench'" % a.out)
    try:
        rows = read_official(a.release)
        if a.select:
            items, differ = select(rows, a.select)
            note = "; %d of them had public tests other than the official ones (replaced)" % differ
        else:
            items, note = list(rows.values()), ""
    except (OSError, LcbError) as e:
        sys.exit("import_lcb: %s" % e)
    tmp = a.out + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        for it in items:
            f.write(json.dumps(it, ensure_ascii=False) + "\n")
    os.replace(tmp, a.out)
    n_priv = sum(len(it["private_tests"]) for it in items)
    print("import_lcb: %d problems, %d private tests -> %s%s" % (len(items), n_priv, a.out, note))


if __name__ == "__main__":
    main()

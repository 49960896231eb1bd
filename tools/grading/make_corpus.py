#!/usr/bin/env python3
"""Deterministic grader-comparison corpus: (output, reference) pairs built from the `answer`
fields of datasets/data/{aime24,aime25,amc23,math500,gsm8k}.jsonl (the grader-agreement corpus of
tools/grading/agreement.py).

Each row: {"id", "category", "output", "reference", "expected", "src"}
  expected: intended mathematical verdict (true / false / null when debatable, e.g. a rounded
            decimal for an exact surd, or a base-8 answer written without its base).
  src:      dataset id the reference (or the seed of a synthetic reference) came from.

Usage: make_corpus.py OUT.jsonl
"""
import json
import math
import re
import random
import sys
from fractions import Fraction

SEED = 20250611
import os
DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "datasets", "data")
FILES = ["aime24", "aime25", "amc23", "math500", "gsm8k"]

rng = random.Random(SEED)
rows = []


def add(cat, output, reference, expected, src):
    rows.append({"id": f"{len(rows):06d}", "category": cat, "output": output,
                 "reference": reference, "expected": expected, "src": src})


# ------------------------------------------------------------------ data
answers = []  # (src_id, dataset, answer)
for f in FILES:
    with open(f"{DATA}/{f}.jsonl", encoding="utf-8") as fh:
        for line in fh:
            o = json.loads(line)
            answers.append((o["id"], f, o["answer"]))

INT_RE = re.compile(r"-?\d+")
THOUSANDS_RE = re.compile(r"-?\d{1,3}(,\d{3})+")


def int_value(a):
    """Integer value of a plain integer answer ("204", "-10", "1,450,000"); None otherwise."""
    if INT_RE.fullmatch(a):
        return int(a)
    if THOUSANDS_RE.fullmatch(a):
        return int(a.replace(",", ""))
    return None


ints = [(i, d, a, int_value(a)) for (i, d, a) in answers if int_value(a) is not None]
nonint = [(i, d, a) for (i, d, a) in answers if int_value(a) is None]

# ------------------------------------------------------------------ text pieces
FILLER = [
    "We have ${a} + {b} = {c}$.",
    "Then ${a} \\times {b} = {ab}$, so we get {ab}.",
    "Note that {a} divides {ab}.",
    "Subtracting, ${c} - {b} = {a}$.",
    "So $x = {a}$ and $y = {b}$ in this case.",
    "There are {c} cases to check.",
    "This gives $\\frac{{{a}}}{{{b}}}$ for the ratio.",
    "Squaring, we get ${a}^2 = {a2}$.",
    "Counting again gives {c} possibilities.",
    "Hence the sum is {c}.",
]


def sentence():
    a, b = rng.randint(2, 60), rng.randint(2, 60)
    return rng.choice(FILLER).format(a=a, b=b, c=a + b, ab=a * b, a2=a * a)


def sentences(k):
    return " ".join(sentence() for _ in range(k))


def think(inner_extra=""):
    body = "Okay, let me work through this. " + sentences(rng.randint(2, 4))
    if inner_extra:
        body += " " + inner_extra + " " + sentences(1)
    body += " Wait, let me double-check. " + sentences(rng.randint(1, 3))
    return "<think>\n" + body + "\n</think>\n\n"


def preamble():
    return "Let's solve the problem step by step.\n\n" + sentences(rng.randint(1, 3)) + "\n\n"


BOXED_STYLES = ["inline", "display", "final_hdr", "plain"]


def boxed_tail(x, style=None):
    style = style or rng.choice(BOXED_STYLES)
    if style == "inline":
        return f"Therefore, the answer is $\\boxed{{{x}}}$."
    if style == "display":
        return f"Thus,\n\\[\n\\boxed{{{x}}}\n\\]"
    if style == "final_hdr":
        return f"**Final Answer**\n\\[\n\\boxed{{{x}}}\n\\]"
    return f"The answer is \\boxed{{{x}}}."


def solution_boxed(x, with_think=None, style=None):
    if with_think is None:
        with_think = rng.random() < 0.4
    return (think() if with_think else "") + preamble() + boxed_tail(x, style)


# ------------------------------------------------------------------ wrong answers
NUM_RE = re.compile(r"\d+")


def bump_number(a):
    """Change one integer inside a LaTeX answer by +1 (or -1)."""
    ms = list(NUM_RE.finditer(a))
    if "\\mbox" in a or "\\text" in a:  # keep unit exponents (cm^2) intact
        ms = [m for m in ms if not a[:m.start()].endswith("^")]
    if not ms:
        return None
    # do not touch base subscripts or exponent-of-circ, prefer the first number
    m = ms[0] if rng.random() < 0.6 else rng.choice(ms)
    v = int(m.group())
    nv = v + 1 if (v == 0 or rng.random() < 0.6) else v - 1
    return a[:m.start()] + str(nv) + a[m.end():]


def flip_sign(a):
    s = a.strip()
    if s.startswith("-"):
        return s[1:].lstrip()
    if re.fullmatch(r"[\d\\{}a-zA-Z^_.]+", s):
        return "-" + s
    return None


def swap_tuple(a):
    m = re.fullmatch(r"(\\left)?\(\s*(.*?)\s*(\\right)?\)", a.strip())
    if not m:
        return None
    inner = m.group(2)
    parts = split_top(inner)
    if len(parts) < 2 or parts[0].strip() == parts[1].strip():
        return None
    parts[0], parts[1] = parts[1], parts[0]
    return "(" + ", ".join(p.strip() for p in parts) + ")"


def split_top(s):
    parts, depth, cur = [], 0, ""
    for ch in s:
        if ch in "{([":
            depth += 1
        elif ch in "})]":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return parts


LE, GE, GT = "\\le", "\\ge", ">"
TEXT_ANS = ["Evelyn", "Navin", "east", "even", "ellipse", "odd", "west", "parabola", "Kelly"]

# ------------------------------------------------------------------ A. generic, every answer
for (src, ds, a) in answers:
    w = bump_number(a)
    add("boxed_exact", solution_boxed(a), a, True, src)
    add("final_answer_hope", preamble() + f"Therefore, the final answer is ${a}$. I hope it is correct.", a, True, src)
    add("final_answer_dollar", preamble() + f"Therefore, the final answer is ${a}$.", a, True, src)
    add("answer_is_plain", preamble() + f"The answer is {a}", a, True, src)
    if rng.random() < 0.5:
        add("bold_answer", preamble() + f"**Answer:** {a}", a, True, src)
    else:
        add("bold_answer", preamble() + f"**Answer:** ${a}$", a, True, src)
    if w is not None:
        add("think_wrong_then_boxed", think(f"Maybe the answer is $\\boxed{{{w}}}$? No, that is not right.")
            + preamble() + boxed_tail(a), a, True, src)
        add("wrong_close_boxed", solution_boxed(w), a, False, src)
        add("wrong_close_final", preamble() + f"Therefore, the final answer is ${w}$. I hope it is correct.", a, False, src)
        add("multi_boxed_last_right", preamble() + f"First guess: $\\boxed{{{w}}}$. Correction: " + boxed_tail(a, "inline"), a, True, src)
        add("multi_boxed_last_wrong", preamble() + f"We get $\\boxed{{{a}}}$. Hmm, rechecking the arithmetic: " + boxed_tail(w, "inline"), a, False, src)
    # answer only inside the thinking section; answer part restates it without a box
    add("think_only_boxed", "<think>\n" + sentences(2) + f" So the answer is $\\boxed{{{a}}}$.\n</think>\n\n"
        + preamble() + f"So the result is {a}.", a, True, src)
    # truncated output (no closing tag, no final answer) whose last number/latex is the reference
    add("truncated_last_is_ref", "<think>\n" + sentences(3) + f" So far we have ${a}$. Let me verify this by", a, None, src)

# thinking section boxes a wrong guess; the answer part states the right answer without a box
for (src, ds, a) in rng.sample(answers, 1000):
    w = bump_number(a)
    if w is None:
        continue
    t = "<think>\n" + sentences(2) + f" Tentatively $\\boxed{{{w}}}$. Hmm, recheck. " + sentences(1) + "\n</think>\n\n" + preamble()
    if rng.random() < 0.5:
        add("think_boxed_wrong_answer_unboxed", t + f"The answer is {a}.", a, True, src)
    else:
        add("think_boxed_wrong_answer_unboxed", t + f"Therefore, the final answer is ${a}$.", a, True, src)
# truncated output whose last number is not the reference
for (src, ds, a) in rng.sample(answers, 600):
    add("truncated_last_not_ref", "<think>\n" + sentences(3) + " So far we have $x = 1234567$. Let me verify this by", a, False, src)

# ------------------------------------------------------------------ B. integer answers
int_sample = ints  # all integer answers (~1700)
for (src, ds, a, n) in int_sample:
    r = rng.random()
    # GSM8K-style and plain endings
    add("int_plain_endings", preamble() + rng.choice([f"The answer is {n}.", f"#### {n}", f"So the total is {n}.",
                                                       f"Answer: {n}", f"The answer is: ${n}$"]), a, True, src)
    # decorations of the same integer inside a box
    deco = rng.choice([
        (f"{n}.0", True), (f"{n}.00", True), (f"\\${n}", True), (f"{n} \\text{{ dollars}}", True),
        (f"{n}\\text{{ cm}}", True), (f"{n} \\mbox{{ inches}}^2", True), (f"{n}\\,\\text{{km}}", True),
        (f"{n} \\text{{ apples}}", True), (f"x = {n}", True), (f"n={n}", True), (f"{n}\\%", True),
        (f"\\text{{{n}}}", True), (f"\\textbf{{{n}}}", True), (f"{{{n}}}", True), (f" {n} ", True),
    ])
    add("int_decorated", solution_boxed(deco[0]), a, deco[1], src)
    # equivalent arithmetic forms
    forms = [f"\\frac{{{2 * n}}}{{2}}", f"{n - 1} + 1", f"\\dfrac{{{3 * n}}}{{3}}", f"{2 * n}/2"]
    if abs(n) > 3:
        d = next((k for k in range(2, 40) if n % k == 0 and k != abs(n)), None)
        if d:
            forms.append(f"{d} \\cdot {n // d}")
            forms.append(f"{d}\\times {n // d}")
    r0 = math.isqrt(n) if n >= 0 else -1
    if n > 1 and r0 * r0 == n:
        forms.append(f"{r0}^2")
    add("int_expr_equiv", solution_boxed(rng.choice(forms)), a, True, src)
    # thousands separators / leading zeros
    if abs(n) >= 1000:
        s = f"{abs(n):,}"
        sign = "-" if n < 0 else ""
        f_ = rng.choice([sign + s, sign + s.replace(",", "{,}"), sign + s.replace(",", "\\,"),
                         sign + s.replace(",", "\\!,\\!"), sign + s.replace(",", " ")])
        add("int_thousands", solution_boxed(f_), str(n) if rng.random() < 0.5 else a, True, src)
        if "," in a:  # gsm8k reference with separators, plain prediction
            add("int_thousands", solution_boxed(str(n)), a, True, src)
    if 0 <= n < 1000 and ds in ("aime24", "aime25", "amc23"):
        add("int_leading_zero", solution_boxed(f"{n:03d}"), str(n), True, src)
        add("int_leading_zero", solution_boxed(str(n)), f"{n:03d}", True, src)
    # close wrong integers
    kind = rng.choice(["off1", "sign", "digits", "x10", "half"])
    if kind == "off1":
        w = str(n + rng.choice([-1, 1]))
    elif kind == "sign" and n != 0:
        w = str(-n)
    elif kind == "digits" and len(str(abs(n))) >= 2 and len(set(str(abs(n)))) > 1:
        s = str(abs(n))
        w = ("-" if n < 0 else "") + s[::-1]
        if int(w) == n:
            w = str(n + 1)
    elif kind == "x10":
        w = str(n * 10) if n != 0 else "1"
    else:
        w = f"{n}.5"
    add("int_wrong_close", solution_boxed(w), a, False, src)
    # approximate / near-miss decimals
    add("int_near_decimal", solution_boxed(rng.choice([f"{n}.0000001", f"{n}.001", f"{n - 1}.9999999", f"\\approx {n}"])), a, None, src)
    # unanchored: number in last sentence, no box (our grader needs boxed when number_fallback=0)
    if rng.random() < 0.3:
        add("int_unboxed_last_sentence", preamble() + f"Putting it together, Aya needs {n} minutes.", a, True, src)
    # GSM8K with "####" after thinking that mentions other numbers
    if ds == "gsm8k" and rng.random() < 0.3:
        add("int_gsm_hash_think", think() + preamble() + f"#### {n}", a, True, src)

# spelled-out small numbers
WORDS = "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty".split()
for (src, ds, a, n) in ints:
    if 0 <= n <= 20 and rng.random() < 0.7:
        add("int_spelled", solution_boxed(rng.choice([WORDS[n], f"\\text{{{WORDS[n]}}}"])), a, True, src)

# degrees / percent from integer answers
for (src, ds, a, n) in rng.sample(ints, 500):
    if n <= 0:
        continue
    ref = f"{n}^\\circ"
    pred, exp = rng.choice([(str(n), True), (f"{n}^{{\\circ}}", True), (f"{n}°", True), (f"{n} \\text{{ degrees}}", True),
                            (f"{n}\\degree", True), (f"{n + 1}^\\circ", False), (f"{180 - n}^\\circ" if n != 90 else "89^\\circ", False)])
    add("degrees_synth", solution_boxed(pred), ref, exp, src)
    # degrees written in radians
    fr = Fraction(n, 180)
    rad = (f"\\frac{{{fr.numerator}\\pi}}{{{fr.denominator}}}" if fr.denominator != 1 else f"{fr.numerator}\\pi")
    if fr.numerator == 1 and fr.denominator != 1:
        rad = f"\\frac{{\\pi}}{{{fr.denominator}}}"
    add("degrees_as_radians", solution_boxed(rad), ref, None, src)
    # reference in plain degrees number, prediction with degree sign
    add("degrees_synth", solution_boxed(f"{n}^\\circ"), str(n), True, src)
for (src, ds, a, n) in rng.sample(ints, 400):
    if not (0 < n <= 100):
        continue
    pred, ref, exp = rng.choice([(f"{n}\\%", str(n), True), (f"{n}\\%", f"{n}\\%", True), (str(n), f"{n}\\%", True),
                                 (f"{n} percent", f"{n}\\%", True), (f"{n / 100:g}", f"{n}\\%", None),
                                 (f"{n / 100:g}", str(n), False), (f"{n + 1}\\%", f"{n}\\%", False)])
    add("percent", solution_boxed(pred), ref, exp, src)
for (src, ds, a) in answers:
    if "^\\circ" in a:
        m = re.match(r"(\d+)\^\\circ$", a.strip())
        if m:
            n = int(m.group(1))
            for pred, exp in [(str(n), True), (f"{n}^{{\\circ}}", True), (f"{n}°", True), (f"{n} \\text{{ degrees}}", True),
                              (f"{n + 1}^\\circ", False)]:
                add("degrees_math500", solution_boxed(pred), a, exp, src)

# ------------------------------------------------------------------ C. fractions
def frac_tex(fr, cmd="\\frac"):
    s = "-" if fr < 0 else ""
    return f"{s}{cmd}{{{abs(fr.numerator)}}}{{{fr.denominator}}}"


for (src, ds, a, n) in rng.sample(ints, 700):
    q = rng.choice([k for k in range(2, 13) if math.gcd(k, n) == 1] or [1])
    if q == 1 or n == 0:
        continue
    n = n % 997 or 7  # keep numerators readable
    if math.gcd(n, q) != 1:
        q = next(k for k in range(q + 1, 100) if math.gcd(k, n) == 1)
    fr = Fraction(n, q)
    ref = frac_tex(fr)
    choices = [
        (frac_tex(fr, "\\dfrac"), True), (frac_tex(fr, "\\tfrac"), True), (f"{fr.numerator}/{fr.denominator}", True),
        (f"\\frac{{{2 * fr.numerator}}}{{{2 * fr.denominator}}}", True), (f"{fr.numerator} / {fr.denominator}", True),
        (f"\\frac{{{fr.denominator}}}{{{fr.numerator}}}", False), (f"\\frac{{{fr.numerator + 1}}}{{{fr.denominator}}}", False),
        (f"-\\frac{{{fr.numerator}}}{{{fr.denominator}}}", False),
    ]
    if fr.numerator < 10 and fr.denominator < 10:
        choices.append((f"\\frac{fr.numerator}{fr.denominator}", True))
        choices.append((f"\\frac {fr.numerator} {fr.denominator}", True))
    if fr.numerator > fr.denominator:
        whole, rem = divmod(fr.numerator, fr.denominator)
        choices.append((f"{whole}\\frac{{{rem}}}{{{fr.denominator}}}", True))
        choices.append((f"{whole} \\frac{{{rem}}}{{{fr.denominator}}}", True))
    d = fr.denominator
    while d % 2 == 0:
        d //= 2
    while d % 5 == 0:
        d //= 5
    if d == 1:
        choices.append((f"{float(fr):g}", True))
    else:
        choices.append((f"{float(fr):.4f}", None))
        choices.append((f"{float(fr):.10f}", None))
    pred, exp = rng.choice(choices)
    add("fraction_synth", solution_boxed(pred), ref, exp, src)
    # plain-text phrasing of the fraction
    add("fraction_plain_text", preamble() + f"The answer is {fr.numerator}/{fr.denominator}.", ref, True, src)

FRAC_RE = re.compile(r"^(-?)\\[dt]?frac\s*\{?(\d+)\}?\s*\{?(\d+)\}?$")
for (src, ds, a) in answers:
    m = FRAC_RE.match(a.replace(" ", "")) if "frac" in a else None
    if not m:
        continue
    s, p, q = m.group(1), int(m.group(2)), int(m.group(3))
    for pred, exp in [(f"{s}{p}/{q}", True), (f"{s}\\dfrac{{{p}}}{{{q}}}", True), (f"{s}\\frac{{{2 * p}}}{{{2 * q}}}", True),
                      (f"{s}{p / q:.6f}", None), (f"{s}\\frac{{{q}}}{{{p}}}", p == q), (f"{s}\\frac{{{p + 1}}}{{{q}}}", False),
                      (f"\\frac{{{'-' if s else ''}{p}}}{{{q}}}", True)]:
        add("fraction_math500", solution_boxed(pred), a, exp, src)

# ------------------------------------------------------------------ D. radicals, pi, complex
SQUAREFREE = [2, 3, 5, 6, 7, 10, 11, 13, 14, 15, 17, 19, 21, 22, 23, 26, 29, 30, 31]
for i in range(600):
    src = rng.choice(ints)[0]
    k, m = rng.randint(1, 12), rng.choice(SQUAREFREE)
    ref = f"{k}\\sqrt{{{m}}}" if k != 1 else f"\\sqrt{{{m}}}"
    v = k * math.sqrt(m)
    choices = [(f"\\sqrt{{{k * k * m}}}", True), (f"{k} \\sqrt {m}" if m < 10 else f"{k} \\sqrt{{{m}}}", True),
               (f"\\sqrt{{{m}}} \\cdot {k}", True), (f"{k}\\cdot\\sqrt{{{m}}}", True), (f"{v:.6f}", None), (f"{v:.3f}", None),
               (f"{k}\\sqrt{{{m + 1}}}", False), (f"{k + 1}\\sqrt{{{m}}}", False), (f"\\sqrt{{{k * m}}}", k == 1),
               (f"{k}\\sqrt[3]{{{m}}}", False), (f"\\frac{{{k * m}}}{{\\sqrt{{{m}}}}}", True)]
    pred, exp = rng.choice(choices)
    add("radical_synth", solution_boxed(pred), ref, exp, src)
    if rng.random() < 0.3:
        add("radical_plain_text", preamble() + f"The answer is {k}*sqrt({m}).", ref, True, src)
for i in range(100):
    src = rng.choice(ints)[0]
    m = rng.choice([2, 3, 5, 6, 7])
    for pred, ref, exp in [(f"\\frac{{1}}{{\\sqrt{{{m}}}}}", f"\\frac{{\\sqrt{{{m}}}}}{{{m}}}", True),
                           (f"\\frac{{\\sqrt{{{m}}}}}{{{m}}}", f"\\frac{{1}}{{\\sqrt{{{m}}}}}", True)]:
        if rng.random() < 0.5:
            add("radical_rationalized", solution_boxed(pred), ref, exp, src)
for i in range(500):
    src = rng.choice(ints)[0]
    k, q = rng.randint(1, 30), rng.choice([1, 1, 2, 3, 4, 6])
    fr = Fraction(k, q)
    p_, q_ = fr.numerator, fr.denominator
    if q_ == 1:
        ref = f"{p_}\\pi" if p_ != 1 else "\\pi"
    else:
        ref = f"\\frac{{{p_ if p_ != 1 else ''}\\pi}}{{{q_}}}"
    v = float(fr) * math.pi
    choices = [(f"\\pi {p_}" if q_ == 1 else f"\\frac{{{p_}}}{{{q_}}}\\pi", True), (f"{p_} \\cdot \\pi" if q_ == 1 else f"\\frac{{{p_} \\pi}}{{{q_}}}", True),
               (f"{v:.6f}", None), (f"{v:.2f}", None), (f"{p_ + 1}\\pi" if q_ == 1 else f"\\frac{{{p_ + 1}\\pi}}{{{q_}}}", False),
               (f"{p_}\\pi^2" if q_ == 1 else f"\\frac{{{p_}\\pi^2}}{{{q_}}}", False), (f"{p_} \\times \\pi" if q_ == 1 else f"{p_}\\pi/{q_}", True),
               (f"{p_}" if q_ == 1 else f"\\frac{{{p_}}}{{{q_}}}", False)]
    pred, exp = rng.choice(choices)
    add("pi_synth", solution_boxed(pred), ref, exp, src)
for i in range(400):
    src = rng.choice(ints)[0]
    x, y = rng.randint(-20, 20), rng.choice([k for k in range(-20, 21) if k != 0])
    ys = ("+" if y > 0 else "-") + ("" if abs(y) == 1 else str(abs(y))) + "i"
    ref = f"{x}{ys}" if x != 0 else ys.lstrip("+")
    yi = ("" if abs(y) == 1 else str(abs(y))) + "i"
    choices = [(f"{'-' if y < 0 else ''}{yi} + {x}", True), (f"{x} {'+' if y > 0 else '-'} {yi}", True),
               (f"{x}{'+' if y < 0 else '-'}{yi}", False), (f"{x + 1}{ys}", False), (f"({x}, {y})", False),
               (f"{x}{'+' if y > 0 else '-'}{abs(y)} i", True), (f"{x}{'+' if y > 0 else '-'}i{abs(y)}", True)]
    pred, exp = rng.choice(choices)
    add("complex_synth", solution_boxed(pred), ref, exp, src)

# ------------------------------------------------------------------ E. tuples, intervals, sets
for i in range(900):
    src = rng.choice(ints)[0]
    k = rng.choice([2, 2, 2, 3])
    vals = [rng.randint(-15, 30) for _ in range(k)]
    if len(set(vals)) < k:
        continue
    ref = "(" + ",".join(map(str, vals)) + ")"
    if rng.random() < 0.3:
        ref = "\\left( " + ", ".join(map(str, vals)) + " \\right)"
    sw = vals[:]
    sw[0], sw[1] = sw[1], sw[0]
    off = vals[:]
    off[-1] += 1
    neg = vals[:]
    neg[0] = -neg[0] if neg[0] != 0 else 1
    choices = [("(" + ", ".join(map(str, vals)) + ")", True), ("\\left(" + ",".join(map(str, vals)) + "\\right)", True),
               (", ".join(map(str, vals)), None), ("(" + ", ".join(map(str, sw)) + ")", False), ("(" + ", ".join(map(str, off)) + ")", False),
               ("(" + ", ".join(map(str, neg)) + ")", False), ("[" + ", ".join(map(str, vals)) + "]", None),
               ("\\{" + ", ".join(map(str, vals)) + "\\}", False)]
    if k == 2:
        choices.append((f"x={vals[0]}, y={vals[1]}", None))
        choices.append((f"(x, y) = ({vals[0]}, {vals[1]})", True))
    else:
        choices.append((f"(a,b,c) = ({vals[0]}, {vals[1]}, {vals[2]})", True))
    pred, exp = rng.choice(choices)
    add("tuple_synth", solution_boxed(pred), ref, exp, src)
TUP_RE = re.compile(r"^(\\left)?\s*\(.*\)\s*$")
for (src, ds, a) in answers:
    if TUP_RE.match(a) and "\\cup" not in a and "infty" not in a and a.count(",") >= 1:
        sw = swap_tuple(a)
        add("tuple_math500", solution_boxed(a.replace("\\left", "").replace("\\right", "").replace(" ", "")), a, True, src)
        add("tuple_math500", solution_boxed(a.replace(",", ", ")), a, True, src)
        if sw:
            add("tuple_math500", solution_boxed(sw), a, False, src)
        b = bump_number(a)
        if b:
            add("tuple_math500", solution_boxed(b), a, False, src)

for i in range(800):
    src = rng.choice(ints)[0]
    lo = rng.randint(-20, 10)
    hi = lo + rng.randint(1, 15)
    lb, rb = rng.choice("(["), rng.choice(")]")
    form = rng.choice(["finite", "finite", "rinf", "linf", "union"])
    if form == "finite":
        ref = f"{lb}{lo},{hi}{rb}"
        lop = "<" if lb == "(" else LE
        rop = "<" if rb == ")" else LE
        ineq = f"{lo} {lop} x {rop} {hi}"
        other = ("[" if lb == "(" else "(") + f"{lo},{hi}{rb}"
        choices = [(f"\\left{lb}{lo}, {hi}\\right{rb}", True), (f"{lb}{lo}, {hi}{rb}", True), (f"x \\in {lb}{lo},{hi}{rb}", True),
                   (ineq, None), (other, False), (f"{lb}{lo},{hi + 1}{rb}", False), (f"{lb}{hi},{lo}{rb}", False)]
    elif form == "rinf":
        ref = f"{lb}{lo},\\infty)"
        other = ("[" if lb == "(" else "(") + f"{lo},\\infty)"
        choices = [(f"{lb}{lo}, \\infty)", True), (f"\\left{lb}{lo},\\infty\\right)", True), (f"{lb}{lo},+\\infty)", True),
                   (f"x {GT if lb == '(' else GE} {lo}", None), (other, False), (f"{lb}{lo + 1},\\infty)", False)]
    elif form == "linf":
        ref = f"(-\\infty,{hi}{rb}"
        other = f"(-\\infty,{hi}" + (")" if rb == "]" else "]")
        choices = [(f"(-\\infty, {hi}{rb}", True), (f"\\left(-\\infty,{hi}\\right{rb}", True), (other, False), (f"(-\\infty,{hi - 1}{rb}", False)]
    else:
        mid = lo + rng.randint(1, 5)
        hi2 = mid + rng.randint(1, 9)
        ref = f"({lo},{mid}) \\cup ({mid},{hi2})"
        choices = [(f"({lo}, {mid})\\cup({mid}, {hi2})", True), (f"({mid},{hi2}) \\cup ({lo},{mid})", True), (f"({lo},{hi2})", False),
                   (f"[{lo},{mid}) \\cup ({mid},{hi2}]", False)]
    pred, exp = rng.choice(choices)
    add("interval_synth", solution_boxed(pred), ref, exp, src)

for i in range(700):
    src = rng.choice(ints)[0]
    k = rng.choice([2, 2, 3, 4])
    vals = sorted(rng.sample(range(-12, 25), k))
    form = rng.choice(["list", "set"])
    ref = ", ".join(map(str, vals)) if form == "list" else "\\{" + ",".join(map(str, vals)) + "\\}"
    sh = vals[:]
    rng.shuffle(sh)
    if sh == vals:
        sh = vals[::-1]
    choices = [(", ".join(map(str, sh)), True), ("\\{" + ", ".join(map(str, sh)) + "\\}", True), (", ".join(map(str, vals[:-1])), False),
               (", ".join(map(str, vals + [vals[-1] + 1])), False), (",".join(map(str, vals)), True),
               (" \\text{ and } ".join(map(str, vals)) if k == 2 else ", ".join(map(str, vals[:-1])) + ", \\text{and } " + str(vals[-1]), True),
               (", ".join(map(str, vals[:-1] + [vals[-1] + 1])), False)]
    pred, exp = rng.choice(choices)
    add("set_list_synth", solution_boxed(pred), ref, exp, src)
    if rng.random() < 0.25:  # several boxes, one per value
        add("set_list_multibox", preamble() + "The solutions are " + ", ".join(f"$\\boxed{{{v}}}$" for v in vals) + ".", ref, True, src)
for (src, ds, a) in answers:
    if re.fullmatch(r"-?[\d\\a-z{}+\-\s]+(,\s*-?[\d\\a-z{}+\-\s]+)+", a) and not re.fullmatch(r"\d{1,3}(,\d{3})+", a) and ds == "math500" and not a.startswith("\\{"):
        parts = [p.strip() for p in a.split(",")]
        for pred, exp in [(", ".join(parts[::-1]), True), ("\\{" + ", ".join(parts) + "\\}", True), (", ".join(parts[:-1]), False)]:
            add("set_list_math500", solution_boxed(pred), a, exp, src)

# ------------------------------------------------------------------ F. text answers, bases, matrices
TEXT_REFS = [(s, d, a) for (s, d, a) in answers if a.startswith("\\text{") or re.fullmatch(r"[A-Za-z]{3,}", a)]
for (src, ds, a) in TEXT_REFS:
    inner = re.sub(r"^\\text\{(.*)\}$", r"\1", a)
    others = [t for t in TEXT_ANS if t.lower() != inner.lower()]
    letter = re.fullmatch(r"\(([A-E])\)", inner)
    if letter:
        L = letter.group(1)
        wrongL = "ABCDE"[("ABCDE".index(L) + 1) % 5]
        forms = [(f"\\text{{({L})}}", True), (f"({L})", True), (L, True), (f"\\text{{{L}}}", True), (f"\\textbf{{({L})}}", True),
                 (f"\\text{{({wrongL})}}", False), (wrongL, False)]
    else:
        forms = [(inner, True), (f"\\text{{{inner}}}", True), (f"\\textbf{{{inner}}}", True), (f"\\text{{{inner.lower()}}}", True),
                 (f"\\mathrm{{{inner}}}", True), (f"\\text{{{inner.upper()}}}", True), (f"\\text{{{rng.choice(others)}}}", False),
                 (f"\\text{{{rng.choice(others)}}}", False), (f"\\text{{ {inner} }}", True)]
    for pred, exp in forms:
        add("text_answer", solution_boxed(pred), a, exp, src)
    add("text_answer_unboxed", preamble() + f"The answer is {inner}.", a, True, src)
    add("text_answer_unboxed", preamble() + f"Therefore, the final answer is $\\text{{{inner}}}$.", a, True, src)


def to_base(n, b):
    ds_ = ""
    while n:
        ds_ = str(n % b) + ds_
        n //= b
    return ds_ or "0"


for (src, ds, a, n) in rng.sample(ints, 600):
    if n <= 7:
        continue
    b = rng.randint(2, 9)
    digits = to_base(n, b)
    ref = f"{digits}_{b}" if rng.random() < 0.6 else f"{digits}_{{{b}}}"
    wrong_digits = digits[:-1] + str((int(digits[-1]) + 1) % b)
    choices = [(f"{digits}_{b}", True), (f"{digits}_{{{b}}}", True), (f"{digits}_{{({b})}}", True), (f"\\text{{{digits}}}_{b}", True),
               (digits, None), (str(n), False), (f"{wrong_digits}_{b}", False), (f"{digits}_{{{b + 1}}}", False)]
    pred, exp = rng.choice(choices)
    add("base_synth", solution_boxed(pred), ref, exp, src)
for (src, ds, a) in answers:
    m = re.fullmatch(r"(\d+)_\{?(\d+)\}?", a)
    if m:
        digits, b = m.group(1), int(m.group(2))
        val = int(digits, b)
        wrong = digits[:-1] + str((int(digits[-1]) + 1) % b)
        for pred, exp in [(f"{digits}_{b}", True), (f"{digits}_{{{b}}}", True), (digits, None), (str(val), False), (f"{wrong}_{b}", False)]:
            add("base_math500", solution_boxed(pred), a, exp, src)


def fr_str(fr, style):
    if fr.denominator == 1:
        return str(fr.numerator)
    if style == "slash":
        return f"{fr.numerator}/{fr.denominator}"
    return frac_tex(fr)


def matrix(rows_, env="pmatrix", style="frac"):
    body = " \\\\ ".join(" & ".join(fr_str(x, style) for x in r) for r in rows_)
    return f"\\begin{{{env}}} {body} \\end{{{env}}}"


for i in range(700):
    src = rng.choice(ints)[0]
    shape = rng.choice([(2, 1), (3, 1), (2, 2), (3, 1), (2, 1)])
    ent = [[Fraction(rng.randint(-20, 20), rng.choice([1, 1, 1, 2, 3, 5])) for _ in range(shape[1])] for _ in range(shape[0])]
    ref = matrix(ent, "pmatrix", rng.choice(["frac", "slash"]))
    wrong = [r[:] for r in ent]
    wrong[0][0] += 1
    choices = [(matrix(ent, "pmatrix", "frac"), True), (matrix(ent, "bmatrix", "frac"), True), (matrix(ent, "pmatrix", "slash"), True),
               (matrix(wrong, "pmatrix", "frac"), False), (matrix(ent, "pmatrix", "frac").replace(" ", ""), True)]
    if shape[1] == 1:
        choices.append(("(" + ", ".join(fr_str(r[0], "slash") for r in ent) + ")", None))
        flipped = [[x] for x in [-ent[0][0]] + [r[0] for r in ent[1:]]]
        if ent[0][0] != 0:
            choices.append((matrix(flipped), False))
    else:
        tr = [[ent[j][i2] for j in range(shape[0])] for i2 in range(shape[1])]
        choices.append((matrix(tr), tr == ent))
        choices.append(("\\left[" + matrix(ent, "matrix") + "\\right]", True))
    if all(x.denominator in (1, 2, 5) for r in ent for x in r):
        choices.append((matrix([[Fraction(x) for x in r] for r in ent]).replace("\\frac", "\\dfrac"), True))
        dec = " \\\\ ".join(" & ".join(f"{float(x):g}" for x in r) for r in ent)
        choices.append((f"\\begin{{pmatrix}} {dec} \\end{{pmatrix}}", True))
    pred, exp = rng.choice(choices)
    add("matrix_synth", solution_boxed(pred), ref, exp, src)
for (src, ds, a) in answers:
    if "matrix" in a:
        b = bump_number(a)
        for pred, exp in [(a, True), (a.replace("pmatrix", "bmatrix"), True), (a.replace(" ", ""), True), (b, False)]:
            add("matrix_math500", solution_boxed(pred), a, exp, src)

# ------------------------------------------------------------------ G. other math500 shapes
for (src, ds, a) in answers:
    if ds != "math500" or int_value(a) is not None:
        continue
    s = a.strip()
    # decimals
    if re.fullmatch(r"-?\d*\.\d+", s):
        fr = Fraction(s)
        mant, ex = f"{float(fr):e}".split("e")
        sci = f"{float(mant):g} \\times 10^{{{int(ex)}}}"
        forms = [(s + "0", True), ("0" + s if s.startswith(".") else s, True), (frac_tex(fr), True), (sci, True)]
        nd = len(s.split(".")[1])
        if nd >= 2:
            rounded = f"{float(fr):.{nd - 1}f}"
            forms.append((rounded, Fraction(rounded) == fr))
        for pred, exp in forms:
            add("decimal_math500", solution_boxed(pred), a, exp, src)
    # plus-minus
    if "\\pm" in s and not s.startswith("\\{"):
        l, r = s.split("\\pm", 1)
        l, r = l.strip(), r.strip()
        for pred, exp in [(f"{l}+{r}, {l}-{r}", True), (f"{l} - {r}, {l} + {r}", True), (f"{l}+{r}", False), (s.replace(" ", ""), True)]:
            add("pm_math500", solution_boxed(pred), a, exp, src)
    # equations and expressions with variables
    if re.search(r"[a-z]", re.sub(r"\\[a-z]+", "", s)) and "matrix" not in s and "\\text" not in s and "\\mbox" not in s:
        if s.startswith(("y =", "y=")):
            rhs = s.split("=", 1)[1].strip()
            for pred, exp in [(rhs, True), (s.replace(" ", ""), True), (f"y = {rhs}".replace("+", "+ "), True), (flip_sign(rhs) or rhs + "+1", False)]:
                add("equation_math500", solution_boxed(pred), a, exp, src)
        else:
            terms = re.findall(r"[+-]?\s*[^+-]+", s)
            expr_forms = []
            if len(terms) >= 2 and "(" not in s and "[" not in s and "\\in" not in s and "\\frac" not in s and "\\pm" not in s and "=" not in s:
                t = [x.replace(" ", "") for x in terms]
                t = [x if x[0] in "+-" else "+" + x for x in t]
                r_ = t[1:] + t[:1]
                expr_forms.append(("".join(r_).lstrip("+"), True))
            w = bump_number(s) if NUM_RE.search(s) else None
            if w:
                expr_forms.append((w, False))
            expr_forms.append((s.replace(" ", ""), True))
            for pred, exp in expr_forms:
                add("expression_math500", solution_boxed(pred), a, exp, src)
    # units and dollars inside the reference
    if any(k in s for k in ("\\mbox", "\\text{ ", "\\$", "degrees", "cents")):
        num = re.sub(r"\\mbox\{[^}]*\}|\\text\{[^}]*\}|\\\$|\^2|\^\\circ|degrees|,\\!\s*|\s", "", s)
        add("units_math500", solution_boxed(num), a, True, src)
        add("units_math500", solution_boxed(s), a, True, src)
        w = bump_number(s)
        if w:
            add("units_math500", solution_boxed(w), a, False, src)
    # mixed numbers
    m = re.fullmatch(r"(\d+)\s*\\frac\{(\d+)\}\{(\d+)\}", s)
    if m:
        wh, p, q = map(int, m.groups())
        fr = Fraction(wh * q + p, q)
        for pred, exp in [(frac_tex(fr), True), (f"{float(fr):g}", True), (f"{wh} \\frac{{{p}}}{{{q}}}", True), (f"{wh}\\frac{{{p}}}{{{q}}}", True),
                          (f"\\frac{{{wh * p}}}{{{q}}}", False)]:
            add("mixed_number_math500", solution_boxed(pred), a, exp, src)

# ------------------------------------------------------------------ H. extraction edge cases
for (src, ds, a) in rng.sample(answers, 800):
    kind = rng.choice(["nested", "fbox", "nobrace", "unbalanced", "dollars_display", "boxed_in_text", "after_box_numbers",
                       "think_unclosed_box", "two_think", "final_answer_then_box"])
    if kind == "nested":
        add("edge_nested_boxed", preamble() + f"$\\boxed{{\\boxed{{{a}}}}}$", a, True, src)
    elif kind == "fbox":
        add("edge_fbox", preamble() + f"The answer is $\\fbox{{{a}}}$.", a, True, src)
    elif kind == "nobrace" and re.fullmatch(r"-?\d+", a):
        add("edge_boxed_nobrace", preamble() + f"The answer is $\\boxed {a}$.", a, True, src)
    elif kind == "unbalanced":
        add("edge_unbalanced_box", preamble() + f"The answer is $\\boxed{{{a}", a, None, src)
    elif kind == "dollars_display":
        add("edge_display_dollars", preamble() + f"$$\\boxed{{{a}}}$$", a, True, src)
    elif kind == "boxed_in_text":
        add("edge_boxed_midtext", preamble() + f"So we conclude $\\boxed{{{a}}}$ is the value we wanted, since {sentence()}", a, True, src)
    elif kind == "after_box_numbers":
        add("edge_numbers_after_box", preamble() + boxed_tail(a) + f"\n\nCheck: {sentence()} {sentence()}", a, True, src)
    elif kind == "think_unclosed_box":
        add("edge_think_unclosed", "<think>\n" + sentences(3) + f" The answer is $\\boxed{{{a}}}$. Let me double check {sentence()}", a, True, src)
    elif kind == "two_think":
        w = bump_number(a) or a
        add("edge_two_think", think(f"Maybe $\\boxed{{{w}}}$.") + sentences(1) + "\n" + think() + boxed_tail(a), a, True, src)
    else:
        w = bump_number(a)
        if w:
            add("edge_final_answer_vs_box", preamble() + f"$\\boxed{{{a}}}$\n\nTherefore, the final answer is ${w}$. I hope it is correct.", a, False, src)

out = sys.argv[1]
with open(out, "w", encoding="utf-8") as fh:
    for r in rows:
        fh.write(json.dumps(r, ensure_ascii=False) + "\n")
from collections import Counter
c = Counter(r["category"] for r in rows)
print(f"{len(rows)} rows, {len(c)} categories -> {out}", file=sys.stderr)
for k, v in sorted(c.items()):
    print(f"  {k:28s} {v}", file=sys.stderr)

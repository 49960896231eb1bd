"""serve_openai.py - `zipage serve` through the official openai client (pinned in
tools/grading/requirements.txt): the model list, greedy completions equal to `zipage generate`'s
tokens decoded (the oracle file of test_serve.sh), batched prompts with n = 2, a stop string, a
streamed completion with usage, a chat turn (whole and streamed), and
the client's typed errors for a refusal (400 naming the parameter), a wrong key (401) and an
unknown model (404). Usage: serve_openai.py PORT KEY ORACLE MODEL"""
import json
import sys

import openai

port, key, oracle, model = sys.argv[1:5]
c = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key=key, max_retries=0)
fails = []


def check(cond, what):
    if not cond:
        fails.append(what)
        print("FAIL:", what, file=sys.stderr)


check([m.id for m in c.models.list().data] == [model], "models.list names the served model")
rows = json.load(open(oracle))["greedy"]  # [ids "a,b,c", greedy text]
for ids, text in rows:
    ids = [int(x) for x in ids.split(",")]
    r = c.completions.create(model=model, prompt=ids, max_tokens=24, temperature=0, extra_body={"ignore_eos": True})
    check(r.choices[0].text == text and r.usage.completion_tokens == 24 and r.choices[0].finish_reason == "length",
          f"greedy {ids}: {r.choices[0].text!r} vs {text!r}")
ids = [int(x) for x in rows[0][0].split(",")]
r = c.completions.create(model=model, prompt=[ids, ids], n=2, max_tokens=24, temperature=0, extra_body={"ignore_eos": True})
check(len(r.choices) == 4 and all(ch.text == rows[0][1] for ch in r.choices), "two prompts x n 2")
text = rows[0][1]
stop = next(text[k:k + 5] for k in range(3, len(text) - 5) if text.index(text[k:k + 5]) == k)
r = c.completions.create(model=model, prompt=ids, max_tokens=24, temperature=0, stop=stop, extra_body={"ignore_eos": True})
check(r.choices[0].text == text[:text.index(stop)] and r.choices[0].finish_reason == "stop", f"stop {stop!r}: {r.choices[0]}")
parts, usage = [], None
for ch in c.completions.create(model=model, prompt=ids, max_tokens=24, temperature=0, stream=True, stream_options={"include_usage": True},
                               extra_body={"ignore_eos": True}):
    parts += [x.text for x in ch.choices]
    usage = ch.usage or usage
check("".join(parts) == text and usage and usage.completion_tokens == 24, f"streamed: {''.join(parts)!r}, {usage}")
want = json.load(open(oracle))["chat"]
msgs = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What is 2+2?"}]
r = c.chat.completions.create(model=model, messages=msgs, max_tokens=24, temperature=0, extra_body={"ignore_eos": True})
check(r.choices[0].message.content == want and r.choices[0].message.role == "assistant", f"chat: {r.choices[0].message}")
got = "".join(ch.choices[0].delta.content or "" for ch in c.chat.completions.create(model=model, messages=msgs, max_tokens=24, temperature=0,
                                                                                     stream=True, extra_body={"ignore_eos": True}) if ch.choices)
check(got == want, f"chat streamed: {got!r} vs {want!r}")
r = c.completions.create(model=model, prompt=[1, 2, 3], max_tokens=6, temperature=0, logprobs=2, extra_body={"ignore_eos": True})
lp = r.choices[0].logprobs  # the client's Logprobs type parses the completions form
check(len(lp.tokens) == 6 and all(max(d.values()) == v for v, d in zip(lp.token_logprobs, lp.top_logprobs)), f"logprobs: {lp}")
r = c.chat.completions.create(model=model, messages=[{"role": "user", "content": "Hi"}], max_tokens=4, temperature=0, logprobs=True,
                              top_logprobs=3, extra_body={"ignore_eos": True})
cl = r.choices[0].logprobs.content  # and ChatCompletionTokenLogprob the chat form
check(len(cl) == 4 and all(len(e.top_logprobs) == 3 and e.top_logprobs[0].logprob == e.logprob for e in cl), f"chat logprobs: {cl}")
msgs, want = json.load(open(oracle))["conversation"]  # several turns, as Qwen3's Jinja template renders them
r = c.chat.completions.create(model=model, messages=msgs, max_tokens=24, temperature=0, extra_body={"ignore_eos": True})
check(r.choices[0].message.content == want, f"conversation: {r.choices[0].message}")
try:
    c.completions.create(model=model, prompt="hi", max_tokens=4, extra_body={"frobnicate": 1})
    check(False, "an unknown field was accepted")
except openai.BadRequestError as e:
    check(e.status_code == 400 and e.body.get("param") == "frobnicate", f"400 names the field: {e.body}")
try:
    openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="wrong", max_retries=0).models.list()
    check(False, "a wrong key was accepted")
except openai.AuthenticationError as e:
    check(e.status_code == 401, "401 for a wrong key")
try:
    c.completions.create(model="no-such-model", prompt="hi", max_tokens=4)
    check(False, "an unknown model was accepted")
except openai.NotFoundError as e:
    check(e.status_code == 404 and e.body.get("param") == "model", f"404 for an unknown model: {e.body}")
print(f"serve_openai: {len(fails)} failure(s)")
sys.exit(1 if fails else 0)

#!/usr/bin/env python3
"""hf_tokenizer_compare.py - our chat templates and tokenizer against the reference ones.

Input: .devrun/prompts/<family>__<dataset>.jsonl from prepare_tokenizer_compare.sh (our
rendered prompt and ids for every dataset problem). For each line: renders the same messages
with the family's published Jinja template (transformers' settings: sandboxed, trim_blocks,
lstrip_blocks) and compares the text with ours; tokenizes our prompt with the reference
tokenizer and compares the ids. References: transformers' Qwen2TokenizerFast from
vocab.json + merges.txt (+ the R1 added tokens), tiktoken with the Llama-3 split pattern for
R1-Distill-Llama, tokenizers' Tokenizer.from_file for SmolLM2. SmolLM2's template file was not
available, so its prompts are checked for ids only. Prints one line per file; exit 1 on any
mismatch.
"""
import json
import os
import sys

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment

SYSTEM = "Please reason step by step, and put your final answer within \\boxed{}."
LLAMA3_PAT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
              r"|\s*[\r\n]+|\s+(?!\S)|\s+")


def added_tokens(path):
    cfg = json.load(open(path))
    return sorted(((int(k), v["content"]) for k, v in cfg.get("added_tokens_decoder", {}).items()))


def qwen2_pipeline_tokenizer(model_dir):
    """Qwen2TokenizerFast's pipeline (NFC, the Qwen2 split regex, byte-level BPE) built with
    the tokenizers library, with the checkpoint's own added tokens appended in id order (the
    R1 distills replace Qwen's <|endoftext|> family with their own)."""
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers
    tok = Tokenizer(models.BPE.from_file(f"{model_dir}/vocab.json", f"{model_dir}/merges.txt"))
    tok.normalizer = normalizers.NFC()
    qwen_pat = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                r"|\s*[\r\n]+|\s+(?!\S)|\s+")
    tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(qwen_pat), behavior="isolated"),
                                                 pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    for i, content in added_tokens(f"{model_dir}/tokenizer_config.json"):
        tok.add_special_tokens([AddedToken(content, special=True, normalized=False)])
        assert tok.token_to_id(content) == i, (content, i, tok.token_to_id(content))
    return lambda text: tok.encode(text, add_special_tokens=False).ids


def tiktoken_tokenizer(model_dir):
    import tiktoken
    from tiktoken.load import load_tiktoken_bpe
    ranks = load_tiktoken_bpe(f"{model_dir}/tokenizer.model")
    special = {c: i for i, c in added_tokens(f"{model_dir}/tokenizer_config.json")}
    enc = tiktoken.Encoding(name="llama3", pat_str=LLAMA3_PAT, mergeable_ranks=ranks, special_tokens=special)
    return lambda text: enc.encode(text, allowed_special="all")


def hf_json_tokenizer(model_dir):
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(f"{model_dir}/tokenizer.json")
    return lambda text: tok.encode(text, add_special_tokens=False).ids


def template(model_dir):
    cfg = f"{model_dir}/tokenizer_config.json"
    if os.path.exists(cfg) and "chat_template" in json.load(open(cfg)):
        return json.load(open(cfg))["chat_template"]
    if os.path.exists(f"{model_dir}/chat_template.jinja"):
        return open(f"{model_dir}/chat_template.jinja").read()
    return None


def render_messages(tpl, msgs, bos_token="<｜begin▁of▁sentence｜>", **kw):
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols])
    env.globals["raise_exception"] = lambda msg: (_ for _ in ()).throw(jinja2.TemplateError(msg))
    env.filters["tojson"] = lambda x, **k: json.dumps(x, ensure_ascii=False)
    return env.from_string(tpl).render(messages=msgs, add_generation_prompt=True, bos_token=bos_token, **kw)


def render(tpl, user, system, bos_token="<｜begin▁of▁sentence｜>", **kw):
    msgs = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": user}]
    return render_messages(tpl, msgs, bos_token, **kw)


FAMILIES = {
    "Qwen3-8B": (qwen2_pipeline_tokenizer, {}),
    "Qwen3-8B-nothink": (qwen2_pipeline_tokenizer, {"enable_thinking": False}),
    "DeepSeek-R1-Distill-Qwen-7B": (qwen2_pipeline_tokenizer, {}),
    "DeepSeek-R1-Distill-Llama-8B": (tiktoken_tokenizer, {}),
    "SmolLM2-135M-Instruct": (hf_json_tokenizer, {}),
    # Meta's Llama-3-Instruct template (tests/data/chat/) on R1-Distill-Llama's Llama-3 vocab,
    # which holds <|start_header_id|>, <|end_header_id|> and <|eot_id|> as special tokens.
    "DeepSeek-R1-Distill-Llama-8B-llama3chat": (tiktoken_tokenizer, {"bos_token": "<|begin_of_text|>"}),
}
LLAMA3_TEMPLATE = "tests/data/chat/llama3_chat_template.jinja"


def main(root):
    fails, rows, cache = 0, [], {}
    datasets = {n: {json.loads(l)["id"]: json.loads(l) for l in open(f"datasets/data/{n}.jsonl")}
                for n in ["aime24", "aime25", "amc23", "math500", "gsm8k", "livecodebench"]}
    for f in sorted(os.listdir(root)):
        fam, ds = f[:-len(".jsonl")].split("__")
        make, kw = FAMILIES[fam]
        model_dir = "models/" + fam.replace("-nothink", "").replace("-llama3chat", "")
        if fam not in cache:
            tpl = open(LLAMA3_TEMPLATE).read() if fam.endswith("-llama3chat") else template(model_dir)
            cache[fam] = (make(model_dir), tpl)
        encode, tpl = cache[fam]
        n = bad_text = bad_ids = 0
        first = None
        for line in open(os.path.join(root, f)):
            ours = json.loads(line)
            item = datasets[ds][ours["id"]]
            user = item["question"] if ds == "livecodebench" else item["problem"]
            system = None if fam.endswith("nothink") else SYSTEM
            n += 1
            if tpl is not None and render(tpl, user, system, **kw) != ours["prompt"]:
                bad_text += 1
                first = first or ("text", ours["id"], render(tpl, user, system, **kw)[:200], ours["prompt"][:200])
            ref = encode(ours["prompt"])
            if ref != ours["ids"]:
                bad_ids += 1
                k = next((i for i, (a, b) in enumerate(zip(ref, ours["ids"])) if a != b), min(len(ref), len(ours["ids"])))
                first = first or ("ids", ours["id"], k, ref[max(0, k - 3):k + 3], ours["ids"][max(0, k - 3):k + 3])
        ok = bad_text == 0 and bad_ids == 0
        fails += not ok
        rows.append(f"{'PASS' if ok else 'FAIL'} {fam:30s} {ds:14s} {n:5d} prompts: template "
                    f"{'n/a' if tpl is None else str(n - bad_text) + '/' + str(n)}, ids {n - bad_ids}/{n}"
                    + ("" if ok else f"  first mismatch {first}"))
    print("\n".join(rows))
    print(f"{len(rows) - fails} passed, {fails} failed")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else ".devrun/prompts"))

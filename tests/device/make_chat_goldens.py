#!/usr/bin/env python3
"""make_chat_goldens.py - golden chat-template strings for tests/test_chat.c.

Renders each family's published Jinja template with transformers' apply_chat_template
settings (the `render` of hf_tokenizer_compare.py: sandboxed, trim_blocks, lstrip_blocks,
add_generation_prompt) for every line of tests/data/tokenizer/golden_texts.txt as the user
message, with the paper's math system prompt and without one, plus whitespace edge cases.
Templates: Qwen3-8B's tokenizer_config.json (thinking on and off), DeepSeek-R1-Distill-
Qwen-7B's chat_template.jinja, SmolLM2-135M-Instruct's chat_template.jinja, and Meta
Llama-3-Instruct's template (tests/data/chat/llama3_chat_template.jinja, bos <|begin_of_text|>).
With --conversations, the same templates render the conversations of CONVERSATIONS below
(several turns; assistant turns with and without reasoning, several </think>, newlines around
it; a second system message; a user message that is a wrapped tool response; a conversation
ending with an assistant turn; whitespace for Llama-3's trim), the messages given as they are.
Needs only jinja2, so it runs here or on the GPU machine:
    python3 tests/device/make_chat_goldens.py > tests/data/chat/golden_chat.jsonl
    python3 tests/device/make_chat_goldens.py --conversations > tests/data/chat/golden_conversations.jsonl
It does not check our output; tests/test_chat.c does.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from hf_tokenizer_compare import SYSTEM, render, render_messages, template  # noqa: E402
from make_tokenizer_goldens import cases  # noqa: E402

FAMILIES = [  # (our family name, template, thinking, bos_token)
    ("qwen3", template("models/Qwen3-8B"), True, None),
    ("qwen3", template("models/Qwen3-8B"), False, None),
    ("r1", template("models/DeepSeek-R1-Distill-Qwen-7B"), True, "<｜begin▁of▁sentence｜>"),
    ("smollm2", template("models/SmolLM2-135M-Instruct"), True, None),
    ("llama3", open("tests/data/chat/llama3_chat_template.jinja").read(), True, "<|begin_of_text|>"),
]
EDGE = [("  padded user\n\n", None), ("x", "  system with spaces \n"), ("\t\u3000wide space\u00a0", SYSTEM)]


def _m(*pairs):
    return [{"role": r, "content": c} for r, c in zip(pairs[::2], pairs[1::2])]


CONVERSATIONS = [
    _m("user", "What is 2+2?", "assistant", "<think>\nAdd them.\n</think>\n\n4", "user", "And 3+3?"),
    _m("system", SYSTEM, "user", "Hi", "assistant", "Hello! How can I help?", "user", "Count to 3."),
    _m("user", "a", "assistant", "<think>r1</think>x", "user", "b", "assistant", "plain answer", "user", "c"),
    _m("user", "Think about it.", "assistant", "<think>\n\nstep one\n\n</think>\n\n\nThe answer."),
    _m("user", "q", "assistant", "<think>a</think>b</think>c", "user", "again"),
    _m("user", "q", "assistant", "no think here</think>tail", "user", "again"),
    _m("system", "first system", "user", "u1", "system", "second system", "user", "u2"),
    _m("user", "q", "assistant", "<think>x</think>y", "user", "<tool_response>r</tool_response>", "assistant", "<think>z</think>w"),
    _m("user", "q", "assistant", "<think>x</think>y", "user", "<tool_response>r</tool_response>", "assistant", "w"),
    _m("user", "  padded  ", "assistant", "\n  spaced answer \n", "user", "\tlast\u3000"),
    _m("user", "one", "assistant", "", "user", "two"),
    _m("user", "R1 style", "assistant", "<think>\nlong reasoning\n</think>\n\nAnswer: 7", "user", "Why?", "assistant",
       "Because.", "user", "Thanks."),
]


def conversations():
    for fam, tpl, thinking, bos in FAMILIES:
        kw = {} if thinking else {"enable_thinking": False}
        for msgs in CONVERSATIONS:
            text = render_messages(tpl, msgs, bos_token=bos or "", **kw)
            print(json.dumps({"family": fam, "thinking": thinking, "messages": msgs, "text": text}, ensure_ascii=False))


def main():
    if sys.argv[1:] == ["--conversations"]:
        return conversations()
    users = [(u, s) for u in cases() for s in (SYSTEM, None)] + EDGE
    for fam, tpl, thinking, bos in FAMILIES:
        kw = {} if thinking else {"enable_thinking": False}
        for user, system in users:
            text = render(tpl, user, system, bos_token=bos or "", **kw)
            print(json.dumps({"family": fam, "thinking": thinking, "system": system, "user": user, "text": text},
                             ensure_ascii=False))


if __name__ == "__main__":
    main()

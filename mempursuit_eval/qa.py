"""Optional end-to-end QA: an answerer and a judge behind any OpenAI-compatible chat endpoint.

The prompts are the paper's LoCoMo answer and judge templates (appendix A.4.1 of the MemPursuit
paper, which takes them from the Mem0 evaluation), transcribed from the paper's text. The paper
uses the same prompts for LongMemEval; for BEAM it uses BEAM's official rubric grader, which is
not reproduced here (BEAM accuracy from this module is the binary judge, labelled as such).

HTTP goes through the standard library (``urllib``): ``POST <base_url>/chat/completions``,
bounded concurrency (threads), retries with exponential backoff on 429 / 5xx / network errors,
and an on-disk SQLite cache keyed by (model, messages, parameters) so a re-run costs nothing.
The API key is read from an environment variable (default ``OPENAI_API_KEY``); none is sent
when it is unset (local servers).
"""

from __future__ import annotations

import hashlib
import http.client
import json
import os
import random
import re
import socket
import sqlite3
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor, as_completed
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, Sequence

__all__ = [
    "ANSWER_PROMPT",
    "JUDGE_PROMPT",
    "JUDGE_EVIDENCE_COMPONENT",
    "ChatClient",
    "ChatCache",
    "QAError",
    "FAILURE_KINDS",
    "build_answer_prompt",
    "build_judge_prompt",
    "parse_answer",
    "parse_judgement",
    "read_judgement",
    "split_answer",
    "format_memories",
]

ANSWER_PROMPT = """You are answering a question using retrieved memories from past conversations. Follow these reasoning steps IN ORDER.

## Step 1: SCAN ALL MEMORIES
Read EVERY memory below from first to last. For each one that contains information relevant to the question, note it. Do NOT stop after finding the first relevant memory — important details are often scattered across many memories, including ones far down the list. Give equal weight to ALL memories regardless of position — a memory near the end is just as likely to contain the answer as one near the beginning.
In these memories, "User" refers to the main person whose memories these are.

## Step 2: ENTITY VERIFICATION
Confirm each relevant memory is about the correct person/entity. If the question asks "What does Person A like?" and a memory says "Person B likes X", do NOT use that memory to answer about Person A. In two-person conversations, both speakers' actions are relevant — if the question asks about person A and a memory attributes an action to person B (the other speaker), that information is still valid evidence from their shared conversations, but always check the attribution is correct.

## Step 3: COMBINE AND CROSS-REFERENCE
- COMBINE facts from multiple memories about the same topic. If one memory says "won first place" and another says "performed a piece titled X," those describe the same event — connect them.
- For listing/counting questions, extract EVERY distinct item from ALL memories. A single memory may contain multiple items. Think about what CATEGORIES of answers the question could have, then re-scan specifically for each category.
- For counting questions ("how many times", "how many X"), enumerate each distinct instance explicitly with its date or context BEFORE giving a final count. Do not estimate — list them out, then count the list.
- DECOMPOSE complex sentences: "an immersive X with Y, enjoys Z" contains multiple distinct facts. Each could be the answer.
- Connect related facts across memories: if one says "nearby lake" and another says "Lake Tahoe is great for kayaking", the nearby lake IS Lake Tahoe. If one says "bought X in Paris", infer the country is France.

## Step 4: SELECT THE BEST ANSWER
- Do NOT assume the highest-ranked memory is correct. Multiple memories may describe different events for the same topic. Compare each candidate's relevance to the SPECIFIC question, not its retrieval score. A lower-ranked memory that directly answers the question beats a higher-ranked one that is only tangentially related.
- ALWAYS choose the MOST SPECIFIC detail available. A proper name, title, or number beats a generic description. Rate each candidate as HIGH specificity (name, title, number, specific activity) or LOW (generic description), and prefer HIGH.
- Report what someone actually DID, not what was offered or available to them. "Has not tried X yet" means X was NOT done — disqualify it. "Joined X" or "has done X" means it WAS done — prefer it.
- When multiple memories repeat the same generic fact, that repetition does NOT make it more correct than a single memory with a more specific answer.
- Photos depict what was IN the photo, not facts about someone's daily life. Prefer direct statements over photo descriptions for inferences.
- Re-read the question carefully before answering. If it asks "what aspect/type/kind", answer with the specific aspect. If it asks "what did they discover they both enjoy", answer with the specific thing, not the setting.

## Step 5: TEMPORAL GROUNDING
These conversations took place around {reference_date}. All events occurred in 2022-2024.
- Calculate time relative to this date, NOT today. Never output 2025 or 2026.
- Use dates explicitly stated in memory text. Do not invent or estimate dates.
- When a question asks what someone "shared" or "mentioned" on a date, that date is when they TALKED about it — look for events shortly BEFORE that date.
- For "how long" questions, find the start and end dates explicitly, then compute the duration. Do not guess.
- TEMPORAL DISAMBIGUATION: When you find MULTIPLE instances of similar events at different dates, enumerate them all with their dates before picking. If the question uses past tense + "the" → select the instance closest to (and before) the reference date. If future tense ("plans to", "going to") → select the earliest planned date. NEVER default to the first-mentioned or highest-scored instance — the DATE determines the answer.

## Step 6: INCLUSION CHECK (for lists and counts)
If you found items during reasoning that you're tempted to exclude from your answer — STOP. Include them unless you have STRONG evidence they are wrong. The most common mistake is finding relevant items but then dropping them due to overly strict filtering. More items is better than fewer when there is supporting evidence.
- For counting: after enumerating, re-verify each item. Check for duplicates (same event described differently) and ensure you haven't missed items from memories late in the list.
- The question assumes something happened. Find WHAT happened, don't say nothing happened.

## Step 7: COMMIT AND ANSWER
Give a direct, specific answer. NEVER say "not specified", "not mentioned", "no record", or "the memories don't say" — if ANY memory contains relevant information, give the best answer from available evidence. No hedging, no caveats. If the question asks for a list, include ALL items found. NEVER return an empty answer when relevant memories exist.
- NEVER generate specific names, titles, places, or dates that do not appear in any memory above. If no memory contains the specific detail the question asks for, answer with what the memories DO contain rather than guessing.
- For open-domain/opinion questions ("Would X do Y?", "Is X considered Z?"):
  * Follow the DIRECT causal reasoning in the memories. Do NOT construct elaborate counter-arguments.
  * "Would X still do Y without Z?" — If memories show X does Y BECAUSE of Z, then without Z, answer "likely no."
  * "Would X do Y again soon?" — If the most recent attempt involved a bad experience (accident, scare, trauma), answer "likely no." A recent negative experience outweighs historical positive patterns.
  * For trait questions ("Is X considered Z?"): weigh ALL evidence including symbolic/indirect references. If there is SOME but not strong evidence, answer with a qualified degree ("somewhat") rather than flat "no."

# Instructions
## Misc
1. Make reasonable deductions based on your memories. Memory shows store with a lot of working people -> store employs a lot of people
2. If a memory describes something recognizable (e.g., "romantic drama about memory and relationships"), you may name it (e.g., "Eternal Sunshine of the Spotless Mind").
3. Use domain knowledge to connect facts: a game exclusive to one platform implies ownership of that platform. An unnamed company deal can be linked to a previously expressed brand preference.

{memories}

Question: {question}

Work through Steps 1-7, then give your final answer after "ANSWER:"."""

JUDGE_PROMPT = """Your task is to label an answer to a question as 'CORRECT' or 'WRONG'. You will be given the following data:
    (1) a question (posed by one user to another user),
    (2) a 'gold' (ground truth) answer,
    (3) a generated answer
which you will score as CORRECT/WRONG.

The point of the question is to ask about something one user should know about the other user based on their prior conversations.
The gold answer will usually be a concise and short answer that includes the referenced topic, for example:
Question: Do you remember what I got the last time I went to Hawaii?
Gold answer: A shell necklace
The generated answer might be much longer, but you should be generous with your grading - as long as it touches on the same topic as the gold answer, it should be counted as CORRECT.

For time related questions, the gold answer will be a specific date, month, year, etc. The generated answer might be much longer or use relative time references (like "last Tuesday" or "next month"), but you should be generous with your grading - as long as it refers to the same date or time period as the gold answer, it should be counted as CORRECT. Even if the format differs (e.g., "May 7th" vs "7 May"), consider it CORRECT if it's the same date.
{evidence}
Now it's time for the real question:
Question: {question}
Gold answer: {gold_answer}
Generated answer: {generated_answer}

First, provide a short (one sentence) explanation of your reasoning, then finish with CORRECT or WRONG.
Do NOT include both CORRECT and WRONG in your response, or it will break the evaluation script.

Just return the label CORRECT or WRONG in a json format with the key as "label"."""

JUDGE_EVIDENCE_COMPONENT = """
## Evidence (actual conversation messages containing the answer)
{evidence_context}
"""

#: The builder's default when no date is known (the paper's template defaults to 2023).
DEFAULT_REFERENCE_DATE = "2023"
MAX_MEMORIES = 200


#: Why a request got no usable reply (:attr:`QAError.kind`): the endpoint is down (connection
#: refused, unknown host), timed out, sent something that is not the chat-completion JSON, sent
#: an empty answer, or answered with an HTTP error (4xx, or 429 / 5xx after the retries).
FAILURE_KINDS = ("down", "timeout", "malformed", "empty", "http")


class QAError(RuntimeError):
    """The endpoint refused a request for good (bad request, auth) or retries ran out.

    Attributes
    ----------
    kind : str
        One of :data:`FAILURE_KINDS`.
    """

    def __init__(self, message: str, kind: str = "http"):
        super().__init__(message)
        self.kind = kind


def _human_date(ts: str | None) -> str | None:
    if not ts:
        return None
    try:
        dt = datetime.fromisoformat(ts)
    except ValueError:
        return ts
    text = f"{dt.day} {dt.strftime('%B %Y')}"
    if dt.hour or dt.minute:
        text += f", {dt.strftime('%I:%M %p').lstrip('0').lower()}"
    return text


def format_memories(memories: Sequence[tuple[str | None, str]], *, profile: str | None = None) -> str:
    """The ``{memories}`` block: oldest first, human-readable dates, no scores or ranks.

    Parameters
    ----------
    memories : sequence of (timestamp or None, text)
        In retrieval order; sorted here by timestamp (stable; undated ones keep their place
        after the dated ones). At most 200 are shown (the paper's builder limit).
    profile : str, optional
        Prepended to the block.
    """
    items = list(memories)[:MAX_MEMORIES]
    dated = sorted((m for m in items if m[0]), key=lambda m: str(m[0]))
    undated = [m for m in items if not m[0]]
    lines = []
    for ts, text in dated + undated:
        d = _human_date(ts)
        lines.append(f"- [{d}] {text}" if d else f"- {text}")
    block = "Memories:\n" + ("\n".join(lines) if lines else "(none)")
    return (profile.strip() + "\n\n" + block) if profile else block


def build_answer_prompt(question: str, memories: Sequence[tuple[str | None, str]], *,
                        reference_date: str | None = None, profile: str | None = None) -> str:
    """The paper's LoCoMo answer prompt filled in (see :data:`ANSWER_PROMPT`)."""
    ref = _human_date(reference_date) or DEFAULT_REFERENCE_DATE
    return ANSWER_PROMPT.format(reference_date=ref, memories=format_memories(memories, profile=profile),
                                question=question)


def build_judge_prompt(question: str, gold_answer: str, generated_answer: str, *,
                       category: str | None = None, evidence_context: str | None = None) -> str:
    """The paper's judge prompt. For LoCoMo open-domain questions only the gold answer's part
    before the first semicolon is used (as the paper's preprocessing does)."""
    gold = str(gold_answer)
    if category == "open-domain":
        gold = gold.split(";", 1)[0].strip()
    evidence = (JUDGE_EVIDENCE_COMPONENT.format(evidence_context=evidence_context)
                if evidence_context else "")
    return JUDGE_PROMPT.format(question=question, gold_answer=gold,
                               generated_answer=generated_answer, evidence=evidence)


#: The answer marker, as small models also write it: ``ANSWER:``, ``**Answer:**``, ``Final answer:``.
_ANSWER_MARK = re.compile(r"\**\b(?:final\s+)?answer\b\**\s*:\s*\**", re.I)


def split_answer(text: str) -> tuple[str, bool]:
    """``(answer, marked)``: the text after the last answer marker (``ANSWER:``, any case,
    markdown bold allowed) and True; the whole reply and False when there is none (a reply cut
    off by ``max_tokens`` before its final answer, or a model that ignored the instruction)."""
    marks = list(_ANSWER_MARK.finditer(text or ""))
    if not marks:
        return (text or "").strip(), False
    return text[marks[-1].end():].strip().strip("*").strip(), True


def parse_answer(text: str) -> str:
    """The text after the last ``ANSWER:`` (the whole reply when there is none)."""
    return split_answer(text)[0]


_LABEL_JSON = re.compile(r"""["']?\blabel\b["']?\s*:\s*["']?\s*(CORRECT|WRONG)\b""", re.I)
_LABEL_WORD = re.compile(r"\b(CORRECT|WRONG)\b")

#: How a judge reply was read: its JSON label, its one upper-case label word, or not at all.
VERDICT_KINDS = ("json", "word", "ambiguous", "none")


def read_judgement(text: str) -> tuple[bool | None, str]:
    """``(label, kind)`` for a judge reply; ``kind`` is one of :data:`VERDICT_KINDS`.

    The JSON ``{"label": ...}`` the prompt asks for wins (its last one; any case, quotes
    optional). Otherwise a reply with upper-case CORRECT or WRONG but not both is read as that
    word. A reply with both words (the prompt forbids it) is ``ambiguous`` and one with neither
    is ``none``: both give ``label=None``, counted as unparsed and scored wrong.
    """
    m = _LABEL_JSON.findall(text or "")
    if m:
        return m[-1].upper() == "CORRECT", "json"
    words = set(_LABEL_WORD.findall(text or ""))
    if len(words) == 1:
        return words.pop() == "CORRECT", "word"
    return None, ("ambiguous" if words else "none")


def parse_judgement(text: str) -> bool | None:
    """``True`` for CORRECT, ``False`` for WRONG, ``None`` when unreadable (see
    :func:`read_judgement`)."""
    return read_judgement(text)[0]


class ChatCache:
    """SQLite cache of chat completions: ``key -> reply text`` (thread-safe), optionally backed
    by a JSON-lines reply log that can be committed and carried to another machine.

    Parameters
    ----------
    path : path, optional
        The SQLite file (in memory without it).
    log : path, optional
        A JSON-lines file of ``{"key", "model", "reply"}`` (``key`` as :meth:`ChatClient._key`
        computes it). Read at start (its replies are served like cached ones; a line that does
        not parse, e.g. one cut by a kill, is skipped and counted in :attr:`bad_log_lines`) and
        appended to, flushed, as each reply is stored, so a stopped run keeps every reply.
    """

    def __init__(self, path: str | os.PathLike | None, *, log: str | os.PathLike | None = None):
        self.path = Path(path) if path is not None else None
        self.log = Path(log) if log is not None else None
        self.bad_log_lines = 0
        self.loaded = 0
        self._lock = threading.Lock()
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(self.path) if self.path else ":memory:",
                                   check_same_thread=False)
        with self._lock:
            self._db.execute("CREATE TABLE IF NOT EXISTS chat (key TEXT PRIMARY KEY, reply TEXT)")
            self._db.commit()
        self._logged: set[str] = set()
        self._needs_newline = False
        if self.log is not None:
            self._read_log()

    def _read_log(self) -> None:
        assert self.log is not None
        if not self.log.is_file():
            return
        text = self.log.read_text(encoding="utf-8")
        self._needs_newline = bool(text) and not text.endswith("\n")  # a line cut by a kill
        rows = []
        for line in text.splitlines():
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                key, reply = row["key"], row["reply"]
                if not isinstance(key, str) or not isinstance(reply, str):
                    raise TypeError
            except (ValueError, KeyError, TypeError):
                self.bad_log_lines += 1
                continue
            rows.append((key, reply))
            self._logged.add(key)
        with self._lock:
            self._db.executemany("INSERT OR REPLACE INTO chat VALUES (?, ?)", rows)
            self._db.commit()
        self.loaded = len(self._logged)

    def get(self, key: str) -> str | None:
        with self._lock:
            row = self._db.execute("SELECT reply FROM chat WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def put(self, key: str, reply: str, model: str | None = None) -> None:
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO chat VALUES (?, ?)", (key, reply))
            self._db.commit()
            if self.log is not None and key not in self._logged:
                self.log.parent.mkdir(parents=True, exist_ok=True)
                with self.log.open("a", encoding="utf-8") as f:
                    if self._needs_newline:  # end the cut line first, or the reply is lost
                        f.write("\n")
                        self._needs_newline = False
                    f.write(json.dumps({"key": key, "model": model, "reply": reply},
                                       ensure_ascii=False) + "\n")
                    f.flush()
                self._logged.add(key)

    def import_sqlite(self, source: str | os.PathLike, model: str | None = None) -> int:
        """Copy the replies of another cache's SQLite file (table ``chat(key, reply)``, opened
        read-only) that this cache lacks; returns how many were added. ``model`` is written
        on the log lines (the key already depends on the model)."""
        src = Path(source)
        if not src.is_file():
            raise FileNotFoundError(f"no SQLite reply cache at {src}")
        con = sqlite3.connect(f"file:{src}?mode=ro", uri=True)
        try:
            rows = con.execute("SELECT key, reply FROM chat").fetchall()
        finally:
            con.close()
        added = 0
        for key, reply in rows:
            if not (isinstance(key, str) and isinstance(reply, str) and reply.strip()):
                continue
            if self.get(key) is None or (self.log is not None and key not in self._logged):
                self.put(key, reply, model)
                added += 1
        return added

    def close(self) -> None:
        with self._lock:
            self._db.close()


class ChatClient:
    """A minimal OpenAI-compatible chat client with retries, a cache and bounded concurrency.

    Parameters
    ----------
    base_url : str
        E.g. ``https://api.openai.com/v1`` or ``http://localhost:8000/v1``; a URL that already
        ends in ``/chat/completions`` is used as is.
    model : str
    api_key_env : str
        Environment variable holding the key (not sent when unset or empty).
    cache : ChatCache, optional
    max_retries : int
        Retries after the first attempt on 429, 5xx, timeouts and connection errors.
    timeout : float
        Seconds per request.
    concurrency : int
        Threads used by :meth:`map`.
    temperature : float
    max_tokens : int, optional
    backoff : float
        Seconds before the first retry (doubling, with jitter, at most 30).
    down_after : int
        After this many requests in a row found the endpoint down (after their retries), the
        rest fail at once as ``down`` instead of waiting through their retries.
    """

    def __init__(self, base_url: str, model: str, *, api_key_env: str = "OPENAI_API_KEY",
                 cache: ChatCache | None = None, max_retries: int = 5, timeout: float = 120.0,
                 concurrency: int = 8, temperature: float = 0.0, max_tokens: int | None = None,
                 backoff: float = 1.0, down_after: int = 3):
        if not base_url:
            raise ValueError("an answerer URL is needed (--answerer-url)")
        if not model:
            raise ValueError("a model name is needed (--model)")
        url = base_url.rstrip("/")
        self.url = url if url.endswith("/chat/completions") else url + "/chat/completions"
        self.model = model
        self.api_key = os.environ.get(api_key_env) or None
        self.cache = cache if cache is not None else ChatCache(None)
        self.max_retries = int(max_retries)
        self.timeout = float(timeout)
        self.concurrency = max(1, int(concurrency))
        self.temperature = float(temperature)
        self.max_tokens = max_tokens
        self.backoff = float(backoff)
        self.calls = 0
        self.cache_hits = 0
        self.prompt_tokens = 0  # as the server reports them (``usage``), uncached calls only
        self.completion_tokens = 0
        self.down_after = int(down_after)
        self.failures: dict[str, int] = {}
        self.last_errors: dict[str, str] = {}
        self._down_streak = 0
        self._lock = threading.Lock()

    def _key(self, messages: list[dict]) -> str:
        blob = json.dumps({"model": self.model, "messages": messages,
                           "temperature": self.temperature, "max_tokens": self.max_tokens},
                          sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()

    def _post(self, messages: list[dict]) -> str:
        if self._down_streak >= self.down_after:
            raise QAError(f"{self.url}: not tried, the endpoint was down for the last "
                          f"{self._down_streak} requests", "down")
        body: dict[str, Any] = {"model": self.model, "messages": messages,
                                "temperature": self.temperature}
        if self.max_tokens:
            body["max_tokens"] = int(self.max_tokens)
        data = json.dumps(body).encode("utf-8")
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        last: QAError | None = None
        for attempt in range(self.max_retries + 1):
            if attempt:
                time.sleep(min(30.0, self.backoff * 2 ** (attempt - 1)) * (0.5 + random.random() / 2))
            req = urllib.request.Request(self.url, data=data, headers=headers, method="POST")
            try:
                with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                    raw = resp.read().decode("utf-8", "replace")
            except urllib.error.HTTPError as exc:
                detail = exc.read().decode("utf-8", "replace")[:300]
                err = QAError(f"HTTP {exc.code} from {self.url}: {detail}", "http")
                if exc.code == 429 or exc.code >= 500:
                    last = err
                    continue
                raise err from None
            except http.client.HTTPException as exc:  # not HTTP at all (bad status line, cut)
                last = QAError(f"{self.url}: reply is not HTTP ({exc!r})", "malformed")
                continue
            except (TimeoutError, socket.timeout) as exc:
                last = QAError(f"{self.url}: no reply in {self.timeout:g} s ({exc})", "timeout")
                continue
            except (urllib.error.URLError, ConnectionError, OSError) as exc:
                reason = getattr(exc, "reason", exc)
                if isinstance(reason, (TimeoutError, socket.timeout)):
                    last = QAError(f"{self.url}: no reply in {self.timeout:g} s", "timeout")
                else:
                    last = QAError(f"{self.url}: cannot connect ({reason})", "down")
                continue
            with self._lock:
                self._down_streak = 0
            try:
                payload = json.loads(raw)
            except json.JSONDecodeError:
                last = QAError(f"{self.url}: reply is not JSON: {raw[:200]!r}", "malformed")
                continue
            usage = payload.get("usage") if isinstance(payload, dict) else None
            with self._lock:
                self.calls += 1
                if isinstance(usage, dict):
                    self.prompt_tokens += int(usage.get("prompt_tokens") or 0)
                    self.completion_tokens += int(usage.get("completion_tokens") or 0)
            try:
                content = payload["choices"][0]["message"]["content"]
            except (KeyError, IndexError, TypeError):
                raise QAError(f"unexpected reply from {self.url}: {str(payload)[:300]}",
                              "malformed") from None
            if not isinstance(content, str) or not content.strip():
                raise QAError(f"{self.url}: empty answer", "empty")
            return content
        assert last is not None
        if last.kind == "down":
            with self._lock:
                self._down_streak += 1
        raise QAError(f"{self.url}: giving up after {self.max_retries + 1} attempts: {last}",
                      last.kind)

    def chat(self, prompt: str, *, system: str | None = None) -> str:
        """One completion for a user ``prompt`` (empty system prompt unless given), cached."""
        messages = ([{"role": "system", "content": system}] if system else []) + [
            {"role": "user", "content": prompt}]
        key = self._key(messages)
        hit = self.cache.get(key)
        if hit is not None:
            with self._lock:
                self.cache_hits += 1
            return hit
        reply = self._post(messages)
        self.cache.put(key, reply, self.model)
        return reply

    def map(self, prompts: Sequence[str], *, progress: Callable[[int], None] | None = None,
            tolerate: bool = False) -> list[str | None]:
        """:meth:`chat` for many prompts with at most ``concurrency`` requests in flight;
        identical prompts are sent once. Results in input order.

        With ``tolerate=True`` a prompt whose request fails (:class:`QAError`) gets ``None``
        and its kind is counted in :attr:`failures` (nothing is cached for it, so a rerun tries
        it again); otherwise the first failure is raised."""
        unique = list(dict.fromkeys(prompts))
        results: dict[str, str | None] = {}
        pool = ThreadPoolExecutor(max_workers=self.concurrency)
        try:
            futures = {pool.submit(self.chat, p): p for p in unique}
            for fut in as_completed(futures):
                try:
                    results[futures[fut]] = fut.result()
                except QAError as exc:
                    if not tolerate:
                        raise
                    results[futures[fut]] = None
                    with self._lock:
                        self.failures[exc.kind] = self.failures.get(exc.kind, 0) + 1
                        self.last_errors.setdefault(exc.kind, str(exc)[:300])
                if progress is not None:
                    progress(1)
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
        return [results[p] for p in prompts]

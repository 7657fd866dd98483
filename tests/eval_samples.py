"""Tiny benchmark files and a model-free embedder shared by the harness's tests.

``locomo_file`` / ``lme_file`` / ``beam_root`` write two-conversation LoCoMo, LongMemEval and
BEAM files under a test's ``tmp_path`` (``mutate`` edits the records first, to make them bad);
:class:`HashEmbedder` is a deterministic 16-dimensional embedder (no model).
"""

import hashlib
import json

import numpy as np



def sample(sid):
    return {
        "sample_id": sid,
        "conversation": {
            "speaker_a": "A", "speaker_b": "B",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [{"speaker": "A", "dia_id": "D1:1", "text": "I adopted a dog named Rex."},
                          {"speaker": "B", "dia_id": "D1:2", "text": "Nice, what breed?"}],
            "session_2_date_time": "2:00 pm on 9 May, 2023",
            "session_2": [{"speaker": "A", "dia_id": "D2:1", "text": "Rex is a beagle."},
                          {"speaker": "B", "dia_id": "D2:2", "text": "I went hiking on Sunday."}],
        },
        "qa": [{"question": "What is the dog's name?", "answer": "Rex", "evidence": ["D1:1"],
                "category": 4},
               {"question": "What breed is Rex?", "answer": "beagle", "evidence": ["D2:1"],
                "category": 4}],
    }


def locomo_file(tmp_path, mutate=None):
    data = [sample("conv-1"), sample("conv-2")]
    if mutate is not None:
        mutate(data)
    path = tmp_path / "locomo10.json"
    path.write_text(json.dumps(data))
    return path


def lme_record(qid):
    return {
        "question_id": qid, "question_type": "single-session-user",
        "question": "What is my dog's name?", "answer": "Rex",
        "question_date": "2023/05/20 (Sat) 10:00",
        "haystack_session_ids": ["s1", "s2"],
        "haystack_dates": ["2023/05/08 (Mon) 13:56", "2023/05/09 (Tue) 14:00"],
        "haystack_sessions": [
            [{"role": "user", "content": "My dog is Rex.", "has_answer": True},
             {"role": "assistant", "content": "Nice."}],
            [{"role": "user", "content": "I like hiking."}]],
        "answer_session_ids": ["s1"],
    }


def lme_file(tmp_path, mutate):
    data = [lme_record("q1"), lme_record("q2")]
    mutate(data)
    path = tmp_path / "longmemeval_s.json"
    path.write_text(json.dumps(data))
    return path


def beam_root(tmp_path, mutate_chat=None, mutate_probing=None):
    chat = [{"batch_number": 1, "time_anchor": "March-15-2024", "turns": [
        [{"role": "user", "id": 0, "content": "I plan a launch on April 2."},
         {"role": "assistant", "id": 1, "content": "Good luck with the launch."}]]}]
    probing = {"information_extraction": [
        {"question": "When is the launch?", "answer": "April 2", "source_chat_ids": [0]}]}
    if mutate_chat is not None:
        mutate_chat(chat)
    if mutate_probing is not None:
        mutate_probing(probing)
    root = tmp_path / "100K"
    (root / "1" / "probing_questions").mkdir(parents=True)
    (root / "1" / "chat.json").write_text(json.dumps(chat))
    (root / "1" / "probing_questions" / "probing_questions.json").write_text(json.dumps(probing))
    return root


class HashEmbedder:
    name = "hash"
    fingerprint = "hash-v1"
    dim = 16

    def encode(self, texts, **kw):
        rows = [np.frombuffer(hashlib.sha256(t.encode()).digest()[:16], dtype=np.uint8)
                .astype(np.float32) - 127.5 for t in texts]
        out = np.asarray(rows, dtype=np.float32).reshape(len(texts), self.dim)
        return out / np.linalg.norm(out, axis=1, keepdims=True)

"""Seven memories for the LangChain and LlamaIndex tests: one fact in three paraphrases, the
complementary fact a two-part question needs (``CAT``), and distractors."""

FACTS = ["Alice moved to Lisbon in March for a new robotics job.",
         "Alice relocated to Lisbon in March to start a robotics job.",
         "In March Alice moved to Lisbon, where her new robotics job is.",
         "Alice adopted a grey cat called Pixel.",
         "Alice's sister Maya lives in Porto.",
         "Bob plays the cello in a jazz band.",
         "Alice likes hiking on weekends."]
QUESTION = "When did Alice move to Lisbon and what pet did she adopt?"
CAT, PARAPHRASES = FACTS[3], FACTS[:3]


def run_example(name: str, *, stderr: bool = False):
    """Run ``examples/NAME`` as a user would; its standard output (the run must succeed), and
    with ``stderr=True`` its standard error too."""
    import subprocess
    import sys
    from pathlib import Path

    example = Path(__file__).resolve().parents[1] / "examples" / name
    res = subprocess.run([sys.executable, str(example)], capture_output=True, text=True,
                         timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    return (res.stdout, res.stderr) if stderr else res.stdout

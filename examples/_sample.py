"""The sample data the examples read (a module the examples import, not an example).

Three small sets of memories, each one fact in three paraphrases, the fact that complements it
(the other half of a two-part question) and distractors: a similarity top K fills up with the
paraphrases, and a read policy keeps one of them and adds the complement. And the paragraphs of
a small handbook (examples/data/handbook/), for the document examples.

An example imports what it reads with ``from _sample import ...``, which works when it runs as
``python examples/NAME.py`` (Python puts the script's folder first on its path). A copy of an
example outside this folder needs this file beside it, or the data pasted in its place.
"""

from pathlib import Path

#: Alice: her move to Lisbon (three paraphrases), her cat (the complement), two distractors
FACTS = ["Alice moved to Lisbon in March for a new robotics job.",
         "Alice relocated to Lisbon in March to start a robotics job.",
         "In March Alice moved to Lisbon, where her new robotics job is.",
         "Alice adopted a grey cat called Pixel.",
         "Alice's sister Maya lives in Porto.",
         "Bob plays the cello in a jazz band."]
QUESTION = "When did Alice move to Lisbon and what pet did she adopt?"

#: Priya: her job (three paraphrases), her shifts (the complement), four distractors
PRIYA_FACTS = [
    "Priya works as a nurse at the city hospital.",
    "Priya is a nurse; she works at the city hospital.",
    "At the city hospital, Priya has a job as a nurse.",
    "Priya's hospital shifts start at six in the morning, Monday to Thursday.",
    "Priya adopted a grey cat called Miso last spring.",
    "Priya bakes sourdough bread every Sunday.",
    "Priya's sister lives in Toronto and teaches chemistry.",
    "Priya is planning a trip to Lisbon in October.",
]
PRIYA_QUESTION = "When does Priya start work at the hospital?"

#: (text, ISO time written): Alice's cat (four memories), her brother (the complement), others
DATED_FACTS = [
    ("Alice adopted a grey tabby cat named Tom in March 2023.", "2023-03-12T10:00:00"),
    ("Alice's cat Tom is a grey tabby she adopted in March 2023.", "2023-03-20T18:00:00"),
    ("Alice has a cat called Tom.", "2023-04-02T09:30:00"),
    ("Alice got her cat Tom from the city animal shelter.", "2023-03-12T11:00:00"),
    ("Alice's dog Rex died in 2021; she still misses him.", "2023-01-05T20:00:00"),
    ("Alice walks her neighbour's beagle on Sundays.", "2023-05-14T08:00:00"),
    ("Alice started learning the piano in 2022.", "2023-02-10T19:00:00"),
    ("Alice moved from Sweden to Canada four years ago.", "2023-01-05T20:05:00"),
    ("Alice works as a nurse at a children's hospital.", "2023-02-01T07:00:00"),
    ("Alice ran a charity 5K race in June 2023.", "2023-06-18T12:00:00"),
    ("Alice's brother Ben lives in Stockholm.", "2023-01-05T20:10:00"),
    ("Alice is allergic to peanuts.", "2023-04-22T13:00:00"),
]
DATED_QUESTION = "When did Alice adopt her cat, and where does her brother live?"

#: a small company handbook (13 Markdown files); the question needs a file that another names
HANDBOOK = Path(__file__).resolve().parent / "data" / "handbook"
HANDBOOK_QUESTION = "Who books a 900 euro trip to Oslo, and what is their phone extension?"


def handbook_paragraphs() -> list[tuple[Path, str]]:
    """The handbook's paragraphs (the headings left out), each with its file, in file order."""
    found = []
    for path in sorted(HANDBOOK.glob("*.md")):
        for para in path.read_text(encoding="utf-8").split("\n\n"):
            para = para.strip()
            if para and not para.startswith("#"):
                found.append((path, para))
    return found

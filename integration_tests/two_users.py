"""The second read's two-user fixture, shared by test_second_read_safety.py and
test_second_read_stores.py: per user, a song's passage (near the question) that names its
performer, her passage (far from it: never in a pool of 3) and fillers."""

SONG = "I Can't See Myself Leaving You"
PERFORMER = "Aretha Franklin"
QUESTION = f"Where did the performer of song {SONG} die?"
POOL, K = 3, 2


def passages(user: str) -> list[tuple[str, str, str]]:
    """``(id, title, text)`` of one user's passages."""
    rows = [(f"{user}-song", SONG, f"{SONG} is a song recorded by Aretha Franklin in 1969."),
            (f"{user}-performer", PERFORMER, f"Aretha Louise Franklin ({user}) was an American "
                                             "singer. She died in Detroit, Michigan in 2018."),
            (f"{user}-leaving", "Leaving You", "Leaving You is a song by a band.")]
    rows += [(f"{user}-filler-{i}", f"Filler {i}",
              f"Filler paragraph number {i} about songs and leaving.") for i in range(12)]
    return rows


ROWS = {"A": passages("A"), "B": passages("B")}


def text(title: str, body: str) -> str:
    """What is embedded and stored for a passage."""
    return f"{title}: {body}"

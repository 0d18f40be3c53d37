"""The model server's embeddings: a deterministic test double of the embeddings API.

`hashed_embedding` is no language model: each word of the text (but a few dozen English function
words: "the", "is", "which", ...), and each three-letter piece of it, is hashed (BLAKE2b) to one
of `dimensions` positions with a sign, the counts summed and the
vector normalised to length 1. Texts sharing words or word stems ("allergic" / "allergy",
"peanuts" / "nuts") so point in similar directions and score a higher cosine than unrelated texts;
the same text always gets the same vector, in every process and on every run. It exists so tests
and the offline host can exercise similarity search without a model key.
"""

from __future__ import annotations

import base64
import hashlib
import math
import re
import struct
from dataclasses import dataclass
from typing import Any

from ._offline import count_tokens
from ._wire import RequestRejected, missing_parameter

DEFAULT_EMBEDDING_DIMENSIONS = 256
"""Length of the vectors when a request does not ask for one (``dimensions``)."""
MAX_DIMENSIONS = 8_192
MAX_INPUTS = 2_048
"""Most texts one request may embed (the service's limit)."""
_WORD = re.compile(r"\w+")
# Words every sentence has: left out, or any two texts would look alike through them.
_STOP_WORDS = frozenset({
    "a", "about", "am", "an", "and", "are", "at", "be", "been", "but", "by", "can", "could", "did",
    "do", "does", "for", "from", "give", "had", "has", "have", "how", "i", "if", "in", "is", "it",
    "its", "me", "my", "of", "on", "or", "our", "please", "so", "tell", "that", "the", "their",
    "them", "they", "this", "to", "us", "was", "we", "were", "what", "when", "where", "which", "who",
    "why", "will", "with", "would", "you", "your",
})


@dataclass(frozen=True)
class EmbeddingRequest:
    """One embeddings request the server answered: the model (or Azure deployment) and the texts."""

    model: str
    inputs: tuple[str, ...]
    path: str


def _slot(feature: str, dimensions: int) -> tuple[int, float]:
    digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
    number = int.from_bytes(digest, "little")
    return number % dimensions, (1.0 if number >> 63 else -1.0)


def hashed_embedding(text: str, dimensions: int = DEFAULT_EMBEDDING_DIMENSIONS) -> list[float]:
    """The text's vector (see the module): unit length, or all zeros for a text without words."""
    vector = [0.0] * dimensions
    for word in _WORD.findall(text.casefold()):
        if word in _STOP_WORDS:
            continue
        features = [f"w:{word}"]
        padded = f"<{word}>"
        features += [f"g:{padded[i : i + 3]}" for i in range(len(padded) - 2)]
        for feature in features:
            index, sign = _slot(feature, dimensions)
            vector[index] += sign * (2.0 if feature.startswith("w:") else 1.0)
    norm = math.sqrt(math.fsum(v * v for v in vector))
    return [v / norm for v in vector] if norm else vector


def parse_embeddings(body: dict[str, Any], deployment: str | None) -> tuple[str, list[str], int, str]:
    """(model, texts, dimensions, encoding format) of a request body, as the service checks it."""
    model = deployment or body.get("model")
    if not isinstance(model, str) or not model:
        raise missing_parameter("model")
    raw = body.get("input")
    if raw is None:
        raise missing_parameter("input")
    texts = [raw] if isinstance(raw, str) else raw
    if not isinstance(texts, list) or not texts or not all(isinstance(t, str) and t for t in texts):
        raise RequestRejected("'input' must be a non-empty string or a list of them.", param="input")
    if len(texts) > MAX_INPUTS:
        raise RequestRejected(f"'input' holds more than {MAX_INPUTS} texts.", param="input")
    dimensions = body.get("dimensions", DEFAULT_EMBEDDING_DIMENSIONS)
    if type(dimensions) is not int or not 0 < dimensions <= MAX_DIMENSIONS:
        raise RequestRejected(f"'dimensions' must be 1 to {MAX_DIMENSIONS}.", param="dimensions")
    encoding = body.get("encoding_format", "float")
    if encoding not in ("float", "base64"):
        raise RequestRejected("'encoding_format' must be 'float' or 'base64'.", param="encoding_format")
    return model, texts, dimensions, encoding


def embeddings_answer(model: str, texts: list[str], vectors: list[Any], encoding: str) -> dict[str, Any]:
    """The service's answer: one ``embedding`` object per text, in order, and the usage."""
    data = []
    for index, vector in enumerate(vectors):
        value = vector
        if encoding == "base64" and isinstance(vector, list):
            value = base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode("ascii")
        data.append({"object": "embedding", "index": index, "embedding": value})
    tokens = sum(count_tokens(t) for t in texts)
    return {
        "object": "list",
        "data": data,
        "model": model,
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }

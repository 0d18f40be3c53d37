"""The model server's `/embeddings` (and Azure's deployment route): deterministic unit vectors in
which related texts score higher than unrelated ones, the SDK's base64 default decoded, the
service's refusals, and a count of the requests for tests to assert on."""

from __future__ import annotations

import math

import openai
import pytest
from openai import AzureOpenAI, OpenAI

from agents.testing import ModelServer, hashed_embedding


def _cosine(a: list[float], b: list[float]) -> float:
    return math.fsum(x * y for x, y in zip(a, b, strict=True))


def test_vectors_are_deterministic_unit_length_and_related_texts_score_higher(
    client: OpenAI, model: ModelServer
) -> None:
    texts = ["The user is allergic to peanuts", "Which nuts give me an allergy?", "Weather in Lisbon"]
    answer = client.embeddings.create(model="emb", input=texts)  # the SDK asks for base64 itself
    fact, paraphrase, other = (d.embedding for d in answer.data)
    assert fact == pytest.approx(hashed_embedding(texts[0]), abs=1e-6)
    assert math.isclose(math.fsum(v * v for v in fact), 1.0, rel_tol=1e-5)
    assert _cosine(fact, paraphrase) > 2 * abs(_cosine(fact, other))
    again = client.embeddings.create(model="emb", input=texts[0], encoding_format="float", dimensions=64)
    assert again.data[0].embedding == hashed_embedding(texts[0], 64)
    assert answer.usage.prompt_tokens == sum(len(t.split()) for t in texts)
    assert [(r.model, len(r.inputs)) for r in model.embedding_requests] == [("emb", 3), ("emb", 1)]


def test_azure_deployment_route(model: ModelServer) -> None:
    with AzureOpenAI(azure_endpoint=model.url, api_key="k", api_version="2024-10-21", max_retries=0) as azure:
        answer = azure.embeddings.create(model="my-deployment", input="hello", encoding_format="float")
    assert answer.data[0].embedding == hashed_embedding("hello")
    assert model.embedding_requests[0].model == "my-deployment"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"input": "x"}, "Missing required parameter: 'model'"),
        ({"model": "m"}, "Missing required parameter: 'input'"),
        ({"model": "m", "input": [""]}, "'input' must be"),
        ({"model": "m", "input": "x", "dimensions": 0}, "'dimensions' must be"),
        ({"model": "m", "input": "x", "encoding_format": "hex"}, "'encoding_format' must be"),
    ],
)
def test_bad_requests_are_refused(
    client: OpenAI, model: ModelServer, body: dict[str, object], message: str
) -> None:
    with pytest.raises(openai.BadRequestError, match=message):
        client.post("/embeddings", body=body, cast_to=object)
    assert model.embedding_requests == []


def test_a_handler_overrides_the_vectors(client: OpenAI, model: ModelServer) -> None:
    model.embedding_handler = lambda text, dims: ["not", "numbers"]
    answer = client.post("/embeddings", body={"model": "m", "input": ["a", "b"]}, cast_to=object)
    assert [d["embedding"] for d in answer["data"]] == [["not", "numbers"]] * 2  # type: ignore[index]

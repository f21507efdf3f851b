"""Issue 13, items 4 and 5: POST /api/endpoints/<name>/score on a real serving process, on a real
resnet18 exported to ONNX: the same probabilities as ONNX Runtime and torch, multipart and JSON,
images converted as training did, and every bad request refused with a status and a reason."""
import base64
import http.client
import json
import socket
from pathlib import Path
from urllib.parse import urlparse

import numpy as np
import onnxruntime
import pytest
from django.db.models import F

from designer.engine import statuses
from designer.pipelines.models import Endpoint, ModelVersion
from sdk.formats import onnx_model
from sdk.preprocess import Preprocessor, load_image
from tests.serving.conftest import MAX_IMAGE_MB, MAX_REQUEST_MB
from tests.serving.helpers import as_json, deploy, multipart, png, register, request, score_url

TOLERANCE = 1e-5


def onnxruntime_probabilities(model, data: bytes) -> list[float]:
    session = onnxruntime.InferenceSession(str(model.folder / onnx_model.ONNX_FILE), providers=["CPUExecutionProvider"])
    preprocess = Preprocessor(json.loads((model.folder / onnx_model.PREPROCESSING_FILE).read_text()))
    logits = session.run(None, {onnx_model.INPUT_NAME: preprocess(load_image(data))[None]})[0][0].astype(np.float64)
    e = np.exp(logits - logits.max())
    return (e / e.sum()).tolist()


def probabilities(prediction: dict, classes) -> list[float]:
    return [prediction["probabilities"][c] for c in classes]


def test_it_answers_the_probabilities_of_onnxruntime_and_torch_for_three_images_in_order(serving, endpoint, models):
    model = models[0]
    images = [png((40, 30), seed=1), png((64, 64), seed=2), png((100, 70), seed=3)]
    body, content_type = multipart([("image", "a.png", images[0]), ("other", "b.png", images[1]), ("image", "c.png", images[2])])
    status, answer, headers = request(score_url(serving, endpoint), body, content_type, key=endpoint.primary_key)
    assert status == 200, answer
    assert (answer["endpoint"], answer["model"], answer["version"], answer["classes"]) == ("digits", "digits", 1, model.classes)
    assert len(answer["predictions"]) == 3
    for data, prediction in zip(images, answer["predictions"]):
        got = probabilities(prediction, model.classes)
        assert np.allclose(got, onnxruntime_probabilities(model, data), atol=TOLERANCE, rtol=0)
        assert np.allclose(got, model.torch_probabilities(data), atol=TOLERANCE, rtol=0)
        assert prediction["label"] == model.classes[int(np.argmax(got))]
    assert headers["X-Served-By"].endswith(f":{serving.proc.pid}")


def test_it_takes_base64_images_in_json_one_or_several_and_data_urls(serving, endpoint, models):
    images = [png(seed=4), png(seed=5)]
    url = score_url(serving, endpoint)
    status, several, _ = request(url, *as_json(images), key=endpoint.secondary_key)
    assert status == 200, several
    one = json.dumps({"image": "data:image/png;base64," + base64.encodebytes(images[1]).decode()}).encode()
    status, single, _ = request(url, one, "application/json", key=endpoint.primary_key)
    assert status == 200, single
    assert [len(several["predictions"]), len(single["predictions"])] == [2, 1]
    for data, prediction in zip(images, several["predictions"]):
        assert np.allclose(probabilities(prediction, models[0].classes), models[0].torch_probabilities(data), atol=TOLERANCE, rtol=0)
    assert single["predictions"][0] == several["predictions"][1]


def test_grayscale_and_rgba_images_are_converted_as_training_did(serving, endpoint, models):
    images = [png((50, 50), "L", seed=6), png((50, 60), "RGBA", seed=7)]
    body, content_type = multipart([("gray", "gray.png", images[0]), ("rgba", "rgba.png", images[1])])
    status, answer, _ = request(score_url(serving, endpoint), body, content_type, key=endpoint.primary_key)
    assert status == 200, answer
    for data, prediction in zip(images, answer["predictions"]):
        assert np.allclose(probabilities(prediction, models[0].classes), models[0].torch_probabilities(data), atol=TOLERANCE, rtol=0)


def test_bad_images_are_refused_naming_the_image_and_why(serving, endpoint):
    url, key = score_url(serving, endpoint), endpoint.primary_key
    good, truncated = png(seed=8), png((64, 64), seed=9)[:300]
    huge = png((700, 700), seed=10)  # random pixels do not compress: over 1 MB
    assert len(huge) > MAX_IMAGE_MB * 1024 * 1024
    cases = [
        ([("image", "a.png", good), ("image", "notes.txt", b"hello, not an image")], 400, ["image 2 of 2", "notes.txt", "not an image"]),
        ([("image", "cut.png", truncated)], 400, ["image 1 of 1", "cut.png", "truncated"]),
        ([("image", "big.png", huge)], 413, ["big.png", f"the limit is {MAX_IMAGE_MB} MB"]),
    ]
    for files, expected, words in cases:
        status, answer, _ = request(url, *multipart(files), key=key)
        assert status == expected, answer
        assert all(w in answer["error"] for w in words), answer
        assert answer["filename"] == files[-1][1] and answer["index"] == len(files) - 1
    status, answer, _ = request(url, *as_json([good, b"GIF89a"]), key=key)
    assert status == 400 and answer["index"] == 1 and "image 2 of 2" in answer["error"], answer


def test_bad_requests_are_refused_with_a_reason(serving, endpoint):
    url, key = score_url(serving, endpoint), endpoint.primary_key
    too_big = b"x" * (MAX_REQUEST_MB * 1024 * 1024 + 1)
    cases = [
        (too_big, "image/png", 413, f"the limit is {MAX_REQUEST_MB:.1f} MB"),
        (b"", "", 400, "the request has no image"),
        (b"{not json", "application/json", 400, "not valid JSON"),
        (b'{"images": ["***"]}', "application/json", 400, "image 1 of 1: not valid base64"),
        (b'{"pictures": []}', "application/json", 400, '"images"'),
        (png(), "application/x-www-form-urlencoded", 400, "curl -F 'image=@file.png'"),
        (b"--x\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nab", "multipart/form-data; boundary=x", 400, "closing boundary"),
    ]
    for body, content_type, expected, words in cases:
        status, answer, _ = request(url, body, content_type, key=key)
        assert status == expected and words in answer["error"], (words, answer)


def test_a_missing_or_wrong_key_is_refused_with_401(serving, endpoint):
    url, body = score_url(serving, endpoint), png(seed=11)
    for key, words in ((None, "needs its key"), ("", "needs its key"), ("not-the-key", "wrong key"),
                       (endpoint.primary_key + "x", "wrong key")):
        status, answer, headers = request(url, body, "image/png", key=key)
        assert status == 401 and words in answer["error"], answer
        assert headers["WWW-Authenticate"] == "Bearer"
    status, answer, _ = request(url, body, "image/png", headers={"Authorization": endpoint.primary_key})  # no "Bearer"
    assert status == 401, answer
    assert request(url, body, "image/png", key=endpoint.secondary_key)[0] == 200


def test_a_regenerated_key_replaces_the_old_one(serving, endpoint):
    url, body, old = score_url(serving, endpoint), png(seed=12), endpoint.primary_key
    Endpoint.objects.filter(pk=endpoint.pk).update(primary_key="a-new-key-" + "k" * 30, revision=F("revision") + 1)
    endpoint.refresh_from_db()
    serving.wait_serving(endpoint)  # the serving process has read the new revision
    status, answer, _ = request(url, body, "image/png", key=old)
    assert status == 401 and "wrong key" in answer["error"]
    assert request(url, body, "image/png", key=endpoint.primary_key)[0] == 200


def test_an_unknown_endpoint_or_path_is_404(serving, endpoint):
    status, answer, _ = request(score_url(serving, "nobody"), png(), "image/png", key=endpoint.primary_key)
    assert status == 404 and answer["error"] == "no endpoint named 'nobody'"
    status, answer, _ = request(serving.url + "/api/nothing", method="GET")
    assert status == 404 and "POST /api/endpoints/<name>/score" in answer["error"]


def test_a_version_not_ready_answers_503_until_it_is(serving, transactional_db, users, models):
    version = register(users["owner"], models[0], "later")
    ModelVersion.objects.filter(pk=version.pk).update(status=statuses.PREPARING, has_onnx=False)
    e = deploy(version, "later")
    url, body = score_url(serving, e), png(seed=13)
    status, answer = 404, None
    while status == 404:  # until the serving process has read the new endpoint
        status, answer, headers = request(url, body, "image/png", key=e.primary_key)
    assert status == 503 and "version 1 of later is still being prepared" in answer["error"], answer
    assert headers["Retry-After"] == "1"
    ModelVersion.objects.filter(pk=version.pk).update(status=statuses.READY, has_onnx=True)
    serving.wait_serving(e)
    assert request(url, body, "image/png", key=e.primary_key)[0] == 200


@pytest.mark.parametrize("broken", ["missing", "corrupt"])
def test_a_version_that_cannot_be_loaded_is_reported_by_the_replica(serving, transactional_db, users, models, settings, broken):
    version = register(users["owner"], models[0], f"broken-{broken}")
    onnx = Path(settings.ARTIFACT_ROOT) / version.folder / onnx_model.ONNX_FILE
    onnx.unlink() if broken == "missing" else onnx.write_bytes(b"not a graph")
    e = deploy(version, f"broken-{broken}")
    health = {}
    while not (health.get(e.name) or {}).get("error"):
        health = serving.health()["endpoints"]
    assert health[e.name]["version"] is None and f"version 1 of broken-{broken} could not be loaded" in health[e.name]["error"]
    status, answer, _ = request(score_url(serving, e), png(), "image/png", key=e.primary_key)
    assert status == 503 and "could not be loaded" in answer["error"], answer


def test_concurrent_requests_share_model_calls_and_a_lone_request_has_one_to_itself(serving, endpoint, models):
    url, key = score_url(serving, endpoint), endpoint.primary_key
    images = [png(seed=30 + i) for i in range(16)]

    def calls():
        return serving.health()["batching"]["digits"]

    before = calls()
    for data in images[:4]:
        assert request(url, data, "image/png", key=key)[0] == 200
    after = calls()
    assert (after["calls"] - before["calls"], after["images"] - before["images"]) == (4, 4)
    # 16 requests at the same moment: each sent but for its last byte on a connection of its own, then
    # the 16 last bytes in one go (threads started at a barrier reached the server one after the other
    # when the machine was busy, each scored before the next arrived: 16 calls, seen once)
    connections = [http.client.HTTPConnection("127.0.0.1", serving.port, timeout=60) for _ in images]
    for conn, data in zip(connections, images):
        conn.putrequest("POST", urlparse(url).path)
        for name, value in (("Content-Type", "image/png"), ("Authorization", f"Bearer {key}"),
                            ("Content-Length", str(len(data)))):
            conn.putheader(name, value)
        conn.endheaders()
        conn.send(data[:-1])
    for conn, data in zip(connections, images):
        conn.send(data[-1:])
    answers = []
    for conn in connections:
        response = conn.getresponse()
        answers.append((response.status, json.loads(response.read()), response.headers))
        conn.close()
    batched = calls()
    assert batched["images"] - after["images"] == 16
    assert batched["calls"] - after["calls"] < 16, (after, batched)  # some calls scored several requests' images
    for data, (status, answer, _) in zip(images, answers):  # each request got its own image's answer
        assert status == 200
        got = [answer["predictions"][0]["probabilities"][c] for c in models[0].classes]
        assert np.allclose(got, models[0].torch_probabilities(data), atol=TOLERANCE, rtol=0)


def test_a_request_over_the_size_limit_is_refused_before_its_body_is_sent(serving, endpoint):
    declared = 100 * 1024 * 1024
    with socket.create_connection(("127.0.0.1", serving.port), timeout=30) as s:
        s.sendall(f"POST /api/endpoints/digits/score HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {endpoint.primary_key}\r\n"
                  f"Content-Type: image/png\r\nContent-Length: {declared}\r\n\r\n".encode())  # and not one byte of it
        answer = b""
        while b"}" not in answer:
            chunk = s.recv(65536)
            assert chunk, answer
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 413")
    assert json.loads(body)["error"] == f"the request is 100.0 MB, the limit is {MAX_REQUEST_MB:.1f} MB per request"


def test_a_switch_to_a_version_that_cannot_be_loaded_keeps_the_old_one_answering(serving, endpoint, models, settings):
    v2 = register(endpoint.owner, models[1], "digits", number=2, registered=endpoint.version.model)
    (Path(settings.ARTIFACT_ROOT) / v2.folder / onnx_model.ONNX_FILE).write_bytes(b"not a graph")
    Endpoint.objects.filter(pk=endpoint.pk).update(version=v2, revision=F("revision") + 1)
    health = {}
    while not health.get("error"):
        health = serving.health()["endpoints"]["digits"]
    assert "version 2 of digits could not be loaded" in health["error"]
    assert health["version"] == endpoint.version_id and health["revision"] == endpoint.revision  # still version 1's
    status, answer, _ = request(score_url(serving, endpoint), png(seed=40), "image/png", key=endpoint.primary_key)
    assert status == 200 and answer["version"] == 1, answer

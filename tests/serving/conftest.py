import pytest
import torch

from tests.conftest import TEST_DATA

# tests.serving.helpers imports the app's models: only once Django is set up (inside the fixtures)

# small limits, so that the tests' "huge" image and request stay small
MAX_IMAGE_MB, MAX_REQUEST_MB = 1, 4


@pytest.fixture(scope="session")
def models(tmp_path_factory):
    """Two versions of a resnet18 at 64 px (random weights, seeds 1 and 2), exported to ONNX."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)  # the machine's cores are shared with the serving processes
    from tests.serving.helpers import Model

    work = tmp_path_factory.mktemp("serving-models")
    yield Model(work, seed=1), Model(work, seed=2)
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def serving(django_db_setup, django_db_blocker):
    """One serving process for a test module (each test deploys its own endpoints)."""
    from tests.serving.helpers import Serving

    with django_db_blocker.unblock():
        process = Serving(TEST_DATA, SERVING_MAX_IMAGE_MB=str(MAX_IMAGE_MB), SERVING_MAX_REQUEST_MB=str(MAX_REQUEST_MB))
    try:
        yield process.wait_up()
    finally:
        process.stop()


@pytest.fixture
def endpoint(transactional_db, users, models, serving):
    """Version 1 of "digits" deployed as the endpoint "digits", served."""
    from tests.serving.helpers import deploy, register

    version = register(users["owner"], models[0], "digits")
    e = deploy(version, "digits")
    serving.wait_serving(e)
    return e

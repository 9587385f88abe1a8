"""One Dask LocalCluster of 2 single-threaded worker processes for the campaign
tests (started once: a cluster takes seconds to start on a busy machine)."""

import os

import pytest

from simkit.campaign import connect
from tests.campaign.variants import KILL_DIR


@pytest.fixture(scope="package")
def kill_dir(tmp_path_factory):
    """The folder the ``dies_once`` variant reads; the workers inherit its name."""
    folder = tmp_path_factory.mktemp("kill")
    os.environ[KILL_DIR] = str(folder)
    yield folder
    del os.environ[KILL_DIR]


@pytest.fixture(scope="package")
def client(kill_dir):
    with connect(workers=2) as client:
        yield client

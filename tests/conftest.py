"""Fixtures shared by the test modules."""

import os
from pathlib import Path

import pytest

from dlobd.spec import validation

CATALOG_ENV = "DLOBD_CATALOG"


@pytest.fixture(scope="session")
def catalog():
    """(experiments by id, claims by id) of the papers' catalog, which the project does not
    ship: .ci/run names its directory in DLOBD_CATALOG. Tests that cross-check the specs
    against it skip without it."""
    directory = os.environ.get(CATALOG_ENV)
    if not directory:
        pytest.skip(f"{CATALOG_ENV} is not set: it names the directory of the papers' catalog "
                    "(experiments.yaml, claims.yaml) the specs are cross-checked against")
    if not Path(directory, "claims.yaml").is_file():
        pytest.fail(f"{CATALOG_ENV}={directory}: no claims.yaml there")
    return validation.load_catalog(Path(directory))

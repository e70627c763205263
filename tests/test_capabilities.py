"""What a cluster can provide, as dlobd-env.sh records it (dlobd.cluster.capabilities)."""

import pytest

from dlobd.cluster import capabilities


@pytest.mark.parametrize("installed, name, why", [
    ("mnist fashion-mnist cifar10-synthetic", "cifar10",
     "needs data set cifar10: the datasets role installed mnist, fashion-mnist, cifar10-synthetic "
     "(datasets_names; role datasets says where each comes from)"),
    ("mnist fashion-mnist cifar10-synthetic", "cifar10-synthetic", None),
    ("", "mnist", "needs data set mnist: the datasets role installed none "
                  "(datasets_names; role datasets says where each comes from)"),
    (None, "cifar10", None),  # a prefix provisioned before it recorded its data sets: the launcher looks
])
def test_a_data_set_the_datasets_role_did_not_install_is_named_with_what_it_did(monkeypatch, installed, name, why):
    if installed is None:
        monkeypatch.delenv("DLOBD_DATASETS", raising=False)
    else:
        monkeypatch.setenv("DLOBD_DATASETS", installed)
    monkeypatch.setattr(capabilities.provenance, "prefix_env", lambda: {})
    assert capabilities.dataset_missing(name) == why

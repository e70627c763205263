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
    ("mnist", "imagenet-synthetic", None),  # made by the workload itself, not by the role
])
def test_a_data_set_the_datasets_role_did_not_install_is_named_with_what_it_did(monkeypatch, installed, name, why):
    if installed is None:
        monkeypatch.delenv("DLOBD_DATASETS", raising=False)
    else:
        monkeypatch.setenv("DLOBD_DATASETS", installed)
    monkeypatch.setattr(capabilities.provenance, "prefix_env", lambda: {})
    assert capabilities.dataset_missing(name) == why


def test_the_data_sets_the_role_installs_are_its_task_files():
    tasks = capabilities.ROOT / "playbooks/roles/datasets/tasks"
    helpers = {"main", "download-idx", "install-registry", "install-apptainer"}
    assert set(capabilities.ROLE_DATASETS) == {p.stem for p in tasks.glob("*.yml")} - helpers


def test_a_paper_image_leaves_out_what_its_build_skips(monkeypatch, tmp_path):
    settings = {"DLOBD_PROFILE": "paper", "DLOBD_INSTALL_METHOD": "apptainer", "DLOBD_PAPER_ENV": "tfos-bigdl"}
    monkeypatch.setattr(capabilities.provenance, "stack_setting", settings.get)
    left = capabilities.image_left_out()
    assert sorted(left) == ["mpi"] and not any(present for present, _ in left.values())
    assert left["mpi"][1].startswith("the image of containers/paper-tfos-bigdl.def leaves MPI (and hr_reduce) out "
                                     "(its build skips the role's tag mpi)")
    # an image whose build skips TF-gRPC-Bench too leaves the gRPC benchmark out
    containers = tmp_path / "containers"
    containers.mkdir()
    (containers / "paper-tfos-bigdl.def").write_text("    ansible-playbook --skip-tags mpi,grpc_bench playbooks/install.yml\n")
    monkeypatch.setattr(capabilities, "CONTAINERS", containers)
    monkeypatch.setattr(capabilities, "ROOT", tmp_path)
    assert sorted(capabilities.image_left_out()) == ["grpc-cpp", "mpi"]
    assert capabilities.image_left_out()["grpc-cpp"][1].startswith(
        "the image of containers/paper-tfos-bigdl.def leaves TF-gRPC-Bench out (its build skips the role's tag grpc_bench)")
    # the CaffeOnSpark image's build skips nothing; a registry install has no image
    settings["DLOBD_PAPER_ENV"] = "caffeonspark"
    assert capabilities.image_left_out() == {}
    settings.update(DLOBD_PAPER_ENV="tfos-bigdl", DLOBD_INSTALL_METHOD="registry")
    assert capabilities.image_left_out() == {}

"""The profiles' version sets (dlobd_profile_versions of the playbooks' group_vars): each is what its
Spack environment pins, and the settings the roles use follow the host's set, rendered by the real
ansible-playbook on this machine (connection local; nothing is installed): versions, JAVA_HOME,
HADOOP_HOME, the JVM options, dlobd-env.sh. The modern profile renders what it always did; the
paper profile's spack method takes Java 8 from the Spack environment, without Java 17's options.
A set whose TensorFlowOnSpark runs in a Python the site gives (role python_env's
python_env_version_bounds) has its TensorFlow and TensorFlowOnSpark there, not in Spack: the role
runs that Python (fakes here, and this machine's own) and stops naming what it found."""

import json
import os
import platform
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from dlobd import ROOT, playbook_settings

PLAYBOOKS = ROOT / "playbooks"
SPACK_ENVS = ROOT / "spack-envs"
GROUP_VARS = playbook_settings()
ANSIBLE_PLAYBOOK = Path(sys.executable).with_name("ansible-playbook")
# A version set's entries and the Spack package each is the pin of
PACKAGES = {"java": "openjdk", "hadoop": "hadoop", "spark": "spark", "tensorflow": "py-tensorflow",
            "tensorflowonspark": "py-tensorflowonspark", "mpi4py": "py-mpi4py", "bigdl": "bigdl",
            "tf_cnn_benchmarks": "tf-cnn-benchmarks"}
PINNED = re.compile(r"^([\w-]+)@([^\s~+^]+)")
# The sets whose TensorFlowOnSpark runs in the site's Python (DLOBD_TFOS_PYTHON), which the role
# python_env checks: their entries of SITE_PYTHON are versions that Python carries, no Spack pins
PYTHON_ENV = yaml.safe_load((PLAYBOOKS / "roles" / "python_env" / "defaults" / "main.yml").read_text())
SITE_PYTHON_SETS = tuple(PYTHON_ENV["python_env_version_bounds"])
SITE_PYTHON = ("tensorflow", "tensorflowonspark")
OPENS = "--add-opens=java.base/java.lang=ALL-UNNAMED"
# What only provisioning finds (role facts, the host's memory), as placeholders
PROVISIONED = {"spark_home": "/FACT/spark", "spark_pythonpath": "", "hadoop_classpath": "/FACT/classpath",
               "dl_libs_bigdl_jar": "/FACT/bigdl.jar", "dl_libs_bigdl_core_jar": "/FACT/core.jar",
               "dlobd_yarn_least_memory_mb": 1024, "dlobd_yarn_least_vcores": 2, "apptainer_image_path": "/FACT/image.sif"}
PREFIX = "/prefix"


def spack_pins(spack_yaml: Path) -> dict[str, str]:
    """package -> the version its first spec with one pins, e.g. py-tensorflow@2.5~cuda: 2.5."""
    pins = {}
    for spec in yaml.safe_load(spack_yaml.read_text())["spack"]["specs"]:
        if match := PINNED.match(spec):
            pins.setdefault(match[1], match[2])
    return pins


def drift(sets: dict, envs: Path, site_python_sets=SITE_PYTHON_SETS) -> list[str]:
    """Where the version sets and the Spack environments of `envs` disagree. In a set of
    `site_python_sets` the SITE_PYTHON entries must be stated and must not be Spack pins (a
    second TensorFlow that nothing runs, or a set that took Spack's for the site's)."""
    problems = []
    for name in sorted(set(sets) | {p.name for p in envs.iterdir() if (p / "spack.yaml").is_file()}):
        if name not in sets:
            problems.append(f"spack-envs/{name} has no version set")
            continue
        if not (envs / name / "spack.yaml").is_file():
            problems.append(f"version set {name} has no spack-envs/{name}/spack.yaml")
            continue
        pins = spack_pins(envs / name / "spack.yaml")
        for key, package in PACKAGES.items():
            pinned = pins.get(package)
            if package == "openjdk" and pinned:
                pinned = pinned.removeprefix("1.").split(".")[0]  # 1.8.0 is Java 8
            stated = sets[name].get(key)
            if name in site_python_sets and key in SITE_PYTHON:
                if pinned is not None:
                    problems.append(f"{name}: {key} {stated} comes from the site's Python (DLOBD_TFOS_PYTHON), "
                                    f"but spack.yaml pins {package}@{pinned}")
                elif stated is None:
                    problems.append(f"{name}: no {key} version for the site's Python (DLOBD_TFOS_PYTHON) to carry")
                continue
            if (None if stated is None else str(stated)) != pinned:
                problems.append(f"{name}: {key} {stated} in dlobd_profile_versions, {package}@{pinned} in spack.yaml")
    return problems


def test_every_version_set_is_what_its_spack_environment_pins():
    assert drift(GROUP_VARS["dlobd_profile_versions"], SPACK_ENVS) == []
    # the sampler's psutil is not a profile's, but the modern environment pins it too
    assert spack_pins(SPACK_ENVS / "modern" / "spack.yaml")["py-psutil"] == GROUP_VARS["dlobd_psutil_version"]


def test_a_version_set_drifting_from_its_environment_is_named(tmp_path):
    sets = yaml.safe_load(yaml.safe_dump(GROUP_VARS["dlobd_profile_versions"]))
    sets["paper-tfos-bigdl"]["spark"] = "2.1.1"
    del sets["paper-tfos-bigdl"]["tensorflow"]
    del sets["paper-mmlspark"]["java"]
    sets["paper-gone"] = {"java": 8}
    (tmp_path / "paper-new").mkdir()
    (tmp_path / "paper-new" / "spack.yaml").write_text("spack:\n  specs: [spark@9.9.9]\n")
    for name in GROUP_VARS["dlobd_profile_versions"]:
        (tmp_path / name).mkdir()
        (tmp_path / name / "spack.yaml").write_bytes((SPACK_ENVS / name / "spack.yaml").read_bytes())
    # Spack's TensorFlowOnSpark back in the environment whose TFoS is the site Python's
    tfos = tmp_path / "paper-tfos-bigdl" / "spack.yaml"
    tfos.write_text(tfos.read_text().replace("  - hadoop@2.7.3\n", "  - hadoop@2.7.3\n  - py-tensorflowonspark@1.0.8\n"))
    assert drift(sets, tmp_path) == [
        "version set paper-gone has no spack-envs/paper-gone/spack.yaml",
        "paper-mmlspark: java None in dlobd_profile_versions, openjdk@8 in spack.yaml",
        "spack-envs/paper-new has no version set",
        "paper-tfos-bigdl: spark 2.1.1 in dlobd_profile_versions, spark@2.1.0 in spack.yaml",
        "paper-tfos-bigdl: no tensorflow version for the site's Python (DLOBD_TFOS_PYTHON) to carry",
        "paper-tfos-bigdl: tensorflowonspark 1.0.8 comes from the site's Python (DLOBD_TFOS_PYTHON), but "
        "spack.yaml pins py-tensorflowonspark@1.0.8",
    ]


def test_the_site_python_s_versions_are_no_spack_pins_of_its_environment():
    """paper-tfos-bigdl drops Spack's py-tensorflow and py-tensorflowonspark roots; a
    py-tensorflow stays only as tf-cnn-benchmarks' dependency (a `^` constraint, no pin)."""
    assert SITE_PYTHON_SETS == ("paper-tfos-bigdl",)
    pins = spack_pins(SPACK_ENVS / "paper-tfos-bigdl" / "spack.yaml")
    assert "py-tensorflow" not in pins and "py-tensorflowonspark" not in pins
    # were its TensorFlow Spack's, the environment would lack the pins
    problems = drift(GROUP_VARS["dlobd_profile_versions"], SPACK_ENVS, site_python_sets=())
    assert problems == [
        "paper-tfos-bigdl: tensorflow 1.4.0 in dlobd_profile_versions, py-tensorflow@None in spack.yaml",
        "paper-tfos-bigdl: tensorflowonspark 1.0.8 in dlobd_profile_versions, py-tensorflowonspark@None in spack.yaml"]


def ansible(tmp_path: Path, playbook: str, hosts: dict, extra: dict | None = None) -> subprocess.CompletedProcess:
    """Run `playbook` (text) on `hosts` (name -> host variables), every host this machine, with the
    playbooks' roles (each play loads the dlobd role, as the playbooks' plays do)."""
    (tmp_path / "play.yml").write_text(playbook)
    first = next(iter(hosts))
    local = {"ansible_connection": "local", "dlobd_cluster_address": "127.0.0.1"}
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump({"all": {
        "hosts": {name: {**local, **values} for name, values in hosts.items()},
        "children": {"namenode": {"hosts": {first: None}}, "resourcemanager": {"hosts": {first: None}},
                     "workers": {"hosts": {first: None}}}}}))
    env = {**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_ROLES_PATH": str(PLAYBOOKS / "roles"),
           "ANSIBLE_NOCOLOR": "1"}
    return subprocess.run([str(ANSIBLE_PLAYBOOK), "-i", str(tmp_path / "hosts.yml"), str(tmp_path / "play.yml"),
                           "-e", json.dumps({"dlobd_prefix": PREFIX, **(extra or {})})],
                          capture_output=True, text=True, env=env, timeout=300)


# what the registry method's paper set changes (the tests of that set read them)
REGISTRY_NAMES = ["java_packages", "java_image_home", "python_env_tfos_own", "hadoop_artifacts", "dl_libs_bigdl_0x_url",
                  "preflight_registry_paper"]
RENDER = """
- hosts: all
  gather_facts: true
  gather_subset: [min]
  roles:  # for their defaults alone
    - dlobd
    - {role: hadoop, when: false}
    - {role: python_env, when: false}
    - {role: apptainer, when: false}
    - {role: java, when: false}
    - {role: dl_libs, when: false}
    - {role: spark, when: false}
    - {role: preflight, when: false}
    - {role: spack, when: false}
    - {role: stack_env, when: false}
    - {role: tf_cnn_benchmarks, when: false}
  tasks:
    - ansible.builtin.copy:
        dest: "{{ out }}/{{ inventory_hostname }}.json"
        mode: "0644"
        content: "{{ rendered | to_json }}"
      vars:
        rendered:
          vars: "{{ dict(names | zip(query('ansible.builtin.vars', *names))) }}"
          arch: "{{ dlobd_deb_arch }}"
          dlobd-daemon: "{{ lookup('ansible.builtin.template', roles_dir ~ '/hadoop/templates/dlobd-daemon.j2') }}"
          yarn: "{{ lookup('ansible.builtin.template', roles_dir ~ '/stack_env/templates/yarn.j2') }}"
          dlobd-env.sh: "{{ lookup('ansible.builtin.template', roles_dir ~ '/stack_env/templates/dlobd-env.sh.j2') }}"
        names: [dlobd_version_set, dlobd_java_version, dlobd_java_min_version, dlobd_java_install_method,
                dlobd_java_home, dlobd_hadoop_version, dlobd_spark_version, dlobd_tensorflow_version,
                dlobd_tensorflowonspark_version, dlobd_mpi4py_version, dlobd_bigdl_version, dlobd_psutil_version,
                dlobd_hadoop_home, hadoop_daemon_java_opts, spack_env, python_env_bounds, {registry_names}]
""".replace("{registry_names}", ", ".join(REGISTRY_NAMES))


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("profile-versions")
    (tmp / "out").mkdir()
    hosts = {"modern-registry": {},
             "modern-spack": {"dlobd_install_method": "spack"},
             "modern-apptainer": {"dlobd_install_method": "apptainer"},
             **{f"paper-{env}": {"dlobd_profile": "paper", "dlobd_install_method": "spack", "dlobd_paper_env": env}
                for env in ("tfos-bigdl", "caffeonspark", "mmlspark")},
             # an inventory overrides any one version, as before the sets
             "paper-newer-spark": {"dlobd_profile": "paper", "dlobd_install_method": "spack",
                                   "dlobd_spark_version": "2.1.1"},
             "modern-java-21": {"dlobd_java_version": 21},
             # the registry method's paper set, and the apptainer method running the image it builds
             **{f"paper-tfos-bigdl-{method}": {"dlobd_profile": "paper", "dlobd_install_method": method,
                                               "dlobd_stack_settings": {"DLOBD_TFOS_PYTHON": "/usr/bin/python2.7"}}
                for method in ("registry", "apptainer")}}
    done = ansible(tmp, RENDER, hosts, {**PROVISIONED, "out": str(tmp / "out"), "roles_dir": str(PLAYBOOKS / "roles")})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return {host: json.loads((tmp / "out" / f"{host}.json").read_text()) for host in hosts}


def exports(host: dict) -> dict:
    return dict(line.removeprefix("export ").split("=", 1) for line in host["dlobd-env.sh"].splitlines()
                if line.startswith("export ") and " " not in line.removeprefix("export ").split("=", 1)[0])


def test_the_modern_profile_renders_what_it_always_did(rendered):
    for name in ("modern-registry", "modern-spack"):
        host = rendered[name]
        jdk = f"/usr/lib/jvm/java-17-openjdk-{host['arch']}"
        assert {name: value for name, value in host["vars"].items() if name not in REGISTRY_NAMES} == {
            "dlobd_version_set": "modern", "dlobd_java_version": 17, "dlobd_java_min_version": 11,
            "dlobd_java_install_method": "registry", "dlobd_java_home": jdk,
            "dlobd_hadoop_version": "3.4.1", "dlobd_spark_version": "3.5.9", "dlobd_tensorflow_version": "2.15.1",
            "dlobd_tensorflowonspark_version": "2.2.5", "dlobd_mpi4py_version": "4.1.2",
            "dlobd_bigdl_version": "2.4.0", "dlobd_psutil_version": "7.2.2",
            "dlobd_hadoop_home": f"{PREFIX}/hadoop-3.4.1",
            "hadoop_daemon_java_opts": dict.fromkeys(("namenode", "datanode", "resourcemanager", "nodemanager"), OPENS),
            "spack_env": "modern", "python_env_bounds": {}}, name
        assert f'  [namenode]="{OPENS}"\n' in host["dlobd-daemon"]
        assert f"-Djava.net.preferIPv4Stack=true {OPENS} -Dhadoop.home.dir=" in host["yarn"]
        env = exports(host)
        assert (env["JAVA_HOME"], env["HADOOP_VERSION"], env["HADOOP_HOME"], env["SPARK_VERSION"],
                env["DLOBD_BIGDL_VERSION"]) == (jdk, "3.4.1", f"{PREFIX}/hadoop-3.4.1", "3.5.9", "2.4.0")
        # the host's configuration is in its own folder, named by the host
        own = f"{PREFIX}/hosts/{platform.node()}"
        assert (env["DLOBD_LOCAL_DIR"], env["HADOOP_CONF_DIR"], env["SPARK_CONF_DIR"]) == (
            own, f"{own}/etc/hadoop", f"{own}/etc/spark")
        assert "# The stacks' Python (TensorFlow 2.15.1, TensorFlowOnSpark\n# 2.2.5, mpi4py" in host["dlobd-env.sh"]
    apptainer = rendered["modern-apptainer"]["vars"]
    assert (apptainer["dlobd_java_install_method"], apptainer["dlobd_java_home"]) == (
        "apptainer", f"{PREFIX}/libexec/apptainer/jvm")


@pytest.mark.parametrize("paper_env, hadoop, spark", [("tfos-bigdl", "2.7.3", "2.1.0"),
                                                      ("caffeonspark", "2.6.5", "1.6.2"),
                                                      ("mmlspark", "2.7.3", "2.2.0")])
def test_the_paper_profile_on_spack_renders_its_environment_s_versions(rendered, paper_env, hadoop, spark):
    host = rendered[f"paper-{paper_env}"]
    got = host["vars"]
    assert got["dlobd_version_set"] == got["spack_env"] == f"paper-{paper_env}"
    assert (got["dlobd_java_version"], got["dlobd_java_min_version"], got["dlobd_java_install_method"],
            got["dlobd_java_home"]) == (8, 8, "spack", f"{PREFIX}/jdk-8")
    assert (got["dlobd_hadoop_version"], got["dlobd_spark_version"], got["dlobd_hadoop_home"]) == (
        hadoop, spark, f"{PREFIX}/hadoop-{hadoop}")
    # Java 8 refuses --add-opens: none anywhere a JVM starts
    assert set(got["hadoop_daemon_java_opts"].values()) == {""}
    assert "add-opens" not in host["dlobd-daemon"] and "add-opens" not in host["yarn"]
    env = exports(host)
    assert (env["JAVA_HOME"], env["HADOOP_VERSION"], env["HADOOP_HOME"], env["SPARK_VERSION"]) == (
        f"{PREFIX}/jdk-8", hadoop, f"{PREFIX}/hadoop-{hadoop}", spark)


def test_the_paper_sets_name_only_their_environment_s_stacks(rendered):
    tfos = rendered["paper-tfos-bigdl"]
    assert [tfos["vars"][f"dlobd_{name}_version"] for name in ("tensorflow", "tensorflowonspark", "mpi4py", "bigdl")] \
        == ["1.4.0", "1.0.8", "3.1", "a1f3a88"]
    assert exports(tfos)["DLOBD_BIGDL_VERSION"] == "a1f3a88"
    assert tfos["vars"]["python_env_bounds"] == {"tensorflow_pythons": ["2.7", "3.3", "3.4", "3.5", "3.6"],
                                                 "pyspark_max": "3.5"}
    # its TensorFlow and TFoS are not the stacks' Python's
    assert ("# The stacks' Python (mpi4py, psutil), not the project's tooling venv. TensorFlowOnSpark\n"
            "# 1.0.8 and TensorFlow 1.4.0 run in DLOBD_TFOS_PYTHON (dlobd_stack_settings).") in tfos["dlobd-env.sh"]
    caffeonspark = rendered["paper-caffeonspark"]
    assert caffeonspark["vars"]["dlobd_tensorflow_version"] == caffeonspark["vars"]["dlobd_bigdl_version"] == ""
    assert "# The stacks' Python (psutil), not the project's tooling venv." in caffeonspark["dlobd-env.sh"]


def test_an_inventory_still_overrides_each_version(rendered):
    assert exports(rendered["paper-newer-spark"])["SPARK_VERSION"] == "2.1.1"
    assert rendered["paper-newer-spark"]["vars"]["dlobd_hadoop_version"] == "2.7.3"
    java21 = rendered["modern-java-21"]
    assert java21["vars"]["dlobd_java_home"] == f"/usr/lib/jvm/java-21-openjdk-{java21['arch']}"
    assert f'  [datanode]="{OPENS}"\n' in java21["dlobd-daemon"]


SHOW_VERSION_SET = """
- hosts: all
  gather_facts: false
  roles: [dlobd]
  tasks:
    - ansible.builtin.debug:
        var: dlobd_java_version
"""


@pytest.mark.parametrize("settings, named", [
    ({"dlobd_profile": "papers"}, "dlobd_profile papers names no version set"),
    ({"dlobd_profile": "paper", "dlobd_paper_env": "tfos"},
     "dlobd_profile paper with dlobd_paper_env tfos names no version set"),
])
def test_a_profile_without_a_version_set_is_named_with_the_known_ones(tmp_path, settings, named):
    done = ansible(tmp_path, SHOW_VERSION_SET, {"h": settings})
    out = " ".join((done.stdout + done.stderr).split())
    assert done.returncode != 0
    known = "modern, paper-tfos-bigdl, paper-caffeonspark, paper-mmlspark"
    assert f"{named} of dlobd_profile_versions (known: {known})" in out


JAVA_FROM_SPACK = """
- hosts: all
  gather_facts: true
  gather_subset: [min]
  roles:
    - dlobd
    - {role: spack, when: false}  # its defaults: spack_env, spack_specs
  tasks:
    - ansible.builtin.include_role: {name: java, tasks_from: install-spack.yml}
"""
# A JDK 8 as far as the java role's check reads one
FAKE_JAVA_8 = "#!/bin/sh\necho '    java.specification.version = 1.8' >&2\n"


def test_the_paper_profile_s_java_home_links_to_the_spack_environment_s_jdk(tmp_path):
    jdk = tmp_path / "spack" / "openjdk-1.8.0_265"
    (jdk / "bin").mkdir(parents=True)
    (jdk / "bin" / "java").write_text(FAKE_JAVA_8)
    (jdk / "bin" / "java").chmod(0o755)
    prefix = tmp_path / "prefix"
    prefix.mkdir()
    done = ansible(tmp_path, JAVA_FROM_SPACK, {"h": {"dlobd_profile": "paper", "dlobd_install_method": "spack"}},
                   {"dlobd_prefix": str(prefix), "spack_locations": {"openjdk": str(jdk)}})
    assert done.returncode == 0, done.stdout[-3000:]
    assert (prefix / "jdk-8").is_symlink() and (prefix / "jdk-8").resolve() == jdk


def test_a_spack_environment_without_its_jdk_is_named(tmp_path):
    done = ansible(tmp_path, JAVA_FROM_SPACK, {"h": {"dlobd_profile": "paper", "dlobd_install_method": "spack",
                                                     "spack_specs": ["spark@2.1.0"]}},
                   {"spack_locations": {"spark": "/spack/spark"}})
    out = " ".join(done.stdout.split())
    assert done.returncode != 0
    assert ("h: Java 8 comes from the Spack environment paper-tfos-bigdl on the spack method, but the host "
            "installs none of its openjdk (spack_specs: spark@2.1.0): add the environment's openjdk to "
            "spack_specs") in out


PYTHON_BOUNDS = """
- hosts: all
  gather_facts: false
  roles: [dlobd]
  tasks:
    - ansible.builtin.include_role: {name: python_env, tasks_from: bounds.yml}
"""
PAPER_TFOS = {"dlobd_profile": "paper", "dlobd_install_method": "spack"}
EXPECTED = ("expected Python 2.7 or 3.3 or 3.4 or 3.5 (TensorFlow 1.4.0 has wheels for 2.7, 3.3, 3.4, 3.5, 3.6; "
            "Spark 2.1.0's PySpark runs on 3.5 at the newest), TensorFlow 1.4.0 and TensorFlowOnSpark 1.0.8 "
            "(version set paper-tfos-bigdl)")


def fake_python(folder: Path, found: dict) -> Path:
    """An interpreter that answers the role's probe with `found`, whatever it is asked to run."""
    path = folder / "bin" / "python"
    path.parent.mkdir(parents=True)
    path.write_text(f"#!/bin/sh\necho 'some warning on stdout'\necho '{json.dumps(found)}'\n")
    path.chmod(0o755)
    return path


def check_tfos_python(tmp_path: Path, python) -> tuple[int, str]:
    done = ansible(tmp_path, PYTHON_BOUNDS, {"h": PAPER_TFOS},
                   {"dlobd_stack_settings": {"DLOBD_TFOS_PYTHON": str(python)}})
    return done.returncode, " ".join((done.stdout + done.stderr).split())


@pytest.mark.parametrize("python", ["3.5.10", "2.7.18"])
def test_a_site_python_with_the_set_s_tensorflow_and_tfos_passes(tmp_path, python):
    fake = fake_python(tmp_path, {"python": python, "tensorflow": "1.4.0", "tensorflowonspark": "1.0.8"})
    rc, out = check_tfos_python(tmp_path, fake)
    assert rc == 0 and "failed=0" in out, out[-3000:]


@pytest.mark.parametrize("found, named", [
    ({"python": "3.6.15", "tensorflow": "1.4.0", "tensorflowonspark": "1.0.8"},
     "found Python 3.6.15, TensorFlow 1.4.0, TensorFlowOnSpark 1.0.8"),
    ({"python": "3.5.10", "tensorflow": "1.15.5", "tensorflowonspark": "1.0.8"},
     "found Python 3.5.10, TensorFlow 1.15.5, TensorFlowOnSpark 1.0.8"),
    ({"python": "3.5.10", "tensorflow": "1.4.0", "tensorflowonspark": "none (ImportError: No module named six)"},
     "found Python 3.5.10, TensorFlow 1.4.0, TensorFlowOnSpark none (ImportError: No module named six)"),
])
def test_a_site_python_off_the_set_stops_naming_host_setting_found_and_expected(tmp_path, found, named):
    fake = fake_python(tmp_path, found)
    rc, out = check_tfos_python(tmp_path, fake)
    assert rc != 0
    assert f"h: DLOBD_TFOS_PYTHON={fake} (dlobd_stack_settings): {named}; {EXPECTED}" in out, out[-3000:]


def test_the_probe_runs_for_real_in_this_machine_s_python(tmp_path):
    """This machine's Python is too new and has neither TensorFlow 1.4.0 nor TFoS 1.0.8 in it."""
    rc, out = check_tfos_python(tmp_path, sys.executable)
    assert rc != 0
    version = ".".join(map(str, sys.version_info[:3]))
    assert f"h: DLOBD_TFOS_PYTHON={sys.executable} (dlobd_stack_settings): found Python {version}, TensorFlow " in out
    assert re.search(r"TensorFlowOnSpark (none \(ModuleNotFoundError: No module named '[\w.]+'\)|[\w.]+); "
                     + re.escape(EXPECTED), out), out[-3000:]


def test_a_site_python_that_does_not_run_is_named(tmp_path):
    rc, out = check_tfos_python(tmp_path, tmp_path / "no" / "python")
    assert rc != 0
    assert f"h: DLOBD_TFOS_PYTHON={tmp_path}/no/python (dlobd_stack_settings): found no Python that answers the probe (exit " in out
    assert EXPECTED in out


SHOW_TFOS_CHECK = """
- hosts: all
  gather_facts: false
  roles:
    - dlobd
    - {role: python_env, when: false}  # its defaults
  tasks:
    - ansible.builtin.copy:
        dest: "{{ out }}/{{ inventory_hostname }}.json"
        mode: "0644"
        content: >-
          {{ {'check': python_env_checks_tfos_python | bool, 'python': python_env_tfos_python,
              'from_image': python_env_tfos_from_image | bool, 'exports': python_env_stack_settings} | to_json }}
"""


def test_only_a_set_with_a_site_python_given_checks_it(tmp_path):
    """Without DLOBD_TFOS_PYTHON the paper set provisions on (its TFoS points are not runnable,
    naming the setting: tests/test_tfos_launch.py); the modern set never checks one."""
    given = {"dlobd_stack_settings": {"DLOBD_TFOS_PYTHON": "/opt/py35/bin/python"}}
    hosts = {"paper-given": {**PAPER_TFOS, **given}, "paper-not-given": PAPER_TFOS,
             "paper-apptainer": {**PAPER_TFOS, "dlobd_install_method": "apptainer", **given},
             "modern-given": given, "paper-caffeonspark": {**PAPER_TFOS, "dlobd_paper_env": "caffeonspark", **given}}
    (tmp_path / "out").mkdir()
    done = ansible(tmp_path, SHOW_TFOS_CHECK, hosts, {"out": str(tmp_path / "out")})
    assert done.returncode == 0, done.stdout[-3000:]
    got = {h: json.loads((tmp_path / "out" / f"{h}.json").read_text()) for h in hosts}
    assert {h: g["check"] for h, g in got.items()} == {
        "paper-given": True, "paper-not-given": False, "paper-apptainer": False, "modern-given": False,
        "paper-caffeonspark": False}
    assert got["paper-given"]["python"] == "/opt/py35/bin/python" and got["paper-not-given"]["python"] == ""


def test_without_a_site_python_the_spack_and_registry_methods_run_the_paper_image_s(tmp_path):
    """No DLOBD_TFOS_PYTHON on the spack or registry method: the paper image's Python, whose wrapper
    the role exports (and checks, not as a site's); the apptainer method exports the wrapper of its
    own image's; a site's Python given and the sets without TensorFlowOnSpark export none."""
    given = {"dlobd_stack_settings": {"DLOBD_TFOS_PYTHON": "/opt/py35/bin/python"}}
    hosts = {"paper-spack": PAPER_TFOS, "paper-registry": {**PAPER_TFOS, "dlobd_install_method": "registry"},
             "paper-given": {**PAPER_TFOS, **given}, "paper-apptainer": {**PAPER_TFOS, "dlobd_install_method": "apptainer"},
             "modern": {}, "paper-caffeonspark": {**PAPER_TFOS, "dlobd_paper_env": "caffeonspark"}}
    (tmp_path / "out").mkdir()
    done = ansible(tmp_path, SHOW_TFOS_CHECK, hosts, {"out": str(tmp_path / "out")})
    assert done.returncode == 0, done.stdout[-3000:]
    got = {h: json.loads((tmp_path / "out" / f"{h}.json").read_text()) for h in hosts}
    wrapper = {"DLOBD_TFOS_PYTHON": f"{PREFIX}/libexec/apptainer/tfos-python/bin/python2.7"}
    assert {h: (g["from_image"], g["exports"], g["check"]) for h, g in got.items()} == {
        "paper-spack": (True, wrapper, False), "paper-registry": (True, wrapper, False),
        "paper-given": (False, {}, True), "paper-apptainer": (False, wrapper, False), "modern": (False, {}, False),
        "paper-caffeonspark": (False, {}, False)}


def test_dlobd_env_exports_the_wrapper_of_the_paper_image_s_python_where_no_site_python_is_given(rendered):
    # the stack settings' block is written with the role's wrapper alone; an inventory's path stays its own
    pythons = {name: exports(host).get("DLOBD_TFOS_PYTHON") for name, host in rendered.items()}
    assert pythons == {**dict.fromkeys(rendered),
                       "paper-tfos-bigdl": f"{PREFIX}/libexec/apptainer/tfos-python/bin/python2.7",
                       "paper-newer-spark": f"{PREFIX}/libexec/apptainer/tfos-python/bin/python2.7",
                       "paper-tfos-bigdl-registry": "/usr/bin/python2.7",
                       # the apptainer method's wrapper of the image's /usr/bin/python2.7
                       "paper-tfos-bigdl-apptainer": f"{PREFIX}/libexec/apptainer/tfos-python/bin/python2.7"}


def test_the_spack_environment_s_tf_cnn_benchmarks_is_named_where_it_is_installed(rendered):
    # the role links <prefix>/tf-cnn-benchmarks to Spack's where the host's environment has it
    homes = {name: exports(host).get("TF_CNN_BENCHMARKS_HOME") for name, host in rendered.items()}
    assert homes == {"modern-registry": None, "modern-apptainer": None, "modern-java-21": None,
                     "modern-spack": f"{PREFIX}/tf-cnn-benchmarks", "paper-tfos-bigdl": f"{PREFIX}/tf-cnn-benchmarks",
                     "paper-newer-spark": f"{PREFIX}/tf-cnn-benchmarks",
                     "paper-caffeonspark": None, "paper-mmlspark": None,
                     "paper-tfos-bigdl-registry": None, "paper-tfos-bigdl-apptainer": None}


def test_the_registry_method_installs_the_tfos_bigdl_set_from_the_registries(rendered):
    got = rendered["paper-tfos-bigdl-registry"]["vars"]
    jdk = f"/usr/lib/jvm/java-8-openjdk-{rendered['paper-tfos-bigdl-registry']['arch']}"
    # Debian's JDK 8 and Python 2.7 at their pinned versions; the releases the registries lack
    # replaced by the nearest ones they have
    assert (got["dlobd_java_install_method"], got["dlobd_java_home"], got["java_packages"]) == (
        "registry", jdk, ["openjdk-8-jdk-headless=8u504-ga-1"])
    assert (got["dlobd_hadoop_version"], got["dlobd_spark_version"], got["dlobd_bigdl_version"]) == (
        "2.7.3", "2.1.2", "0.3.0")
    assert got["python_env_tfos_own"]["package"] == "python2.7" and got["python_env_tfos_own"]["pip"] == "20.3.4"
    # Hadoop 2.7 has no hdfs-client or timeline service v2 artifacts
    assert "hadoop-hdfs-client" not in got["hadoop_artifacts"] and "hadoop-common" in got["hadoop_artifacts"]
    assert got["dl_libs_bigdl_0x_url"].endswith(
        "/com/intel/analytics/bigdl/bigdl-SPARK_2.1/0.3.0/bigdl-SPARK_2.1-0.3.0-jar-with-dependencies.jar")
    assert got["preflight_registry_paper"] is True
    assert exports(rendered["paper-tfos-bigdl-registry"])["SPARK_VERSION"] == "2.1.2"


def test_the_image_of_the_registry_method_carries_its_substitutes_to_the_apptainer_method(rendered):
    got = rendered["paper-tfos-bigdl-apptainer"]["vars"]
    assert (got["dlobd_spark_version"], got["dlobd_bigdl_version"], got["java_image_home"]) == (
        "2.1.2", "0.3.0", f"/usr/lib/jvm/java-8-openjdk-{rendered['paper-tfos-bigdl-apptainer']['arch']}")
    assert got["preflight_registry_paper"] is False
    # the spack method builds the paper's own versions
    spack = rendered["paper-tfos-bigdl"]["vars"]
    assert (spack["dlobd_spark_version"], spack["dlobd_bigdl_version"]) == ("2.1.0", "a1f3a88")


def test_the_spack_environments_said_to_install_mvapich2_are_those_that_do():
    """dlobd-env.sh names the mpi role's link of Spack's MVAPICH2 for the sets of
    dlobd_spack_mvapich2_sets: exactly the environments with mvapich2 among their specs."""
    with_mvapich2 = {env.name for env in SPACK_ENVS.iterdir() if (env / "spack.yaml").is_file()
                     and any(str(spec).split("@")[0].split()[0] == "mvapich2"
                             for spec in yaml.safe_load((env / "spack.yaml").read_text())["spack"]["specs"])}
    assert with_mvapich2 and set(GROUP_VARS["dlobd_spack_mvapich2_sets"]) == with_mvapich2

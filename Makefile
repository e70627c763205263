# DLoBD artifact. `make help` lists the targets; README.md is the guide, docs/ the details.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(abspath $(VENV))/bin
export PATH := $(BIN):$(PATH)

.DEFAULT_GOAL := help

.PHONY: help
help: ## list the targets
	@grep -hE '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | expand -t 22

## ---------------------------------------------------------------- tooling

.PHONY: setup setup-dev
setup: $(VENV)/.installed ## the project's own Python tooling in .venv (ansible, snakemake, dlobd)
setup-dev: $(VENV)/.dev-installed ## setup, plus what the tests and linters need (pytest, ansible-lint, selenium, import-linter)

# uv installs into .venv: pip took about a minute to resolve the tooling against the registry,
# uv a few seconds from its cache. With bytecode compiled, the installed packages' (uv, unlike
# pip, writes none unless asked) and the package's: an editable install leaves that to the first
# import, which never writes it where PYTHONDONTWRITEBYTECODE is set, and each Snakemake run and
# drawing worker imports most of them (Snakemake's 550 modules compiled at every start took 2.9 s
# of a 5.3-s no-op figures build). A module edited since is compiled at each import, as before.
UV_INSTALL = $(BIN)/uv pip install --quiet --compile-bytecode --python $(BIN)/python -c requirements/constraints.txt
$(VENV)/.installed: pyproject.toml requirements/constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet -c requirements/constraints.txt uv
	$(UV_INSTALL) -e .
	$(BIN)/python -m compileall -q dlobd
	touch $@

# Apart, so that reproducing (make kick-tires, make reproduce) does not wait for the test tools
$(VENV)/.dev-installed: $(VENV)/.installed
	$(UV_INSTALL) -e '.[dev]'
	touch $@

## ---------------------------------------------------------------- provisioning (playbooks/)

# Where the stacks are installed (outside git); the inventory that says which hosts do what.
DLOBD_PREFIX ?= $(HOME)/dlobd-stack
INVENTORY ?= playbooks/inventories/local/hosts.yml
# A DLOBD_PREFIX given on the command line or in the environment overrides the inventory's; the
# default one is the inventory's own (else the dlobd role's: ~/dlobd-stack), so a multi-host inventory can
# give each host a prefix of its own.
PREFIX_VAR = $(if $(filter-out file,$(origin DLOBD_PREFIX)),-e dlobd_prefix=$(DLOBD_PREFIX))
# CAFFEONSPARK=1: provisioning also builds CaffeOnSpark's modern port (dlobd_caffeonspark_port; the
# sources from SOURCE_MIRROR, else GitHub), so that its experiments run. make reproduce sets it
# unless told CAFFEONSPARK=0.
CAFFEONSPARK ?= 0
CAFFEONSPARK_VARS = $(if $(filter 1,$(CAFFEONSPARK)),-e dlobd_caffeonspark_port=true -e caffeonspark_source_mirror=$(SOURCE_MIRROR))
PLAYBOOK = ANSIBLE_CONFIG=$(CURDIR)/ansible.cfg $(BIN)/ansible-playbook -i $(INVENTORY) $(PREFIX_VAR) $(CAFFEONSPARK_VARS)
PLAYBOOKS := $(wildcard playbooks/*.yml)

.PHONY: provision cluster-up cluster-down cluster-status smoke-test bench-provision lint-ansible test-integration test-emulated
# SMOKE_TESTS=later: provision without them (make reproduce runs them on the cluster it starts)
provision: setup ## install Java, Hadoop, Spark, the DL stacks and data sets; ends with the smoke tests
	$(PLAYBOOK) playbooks/site.yml $(if $(SMOKE_TESTS),-e dlobd_smoke_tests=$(SMOKE_TESTS))

cluster-up: setup ## start HDFS and YARN; wait until every worker is live
	$(PLAYBOOK) playbooks/cluster-up.yml

cluster-down: setup ## stop every daemon (SIGTERM, bounded wait, SIGKILL)
	$(PLAYBOOK) playbooks/cluster-down.yml

cluster-status: setup ## which daemons run; live DataNodes and NodeManagers (fails if not fully up)
	$(PLAYBOOK) playbooks/cluster-status.yml

smoke-test: setup ## HDFS, YARN, Spark-on-YARN, TensorFlow and BigDL checks (leaves the cluster as found)
	$(PLAYBOOK) playbooks/smoke-test.yml

bench-provision: setup ## time cold and repeated provisioning, cluster start/stop; daemon RSS
	$(BIN)/python benchmarks/provision/bench_provision.py --inventory $(INVENTORY)

lint-ansible: setup-dev ## ansible-lint (production profile) and --syntax-check of every playbook
	cd playbooks && ANSIBLE_CONFIG=$(CURDIR)/ansible.cfg $(BIN)/ansible-lint --profile production --strict .
	for i in $(INVENTORY) playbooks/inventories/example-ib/hosts.yml; do for p in $(PLAYBOOKS); do \
	  ANSIBLE_CONFIG=$(CURDIR)/ansible.cfg $(BIN)/ansible-playbook -i $$i --syntax-check $$p || exit 1; done; done

# The real Spack install (make test-spack), the image builds (make test-apptainer, make
# test-paper-profile), the Slurm path from the image (make test-slurm), the CaffeOnSpark port's
# build (make test-caffeonspark) and the emulated hosts provisioned whole (make test-emulated,
# make test-shared-prefix, make test-paper-shape) have budgets of their own, not part of make test.
INTEGRATION_APART = test_spack_install test_apptainer_image test_caffeonspark_port test_paper_profile \
  test_emulated_shared_prefix test_emulated_provision test_slurm test_paper_shape
test-integration: setup-dev emulated-deps ## provision a fresh prefix, smoke-test it, run real slices of BigDL, TF and TFoS on it; the emulated hosts' harness
	$(BIN)/pytest -m integration tests/integration $(INTEGRATION_APART:%=--ignore=tests/integration/%.py)

# The emulated hosts provisioned with site.yml over SSH, each into its own folder; then points
# across them, daemons killed mid-run, executors sized per NodeManager, and a real Slurm on the
# same hosts running sbatch jobs from their prefix (slurm+prefix). About 40 min.
test-emulated: setup-dev emulated-deps slurm-deps ## as root: 1 master + 2 emulated hosts provisioned over SSH; points across both, daemons killed mid-run, executors per NodeManager; Slurm jobs on them
	$(BIN)/pytest -m integration tests/integration/test_emulated_provision.py tests/integration/test_slurm.py

## ---------------------------------------------------------------- the whole artifact

.PHONY: reproduce bench-reproduce bench-monitor
RUNS ?= data/runs
STATE ?= data/state
PHASE := $(PYTHON) benchmarks/reproduce/phases.py --state $(STATE)
# make itself, named through a variable: `make -n reproduce` must not run the phases
SUBMAKE := $(MAKE) --no-print-directory
reproduce: CAFFEONSPARK = 1
reproduce: ## set up, provision (with CaffeOnSpark's port), start the cluster, smoke-test it, run every experiment that can run here (local scale), regenerate figures, verdicts and report, stop
	$(PHASE) begin
	$(PHASE) run setup -- $(SUBMAKE) setup
	$(PHASE) run provision -- $(SUBMAKE) provision CAFFEONSPARK=$(CAFFEONSPARK) SMOKE_TESTS=later
	$(PHASE) run cluster-up -- $(SUBMAKE) cluster-up
	$(PHASE) run smoke-test -- $(SUBMAKE) smoke-test || { $(PLAYBOOK) playbooks/cluster-down.yml; exit 1; }
	status=0; $(PHASE) run experiments -- $(SNAKEMAKE) --keep-going $(SNAKE_CONFIG) launch=True || status=$$?; \
	  $(PHASE) run cluster-down -- env $(PLAYBOOK) playbooks/cluster-down.yml && exit $$status
	@echo "report: $(abspath report/index.html)"

# data/reference and data/reference-paper recorded again: a fresh clone of this commit (clean
# tree) runs make reproduce and make reproduce-paper under RECORD_CLONE; their raw logs replace
# both folders, each with a README written from the runs' own records. About 1.5 h;
# RECORD_PROFILES=paper records data/reference-paper alone (local: data/reference alone).
RECORD_CLONE ?= $(abspath ..)/dlobd-reference-$(shell git rev-parse --short HEAD 2>/dev/null)
RECORD_PROFILES ?= local paper
.PHONY: record-reference
record-reference: setup ## record data/reference and data/reference-paper again with this commit's code (commit first)
	$(BIN)/python benchmarks/reproduce/record_reference.py --clone $(RECORD_CLONE) --profiles $(RECORD_PROFILES)

# The evaluators' first tier: the report from the reference runs, then one real short job that
# exercises Spark and a DL stack: BigDL's LeNet-5 on MNIST on YARN, dlobd-fig6c's local point (its
# RDMA point is recorded not runnable). It provisions only what that job needs (no TensorFlow);
# the run joins RUNS, so a later `make reproduce` does not run it again. Its figure and report go
# apart, under KICK_TIRES_OUT, so that report/ stays the reference runs' report. The reference
# figures are drawn while the stack installs and starts (their log under KICK_TIRES_OUT), and
# waited for before the job: two Snakemake runs in one folder would lock each other out.
KICK_TIRES_ID := dlobd-fig6c
KICK_TIRES_TAGS := node,java,python,monitoring,hadoop,spark,dl,datasets,env
KICK_TIRES_VARS := {"datasets_names": ["mnist"], "dl_libs_tensorflow": false}
KICK_TIRES_OUT := data/kick-tires
KICK_TIRES_FIGURES_LOG := $(KICK_TIRES_OUT)/reference-figures.log
.PHONY: kick-tires
kick-tires: setup ## evaluators' first tier (2.3 to 3.7 min): the report from data/reference, then one real short BigDL job on YARN
	@mkdir -p $(KICK_TIRES_OUT)
	$(SUBMAKE) figures RUNS=data/reference > $(KICK_TIRES_FIGURES_LOG) 2>&1 & figures=$$!; \
	  $(PLAYBOOK) playbooks/site.yml --tags $(KICK_TIRES_TAGS) -e '$(KICK_TIRES_VARS)' && $(SUBMAKE) cluster-up; up=$$?; \
	  wait $$figures || { tail -n 30 $(KICK_TIRES_FIGURES_LOG); echo "the reference figures failed: $(abspath $(KICK_TIRES_FIGURES_LOG))"; \
	    $(PLAYBOOK) playbooks/cluster-down.yml; exit 1; }; \
	  exit $$up
	status=0; $(SNAKEMAKE) --keep-going --config runs_dir=$(RUNS) state_dir=$(STATE) \
	    results_dir=$(KICK_TIRES_OUT)/results figures_dir=$(KICK_TIRES_OUT)/figures \
	    report_dir=$(KICK_TIRES_OUT)/report launch=True 'experiments=[$(KICK_TIRES_ID)]' || status=$$?; \
	  $(PLAYBOOK) playbooks/cluster-down.yml && exit $$status
	@echo "report of the reference runs: $(abspath report/index.html)"
	@echo "the real job ($(KICK_TIRES_ID)): $(abspath $(KICK_TIRES_OUT)/report/index.html), raw logs under $(abspath $(RUNS))/local/local/$(KICK_TIRES_ID)"

bench-monitor: setup ## CPU cost of the per-run sampler (goal: under 1 % of a core)
	$(BIN)/python benchmarks/monitor/bench.py

bench-reproduce: ## wall time of the last `make reproduce` by phase and experiment, and the harness overhead per run
	@$(PHASE) report

## ---------------------------------------------------------------- pipeline (Snakefile)

# as a module, not through its script: multiprocessing runs a script again in each drawing
# worker, so their server would import Snakemake too (workflow/rules/common.smk, figure_pool)
SNAKEMAKE := $(BIN)/python -m snakemake --profile profiles/local
# the paper profile's runs beside RUNS' (make reproduce-paper's RUNS-paper; data/reference-paper
# beside data/reference): the report sets their points beside RUNS' where that directory exists
SNAKE_CONFIG = --config runs_dir=$(RUNS) state_dir=$(STATE) $(if $(wildcard $(RUNS)-paper),paper_runs_dir=$(RUNS)-paper)

.PHONY: figures
figures: setup ## rebuild figures, claim verdicts and the report from the raw logs under RUNS (default data/runs)
	$(SNAKEMAKE) $(SNAKE_CONFIG)
	@echo "report: $(abspath report/index.html)"

.PHONY: figures-pdf
figures-pdf: setup ## as figures, with each figure also as a vector PDF, linked from the report
	$(SNAKEMAKE) $(SNAKE_CONFIG) pdf=True
	@echo "report: $(abspath report/index.html)"

.PHONY: appendix experiment
appendix: setup ## docs/artifact-evaluation.md from the specs, data/reference and the verdicts rebuilt from it
	$(SUBMAKE) figures RUNS=data/reference
	$(BIN)/dlobd appendix --runs data/reference --results data/results

experiment: setup ## run one experiment's points on the running cluster, then its figure and verdicts: make experiment ID=<id> [SCALE=paper] [ASSUME='cores=96'] (in place of a value the spec assumes)
	$(SNAKEMAKE) --keep-going $(SNAKE_CONFIG) launch=True $(if $(CLUSTER),cluster=$(CLUSTER)) 'scales=[$(SCALE)]' 'experiments=[$(ID)]' \
	  $(if $(ASSUME),'assume=$(ASSUME)')

# Every experiment at one scale. DRY_RUN=1: the exact command of every point with INVENTORY's
# hosts and cluster addresses, nothing run or written (dlobd dry-run).
SCALE ?= local
# the name new runs are recorded under (data/runs/<CLUSTER>/...); empty: the inventory's dlobd_cluster_name
CLUSTER ?=
# REHEARSE=1: each point as the scale lays it out, its work cut to the spec's scales.<SCALE>.rehearsal,
# once; the runs under REHEARSAL_OUT (never results), then which points passed. With INVENTORY given,
# only the points whose commands `dlobd dry-run --check` accepts for it are launched. Each rehearsal
# launches every point again (its launch markers are its own), as new attempts beside the earlier
# ones; `dlobd rehearsal` reads the newest of each point
REHEARSAL_OUT ?= data/rehearsal
REHEARSAL_STARTED = $(shell date -u +%Y%m%dT%H%M%S)
.PHONY: experiments
experiments: setup ## every experiment at SCALE (ID= to pick some) on the running cluster; DRY_RUN=1: print each point's command for INVENTORY, run nothing (WRITE=DIR: each point's files and command.sh there); REHEARSE=1: each point with its work cut, a check before spending node-hours
	@if [ -n "$(DRY_RUN)" ]; then \
	  $(BIN)/dlobd dry-run --scale $(SCALE) --inventory $(INVENTORY) $(if $(CLUSTER),--cluster $(CLUSTER)) --runs $(RUNS) \
	    $(if $(WRITE),--write $(WRITE)) $(if $(REHEARSE),--rehearse) \
	    $(if $(filter-out file,$(origin DLOBD_PREFIX)),--prefix $(DLOBD_PREFIX)) $(foreach i,$(ID),--experiment $(i)); \
	elif [ -n "$(REHEARSE)" ]; then \
	  $(SNAKEMAKE) --keep-going --config runs_dir=$(REHEARSAL_OUT)/runs state_dir=$(REHEARSAL_OUT)/state/$(REHEARSAL_STARTED) \
	    launch=True rehearse=True $(if $(CLUSTER),cluster=$(CLUSTER)) 'scales=[$(SCALE)]' \
	    $(if $(filter command line environment,$(origin INVENTORY)),inventory=$(abspath $(INVENTORY))) \
	    $(if $(ID),'experiments=[$(subst $(space),$(comma),$(strip $(ID)))]') -- runs; \
	  $(BIN)/dlobd rehearsal --runs $(REHEARSAL_OUT)/runs --scale $(SCALE); \
	else \
	  $(SNAKEMAKE) --keep-going $(SNAKE_CONFIG) launch=True $(if $(CLUSTER),cluster=$(CLUSTER)) 'scales=[$(SCALE)]' \
	    $(if $(ID),'experiments=[$(subst $(space),$(comma),$(strip $(ID)))]'); \
	fi

.PHONY: report
report: setup ## the HTML report (and the figures it links), plus Snakemake's own report at report/snakemake.html
	$(SNAKEMAKE) $(SNAKE_CONFIG)
	$(SNAKEMAKE) --report report/snakemake.html $(SNAKE_CONFIG)
	@echo "report: $(abspath report/index.html)"
	@echo "snakemake report: $(abspath report/snakemake.html)"

.PHONY: bench-figures
bench-figures: setup ## time rebuilding all figures/verdicts/report from raw logs: cold, then with nothing changed
	$(BIN)/python benchmarks/figures/bench.py --runs $(RUNS)

.PHONY: lint-workflow
lint-workflow: setup ## snakemake --lint on the Snakefile and its rules
	$(BIN)/snakemake --lint --config runs_dir=$(RUNS)

## ---------------------------------------------------------------- benchmarks: hr-reduce

# The S-Caffe hierarchical-reduce benchmark (workloads/hr-reduce), built with CMake against
# Debian's OpenMPI and MPICH into $(DLOBD_PREFIX)/build/hr-reduce-<mpi>-<source tree>, outside
# the git tree, where its launcher (dlobd/stacks/hr_reduce.py) builds it too.
HR_RANKS ?= 4

.PHONY: build-hr-reduce bench-reduce
build-hr-reduce: setup ## build the hr-reduce benchmark against OpenMPI and MPICH (needs libopenmpi-dev, libmpich-dev, cmake)
	DLOBD_PREFIX=$(DLOBD_PREFIX) $(BIN)/python -c 'from dlobd.stacks import hr_reduce; print(*(hr_reduce.ensure_built(m) for m in ("openmpi", "mpich")))'

bench-reduce: setup build-hr-reduce ## CC vs Bin vs MPI_Reduce at 8-64 MiB on HR_RANKS ranks, the cost model; prints the 64 MB ratios
	DLOBD_PREFIX=$(DLOBD_PREFIX) nice $(BIN)/python benchmarks/reduce/bench_reduce.py --ranks $(HR_RANKS)

## ---------------------------------------------------------------- benchmarks: tf-grpc-bench

# TF-gRPC-Bench (workloads/tf-grpc-bench, C++ on Debian's libgrpc++-dev, or on the gRPC
# under GRPC_ROOT, with its floor program grpc_floor) builds into
# $(DLOBD_PREFIX)/build/tf-grpc-bench-<source tree>, the directory the grpcbench launcher and the tests use
# (the grpc_bench role installs a copy per host in $(DLOBD_PREFIX)/tf-grpc-bench).
.PHONY: build-grpc-bench bench-grpc
build-grpc-bench: setup ## build TF-gRPC-Bench (cmake) into $(DLOBD_PREFIX)/build/tf-grpc-bench-<source tree>
	DLOBD_PREFIX=$(DLOBD_PREFIX) $(BIN)/python -c 'from dlobd.stacks import grpcbench; print(grpcbench.build())'

bench-grpc: setup ## gRPC p2p latency/bandwidth vs its gRPC build's floor and raw TCP on loopback (GRPC_ROOT= a site's gRPC)
	DLOBD_PREFIX=$(DLOBD_PREFIX) $(BIN)/python benchmarks/grpc/bench_grpc.py

## ---------------------------------------------------------------- fabric: fingerprint and calibration

# Each host's HCAs and GPUs (playbooks/fabric.yml, the fabric role: <prefix>/etc/fabric.json), then
# the links measured (dlobd/cluster/calibrate.py): TCP latency (sockperf) and bandwidth (iperf3) between two
# workers of the inventory, or over loopback on one host; RDMA (perftest, else the OSU
# micro-benchmarks) where both ends have an active HCA port. <prefix>/etc/calibration.json, raw
# outputs under <prefix>/var/calibration/<time>/, `name: value` lines; later runs carry it.
CALIBRATE_SECONDS ?= 5
.PHONY: calibrate calibrate-deps emulated-calibrate
calibrate-deps: ## install iperf3 and sockperf when missing (needs root and apt)
	@command -v iperf3 >/dev/null && command -v sockperf >/dev/null || { apt-get -o DPkg::Lock::Timeout=900 update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 install -y -qq iperf3 sockperf; }

calibrate: setup calibrate-deps ## record each host's fabric, then measure the links (TCP; RDMA where an HCA is): name: value lines
	$(PLAYBOOK) playbooks/fabric.yml
	DLOBD_PREFIX=$(DLOBD_PREFIX) $(BIN)/dlobd calibrate --duration $(CALIBRATE_SECONDS)

# Across the emulated tier: server on worker 1, client on worker 2, the hosts being the namespaces
# of make emulated-up; the link's label comes from the hosts' dlobd-env.sh (make emulated-provision
# after a relink).
emulated-calibrate: setup calibrate-deps ## make calibrate on the emulated hosts: fabric.yml over SSH, then dlobd calibrate from the master
	$(EMULATED_PLAYBOOK) playbooks/fabric.yml
	$(EMULATED) exec -- env DLOBD_PREFIX=$(EMULATED_STATE)/stack $(BIN)/dlobd calibrate --duration $(CALIBRATE_SECONDS)

## ---------------------------------------------------------------- tests

.PHONY: lint
lint: lint-ansible lint-specs lint-workflow lint-spack lint-imports ## every static check

.PHONY: lint-imports
lint-imports: setup-dev ## the dlobd package's layers and no import cycles (import-linter; contracts in pyproject.toml)
	$(BIN)/lint-imports --no-cache

.PHONY: lint-specs
lint-specs: setup ## validate every experiment spec and claims file (schema, cross-checks, claim syntax)
	$(BIN)/dlobd validate

## ---------------------------------------------------------------- Spack (spack-envs/, spack-repo/)

# Everything the pinned Spack writes (its unpacked or cloned source, clingo's venv, caches, repo
# indexes, installs of make test-spack) stays under SPACK_BUILD; keep it between runs (the first
# command builds repo indexes, ~2.5 CPU-min). DLOBD_SPACK_TARBALLS: a folder with the pinned
# tarballs (spack-envs/pins.yaml) for machines without GitHub; unset, the pins are fetched with git.
SPACK_BUILD ?= $(DLOBD_PREFIX)/build/spack
SPACK_HARNESS = $(BIN)/dlobd spack --build $(SPACK_BUILD)

.PHONY: spack-lock lint-spack bench-spack test-spack
spack-lock: setup ## re-concretize every spack-envs/ environment with the pinned Spack (one at a time, ~2.5 CPU-min each)
	nice $(SPACK_HARNESS) lock

lint-spack: setup ## spack audit of spack-repo/; every spack.lock current for its inputs (concretizes only the changed ones)
	nice $(SPACK_HARNESS) lint

bench-spack: setup-dev ## concretize_s per environment (re-concretizes every lock) and spack_install_s of the integration install
	nice $(SPACK_HARNESS) bench
	SPACK_BUILD=$(SPACK_BUILD) $(BIN)/pytest -m integration tests/integration/test_spack_install.py -q -s | grep -E '^[a-z_]+: '

test-spack: setup-dev ## a real spack install of what the registries feed, then site.yml with dlobd_install_method=spack and the smoke tests
	SPACK_BUILD=$(SPACK_BUILD) $(BIN)/pytest -m integration tests/integration/test_spack_install.py -q

## ---------------------------------------------------------------- CaffeOnSpark's modern port

# playbooks/caffeonspark.yml builds CaffeOnSpark 19df500 with the role's modern patch series (Spark
# 3.5, Scala 2.12, Java 17; CPU with OpenBLAS, and with MKL from Intel's PyPI wheels) and MNIST's LMDBs into CAFFEONSPARK_PREFIX, cached by
# the hash of sources and patches. A cold build takes tens of minutes on 2 cores, so it is not part
# of make test. SOURCE_MIRROR: a folder holding the two source tarballs (empty: cloned from GitHub).
# SPARK_HOME: the Spark 3.5 the test runs CaffeOnSpark with (default: the provisioned stack's pyspark).
CAFFEONSPARK_PREFIX ?= $(DLOBD_PREFIX)
SOURCE_MIRROR ?=
CAFFEONSPARK_SPARK_HOME ?= $(DLOBD_PREFIX)/python/lib/python3.11/site-packages/pyspark

.PHONY: build-caffeonspark bench-caffeonspark test-caffeonspark
build-caffeonspark: setup ## CaffeOnSpark's modern port (CPU: OpenBLAS and MKL) and MNIST's LMDBs into CAFFEONSPARK_PREFIX (cached)
	ANSIBLE_CONFIG=$(CURDIR)/ansible.cfg nice -n 10 $(BIN)/ansible-playbook -i $(INVENTORY) \
	  -e dlobd_prefix=$(CAFFEONSPARK_PREFIX) -e caffeonspark_source_mirror=$(SOURCE_MIRROR) playbooks/caffeonspark.yml

bench-caffeonspark: setup ## build_cold_s (a fresh prefix) and build_cached_s (the same build again) of the modern port
	$(BIN)/python benchmarks/caffeonspark/bench_build.py --mirror "$(SOURCE_MIRROR)" --inventory $(INVENTORY)

test-caffeonspark: setup-dev ## build the port (cached), then LeNet on real MNIST: 1 and 2 executors in local-cluster, 2 on YARN (DLOBD_TEST_CLUSTER= a running stack to reuse)
	DLOBD_SOURCE_MIRROR=$(SOURCE_MIRROR) CAFFEONSPARK_PREFIX=$(CAFFEONSPARK_PREFIX) SPARK_HOME=$(CAFFEONSPARK_SPARK_HOME) \
	  $(BIN)/pytest -m integration tests/integration/test_caffeonspark_port.py -q

# No setup: it runs on a bare GPU machine with only Python (and psutil), nvcc, CMake and an MPI.
.PHONY: test-gpu
test-gpu: ## every check that needs a GPU: fingerprint, the monitor on a GPU job, hr-reduce's device-buffer build (one line and a skip without a GPU)
	$(PYTHON) tests/gpu/run.py

# Each part timed (benchmarks/reproduce/phases.py --kind test), the times printed at the end even
# where a part fails, so every CI log says where its time went; the first failing part ends it.
TEST_PHASE = $(PYTHON) benchmarks/reproduce/phases.py --state $(STATE) --kind test
.PHONY: test
test: setup-dev ## lint, unit tests, and the integration test on this machine; each part's time at the end
	$(TEST_PHASE) begin
	status=0; for part in lint test-unit test-integration; do \
	  $(TEST_PHASE) run $$part -- $(SUBMAKE) $$part || { status=$$?; break; }; done; \
	$(TEST_PHASE) report; exit $$status

# Debian's Chromium and its driver for the report's browser test (tests/test_reference.py);
# Selenium drives them from .venv. A browser download never works offline, apt does.
.PHONY: browser-deps
browser-deps: ## install chromium and chromium-driver when missing (needs root and apt)
	@test -x /usr/bin/chromium -a -x /usr/bin/chromedriver || { apt-get -o DPkg::Lock::Timeout=900 update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 install -y -qq chromium chromium-driver; }

# The unit tests build tf-grpc-bench and hr-reduce from the checkout: their Debian packages first.
.PHONY: build-deps
build-deps: setup ## install the Debian packages the project's benchmarks build against (needs root and apt)
	$(PLAYBOOK) playbooks/build-deps.yml

# In TEST_WORKERS processes (pytest-xdist), a test file to each: most unit tests wait on a child
# (ansible-playbook, make, a compiler), so two share the 2 cores of a CI machine well; a file's
# module fixtures (a playbook run of 21 scenarios, a rebuilt report) run once. The slowest 15
# print at the end.
TEST_WORKERS ?= 2
.PHONY: test-unit
test-unit: setup-dev browser-deps build-deps slurm-deps ## unit tests (no cluster needed), the report in a headless browser
	SPACK_BUILD=$(SPACK_BUILD) $(BIN)/pytest -m "not integration" -n $(TEST_WORKERS) --dist loadfile --durations=15 tests

## ---------------------------------------------------------------- Apptainer images (containers/)

# The images of containers/, built by the playbook roles inside the image from a debootstrap
# rootfs, cached as $(IMAGES)/<name>-<hash of the definition and the roles>.sif. Apptainer comes
# from $$APPTAINER, PATH, or the relocatable tarball named by DLOBD_APPTAINER_TARBALL.
IMAGES ?= $(DLOBD_PREFIX)/images
IMAGE_DEF ?= containers/modern.def

.PHONY: apptainer-deps image bench-image test-apptainer test-paper-profile
apptainer-deps: setup ## install the Debian packages Apptainer needs to build and run images (needs root and apt)
	$(PLAYBOOK) playbooks/apptainer-deps.yml

image: setup apptainer-deps ## build the image of IMAGE_DEF (modern), or reuse it when its definition and the roles are unchanged
	nice -n 10 $(BIN)/dlobd image --images $(IMAGES) build $(IMAGE_DEF)

bench-image: setup apptainer-deps ## image_build_cold_s (a full build), image_build_cached_s, image_size_mib
	nice -n 10 $(BIN)/python benchmarks/image.py --images $(IMAGES) --definition $(IMAGE_DEF)

# Not part of make test: a cold build takes tens of minutes here (docs/spack-apptainer-slurm.md, Apptainer images).
test-apptainer: setup-dev apptainer-deps ## build or reuse the image, its %test, Hadoop/Spark/TF/MPI through the apptainer method's wrappers
	DLOBD_TEST_IMAGES=$(IMAGES) $(BIN)/pytest -m integration tests/integration/test_apptainer_image.py -q

# Not part of make test either: the paper profile's image (containers/paper-tfos-bigdl.def, from the
# registries alone) built or reused, then HDFS, YARN 2.7.3 and Spark 2.1 started from it here.
test-paper-profile: setup-dev apptainer-deps ## build or reuse the paper profile's image, its %test and labels, the paper smoke tests on HDFS/YARN 2.7.3 and Spark 2.1 started from it
	DLOBD_TEST_IMAGES=$(IMAGES) $(BIN)/pytest -m integration tests/integration/test_paper_profile.py -q -s

# The heap BigDL's launcher gives VGG's executors (dlobd.stacks.bigdl: HeapUse) comes from here: the
# live heap of BigDL 0.3.0 in the paper profile's image at several cores and batch shares; about 10 min.
.PHONY: bench-bigdl-heap
bench-bigdl-heap: setup apptainer-deps ## VGG-16's live heap in BigDL 0.3.0 at 1-8 cores and 2-8 images a core, the fit, and the launcher's values
	$(BIN)/dlobd image --images $(IMAGES) build $(PAPER_DEF)
	nice -n 10 $(BIN)/python benchmarks/bigdl/heap.py --image "$$($(BIN)/dlobd image --images $(IMAGES) path $(PAPER_DEF))"

## ---------------------------------------------------------------- the paper profile at local scale

# The papers' own software (PAPER_DEF: Java 8, Hadoop 2.7.3, Spark 2.1, TensorFlowOnSpark 1.0.8 on
# TensorFlow 1.4, BigDL 0.3) from its image, provisioned with the apptainer method into a prefix of
# its own; the local points of the experiments whose stacks it holds run into PAPER_RUNS, with their
# own results, figures and report under PAPER_OUT; then dlobd compare-profiles sets them beside
# MODERN_RUNS. Its daemons take the ports of the modern cluster: stop that one first.
PAPER_DEF ?= containers/paper-tfos-bigdl.def
# the roles the image's build skips (its --skip-tags), which provisioning from it skips too
PAPER_IMAGE_SKIP_TAGS = $(shell sed -n 's/.*--skip-tags[ =]\([a-z_,]*\).*/\1/p' $(PAPER_DEF))
PAPER_PREFIX ?= $(DLOBD_PREFIX)-paper
PAPER_RUNS ?= data/runs-paper
PAPER_OUT ?= data/paper-profile
PAPER_IDS ?= dlobd-fig9 dlobd-fig5b dlobd-fig6c dlobd-fig7a dlobd-fig7b dlobd-fig11 rdmatf-fig1 rdmatf-fig5 \
  rdmatf-fig6 slides-tfos-ipoib-rdma slides-bigdl-epoch slides-bigdl-scalability slides-acc-vgg-bigdl \
  slides-inception3-4nodes slides-pagerank-32nodes slides-pagerank-64nodes
MODERN_RUNS ?= data/reference
PAPER_PHASE = $(PYTHON) benchmarks/reproduce/phases.py --state $(PAPER_OUT)/state
PAPER_PLAYBOOK = env ANSIBLE_CONFIG=$(CURDIR)/ansible.cfg $(BIN)/ansible-playbook -i $(INVENTORY) \
  -e @$(PAPER_DEF:.def=.vars.yml) -e dlobd_install_method=apptainer -e dlobd_prefix=$(PAPER_PREFIX) \
  $(if $(APPTAINER),-e apptainer_binary=$(APPTAINER)) $(if $(DLOBD_APPTAINER_TARBALL),-e apptainer_tarball=$(DLOBD_APPTAINER_TARBALL))

.PHONY: reproduce-paper bench-paper-profile
reproduce-paper: setup apptainer-deps ## the paper profile's software from its image: its experiments' local points, figures, report, and compare-profiles against MODERN_RUNS
	mkdir -p $(PAPER_OUT)/state
	$(PAPER_PHASE) begin
	$(PAPER_PHASE) run image -- nice -n 10 $(BIN)/dlobd image --images $(IMAGES) build $(PAPER_DEF)
	$(PAPER_PHASE) run provision -- sh -c '$(PAPER_PLAYBOOK) -e apptainer_image=$$($(BIN)/dlobd image --images $(IMAGES) path $(PAPER_DEF)) \
	  --skip-tags $(if $(PAPER_IMAGE_SKIP_TAGS),$(PAPER_IMAGE_SKIP_TAGS)$(comma))hibench playbooks/install.yml'
	$(PAPER_PHASE) run cluster-up -- $(PAPER_PLAYBOOK) playbooks/cluster-up.yml
	$(PAPER_PHASE) run smoke-test -- $(PAPER_PLAYBOOK) playbooks/smoke-test.yml || { $(PAPER_PLAYBOOK) playbooks/cluster-down.yml; exit 1; }
	status=0; $(PAPER_PHASE) run experiments -- env DLOBD_PREFIX=$(PAPER_PREFIX) $(SNAKEMAKE) --keep-going \
	    --config runs_dir=$(PAPER_RUNS) state_dir=$(PAPER_OUT)/state results_dir=$(PAPER_OUT)/results \
	    figures_dir=$(PAPER_OUT)/figures report_dir=$(PAPER_OUT)/report launch=True \
	    'experiments=[$(subst $(space),$(comma),$(strip $(PAPER_IDS)))]' || status=$$?; \
	  $(PAPER_PHASE) run cluster-down -- $(PAPER_PLAYBOOK) playbooks/cluster-down.yml && exit $$status
	$(BIN)/dlobd compare-profiles $(MODERN_RUNS) $(PAPER_RUNS) | tee $(PAPER_OUT)/compare-profiles.txt
	@echo "report of the paper profile's runs: $(abspath $(PAPER_OUT)/report/index.html)"

bench-paper-profile: ## wall time of the last `make reproduce-paper` by phase and experiment
	@$(PAPER_PHASE) report

## ---------------------------------------------------------------- Slurm (slurm/, issue #14)

# The artifact inside one Slurm allocation (slurm/dlobd.sbatch, dlobd/execution/slurmjob.py). For tests, a
# real Slurm on the emulated hosts (tests/cluster/slurm.py): munged and slurmctld here, a slurmd in
# each host of the emulated cluster at EMULATED_STATE. Its files go to SLURM_STATE (munged wants
# every folder above its socket open to all, which a 0700 home is not).
SLURM_STATE ?= /var/tmp/dlobd-slurm-harness
SLURM_HARNESS := $(BIN)/python tests/cluster/slurm.py --state-dir $(SLURM_STATE) --emulated-state-dir $(EMULATED_STATE)
SLURM_PACKAGES := slurmctld slurmd slurm-client munge

.PHONY: slurm-deps slurm-up slurm-down slurm-experiments test-slurm bench-slurm
slurm-deps: ## install Debian's Slurm and munge when missing (needs root and apt)
	@test -x /usr/sbin/slurmctld -a -x /usr/sbin/slurmd -a -x /usr/bin/sbatch -a -x /usr/sbin/munged || { \
	  apt-get -o DPkg::Lock::Timeout=900 update -qq && DEBIAN_FRONTEND=noninteractive apt-get \
	  -o DPkg::Lock::Timeout=900 install -y -qq --no-install-recommends $(SLURM_PACKAGES); }

slurm-up: setup slurm-deps ## munged + slurmctld here, a slurmd in each emulated host (make emulated-up first)
	$(SLURM_HARNESS) up

slurm-down: setup ## stop every Slurm daemon slurm-up started and remove its files and mounts
	$(SLURM_HARNESS) down

# On a site: slurm/submit with slurm/site.env (see slurm/site.env.example). Here: the harness's
# Slurm, the emulated hosts' provisioned prefix, node-local scratch bound per host. rdmatf-fig6's
# emulated points need the hosts linked by eth-1g (EMULATED_TIER=eth-1g).
SLURM_EXPERIMENTS ?= rdmatf-fig6
SLURM_OUT ?= data/slurm
slurm-experiments: setup ## submit the sbatch job for SLURM_EXPERIMENTS on the harness's Slurm (runs under SLURM_OUT)
	SLURM_CONF=$(SLURM_STATE)/etc/slurm.conf DLOBD_SLURM_SITE=/dev/null SLURM_NODES=3 SLURM_TIME=01:00:00 \
	  DLOBD_SHARED=$(abspath $(SLURM_OUT)) DLOBD_SCRATCH=$(SLURM_STATE)/node-local \
	  DLOBD_PREFIX=$(EMULATED_STATE)/stack DLOBD_EXPERIMENTS="$(SLURM_EXPERIMENTS)" slurm/submit

# make test-emulated runs test_slurm.py from the hosts' provisioned prefix (slurm+prefix); these two run it
# on hosts of their own provisioned with the apptainer method from the image (built or reused in
# IMAGES), so every job starts HDFS and YARN from the image (slurm+apptainer).
SLURM_FROM_IMAGE = DLOBD_SLURM_TEST_APPTAINER=1 DLOBD_TEST_IMAGES=$(IMAGES)
test-slurm: setup-dev slurm-deps emulated-deps apptainer-deps ## as root: Slurm on 1 master + 2 emulated hosts running the image, a job running TFoS and native TF points, a cancelled job
	$(SLURM_FROM_IMAGE) $(BIN)/pytest -m integration tests/integration/test_slurm.py -q

# The whole pytest output stays in SLURM_BENCH_LOG: a failed test shows its tail and fails the target.
SLURM_BENCH_LOG ?= $(SLURM_STATE)-bench.log
bench-slurm: setup-dev slurm-deps emulated-deps bench-image ## the image lines (bench-image), then slurm_up_s, slurm_job_cluster_ready_s, slurm_points_ok/total, cross_path_mismatches
	status=0; $(SLURM_FROM_IMAGE) $(BIN)/pytest -m integration tests/integration/test_slurm.py -q -s \
	  > $(SLURM_BENCH_LOG) 2>&1 || status=$$?; grep -E '^[a-z_]+: ' $(SLURM_BENCH_LOG); \
	  [ $$status -eq 0 ] || { tail -40 $(SLURM_BENCH_LOG); exit $$status; }

## ---------------------------------------------------------------- emulated multi-host cluster (issue #7)

# Hosts made of network namespaces on this machine (tests/cluster/emulated.py): 1 master and
# EMULATED_WORKERS workers on a bridge, each with its own address from EMULATED_SUBNET and its own
# sshd; links shaped into an emulated Ethernet tier (eth-1g, eth-10g, a network axis value such as
# eth-1g-emulated, or unshaped). Keys, per-host data/log dirs and state.json go to EMULATED_STATE;
# the inventory to playbooks/inventories/emulated/hosts.yml. Needs root and openssh-server.
EMULATED_STATE ?= $(HOME)/dlobd-emulated
EMULATED_WORKERS ?= 3
# SITE=paper-shape: a real site's node sizes, ResourceManager host, interfaces (ib0, ib1 on the
# gpu workers), management network and shared prefix (tests/cluster/emulated.py)
SITE ?= plain
# the last EMULATED_GPU_WORKERS workers in group gpu: YARN's GPU node label, no GPU (CPU stands in)
EMULATED_GPU_WORKERS ?= $(if $(filter paper-shape,$(SITE)),1,0)
EMULATED_TIER ?= unshaped
EMULATED_SUBNET ?= 10.77.0.0/24
# SHARED_PREFIX=1: one prefix folder every host sees, as on NFS or Lustre (no per-host mount)
SHARED_PREFIX ?=
EMULATED_SHARED_PREFIX = $(if $(filter 1 yes true,$(SHARED_PREFIX)),--shared-prefix)
EMULATED := $(BIN)/python tests/cluster/emulated.py --state-dir $(EMULATED_STATE)
EMULATED_INVENTORY := playbooks/inventories/emulated/hosts.yml
# the inventory names the hosts' prefix (one path on every host): no -e dlobd_prefix here
EMULATED_PLAYBOOK = ANSIBLE_CONFIG=$(CURDIR)/ansible.cfg $(BIN)/ansible-playbook -i $(EMULATED_INVENTORY)

.PHONY: emulated-up emulated-down emulated-deps emulated-relink emulated-provision emulated-cluster-up emulated-cluster-down emulated-smoke-test emulated-experiments bench-emulated test-shared-prefix test-paper-shape
# Debian's sshd for the hosts (the provisioning roles install what the hosts themselves need)
emulated-deps: ## install openssh-server when sshd is missing (needs root and apt)
	@test -x /usr/sbin/sshd || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openssh-server; }

emulated-up: setup emulated-deps ## make 1 master + EMULATED_WORKERS namespace hosts with sshd, links EMULATED_TIER (SHARED_PREFIX=1: one prefix folder for all; EMULATED_GPU_WORKERS: the last N in group gpu; SITE=paper-shape: shaped like a real site); write their inventory
	$(EMULATED) up --site $(SITE) --workers $(EMULATED_WORKERS) --gpu-workers $(EMULATED_GPU_WORKERS) --tier $(EMULATED_TIER) --subnet $(EMULATED_SUBNET) $(EMULATED_SHARED_PREFIX)

emulated-down: setup ## remove every namespace, link, address, process and file emulated-up made (also after a failed up)
	$(EMULATED) down

emulated-relink: setup ## shape every link of the running emulated cluster to EMULATED_TIER (then emulated-provision)
	$(EMULATED) relink --tier $(EMULATED_TIER)

# The machine's own Debian packages are what the hosts use: `make provision` installs them first.
emulated-provision: setup ## site.yml over SSH on the emulated hosts (wheels and jars from the controller's depot)
	$(EMULATED_PLAYBOOK) playbooks/site.yml

emulated-cluster-up: setup ## start HDFS and YARN on the emulated hosts
	$(EMULATED_PLAYBOOK) playbooks/cluster-up.yml

emulated-cluster-down: setup ## stop the emulated hosts' daemons
	$(EMULATED_PLAYBOOK) playbooks/cluster-down.yml

emulated-smoke-test: setup ## the smoke tests on the emulated cluster, every worker checked
	$(EMULATED_PLAYBOOK) playbooks/smoke-test.yml

# Experiments with points on emulated Ethernet, launched by the pipeline on the emulated cluster's
# master (whose tier must be the points': EMULATED_TIER=eth-1g for rdmatf-fig1's eth-1g-emulated
# points, EMULATED_WORKERS=3 for its workers axis), kept apart from the local runs: raw logs,
# results, figures and report all under EMULATED_OUT.
EMULATED_EXPERIMENTS ?= rdmatf-fig1
EMULATED_OUT ?= data/emulated
comma := ,
space := $(subst x,,x x)
EMULATED_CONFIG = --config runs_dir=$(EMULATED_OUT)/runs state_dir=$(EMULATED_OUT)/state \
  results_dir=$(EMULATED_OUT)/results figures_dir=$(EMULATED_OUT)/figures report_dir=$(EMULATED_OUT)/report \
  cluster=emulated 'experiments=[$(subst $(space),$(comma),$(strip $(EMULATED_EXPERIMENTS)))]'

emulated-experiments: setup ## run EMULATED_EXPERIMENTS from the emulated cluster's master (results under EMULATED_OUT)
	$(EMULATED) exec -- env DLOBD_PREFIX=$(EMULATED_STATE)/stack $(SNAKEMAKE) --keep-going $(EMULATED_CONFIG) launch=True
	@echo "report: $(abspath $(EMULATED_OUT)/report/index.html)"

# Not part of make test: about 25 min, the local provisioning the integration fixtures start with
# (10 min) and 15 min for the hosts, which provision one after another on a shared prefix.
test-paper-shape: setup-dev emulated-deps ## as root: an emulated site shaped like a real one (SITE=paper-shape: declared 48-core workers, the ResourceManager on a smaller host, ib0/ib1, a management network) provisioned and started; containers sized and refused as there
	$(BIN)/pytest -m integration tests/integration/test_paper_shape.py -q

# The paper scale rehearsed on an emulated site shaped like a real one: the paper-shape site
# (4 workers of 48 declared cores, the last 3 in group gpu on ib1, the ResourceManager on a smaller
# host, a 10 Gb/s management network, one prefix) provisioned with the paper profile's image
# (PAPER_DEF, the apptainer method; its build's --skip-tags skipped here too), then `make experiments
# SCALE=paper REHEARSE=1` from its master: every point of REHEARSE_IDS (default: every experiment)
# once, at the paper scale's layout, its work cut; IPoIB's points on the site's ib0/ib1 and TFoS's
# GPU points on its gpu group's CPUs, which it declares as a rehearsal's stand-ins
# (dlobd_rehearsal_standins). The runs go to REHEARSAL_SITE_OUT, then `dlobd rehearsal` lists which
# points passed; the hosts are removed at the end, also after a failure.
REHEARSAL_SITE_STATE ?= $(HOME)/dlobd-rehearsal-site
REHEARSAL_SITE_OUT ?= data/rehearsal-paper-shape
REHEARSAL_SITE_SUBNET ?= 10.78.40.0/24
REHEARSAL_SITE_MANAGEMENT_SUBNET ?= 10.78.41.0/24
REHEARSE_IDS ?=
REHEARSAL_SITE := $(BIN)/python tests/cluster/emulated.py --state-dir $(REHEARSAL_SITE_STATE)
REHEARSAL_SITE_INVENTORY := $(REHEARSAL_SITE_STATE)-hosts.yml
REHEARSAL_SITE_PLAYBOOK = ANSIBLE_CONFIG=$(CURDIR)/ansible.cfg $(BIN)/ansible-playbook -i $(REHEARSAL_SITE_INVENTORY)

.PHONY: rehearse-paper-shape
rehearse-paper-shape: setup emulated-deps apptainer-deps ## as root: the paper scale rehearsed (REHEARSE=1) on the paper-shape emulated site with the paper image; REHEARSE_IDS= to pick experiments
	$(BIN)/dlobd image --images $(IMAGES) build $(PAPER_DEF)
	mkdir -p $(REHEARSAL_SITE_OUT)
	{ echo "dlobd_install_method: apptainer"; echo "apptainer_image_shared: true"; \
	  echo "apptainer_image: $$($(BIN)/dlobd image --images $(IMAGES) path $(PAPER_DEF))"; \
	  $(if $(APPTAINER),echo "apptainer_binary: $(APPTAINER)";) \
	  $(if $(DLOBD_APPTAINER_TARBALL),echo "apptainer_tarball: $(DLOBD_APPTAINER_TARBALL)";) } > $(REHEARSAL_SITE_OUT)/image-vars.yml
	$(REHEARSAL_SITE) up --site paper-shape --workers 4 --gpu-workers 3 --subnet $(REHEARSAL_SITE_SUBNET) \
	  --management-subnet $(REHEARSAL_SITE_MANAGEMENT_SUBNET) --inventory $(REHEARSAL_SITE_INVENTORY) \
	  --vars $(PAPER_DEF:.def=.vars.yml) --vars $(REHEARSAL_SITE_OUT)/image-vars.yml
	status=0; { $(REHEARSAL_SITE_PLAYBOOK) playbooks/site.yml $(if $(PAPER_IMAGE_SKIP_TAGS),--skip-tags $(PAPER_IMAGE_SKIP_TAGS)) \
	    && $(REHEARSAL_SITE_PLAYBOOK) playbooks/cluster-up.yml \
	    && $(REHEARSAL_SITE) exec -- env DLOBD_PREFIX=$(REHEARSAL_SITE_STATE)/stack $(SUBMAKE) experiments SCALE=paper \
	      REHEARSE=1 REHEARSAL_OUT=$(abspath $(REHEARSAL_SITE_OUT)) CLUSTER=paper-shape ID="$(REHEARSE_IDS)" \
	      INVENTORY=$(REHEARSAL_SITE_INVENTORY); } || status=$$?; \
	  $(REHEARSAL_SITE_PLAYBOOK) playbooks/cluster-down.yml; $(REHEARSAL_SITE) down; exit $$status

test-shared-prefix: setup-dev emulated-deps ## as root: 1 master + 2 emulated hosts sharing one prefix folder (as on NFS/Lustre): site.yml twice, each host's configuration, smoke tests, a DataNode per worker, a point across both, GPU-labelled executors on the gpu worker
	$(BIN)/pytest -m integration tests/integration/test_emulated_shared_prefix.py -q

# Clusters of its own (subnet 10.79.0.0/24), made and removed per worker count; about 30 min.
bench-emulated: setup emulated-deps ## create, provision cold/warm, start; HDFS write and Spark job time for 1/2/3 workers per tier (SHARED_PREFIX=1: one prefix folder)
	$(BIN)/python benchmarks/emulated/bench.py $(EMULATED_SHARED_PREFIX)

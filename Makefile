# The two commands a new machine needs: `make demo` and `make test`. Everything else is set up on the way.
SHELL := /bin/bash
CACHE ?= $(HOME)/.cache/keycloak-operator
UV_VERSION := 0.13.9
UV := $(CACHE)/uv-$(UV_VERSION)/bin/uv
export UV_PYTHON_DOWNLOADS := never
export UV_PROJECT_ENVIRONMENT := $(CURDIR)/.venv
RUN := $(UV) run --frozen
PYTEST_ARGS ?=

.PHONY: setup host-packages cluster cluster-down crds lint typecheck unit integration test demo bench bench-real release clean

# What the local cluster's real node and its images need from Debian: containerd and runc run the pods, the
# CNI plugins give them their own network namespace and IP, iptables and conntrack serve kube-proxy, and
# mmdebstrap assembles the images' root filesystems (no container engine; ADR 0013), skopeo reads the
# release's image archive as a user's registry tooling would (tests/integration/test_install.py) and pushes
# images to the cluster's registry, and docker-registry (distribution 2.8) is that registry (ADR 0029):
# Debian's binaries, where building distribution and crane from Go cost a cold run 2.5 minutes.
# docker-registry's package enables and may start a service of its own (its /etc/docker/registry config,
# :5000 on every interface, htpasswd auth); the cluster runs its own process on loopback, so when this target
# installs the package it also disables that service for every boot (update-rc.d: systemd's unit and the
# init script's links) and stops it if it started (systemd's unit, or the init script's pid where no systemd
# runs, as in a container whose policy-rc.d refuses starts).
HOST_PACKAGES := containerd runc containernetworking-plugins iptables conntrack mmdebstrap skopeo docker-registry

# uv itself is installed into the cache from PyPI, pinned, so a fresh machine needs only Python and pip.
$(UV):
	python3 -m venv $(CACHE)/uv-$(UV_VERSION)
	$(CACHE)/uv-$(UV_VERSION)/bin/pip install --quiet uv==$(UV_VERSION)

setup: $(UV)
	$(UV) sync --frozen --quiet

host-packages:
	@set -e; missing=$$(for p in $(HOST_PACKAGES); do dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages for the real node:" $$missing; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	  case " $$missing " in *" docker-registry "*) \
	    update-rc.d docker-registry disable; \
	    if [ -d /run/systemd/system ]; then systemctl stop docker-registry.service; \
	    elif start-stop-daemon --status --pidfile /var/run/docker-registry.pid; then /etc/init.d/docker-registry stop; \
	    fi;; \
	  esac; \
	fi

cluster: setup host-packages
	$(RUN) python -m localcluster up

cluster-down: setup
	$(RUN) python -m localcluster down

# The CRDs (deploy/crds and the chart's copy) and the chart's RBAC rules, generated from src/.../models.
crds: setup
	$(RUN) keycloak-operator crds --write .

# The import contracts (pyproject.toml, docs/architecture.md) keep the layers apart.
lint: setup
	$(RUN) ruff check src tests bench hack
	$(RUN) ruff format --check src tests bench hack
	$(RUN) lint-imports

typecheck: setup
	$(RUN) mypy

unit: setup
	$(RUN) pytest tests/unit -q $(PYTEST_ARGS)

# The cluster first, outside pytest: on a new machine it builds the control plane and the real node from Go
# modules (20-30 minutes), longer than any one test may take (pytest-timeout); the tests then reuse it.
integration: cluster
	$(RUN) pytest tests/integration -q -m integration --durations=30 $(PYTEST_ARGS)

test: lint typecheck unit integration

demo: setup host-packages
	$(RUN) python hack/demo.py

# The scale suite (about an hour: N = 100 and 500, idle, a 30-minute soak, 50 concurrent upgrades); writes
# bench/results/report.md, results.json and PNG plots. Not part of `make test` (a smoke run of it is).
bench: setup
	$(RUN) python bench/bench_scale.py

# Real-pod upgrades on the real node (about 12 minutes): a real 2-replica Keycloak upgraded under sign-in load
# with each strategy, and its Ready time with and without a `kc.sh build`-optimised image; writes
# bench/results/real_upgrade.json. Other real pods share the same two cores: best run with none.
bench-real: setup host-packages
	$(RUN) python bench/bench_real_upgrade.py

# The release artefacts in dist/: the operator image as an OCI archive, the packaged chart, the CRDs as one
# YAML, the command line as a wheel, and SHA256SUMS (hack/release.sh; docs/guide/install.md). IMAGE=REF
# names the image for your registry (default: the chart's ghcr.io/kcop-dev/keycloak-operator:VERSION).
release: setup host-packages
	KCOP_UV=$(UV) KCOP_PYTHON=$(CURDIR)/.venv/bin/python bash hack/release.sh dist

clean:
	rm -rf .venv .pytest_cache .mypy_cache .ruff_cache

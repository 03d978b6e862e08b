# The operator image: Debian bookworm's python3 (3.11), the locked runtime dependencies and the
# keycloak_operator wheel in /opt/venv, run as 65532:65532 with nothing else added. Build it with any engine:
#   docker build -t ghcr.io/kcop-dev/keycloak-operator:0.1.0 .        (the tag: the chart's appVersion)
# With no engine (this repository's CI and tests), hack/build-operator-image.sh assembles the same image with
# mmdebstrap and the same uv commands, and the chart tests run that (ADR 0015). Both recipes declare the same
# facts: base, packages, uv version, user, byte-code, installs, env, entrypoint, cmd;
# tests/unit/test_operator_image_recipe.py compares them and fails naming what differs. Change both together.

# Build: the pinned uv installs the locked dependencies, then the project's wheel, into /opt/venv with the
# image's own python3 (the virtualenv's interpreter is /usr/bin/python3 in the runtime stage too).
FROM debian:bookworm-slim AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 python3-venv \
 && rm -rf /var/lib/apt/lists/*
RUN python3 -m venv /opt/uv && /opt/uv/bin/pip install --no-cache-dir uv==0.13.9
ENV PATH=/opt/uv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    UV_PYTHON=/usr/bin/python3 UV_PYTHON_DOWNLOADS=never UV_PROJECT_ENVIRONMENT=/opt/venv UV_LINK_MODE=copy \
    UV_COMPILE_BYTECODE=1 SOURCE_DATE_EPOCH=0
WORKDIR /src
COPY pyproject.toml uv.lock README.md .gitignore ./
RUN uv sync --frozen --no-dev --no-install-project
# src/keycloak_operator alone: the test harness (src/localcluster) is never part of the wheel or the image.
COPY src/keycloak_operator ./src/keycloak_operator
RUN uv sync --frozen --no-dev --no-editable

# Run: Debian's python3 and the virtualenv; no apt lists, no pip, no uv. The stdlib's byte-code is compiled
# again with hashes (as the script must, its layers having every mtime at the epoch), so a read-only root
# filesystem never recompiles at start.
FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 \
 && rm -rf /var/lib/apt/lists/* \
 && python3 -m compileall -q -f -j 0 --invalidation-mode checked-hash /usr/lib/python3.11 \
 && echo 'nonroot:x:65532:65532:nonroot:/nonexistent:/usr/sbin/nologin' >> /etc/passwd \
 && echo 'nonroot:x:65532:' >> /etc/group
COPY --from=build /opt/venv /opt/venv
ENV PATH=/opt/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1
USER 65532:65532
ENTRYPOINT ["keycloak-operator"]
CMD ["run", "--all-namespaces"]

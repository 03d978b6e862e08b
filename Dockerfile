# The operator image. Not built in this repository's CI (there is no container engine here); the chart's
# integration test runs the same code as a local process under the chart's ServiceAccount token instead.

# Build: resolve the locked dependencies into a virtualenv with the pinned uv.
FROM python:3.11.14-slim-bookworm AS build
RUN pip install --no-cache-dir uv==0.13.9
WORKDIR /src
COPY pyproject.toml uv.lock README.md ./
COPY src ./src
ENV UV_PROJECT_ENVIRONMENT=/opt/venv UV_PYTHON_DOWNLOADS=never
RUN uv sync --frozen --no-dev --no-editable

# Run: the virtualenv only, as a non-root user, no shell tools added.
FROM python:3.11.14-slim-bookworm
COPY --from=build /opt/venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH PYTHONUNBUFFERED=1
USER 65532:65532
ENTRYPOINT ["keycloak-operator"]
CMD ["run", "--all-namespaces"]

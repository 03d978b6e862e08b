"""The command-line tools' kubectl-like options and their one-line failures, each with its own exit code
(shell/cli_target.py, docs/guide/cli.md). No cluster: a port nothing listens on, and a loopback HTTP server
that answers as an API server would."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml

from keycloak_operator import cli
from keycloak_operator.shell.cli_target import Exit

TOOLS = [
    ["status", "kc"],
    ["plan", "kc", "--image", "quay.io/keycloak/keycloak:26.7.3"],
    ["rollback", "kc"],
    ["image-recipe", "kc"],
]


def kubeconfig(path: Path, server: str, current: str = "dev", namespace: str | None = "team-a") -> Path:
    context: dict = {"cluster": "c", "user": "u"}
    if namespace:
        context["namespace"] = namespace
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": server}}],
                "users": [{"name": "u", "user": {"token": "secret-token"}}],
                "contexts": [
                    {"name": "dev", "context": context},
                    {"name": "prod", "context": {"cluster": "c", "user": "u"}},
                ],
                "current-context": current,
            }
        )
    )
    return path


@pytest.fixture(autouse=True)
def no_ambient_cluster(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Nothing from the machine running the tests: no $KUBECONFIG, an empty home, not in a pod."""
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = cli.main(list(argv))
    err = capsys.readouterr().err
    return code, err


def one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class FakeApi:
    """Answers every GET with `status` and `body`, and records the paths asked for."""

    def __init__(self) -> None:
        self.status, self.body = 404, {"kind": "Status", "message": "not found", "code": 404}
        self.paths: list[str] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                fake.paths.append(self.path)
                raw = json.dumps(fake.body).encode()
                self.send_response(fake.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def api() -> Iterator[FakeApi]:
    fake = FakeApi()
    yield fake
    fake.server.shutdown()
    fake.server.server_close()


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        cli.main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out.startswith("keycloak-operator 0.")


@pytest.mark.parametrize("tool", TOOLS)
def test_no_kubeconfig_anywhere(capsys: pytest.CaptureFixture[str], tool: list[str]) -> None:
    code, err = run(capsys, *tool)
    assert code == Exit.NO_KUBECONFIG
    assert one_line(err).startswith(f"keycloak-operator {tool[0]}: no kubeconfig: none at ~/.kube/config")


def test_a_kubeconfig_flag_naming_no_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, err = run(capsys, "status", "kc", "--kubeconfig", str(tmp_path / "nope"))
    assert code == Exit.NO_KUBECONFIG
    assert one_line(err).endswith("nope: no such file")


def test_kubeconfig_env_naming_no_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "a") + ":" + str(tmp_path / "b"))
    code, err = run(capsys, "status", "kc")
    assert code == Exit.NO_KUBECONFIG
    assert f"none at {tmp_path / 'a'}:" in one_line(err)


def test_a_kubeconfig_that_is_not_yaml(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = tmp_path / "config"
    bad.write_text("clusters: [\n")
    code, err = run(capsys, "plan", "kc", "--image", "x:1", "--kubeconfig", str(bad))
    assert code == Exit.NO_KUBECONFIG
    assert "not YAML" in one_line(err)


def test_a_context_with_unusable_credentials(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = kubeconfig(tmp_path / "config", "https://127.0.0.1:1")
    text = yaml.safe_load(path.read_text())
    text["users"][0]["user"] = {"client-certificate": str(tmp_path / "missing.crt")}
    path.write_text(yaml.safe_dump(text))
    code, err = run(capsys, "status", "kc", "--kubeconfig", str(path))
    assert code == Exit.NO_KUBECONFIG
    assert one_line(err).startswith("keycloak-operator status: context 'dev' cannot be used")


@pytest.mark.parametrize("tool", TOOLS)
def test_a_wrong_context(capsys: pytest.CaptureFixture[str], tmp_path: Path, tool: list[str]) -> None:
    path = kubeconfig(tmp_path / "config", "https://127.0.0.1:1")
    code, err = run(capsys, *tool, "--kubeconfig", str(path), "--context", "staging")
    assert code == Exit.BAD_CONTEXT
    assert "context 'staging' is not in the kubeconfig (contexts defined: dev, prod)" in one_line(err)


def test_a_current_context_that_is_not_defined(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = kubeconfig(tmp_path / "config", "https://127.0.0.1:1", current="gone")
    code, err = run(capsys, "status", "kc", "--kubeconfig", str(path))
    assert code == Exit.BAD_CONTEXT
    assert "context 'gone' is not in the kubeconfig" in one_line(err)


@pytest.mark.parametrize("tool", TOOLS)
def test_an_unreachable_api_server(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, tool: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    server = f"https://127.0.0.1:{closed_port()}"
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig(tmp_path / "config", server)))
    code, err = run(capsys, *tool)
    assert code == Exit.UNREACHABLE
    line = one_line(err)
    assert line.startswith(
        f"keycloak-operator {tool[0]}: cannot reach the API server of context dev at {server}"
    )


@pytest.mark.parametrize("tool", TOOLS)
def test_an_unknown_keycloak_in_the_contexts_namespace(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, tool: list[str], api: FakeApi
) -> None:
    path = kubeconfig(tmp_path / "config", api.url)
    code, err = run(capsys, *tool, "--kubeconfig", str(path))
    assert code == Exit.NOT_FOUND
    where = f"context dev at {api.url}"
    assert one_line(err) == f"keycloak-operator {tool[0]}: Keycloak team-a/kc not found ({where})"
    assert "/namespaces/team-a/keycloaks/kc" in api.paths[0]


def test_the_namespace_flag_and_a_context_without_one(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, api: FakeApi
) -> None:
    path = kubeconfig(tmp_path / "config", api.url)
    run(capsys, "status", "kc", "--kubeconfig", str(path), "-n", "other")
    run(capsys, "status", "kc", "--kubeconfig", str(path), "--context", "prod")
    assert ["/namespaces/other/" in api.paths[0], "/namespaces/default/" in api.paths[1]] == [True, True]


def test_the_api_server_refusing(capsys: pytest.CaptureFixture[str], tmp_path: Path, api: FakeApi) -> None:
    api.status, api.body = 403, {"kind": "Status", "message": 'keycloaks is forbidden: User "u"', "code": 403}
    code, err = run(
        capsys, "plan", "kc", "--image", "x:1", "--kubeconfig", str(kubeconfig(tmp_path / "c", api.url))
    )
    assert code == Exit.API_REFUSED
    assert "refused: GET /apis/" in one_line(err) and "403 keycloaks is forbidden" in err


def test_the_image_recipe_of_a_keycloak(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, api: FakeApi
) -> None:
    from tests.unit import builders

    s = builders.spec(features={"enabled": ["scripts"]})
    api.status, api.body = 200, {"kind": "Keycloak", **builders.keycloak(s)}
    code = cli.main(["image-recipe", "kc", "--kubeconfig", str(kubeconfig(tmp_path / "c", api.url))])
    out = capsys.readouterr().out
    assert code == 0
    assert f"FROM {builders.IMAGE}\n" in out
    assert '"--db=postgres"' in out and '"--features=scripts"' in out
    assert "/namespaces/team-a/keycloaks/kc" in api.paths[0]


def test_an_image_recipe_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path, api: FakeApi) -> None:
    from tests.unit import builders

    s = builders.spec(
        additionalOptions=[{"name": "spi-events-listener--provider", "secret": {"name": "f", "key": "k"}}]
    )
    api.status, api.body = 200, {"kind": "Keycloak", **builders.keycloak(s)}
    code, err = run(capsys, "image-recipe", "kc", "--kubeconfig", str(kubeconfig(tmp_path / "c", api.url)))
    assert code == Exit.REFUSED
    assert "build-time options spi-events-listener--provider take their values from a Secret" in one_line(err)


def test_the_exit_codes_are_distinct_and_refusing_is_one() -> None:
    assert len({e.value for e in Exit}) == len(Exit)
    assert Exit.REFUSED == 1 and Exit.USAGE == 2  # what plan and argparse already meant

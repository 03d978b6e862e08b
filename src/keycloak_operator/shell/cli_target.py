"""The cluster the command-line tools (`status`, `plan`, `rollback`) talk to, and the one-line failures they
end with. The kubeconfig is chosen like kubectl's (--kubeconfig, else $KUBECONFIG's files, else
~/.kube/config; in a pod with none of those, the pod's ServiceAccount), the context and namespace by
core/kubeconfig.py. Each failure has its own exit code (docs/guide/cli.md), so scripts can tell "the plan
refuses" (1) from "could not ask" (3 and up).
"""

from __future__ import annotations

import enum
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import yaml
from kubernetes_asyncio import client, config

from keycloak_operator.core import kubeconfig
from keycloak_operator.shell.kube import KEYCLOAKS, SERVICE_ACCOUNT_NAMESPACE, ApiError, Kube


class Exit(enum.IntEnum):
    OK = 0
    REFUSED = 1  # the answer is no: the plan refuses the image, the rollback is refused
    USAGE = 2  # bad arguments (argparse's own code), or a spec that is invalid with the image asked for
    NO_KUBECONFIG = 3  # no kubeconfig found, or one that cannot be read or used
    BAD_CONTEXT = 4  # the context asked for (or the current one) is not defined
    UNREACHABLE = 5  # the API server does not answer (refused, no such host, TLS, timeout)
    NOT_FOUND = 6  # no such Keycloak in that namespace
    API_REFUSED = 7  # the API server answered with an error (unauthorized, forbidden, ...)


class CommandError(Exception):
    """Ends the command with one line on stderr and `code`."""

    code = Exit.USAGE


class NoKubeconfig(CommandError):
    code = Exit.NO_KUBECONFIG


class BadContext(CommandError):
    code = Exit.BAD_CONTEXT


class Unreachable(CommandError):
    code = Exit.UNREACHABLE


class NotFound(CommandError):
    code = Exit.NOT_FOUND


class ApiRefused(CommandError):
    code = Exit.API_REFUSED


DEFAULT_KUBECONFIG = Path("~/.kube/config")
IN_CLUSTER_TOKEN = Path("/var/run/secrets/kubernetes.io/serviceaccount/token")


@dataclass(frozen=True)
class Target:
    configuration: client.Configuration
    namespace: str
    where: str  # for messages: "context NAME at URL" or "in-cluster at URL"


def kubeconfig_paths(flag: str | None, env: str | None) -> list[Path]:
    """The files to read, kubectl's way: the flag alone (it must exist), else $KUBECONFIG's existing files,
    else ~/.kube/config if it exists. [] when there is none."""
    if flag:
        path = Path(flag).expanduser()
        if not path.is_file():
            raise NoKubeconfig(f"kubeconfig {flag}: no such file")
        return [path]
    if env:
        return [p for p in (Path(s).expanduser() for s in env.split(os.pathsep) if s) if p.is_file()]
    default = DEFAULT_KUBECONFIG.expanduser()
    return [default] if default.is_file() else []


def _read(path: Path) -> object:
    try:
        return yaml.safe_load(path.read_text())
    except OSError as e:
        raise NoKubeconfig(f"kubeconfig {path}: {e.strerror}") from e
    except yaml.YAMLError as e:
        raise NoKubeconfig(f"kubeconfig {path}: not YAML ({str(e).splitlines()[0]})") from e


def _in_cluster(namespace: str | None) -> Target:
    configuration = client.Configuration()
    try:
        config.load_incluster_config(client_configuration=configuration)
    except config.ConfigException as e:
        raise NoKubeconfig(f"the pod's ServiceAccount cannot be used: {e}") from e
    try:
        own = SERVICE_ACCOUNT_NAMESPACE.read_text().strip()
    except OSError:
        own = ""
    chosen = namespace or own or kubeconfig.DEFAULT_NAMESPACE
    return Target(configuration, chosen, f"in-cluster at {configuration.host}")


def in_a_pod() -> bool:
    return bool(os.environ.get("KUBERNETES_SERVICE_HOST")) and IN_CLUSTER_TOKEN.is_file()


def choose(
    flag: str | None, context: str | None, namespace: str | None
) -> tuple[list[Path], kubeconfig.Choice] | None:
    """The kubeconfig files and the context and namespace chosen in them; None for the pod's own
    ServiceAccount (no kubeconfig at all, in a pod, no --context)."""
    paths = kubeconfig_paths(flag, os.environ.get("KUBECONFIG"))
    if not paths:
        if not context and in_a_pod():
            return None
        looked = os.environ.get("KUBECONFIG") or str(DEFAULT_KUBECONFIG)
        raise NoKubeconfig(f"no kubeconfig: none at {looked} (pass --kubeconfig or set KUBECONFIG)")
    try:
        merged = kubeconfig.merge([(str(p), _read(p)) for p in paths])
        return paths, kubeconfig.choose(merged, context, namespace)
    except kubeconfig.ContextError as e:
        raise BadContext(str(e)) from e
    except kubeconfig.KubeconfigError as e:
        raise NoKubeconfig(str(e)) from e


async def resolve(flag: str | None, context: str | None, namespace: str | None) -> Target:
    """The cluster, credentials and namespace for --kubeconfig `flag`, --context, -n."""
    chosen = choose(flag, context, namespace)
    if chosen is None:
        return _in_cluster(namespace)
    paths, choice = chosen
    configuration = client.Configuration()
    try:
        await config.load_kube_config(
            config_file=os.pathsep.join(str(p) for p in paths),
            context=choice.context,
            client_configuration=configuration,
            persist_config=False,
        )
    except (config.ConfigException, OSError, ValueError, KeyError, TypeError) as e:
        raise NoKubeconfig(f"context {choice.context!r} cannot be used: {e}") from e
    return Target(configuration, choice.namespace, f"context {choice.context} at {configuration.host}")


@asynccontextmanager
async def connected(target: Target) -> AsyncIterator[Kube]:
    """A Kube for `target`, closed after; a server that does not answer, or answers with an error, ends the
    command with one line."""
    kube = Kube(client.ApiClient(target.configuration))
    try:
        yield kube
    except (TimeoutError, aiohttp.ClientConnectionError, OSError) as e:
        reason = str(e) or type(e).__name__
        raise Unreachable(f"cannot reach the API server of {target.where}: {reason}") from e
    except ApiError as e:
        raise ApiRefused(f"the API server of {target.where} refused: {e}") from e
    finally:
        await kube.close()


async def keycloak_named(kube: Kube, target: Target, name: str) -> dict[str, Any]:
    """The Keycloak `name` in the target's namespace; NotFound, saying where it looked, when there is none."""
    keycloak = await kube.get(KEYCLOAKS, target.namespace, name)
    if keycloak is None:
        raise NotFound(f"Keycloak {target.namespace}/{name} not found ({target.where})")
    return keycloak

"""An extension image as teams ship them, built here: a provider jar (compiled from
fixtures/extension/java against the Keycloak distribution's own SPI jars) under /extensions/providers and a
directory theme under /extensions/themes, on the Debian root filesystem the Keycloak images use (it has the
`cp` the operator's copy step runs; the layer is shared, so containerd stores it once).
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

import localcluster
from localcluster import app_images, oci
from localcluster.keycloak import ensure_distribution
from localcluster.versions import cache_root

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "extension"
REF = "registry.kcop.test/extensions/kcop-audit:1"
PROVIDER_ID = "kcop-audit"  # the event listener's id, as server info lists it
THEME = "kcop-theme"
PROVIDERS_PATH = "/extensions/providers"
THEMES_PATH = "/extensions/themes"
SPI_JARS = ("server-spi", "server-spi-private", "core", "common")


def _provider_jar(version: str, work: Path) -> bytes:
    main = ensure_distribution(version) / "lib" / "lib" / "main"
    classpath = ":".join(str(main / f"org.keycloak.keycloak-{jar}-{version}.jar") for jar in SPI_JARS)
    classes = work / "classes"
    sources = [str(p) for p in sorted((FIXTURE / "java").rglob("*.java"))]
    subprocess.run(
        ["javac", "--release", "17", "-cp", classpath, "-d", str(classes), *sources],
        check=True,
        capture_output=True,
        text=True,
    )
    services = FIXTURE / "META-INF"
    jar = work / "provider.jar"
    subprocess.run(
        ["jar", "cf", str(jar), "-C", str(classes), ".", "-C", str(FIXTURE), services.name],
        check=True,
        capture_output=True,
        text=True,
    )
    return jar.read_bytes()


def _base_layer() -> Path:
    """The Debian root filesystem layer hack/build-keycloak-image.sh made (it deletes older recipes')."""
    found = sorted((cache_root() / "images" / "base").glob("keycloak-*.tar"))
    if len(found) != 1:
        raise RuntimeError(f"expected one Debian base layer, found {found}: build a Keycloak image first")
    return found[0]


def extension(cluster: localcluster.Cluster, version: str) -> str:
    """The extension image on the real node (after a Keycloak image was built, for its base layer)."""
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        files = {f"{PROVIDERS_PATH}/{PROVIDER_ID}.jar": oci.File(_provider_jar(version, work))}
        for path in sorted((FIXTURE / "themes").rglob("*")):
            if path.is_file():
                files[f"{THEMES_PATH}/{path.relative_to(FIXTURE / 'themes')}"] = oci.File(path.read_bytes())
        archive = cache_root() / "images" / "kcop-extension.tar"
        oci.write_image(archive, [_base_layer(), oci.layer(files)], {"User": "0", "WorkingDir": "/"}, REF)
    return app_images.ensure_on_node(cluster, archive, REF)

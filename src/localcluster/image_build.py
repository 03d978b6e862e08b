"""`python -m localcluster.image_build`: the two steps of hack/build-*-image.sh that a shell cannot do.

The scripts prepare root filesystems with ordinary tools (mmdebstrap, tar, chown, chmod), where a reader can
follow them like a Containerfile; this turns a prepared directory into a deterministic layer and a set of
layers plus a runtime config into an image archive, both with `oci`. Standard library only, so it runs with
any Python 3.11 before the project's virtualenv exists.

    layer DIR OUT                        a layer tar of everything under DIR (DIR itself is "/")
    image OUT REF CONFIG.json LAYER...   an image archive named REF; prints its manifest digest
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from localcluster import oci


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m localcluster.image_build", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    layer = sub.add_parser("layer", help="a layer tar from a directory tree")
    layer.add_argument("root", type=Path)
    layer.add_argument("out", type=Path)
    image = sub.add_parser("image", help="an image archive from layers (bottom first) and a runtime config")
    image.add_argument("out", type=Path)
    image.add_argument("ref")
    image.add_argument("config", type=Path, help="JSON: Entrypoint, Cmd, Env, User, WorkingDir, ...")
    image.add_argument("layers", type=Path, nargs="+")
    args = parser.parse_args(argv)

    if args.command == "layer":
        if not args.root.is_dir():
            parser.error(f"{args.root} is not a directory")
        oci.layer_from_dir(args.root, args.out)
        return 0
    config = json.loads(args.config.read_text())
    if not isinstance(config, dict):
        parser.error(f"{args.config} must hold a JSON object")
    print(oci.write_image(args.out, args.layers, config, args.ref))
    return 0


if __name__ == "__main__":
    sys.exit(main())

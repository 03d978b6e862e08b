"""The identity provider kind: a KeycloakIdentityProvider's representation in Keycloak, its scope (every
identity provider of one realm) and the bodies of its writes; its client secret's way in is idp_secret.py's,
its mappers' writes idp_mappers.py's.

An identity provider is named and addressed by its alias, unique within its realm (the alias is the remote
id too, as a realm's name is: a changed alias renames the object, its mappers and links following it). It
lives in a realm like a client, written with the realm's login, but has its own allow-list, the realm's
`identityProviderNamespaces` (a provider is a way into every client of the realm, not one team's).

**The marker lives in `config`.** Keycloak's IdentityProviderRepresentation has no `attributes`; its
`config` is a string map that keeps any key it is sent (checked on Keycloak 26 by the integration test,
`kcop.dev.*` keys included). So the marker's four keys go there. Inside the planner the config map is held
under `attributes`, the name the shared code reads a marker and declared keys from (marker.py, drift.py,
sync.plan_scope); `observed_view` gives what Keycloak returns that shape, and `keycloak_body` turns a body
back. Only declared config keys are compared, so keys Keycloak adds are not drift. A PUT replaces the whole
config, so every body carries every declared key and the marker.

**The client secret** is never in the content. The content holds `clientSecret: "**********"`, which is what
Keycloak returns for a stored secret (so the drift check compares like with like; a secret changed by hand
in Keycloak cannot be seen, one removed by hand can), and under SECRET_SOURCE the Secret's uid and
resourceVersion (never a digest of the value, which would let whoever reads the hash test guesses: see
realm_settings.py). A changed Secret changes the hash, so the provider is updated and the secret sent; the
value is read by idp_secret.py and put in the body only by `upsert_body`, in the writer, right before the
request. Sent back masked (a disable, a release), Keycloak keeps the stored secret.

**Mappers** are part of the content (a change to them changes the hash) but written through their own
endpoints, by name, as a client's protocol mappers are (idp_mappers.py).

An identity provider has an `enabled` switch: revocation disables it first, then deletes it (sync.py). One
made by hand is adopted only when its resource asks and is of the realm's own namespace (adoption.py).
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import Any, Final

from keycloak_operator.core.replication import adoption
from keycloak_operator.core.replication.called_urls import url_problem
from keycloak_operator.core.replication.identity import ObjectKey
from keycloak_operator.core.replication.in_realm import declared
from keycloak_operator.core.replication.marker import is_marker_attribute, marked
from keycloak_operator.core.replication.plan import Create, Update
from keycloak_operator.core.replication.resources import RealmTarget
from keycloak_operator.core.replication.saml_identity_provider import URL_FIELDS as SAML_URL_FIELDS
from keycloak_operator.core.replication.saml_identity_provider import saml_config
from keycloak_operator.core.replication.sync import (
    NO_REVOCATION,
    Resource,
    Revocation,
    ScopePlan,
    Verdict,
    plan_scope,
)
from keycloak_operator.kernel import names
from keycloak_operator.models.identity_provider import KeycloakIdentityProviderSpec, OidcSettings
from keycloak_operator.models.saml_identity_provider import SamlIdpSettings

KIND: Final = names.IDENTITY_PROVIDER_KIND
CONFIG: Final = "attributes"  # the provider's `config`, as the planner holds it (see the module's text)
MAPPERS: Final = "mappers"
SECRET_SOURCE: Final = "clientSecretSource"  # content only: which version of the Secret was read
# Written by calls of their own, or content only: left out of the provider's POST and PUT and of its drift.
SUBRESOURCES: Final = (MAPPERS, SECRET_SOURCE)
CLIENT_SECRET: Final = "clientSecret"
MASKED: Final = (
    "**********"  # what Keycloak returns for a stored secret (ComponentRepresentation.SECRET_VALUE)
)
SECRET_FIELD: Final = "spec.oidc.clientSecret"
# Booleans Keycloak may leave out of its answer when false; read as false, so they are never seen as drift.
FLAGS: Final = ("enabled", "trustEmail", "storeToken", "hideOnLogin")

Obj = Mapping[str, Any]


def _flag(value: bool) -> str:
    return "true" if value else "false"


def _oidc_config(oidc: OidcSettings) -> dict[str, str]:
    config = {
        "issuer": oidc.issuer or "",
        "authorizationUrl": oidc.authorization_url,
        "tokenUrl": oidc.token_url,
        "userInfoUrl": oidc.user_info_url or "",
        "jwksUrl": oidc.jwks_url or "",
        "useJwksUrl": _flag(oidc.jwks_url is not None),
        "logoutUrl": oidc.logout_url or "",
        "clientId": oidc.client_id,
        "clientAuthMethod": oidc.client_auth_method,
        "defaultScope": " ".join(oidc.default_scopes),
        "syncMode": oidc.sync_mode,
        "validateSignature": _flag(oidc.validate_signature),
        "pkceEnabled": _flag(oidc.pkce_enabled),
        "pkceMethod": "S256" if oidc.pkce_enabled else "",
    }
    if oidc.client_secret is not None:
        config[CLIENT_SECRET] = MASKED
    return config


def idp_content(spec: KeycloakIdentityProviderSpec) -> dict[str, Any]:
    """The provider as declared. Every config key is always sent (an absent optional one as ""), so a field
    removed from the spec is cleared in Keycloak; its mappers only when declared (absent: not managed)."""
    config = _oidc_config(spec.oidc) if spec.oidc is not None else {}
    if spec.saml is not None:  # the model holds exactly the block its providerId names
        config = saml_config(spec.saml)
    config["guiOrder"] = "" if spec.gui_order is None else str(spec.gui_order)
    content: dict[str, Any] = {
        "alias": spec.alias,
        "displayName": spec.display_name,
        "providerId": spec.provider_id,
        "enabled": spec.enabled,
        "trustEmail": spec.trust_email,
        "storeToken": spec.store_token,
        "hideOnLogin": spec.hide_on_login,
        "firstBrokerLoginFlowAlias": spec.first_broker_login_flow_alias or "",
        CONFIG: config,
    }
    if spec.mappers is not None:
        content[MAPPERS] = [
            {
                "name": m.name,
                "identityProviderMapper": m.identity_provider_mapper,
                "config": dict(sorted(m.config.items())),
            }
            for m in sorted(spec.mappers, key=lambda m: m.name)
        ]
    return content


URL_FIELDS: Final = ("issuer", "authorization_url", "token_url", "user_info_url", "jwks_url", "logout_url")


def _spec_problem(
    key: ObjectKey, parent: ObjectKey, spec: KeycloakIdentityProviderSpec, loopback_http: bool
) -> Verdict | None:
    """What the CRD cannot refuse: a URL Keycloak must not be sent to (called_urls.py: its own pod's
    loopback without the operator's setting, a link-local or metadata address), and a first-login flow from
    a namespace other than the realm's (a flow decides how users are created and linked)."""
    urls: list[tuple[str, str | None]] = []
    if spec.oidc is not None:
        urls = [(f"oidc.{OidcSettings.model_fields[n].alias}", getattr(spec.oidc, n)) for n in URL_FIELDS]
    if spec.saml is not None:
        aliases = SamlIdpSettings.model_fields
        urls = [(f"saml.{aliases[n].alias}", getattr(spec.saml, n)) for n in SAML_URL_FIELDS]
    refused = url_problem(urls, loopback_http)
    if refused is not None:
        return refused
    for path, url in urls:
        # Plain http to an upstream carries the client secret in clear: only for the tests' loopback
        # upstreams, with the operator's setting (the model's pattern lets http through for those).
        if isinstance(url, str) and url.startswith("http://") and not loopback_http:
            message = f"spec.{path}: plain http is not allowed; use https; nothing was written"
            return Verdict("Error", "InsecureUrl", message, revocable=False)
    if spec.first_broker_login_flow_alias is not None and key.namespace != parent.namespace:
        message = (
            "spec.firstBrokerLoginFlowAlias: only the realm's own namespace "
            f"({parent.namespace}) may choose a provider's first-login flow; nothing was written"
        )
        return Verdict("Forbidden", "FlowNotAllowed", message, revocable=False)
    return None


def idp_resource(
    obj: Obj,
    realms: Mapping[ObjectKey, RealmTarget],
    unreadable: AbstractSet[str] = frozenset(),
    *,
    loopback_http: bool = False,
) -> Resource:
    """An identity provider, with a problem when its realm is unknown or does not allow its namespace, when
    a URL names a host Keycloak must not be sent to (called_urls.py; `loopback_http`: the operator's
    KCOP_IDP_ALLOW_LOOPBACK_HTTP, off by default), or when a namespace other than the realm's names a
    first-login flow."""
    # Its own allow-list: a provider is a way into every client of the realm, not one team's.
    d = declared(
        obj,
        KeycloakIdentityProviderSpec,
        realms,
        unreadable,
        "identity providers",
        "identityProviderNamespaces",
    )
    if isinstance(d, Resource):
        return d
    problem = d.problem or _spec_problem(d.key, d.parent, d.spec, loopback_http)
    # A provider made by hand may be adopted (kcop.dev/adopt), from the realm's own namespace only.
    flags = d.flags | adoption.flags(obj, adoption.within_realm(d.key, d.parent))
    return Resource(d.key, d.spec.alias, idp_content(d.spec), problem=problem, parent=d.parent, **flags)


# --- the scope: every identity provider of one realm --------------------------------------------------------


def observed_view(idp: Obj) -> dict[str, Any]:
    """A provider as Keycloak returns it, in the planner's shape: its config also under `attributes`."""
    config = idp.get("config")
    view = {**idp, CONFIG: dict(config) if isinstance(config, Mapping) else {}}
    for flag in FLAGS:
        if view.get(flag) is None:
            view[flag] = False
    return view


def plan_identity_providers(
    idps: Sequence[Resource],
    observed: Iterable[Obj],
    namespaces: Container[str] | None = None,
    *,
    revocation: Revocation = NO_REVOCATION,
) -> ScopePlan:
    """Every identity provider of one realm, diffed whole against the realm's providers as listed (one made
    by hand, unmarked, holds its alias: declaring it is a Conflict)."""
    return plan_scope(
        KIND,
        idps,
        [observed_view(o) for o in observed if isinstance(o, Mapping)],
        remote_id_of="alias",
        natural_key_of="alias",
        subresources=SUBRESOURCES,
        compare_attributes=True,
        namespaces=namespaces,
        revocation=revocation,
    )


def keycloak_body(planned: Obj) -> dict[str, Any]:
    """A body in the planner's shape (content, or an observed view) as Keycloak takes it."""
    body = {k: v for k, v in planned.items() if k not in (*SUBRESOURCES, CONFIG, "config")}
    body["config"] = dict(planned.get(CONFIG) or {})
    return body


def upsert_body(op: Create | Update, secret: str | None, current: Obj | None = None) -> dict[str, Any]:
    """A create's or an update's body, marked, with the client secret read this round (None: the mask stays,
    which Keycloak reads as "keep the stored one"; a create must have it). An update is the declared fields
    and config keys laid over the provider as listed (`current`): a PUT replaces the whole provider, so what
    the operator does not manage (linkOnly, postBrokerLoginFlowAlias, config keys it has no field for) is
    sent back as it was, never reset; `current`'s internalId is how Keycloak finds it (and renames it, with
    its mappers, if the alias changed)."""
    declared = keycloak_body(marked(op.content, op.key))
    if isinstance(op, Update) and current is not None:
        kept = {k: v for k, v in current.items() if k not in (*SUBRESOURCES, CONFIG, "config")}
        seen = current.get("config")
        config = {**(seen if isinstance(seen, Mapping) else {}), **declared["config"]}
        body = {**kept, **declared, "config": config}
    else:
        body = declared
    config = body["config"]
    if CLIENT_SECRET in declared["config"]:
        if secret is not None:
            config[CLIENT_SECRET] = secret
        elif isinstance(op, Create):
            raise ValueError(f"{op.key}: a new identity provider needs its client secret")
    return body


def disable_body(current: Obj) -> dict[str, Any]:
    """Revocation's first step: the provider as read, switched off (its stored secret kept by the mask)."""
    return {**keycloak_body(current), "enabled": False}


def release_body(current: Obj) -> dict[str, Any]:
    """Preserve on delete: the provider as read (a view), its marker's config keys removed."""
    body = keycloak_body(current)
    body["config"] = {k: v for k, v in body["config"].items() if not is_marker_attribute(k)}
    return body

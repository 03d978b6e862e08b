"""KeycloakRealm: a realm declared in an app namespace, replicated into Keycloak; `RealmRef` is how every
kind declared inside a realm names it."""

from __future__ import annotations

from typing import Any

from pydantic import Field, model_validator

from keycloak_operator.kernel import names
from keycloak_operator.kernel import patterns as pt
from keycloak_operator.models import realm_defaults as rd
from keycloak_operator.models import realm_settings as rs
from keycloak_operator.models import service_account as sa
from keycloak_operator.models import user_profile as up
from keycloak_operator.models.base import CrdModel, SecretKeyRef
from keycloak_operator.models.realm_defaults import (
    DEFAULT_GROUPS_MAX,
    REQUIRED_ACTIONS_MAX,
    DefaultRoles,
    GroupResourceName,
    RequiredAction,
)
from keycloak_operator.models.realm_policies import OtpPolicy, WebAuthnPolicy
from keycloak_operator.models.realm_settings import (
    PASSWORD_POLICY_MAX,
    AdminEventSettings,
    BruteForceProtection,
    EventSettings,
    Internationalization,
    PasswordPolicy,
    SmtpSettings,
    ThemeSettings,
)
from keycloak_operator.models.replicated import Column, ReplicatedKind, Schema
from keycloak_operator.models.service_account import GRANTS_MAX, ServiceAccountGrant
from keycloak_operator.models.user_profile import UserProfile

NAME_PATTERN = r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"


class KeycloakRef(CrdModel):
    """A Keycloak resource run by this operator."""

    # A Keycloak's name becomes Service names (DNS-1035 labels), hence the stricter pattern and length.
    name: str = Field(
        min_length=1,
        max_length=names.MAX_KEYCLOAK_NAME,
        pattern=pt.DNS1035_LABEL,
        description="Name of the Keycloak resource.",
    )
    namespace: str | None = pt.namespace_name("Its namespace; defaults to the realm's.", default=None)


class ExternalServer(CrdModel):
    """An existing Keycloak server the operator only configures."""

    url: str = Field(
        max_length=pt.URL_MAX,
        pattern=pt.HTTP_URL,
        description="Base URL, e.g. https://sso.example.com (no credentials, query or fragment). The "
        "operator may be installed with an allow-list of hosts; a realm on another host is Forbidden.",
    )
    admin_secret: SecretKeyRef = Field(
        description="Secret in the realm's namespace with `username` and `password` of a master-realm admin."
    )
    ca_secret: SecretKeyRef | None = Field(
        default=None,
        description="An https server signed by a private CA: a Secret in the realm's namespace whose "
        "`ca.crt` the server's certificate is checked against (default: the system's CAs).",
    )


class ServerRef(CrdModel):
    """Exactly one of `keycloak` or `external`."""

    keycloak: KeycloakRef | None = Field(default=None, description="A Keycloak resource.")
    external: ExternalServer | None = Field(default=None, description="An existing server by URL.")


SERVER_EXACTLY_ONE_RULE = {
    "rule": "has(self.keycloak) != has(self.external)",
    "message": "exactly one of spec.server.keycloak or spec.server.external must be set",
}


class LoginSettings(CrdModel):
    registration_allowed: bool = Field(default=False, description="Users may register themselves.")
    reset_password_allowed: bool = Field(
        default=True,
        description="Forgot-password link on the login page. On by default here (Keycloak's own default is "
        "off); the link sends mail, so the realm needs SMTP for it to work.",
    )
    remember_me: bool = Field(default=False, description="Remember-me checkbox on the login page.")
    login_with_email_allowed: bool = Field(default=True, description="Users may log in with their email.")
    verify_email: bool = Field(default=False, description="Require email verification.")


class TokenSettings(CrdModel):
    access_token_lifespan_seconds: int = Field(default=300, ge=1, description="Access token lifespan.")
    sso_session_idle_timeout_seconds: int = Field(default=1800, ge=1, description="SSO session idle timeout.")
    sso_session_max_lifespan_seconds: int = Field(
        default=36000, ge=1, description="SSO session max lifespan."
    )


class RealmRole(CrdModel):
    name: str = Field(min_length=1, max_length=255, pattern=pt.NO_CONTROL, description="Role name.")
    description: str = Field(default="", max_length=2048, description="Role description.")


def _binding(purpose: str) -> Any:
    return pt.object_name(
        f"The KeycloakAuthenticationFlow (its name, in the realm's own namespace) run for {purpose}.",
        default=None,
    )


class FlowBindings(CrdModel):
    """The realm's flow bindings: each names a KeycloakAuthenticationFlow of the realm's own namespace, by
    resource name (never by alias, which another namespace could take first): the realm owner's flows only,
    since a bound flow decides how every client of the realm signs in."""

    browser: str | None = _binding("a browser sign-in (browserFlow)")
    direct_grant: str | None = _binding("a direct grant, the password grant (directGrantFlow)")
    registration: str | None = _binding("registration (registrationFlow)")
    reset_credentials: str | None = _binding("a forgotten password (resetCredentialsFlow)")
    client_authentication: str | None = _binding("a client's authentication (clientAuthenticationFlow)")
    first_broker_login: str | None = _binding(
        "a user's first sign-in through an identity provider (firstBrokerLoginFlow)"
    )
    docker: str | None = _binding("the docker registry protocol (dockerAuthenticationFlow)")


class KeycloakRealmSpec(CrdModel):
    server: ServerRef = Field(description="Where the realm lives.")
    realm_name: str | None = Field(
        default=None,
        max_length=255,
        pattern=NAME_PATTERN,
        description="Realm name in Keycloak; defaults to metadata.name.",
    )
    enabled: bool = Field(default=True, description="Whether the realm is enabled.")
    display_name: str = Field(default="", max_length=1024, description="Name shown on the login page.")
    login: LoginSettings = Field(default_factory=LoginSettings, description="Login page settings.")
    tokens: TokenSettings = Field(default_factory=TokenSettings, description="Token and session lifetimes.")
    roles: list[RealmRole] = Field(default_factory=list, max_length=1024, description="Realm roles.")
    # The blocks below are optional; an absent one is not managed (realm_settings.py says why).
    smtp: SmtpSettings | None = Field(default=None, description="Mail server; absent: not managed.")
    themes: ThemeSettings | None = Field(default=None, description="Themes; absent: not managed.")
    internationalization: Internationalization | None = Field(
        default=None, description="Locales; absent: not managed."
    )
    password_policy: list[PasswordPolicy] | None = Field(
        default=None,
        max_length=PASSWORD_POLICY_MAX,
        description="Password policies, each name at most once, rendered as Keycloak's policy string "
        "(`length(12) and digits(1)`); empty: no policy; absent: not managed.",
    )
    brute_force_protection: BruteForceProtection | None = Field(
        default=None, description="Brute-force detection; absent: not managed."
    )
    events: EventSettings | None = Field(default=None, description="Login events; absent: not managed.")
    admin_events: AdminEventSettings | None = Field(
        default=None, description="Admin events; absent: not managed."
    )
    otp_policy: OtpPolicy | None = Field(
        default=None, description="One-time password policy (realm_policies.py); absent: not managed."
    )
    web_authn_policy: WebAuthnPolicy | None = Field(
        default=None, description="WebAuthn two-factor policy; absent: not managed."
    )
    # What every user gets (realm_defaults.py): absent, not managed.
    required_actions: list[RequiredAction] | None = Field(
        default=None,
        max_length=REQUIRED_ACTIONS_MAX,
        description="Required actions by alias, each at most once: the listed ones are managed (enabled, "
        "defaultAction, priority), the others left as they are; absent: not managed.",
    )
    default_roles: DefaultRoles | None = Field(
        default=None,
        description="Roles every new user holds (the composites of default-roles-<realm>), exactly these; "
        "absent: not managed.",
    )
    default_groups: list[GroupResourceName] | None = Field(
        default=None,
        max_length=DEFAULT_GROUPS_MAX,
        description="KeycloakGroups of the realm's own namespace, by resource name, that every new user "
        "joins, exactly these; the realm is Pending until each is Ready. Absent: not managed.",
    )
    user_profile: UserProfile | None = Field(
        default=None,
        description="The user profile's unmanaged-attribute policy and extra attributes, merged into "
        "Keycloak's profile (the built-in attributes and any not declared are kept as they are); absent: "
        "not managed.",
    )
    client_namespaces: list[pt.NamespaceName] = pt.namespace_list(
        "Namespaces allowed to declare KeycloakClients in this realm, besides the realm's own."
    )
    identity_provider_namespaces: list[pt.NamespaceName] = pt.namespace_list(
        "Namespaces allowed to declare KeycloakIdentityProviders in this realm, besides the realm's own. An "
        "identity provider is a way into every client of the realm, so it has its own list, apart from "
        "clientNamespaces."
    )

    service_account_grants: list[ServiceAccountGrant] | None = Field(
        default=None,
        max_length=GRANTS_MAX,
        description="Roles of realm-management, of another built-in client, of a client of another "
        "namespace, or composite realm roles, that KeycloakClients of a namespace may map to their service "
        "accounts (spec.serviceAccountRoles) and include in their client roles' composites "
        "(spec.roles[].composites), which hands them to every user, group or service account holding such a "
        "role. The same grants open what a namespace's protocol mappers, identity-provider mappers and "
        "groups may put into tokens (roles, audiences, reserved claims: docs/adr/0012-tenant-isolation.md). "
        "Only the realm's own grants count; a withdrawn grant's mappings, composites and mappers are removed "
        "from every object of the namespace, whatever it declares.",
    )

    flow_namespaces: list[pt.NamespaceName] = pt.namespace_list(
        "Namespaces allowed to declare KeycloakAuthenticationFlows in this realm, besides the realm's own. "
        "Their flows can never be bound by spec.flowBindings (which names flows of the realm's own namespace "
        "only), nor chosen as an identity provider's first-login flow; empty, the default: only the realm's "
        "own namespace declares flows."
    )
    flow_bindings: FlowBindings | None = Field(
        default=None,
        description="Which KeycloakAuthenticationFlow of the realm's own namespace (by name) the realm runs "
        "for each purpose; absent, or a purpose left out: Keycloak's built-in flow wherever one of the "
        "operator's flows was bound, otherwise not managed. A flow named that does not exist (yet), is not "
        "Ready, or belongs to another realm leaves the realm Pending naming the field, the other bindings "
        "written; a bound flow being deleted is first unbound (Keycloak's built-in flow runs again), then "
        "deleted.",
    )

    @model_validator(mode="after")
    def _one_policy_each(self) -> KeycloakRealmSpec:
        names_ = [p.name for p in self.password_policy or []]
        if len(names_) != len(set(names_)):
            raise ValueError("passwordPolicy: each policy name at most once")
        aliases = [a.alias for a in self.required_actions or []]
        if len(aliases) != len(set(aliases)):
            raise ValueError("requiredActions: each alias at most once")
        if len(set(self.default_groups or [])) != len(self.default_groups or []):
            raise ValueError("defaultGroups: each group at most once")
        return self


class RealmRef(CrdModel):
    name: str = pt.object_name("Name of the KeycloakRealm resource.")
    namespace: str | None = pt.namespace_name("Its namespace; defaults to the client's.", default=None)


def _schema_rules(schema: Schema) -> None:
    spec = schema["properties"]["spec"]["properties"]
    spec["server"]["x-kubernetes-validations"] = [SERVER_EXACTLY_ONE_RULE]
    spec["internationalization"]["x-kubernetes-validations"] = [rs.DEFAULT_LOCALE_RULE]
    # Each policy name at most once (Keycloak keeps one value per name); the model checks the same.
    spec["passwordPolicy"].update({"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]})
    spec["requiredActions"].update({"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["alias"]})
    spec["requiredActions"]["items"]["x-kubernetes-validations"] = [rd.DEFAULT_NEEDS_ENABLED_RULE]
    spec["defaultRoles"]["properties"]["clients"]["x-kubernetes-validations"] = [rd.CLIENT_KEYS_RULE]
    spec["defaultRoles"]["properties"]["realm"]["x-kubernetes-list-type"] = "set"
    spec["defaultGroups"]["x-kubernetes-list-type"] = "set"
    spec["serviceAccountGrants"]["items"]["x-kubernetes-validations"] = [sa.GRANT_RULE]
    profile_attributes = spec["userProfile"]["properties"]["attributes"]
    profile_attributes.update({"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]})
    profile_attributes["items"]["x-kubernetes-validations"] = [up.NOT_BUILT_IN_RULE, up.NOT_MARKER_RULE]
    length = profile_attributes["items"]["properties"]["validations"]["properties"]["length"]
    length["x-kubernetes-validations"] = [up.LENGTH_ORDER_RULE]


DECLARED = ReplicatedKind(
    kind=names.REALM_KIND,
    plural=names.REALM_PLURAL,
    short_name="kcrealm",
    what="realms",
    spec=KeycloakRealmSpec,
    description="A realm replicated into Keycloak.",
    columns=(
        Column("Realm", ".spec.realmName"),
        Column("Keycloak", ".spec.server.keycloak.name"),
        Column("Phase", ".status.phase"),
        Column("SMTP", ".spec.smtp.host", priority=1),
        Column("Brute force", ".spec.bruteForceProtection.enabled", "boolean", priority=1),
        Column("Events", ".spec.events.enabled", "boolean", priority=1),
    ),
    schema_rules=_schema_rules,
    required=True,
    switched=True,
    in_realm=False,
    token_fields=("defaultRoles", "defaultGroups"),
)

from hypothesis import given
from hypothesis import strategies as st

from keycloak_operator.kernel import names


@given(st.text(max_size=200))
def test_label_value_is_always_valid(text: str) -> None:
    assert names.is_label_value(names.label_value(text))


@given(st.text(max_size=200), st.text(max_size=200))
def test_label_value_never_merges_two_inputs(a: str, b: str) -> None:
    if a != b:
        assert names.label_value(a) != names.label_value(b) or (names.is_label_value(a) and a == b)


def test_valid_values_are_kept() -> None:
    assert names.label_value("kc-v26") == "kc-v26"


def test_derived_service_names_fit_a_dns_label() -> None:
    longest = "k" * names.MAX_KEYCLOAK_NAME
    for name in [
        names.discovery_service(longest, green=True),
        names.public_service(longest),
        names.discovery_service(longest),
    ]:
        assert len(name) <= 63

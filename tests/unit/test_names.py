"""The one name rule (kernel.names): what a person reads is what was typed."""

from __future__ import annotations

import pytest

from kernel.names import RULE, checked_name, name_refusal


@pytest.mark.parametrize(
    ("name", "code", "at"),
    [
        ("\u202eevil\x07", "202E", 1),  # right-to-left override, then BEL
        ("ops\x07", "0007", 4),
        ("a\nb", "000A", 2),
        ("tab\there", "0009", 4),
        ("\u2066isolate\u2069", "2066", 1),
        ("zero\u200bwidth", "200B", 5),
        ("bom\ufeff", "FEFF", 4),
        ("line\u2028sep", "2028", 5),
        ("private\ue000", "E000", 8),
        ("nul\x00", "0000", 4),
    ],
)
def test_a_name_with_a_character_that_changes_how_it_reads_is_refused_naming_it(
    name: str, code: str, at: int
) -> None:
    assert name_refusal(name) == f"name: {RULE} (U+{code} at {at})"
    with pytest.raises(ValueError, match=f"U\\+{code}"):
        checked_name(name)


@pytest.mark.parametrize(
    "name",
    [
        "Platform Ops",
        "Équipe données",
        "運用チーム",
        "\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645",  # Persian, with a ZWNJ
        "👩\u200d💻 devs",
        "O'Brien-Smith (EU)",
    ],
)
def test_names_in_any_script_pass(name: str) -> None:
    assert name_refusal(name) == ""
    assert checked_name(name) == name


def test_the_refusal_names_its_field() -> None:
    assert name_refusal("a\x07", field="label").startswith("label: ")

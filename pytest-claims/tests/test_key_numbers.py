"""The registry's key numbers checked against the evidence the tests recorded."""

from __future__ import annotations

import pytest

from toy_project import claim, verdicts


def _key_numbers(pytester: pytest.Pytester, entries: str) -> None:
    registry = pytester.path / "registry.toml"
    registry.write_text(registry.read_text().replace('key_numbers = ["formula: checked"]', f"key_numbers = {entries}"))


@pytest.mark.smoke
def test_a_key_number_no_test_recorded_is_an_error_naming_the_claim_the_field_and_the_fields_that_exist(project):
    pytester = project()
    _key_numbers(pytester, '["formula: checked", "formula: chekced"]')
    result = pytester.runpytest_inprocess("-m", "smoke", "--claims-no-store")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    t1 = claim(verdicts(pytester), "T1")
    assert t1["verdict"] == "broken"
    assert (
        "key number 'formula: chekced' of claim 'toy/triangle': no test of statement 'formula' recorded 'chekced' "
        "(recorded: 'checked', 'wrong')" in t1["reason"]
    ), t1["reason"]
    assert "'formula: checked'" not in t1["reason"]  # a field that was recorded is not named
    assert claim(verdicts(pytester), "T2")["verdict"] == "verified"


@pytest.mark.smoke
def test_a_key_number_naming_a_field_of_a_record_is_checked_by_its_field(project):
    pytester = project()
    _key_numbers(pytester, '["formula: checked.lower"]')
    pytester.runpytest_inprocess("-m", "smoke", "--claims-no-store")
    assert "recorded 'checked.lower'" in claim(verdicts(pytester), "T1")["reason"]


@pytest.mark.smoke
def test_a_claim_whose_statements_did_not_all_run_is_not_checked(project):
    """The refuted statement did not run: its tests may yet record what the registry names."""
    pytester = project()
    _key_numbers(pytester, '["squares: anything"]')
    result = pytester.runpytest_inprocess("-m", "smoke", "--claims-no-store", "-k", "test_formula")
    assert result.ret == pytest.ExitCode.OK
    assert claim(verdicts(pytester), "T1")["verdict"] == "reduced scale"

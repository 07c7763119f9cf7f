"""The settings' permission and hook tables as a session reads them (`as_table`), without
pydantic building a model for them: the same as what `model_dump()` gives."""

from __future__ import annotations

from pathlib import Path

from hermes_core.config import HookEntry, HookTable, PermissionTable, Settings, load_settings


def test_a_configured_table_reads_as_its_dump(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text(
        '[permissions]\nallow = ["Bash(git status)"]\ndeny = ["Read(./secrets/**)"]\n'
        '[[hooks.pre_tool]]\ncommand = "./check.sh"\nmatcher = "Bash(*)"\ntimeout = 5\n'
        '[[hooks.stop]]\ncommand = "notify-send done"\nunconfined = true\n',
        encoding="utf-8",
    )
    settings = load_settings({"HERMES_ACP_HOME": str(tmp_path)})
    assert settings.permissions.as_table() == settings.permissions.model_dump()
    assert settings.hooks.as_table() == settings.hooks.model_dump()
    assert settings.hooks.as_table()["pre_tool"][0]["timeout"] == 5.0


def test_the_empty_tables_are_what_validation_makes(tmp_path: Path) -> None:
    plain = load_settings({"HERMES_ACP_HOME": str(tmp_path)})
    validated = Settings.model_validate({"home": tmp_path})
    assert plain.permissions == validated.permissions == PermissionTable.model_validate({})
    assert plain.hooks == validated.hooks == HookTable.model_validate({})
    assert plain.permissions.as_table() == PermissionTable.model_validate({}).model_dump()
    assert plain.hooks.as_table() == HookTable.model_validate({}).model_dump()


def test_every_hook_event_and_field_is_read() -> None:
    table = HookTable.model_validate({"stop": [{"command": "x"}]}).as_table()
    assert set(HookTable.model_fields) == set(table)
    assert set(HookEntry.model_fields) == set(table["stop"][0])

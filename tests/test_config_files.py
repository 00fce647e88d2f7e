"""The gateway config file: env interpolation and errors that point at a line."""

import pytest

from gateway.config import GatewayConfig, default_config
from policies.yaml_source import FileError, parse_model

GOOD = """
server: {host: 127.0.0.1, port: 8080}
cloud:
  models:
    - name: gpt-4o-mini
      provider_model: openai/gpt-4o-mini
      api_key: ${OPENAI_API_KEY}
      price: {input_per_1m: 0.15, output_per_1m: 0.60}
apps:
  - name: support-bot
    key: ${SUPPORT_BOT_KEY:-support-default-key}
"""


def test_secrets_come_from_the_environment():
    config = parse_model(GOOD, GatewayConfig, env={"OPENAI_API_KEY": "sk-from-env"})
    assert config.cloud.models[0].api_key.get_secret_value() == "sk-from-env"
    assert config.apps[0].key.get_secret_value() == "support-default-key"
    assert config.edge.models[0].gguf == "bundled:smollm2-135m"
    assert "sk-from-env" not in repr(config)


def test_an_unset_variable_is_an_error_naming_it_and_its_line():
    with pytest.raises(FileError) as caught:
        parse_model(GOOD, GatewayConfig, filename="gw.yaml", env={})
    problem = caught.value.problems[0]
    assert (problem.file, problem.line, problem.key) == ("gw.yaml", 7, "cloud.models[0].api_key")
    assert "OPENAI_API_KEY is not set" in problem.message


def test_unknown_keys_and_wrong_values_name_file_line_and_key():
    text = "server:\n  port: 80800\n  hots: 0.0.0.0\n"
    with pytest.raises(FileError) as caught:
        parse_model(text, GatewayConfig, filename="gw.yaml", env={})
    found = {(p.line, p.key): p.message for p in caught.value.problems}
    assert "unknown key" in found[(3, "server.hots")]
    assert "80800" in found[(2, "server.port")]
    assert str(caught.value).startswith("gw.yaml:")


def test_a_model_string_without_a_provider_is_refused():
    text = "cloud:\n  models:\n    - {name: x, provider_model: gpt-4o}\n"
    with pytest.raises(FileError, match="provider/model"):
        parse_model(text, GatewayConfig, env={})


def test_broken_yaml_is_reported_with_its_position():
    with pytest.raises(FileError) as caught:
        parse_model("server: {host: [\n", GatewayConfig, filename="gw.yaml", env={})
    assert "not valid YAML" in str(caught.value)


def test_a_quote_left_open_is_reported_where_it_opened_not_at_the_end():
    text = 'server:\n  host: 127.0.0.1\napps:\n  - name: "bot\n    key: k\n  - name: other\n    key: k2\n'
    with pytest.raises(FileError) as caught:
        parse_model(text, GatewayConfig, filename="gw.yaml", env={})
    (problem,) = caught.value.problems
    assert (problem.line, problem.column) == (4, 11)
    assert "while scanning a quoted scalar" in problem.message and "noticed at 8:1" in problem.message


def test_an_unknown_key_says_which_key_was_meant_and_which_are_allowed():
    with pytest.raises(FileError) as caught:
        parse_model("server:\n  prot: 8080\n", GatewayConfig, filename="gw.yaml", env={})
    (problem,) = caught.value.problems
    assert problem.message.startswith("unknown key; did you mean 'port'? expected one of host, port,")


def test_a_validators_message_is_said_without_pydantics_prefix():
    with pytest.raises(FileError) as caught:
        parse_model("cloud:\n  models:\n    - {name: x, provider_model: gpt-4o}\n", GatewayConfig, env={})
    assert "Value error" not in str(caught.value) and "provider/model" in str(caught.value)


def test_a_sqlite_store_in_a_folder_that_is_not_there_says_how_to_write_an_absolute_path(tmp_path):
    absolute = tmp_path / "ledger.db"  # written with three slashes: a path relative to the working directory
    with pytest.raises(FileError) as caught:
        parse_model(f"store: sqlite://{absolute}\n", GatewayConfig, filename="gw.yaml", env={})
    message = str(caught.value)
    assert "does not exist" in message and f"four slashes: sqlite:///{absolute}" in message
    assert parse_model(f"store: sqlite:///{absolute}\n", GatewayConfig, env={}).store == f"sqlite:///{absolute}"


def test_without_a_config_the_cloud_is_enabled_by_provider_keys_in_the_environment():
    assert default_config(env={}).cloud.models == [] and default_config(env={}).default_policy is None
    keyed = default_config(env={"OPENAI_API_KEY": "sk-x"})
    assert [m.name for m in keyed.cloud.models] == ["gpt-4o-mini"]
    assert keyed.default_policy is not None and keyed.default_policy.endswith("defaults/policy.yaml")


def test_serving_without_apps_is_refused_beyond_loopback():
    config = GatewayConfig()
    config.server.host = "0.0.0.0"
    with pytest.raises(ValueError, match="refusing to listen"):
        config.require_auth_or_loopback()


def test_the_example_config_in_configs_is_valid(monkeypatch):
    from gateway.config import load_config
    from tests.conftest import ROOT

    for name, value in {
        "OPENAI_API_KEY": "sk-1",
        "ANTHROPIC_API_KEY": "sk-2",
        "SUPPORT_BOT_KEY": "support-key-1",
        "CODE_ASSISTANT_KEY": "code-key-123",
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("EDGEWAY_ADMIN_KEY", raising=False)
    config = load_config(ROOT / "configs" / "edgeway.yaml")
    assert [a.name for a in config.apps] == ["support-bot", "code-assistant", "analytics", "cost-capped"]
    assert config.admin_key is None


def test_edge_nodes_are_urls_or_urls_with_the_nodes_key():
    text = (
        "edge:\n  nodes:\n    - http://10.0.0.7:8081/v1\n"
        "    - {url: 'http://10.0.0.8:8081/v1', api_key: '${NODE_KEY}'}\n"
    )
    config = parse_model(text, GatewayConfig, env={"NODE_KEY": "node-secret"})
    assert [n.url for n in config.edge.nodes] == ["http://10.0.0.7:8081/v1", "http://10.0.0.8:8081/v1"]
    assert config.edge.nodes[1].api_key.get_secret_value() == "node-secret"
    with pytest.raises(FileError) as caught:
        parse_model("edge:\n  nodes:\n    - 10.0.0.7:8081\n", GatewayConfig, filename="gw.yaml")
    assert caught.value.problems[0].line == 3


def test_the_readmes_policy_example_is_a_valid_policy():
    import re

    from policies.policy import Models, parse_policy
    from tests.conftest import ROOT

    readme = (ROOT / "README.md").read_text()
    block = re.search(r"```yaml\n(app: support-bot.*?)```", readme, re.S)
    assert block is not None, "the README's policy example is gone"
    policy = parse_policy(block.group(1), Models(("smollm2",), ("gpt-4o-mini",)))
    assert policy.spec.shadow is not None and policy.spec.budget is not None


@pytest.mark.parametrize(
    "text",
    [
        "My passport number is X1234567, can you fill in the visa form?",
        "Please update the account, my account number: 12345678, sort code 12-34-56",
    ],
)
def test_the_shipped_support_bot_keeps_an_identifier_on_the_edge(text):
    from classifiers import Scorer
    from policies.policy import Models, load_policy
    from router.decision import LiveState
    from router.policy_rules import facts_of
    from router.request import parse_chat_request
    from tests.conftest import ROOT

    policy = load_policy(ROOT / "configs" / "policies" / "support-bot.yaml", Models(("smollm2",), ("gpt-4o-mini",)))
    request = parse_chat_request({"model": "auto", "messages": [{"role": "user", "content": text}]})
    verdict = policy.evaluate(facts_of(Scorer().signals(request.messages), request, LiveState()))
    assert verdict.rule == "pii-stays-local" and not verdict.cloud_allowed

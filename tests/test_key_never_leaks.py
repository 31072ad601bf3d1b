"""The API key goes into the Authorization header and nowhere else.

Each test runs a real path (the agent against a key-protected classroom server, a refused key, the
command line) and then searches everything a learner or a log could see for the key.
"""

import json
import os
import subprocess
import sys

import pytest

from tinyagent import AuthenticationError, LlmClient, ReActAgent, load_settings
from tinyagent.classroom.server import ClassroomServer
from tinyagent.shop import Shop, shop_registry

KEY = "sk-classroom-TOPSECRET-8f3a91"
REFUND = "我上周买的扫地机不回充了，修不好我想退。订单号 88231。"


@pytest.fixture(scope="module")
def guarded_server():
    with ClassroomServer(api_key=KEY) as server:
        yield server


def assert_no_key(*texts):
    for text in texts:
        assert KEY not in text
        assert KEY[-8:] not in text  # not even a tail of it


def test_full_run_keeps_the_key_out_of_trace_messages_and_reprs(guarded_server, capsys):
    llm = LlmClient(guarded_server.chat_url, KEY, "classroom")
    agent = ReActAgent(llm, shop_registry(Shop(":memory:")))
    result = agent.run(REFUND)
    assert result.ok
    out = capsys.readouterr()
    assert_no_key(
        str(result.trace), result.trace.format("en", usage=True), result.trace.to_json(),
        json.dumps(result.messages, ensure_ascii=False), repr(result), repr(llm), repr(agent),
        repr(result.trace.events), out.out, out.err,
    )


def test_refused_key_error_does_not_repeat_it(guarded_server):
    wrong = "sk-wrong-ANOTHERSECRET-123456"
    llm = LlmClient(guarded_server.chat_url, wrong, "classroom")
    with pytest.raises(AuthenticationError) as info:
        llm.chat([{"role": "user", "content": "hi"}])
    assert wrong not in str(info.value) and wrong not in repr(info.value)
    result = ReActAgent(llm, shop_registry(Shop(":memory:"))).run("hi")
    assert result.reason == "llm_error"
    assert wrong not in result.trace.to_json()


def test_settings_keep_the_key_out_of_every_description(tmp_path):
    env = {"TINYAGENT_API_URL": "https://example.invalid/v1", "TINYAGENT_API_KEY": KEY, "TINYAGENT_MODEL": "m"}
    settings = load_settings(environ=env, dotenv_path=tmp_path / "none")
    assert settings.api_key == KEY
    assert_no_key(repr(settings), str(settings), settings.describe(), repr(LlmClient.from_settings(settings)))


def test_command_line_output_never_shows_the_key(guarded_server, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("TINYAGENT_")}
    env.update(TINYAGENT_API_URL=guarded_server.chat_url, TINYAGENT_API_KEY=KEY, TINYAGENT_MODEL="classroom")
    for extra in ([], ["--json"], ["--usage"]):
        done = subprocess.run(
            [sys.executable, "-m", "tinyagent", "ask", REFUND, "--db", str(tmp_path / "shop.db"),
             "--now", "2026-06-30T19:05:23", *extra],
            check=False, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60,
        )
        assert done.returncode == 0, done.stderr
        assert_no_key(done.stdout, done.stderr)

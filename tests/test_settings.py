import subprocess
import sys

import pytest

from tinyagent import load_settings
from tinyagent.errors import ConfigurationError

from .conftest import as_if_not_root

KEY = "sk-live-VERYSECRET-42"
REAL = {"TINYAGENT_API_URL": "https://api.deepseek.com/v1", "TINYAGENT_API_KEY": KEY,
        "TINYAGENT_MODEL": "deepseek-chat"}


def write_env(tmp_path, **values):
    path = tmp_path / ".env"
    path.write_text("".join(f"{k}={v}\n" for k, v in values.items()), encoding="utf-8")
    return path


def test_environment_names_a_real_provider(tmp_path):
    settings = load_settings(environ=REAL, dotenv_path=tmp_path / "none")
    assert (settings.api_url, settings.api_key, settings.model) == (REAL["TINYAGENT_API_URL"], KEY, "deepseek-chat")
    assert not settings.offline
    assert settings.source == "environment"


def test_explicit_arguments_beat_environment_which_beats_dotenv(tmp_path):
    env_file = write_env(tmp_path, TINYAGENT_API_URL="https://from-dotenv/v1", TINYAGENT_API_KEY="k-dotenv",
                         TINYAGENT_MODEL="dotenv-model")
    environ = {"TINYAGENT_MODEL": "env-model"}
    settings = load_settings(api_key="k-explicit", environ=environ, dotenv_path=env_file)
    assert settings.api_key == "k-explicit"
    assert settings.model == "env-model"
    assert settings.api_url == "https://from-dotenv/v1"
    assert settings.source == ".env, arguments, environment"


def test_nothing_configured_means_the_classroom_model(tmp_path, capsys):
    settings = load_settings(environ={}, dotenv_path=tmp_path / "none")
    assert settings.offline
    assert settings.model == "classroom"
    assert settings.api_url.startswith("http://127.0.0.1:")
    assert settings.api_key is None


def test_offline_flag_overrides_environment_and_dotenv(tmp_path):
    env_file = write_env(tmp_path, **REAL)
    settings = load_settings(environ={**REAL, "TINYAGENT_OFFLINE": "1"}, dotenv_path=env_file)
    assert settings.offline
    assert "TINYAGENT_OFFLINE=1" in settings.source


def test_classroom_variant_can_be_chosen_by_name(tmp_path):
    settings = load_settings(model="classroom-loop", environ={}, dotenv_path=tmp_path / "none")
    assert settings.offline and settings.model == "classroom-loop"


def test_key_without_url_is_a_clear_error(tmp_path):
    with pytest.raises(ConfigurationError, match="TINYAGENT_API_URL is not"):
        load_settings(environ={"TINYAGENT_API_KEY": KEY}, dotenv_path=tmp_path / "none")


def test_remote_url_without_key_is_a_clear_error(tmp_path):
    with pytest.raises(ConfigurationError, match="TINYAGENT_API_KEY is not set: copy .env.example"):
        load_settings(environ={"TINYAGENT_API_URL": "https://api.openai.com/v1", "TINYAGENT_MODEL": "m"},
                      dotenv_path=tmp_path / "none")


def test_local_server_needs_no_key(tmp_path):
    settings = load_settings(environ={"TINYAGENT_API_URL": "http://localhost:11434/v1", "TINYAGENT_MODEL": "qwen"},
                             dotenv_path=tmp_path / "none")
    assert settings.api_key is None and not settings.offline


def test_missing_model_is_a_clear_error(tmp_path):
    with pytest.raises(ConfigurationError, match="TINYAGENT_MODEL is not set"):
        load_settings(environ={"TINYAGENT_API_URL": "https://x/v1", "TINYAGENT_API_KEY": KEY},
                      dotenv_path=tmp_path / "none")


def test_key_never_appears_in_repr_str_or_describe(tmp_path):
    settings = load_settings(environ=REAL, dotenv_path=tmp_path / "none")
    for text in (repr(settings), str(settings), settings.describe()):
        assert KEY not in text
    assert "key set" in settings.describe()


def test_error_messages_never_contain_the_key(tmp_path):
    with pytest.raises(ConfigurationError) as info:
        load_settings(environ={"TINYAGENT_API_KEY": KEY}, dotenv_path=tmp_path / "none")
    assert KEY not in str(info.value)


def test_explicit_provider_model_without_a_provider_is_a_clear_error(tmp_path):
    with pytest.raises(ConfigurationError, match="needs a provider"):
        load_settings(model="gpt-4o", environ={}, dotenv_path=tmp_path / "none")


def test_provider_model_left_in_the_environment_falls_back_to_the_classroom(tmp_path):
    settings = load_settings(environ={"TINYAGENT_MODEL": "deepseek-chat"}, dotenv_path=tmp_path / "none")
    assert settings.offline and settings.model == "classroom"


@pytest.mark.parametrize("url", ["api.deepseek.com", "ftp://api.deepseek.com/v1", "https://"])
def test_an_api_url_without_http_is_a_configuration_error_naming_where_it_came_from(tmp_path, url):
    env_file = write_env(tmp_path, TINYAGENT_API_URL=url, TINYAGENT_API_KEY=KEY, TINYAGENT_MODEL="m")
    with pytest.raises(ConfigurationError) as info:
        load_settings(environ={}, dotenv_path=env_file)
    message = str(info.value)
    assert f"TINYAGENT_API_URL in the .env must start with http:// or https://, got {url!r}" in message
    assert "\n" not in message and KEY not in message


def test_a_key_written_where_the_url_goes_is_never_echoed(tmp_path):
    env_file = write_env(tmp_path, TINYAGENT_API_URL=KEY, TINYAGENT_API_KEY="https://api.deepseek.com",
                         TINYAGENT_MODEL="m")
    with pytest.raises(ConfigurationError, match="not a URL") as info:
        load_settings(environ={}, dotenv_path=env_file)
    assert KEY not in str(info.value) and KEY[-8:] not in str(info.value)


def test_the_env_file_is_found_from_a_subfolder_upward_as_python_dotenv_finds_it(tmp_path, monkeypatch):
    from dotenv import find_dotenv

    from tinyagent.settings import find_env_file

    deep = tmp_path / "a" / "b"
    deep.mkdir(parents=True)
    monkeypatch.chdir(deep)
    assert find_env_file() == find_dotenv(usecwd=True)  # "" when there is none above tmp_path, as dotenv says
    (tmp_path / ".env").write_text("TINYAGENT_MODEL=m\n")
    assert find_env_file() == str(tmp_path / ".env") == find_dotenv(usecwd=True)
    (tmp_path / "a" / ".env").write_text("TINYAGENT_MODEL=nearer\n")
    assert find_env_file() == str(tmp_path / "a" / ".env") == find_dotenv(usecwd=True)
    assert find_env_file(tmp_path) == str(tmp_path / ".env")


def test_a_password_in_the_url_is_never_shown_by_the_settings():
    # describe() (printed by every command and lesson 00) and the error for a URL of another scheme showed it.
    settings = load_settings(api_url="https://ada:hunter2@api.example.com/v1", api_key="sk-x", model="m", environ={},
                             notice=False)
    assert "hunter2" not in settings.describe() and "ada:***@api.example.com" in settings.describe()
    with pytest.raises(ConfigurationError) as refused:
        load_settings(api_url="ftp://ada:hunter2@x.example", api_key="sk-x", model="m", environ={}, notice=False)
    assert "hunter2" not in str(refused.value) and "ada:***@x.example" in str(refused.value)


@pytest.mark.parametrize("url", ["http://[::1", "http://[zz]/v1", "http://ada:hunter2@[::1/v1"])
def test_an_ipv6_host_without_its_brackets_right_is_a_configuration_error(tmp_path, url):
    # urlsplit's ValueError ("Invalid IPv6 URL") came out of load_settings as a traceback.
    with pytest.raises(ConfigurationError) as info:
        load_settings(environ={**REAL, "TINYAGENT_API_URL": url}, dotenv_path=tmp_path / "none")
    message = str(info.value)
    assert message.startswith("TINYAGENT_API_URL in the environment must write an IPv6 host as an address between "
                              "[ and ], as in http://[::1]:8080/v1, got ")
    assert "\n" not in message and KEY not in message and "hunter2" not in message


@pytest.mark.parametrize("port", ["99999", "abc", "-1", "0"])
def test_a_port_that_is_no_port_is_a_configuration_error(tmp_path, port):
    # It was accepted, and every run stopped at its first call with requests' InvalidURL, as if the model failed.
    url = f"http://127.0.0.1:{port}/v1"
    env_file = write_env(tmp_path, TINYAGENT_API_URL=url, TINYAGENT_API_KEY=KEY, TINYAGENT_MODEL="m")
    with pytest.raises(ConfigurationError) as info:
        load_settings(environ={}, dotenv_path=env_file)
    assert str(info.value).startswith("TINYAGENT_API_URL in the .env must give a port from 1 to 65535 after the "
                                      f"host's colon, as in http://127.0.0.1:8080/v1, got {url!r}: ")


def test_the_client_refuses_a_url_the_settings_refuse():
    from tinyagent import LlmClient

    for url in ("http://[::1", "http://127.0.0.1:99999/v1"):
        with pytest.raises(ConfigurationError, match="an API URL must"):
            LlmClient(url, None, "m")


@pytest.mark.parametrize("encoding", ["latin-1", "utf-16"])
def test_an_env_file_that_is_not_utf8_is_a_configuration_error_naming_it(tmp_path, encoding):
    # UnicodeDecodeError from python-dotenv came out as a traceback (Notepad's "Unicode" is UTF-16 with a BOM).
    env_file = tmp_path / ".env"
    env_file.write_text("TINYAGENT_API_URL=https://api.deepseek.com\nTINYAGENT_API_KEY=k\nTINYAGENT_MODEL=café\n",
                        encoding=encoding)
    with pytest.raises(ConfigurationError) as info:
        load_settings(environ={}, dotenv_path=env_file)
    message = str(info.value)
    assert message.startswith(f"the .env file {env_file} must be readable UTF-8 text, and is not: it holds bytes")
    assert "save it again as UTF-8" in message and "\n" not in message


def test_an_env_file_that_cannot_be_read_is_a_configuration_error_naming_it(tmp_path):
    # A PermissionError from python-dotenv came out as a traceback. Run as another process so that root can drop the
    # capability that lets it read any file.
    env_file = write_env(tmp_path, **REAL)
    env_file.chmod(0)
    script = ("import sys; from tinyagent import load_settings\n"
              "try:\n    load_settings(environ={}, dotenv_path=sys.argv[1])\n"
              "except ValueError as error:\n    print(type(error).__name__, error)")
    command = as_if_not_root([sys.executable, "-c", script, str(env_file)])
    done = subprocess.run(command, check=False, capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == (f"ConfigurationError the .env file {env_file} must be readable UTF-8 text, and is "
                                   "not: Permission denied; give your account permission to read it"), done.stderr

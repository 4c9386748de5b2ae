"""The Compose deployment wires VERA to its services safely: roles, hosts, health, secrets."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from urllib.parse import SplitResult, urlsplit

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
COMPOSE_FILE = ROOT / "compose.yaml"
INIT_ROLES = ROOT / "deploy" / "postgres" / "init-roles.sh"

INFRASTRUCTURE = ("postgres", "valkey", "neo4j", "minio")
LANES = ("interactive", "projection", "ingest", "maintenance")
WORKERS = tuple(f"worker-{lane}" for lane in LANES)
APP_SERVICES = ("web", *WORKERS, "beat")
SECRET_MARKERS = ("PASSWORD", "SECRET", "KEY_ID")

# ${VAR}, ${VAR:-default}, ${VAR-default}, ${VAR:?message}, ${VAR?message}, ${VAR:+alt}
_INTERPOLATION = re.compile(
    r"\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<op>:?[-?+])(?P<arg>[^}]*))?\}"
)


def _substitute(value: str) -> str:
    """Replace Compose interpolations: defaults by their default, the rest by a placeholder."""

    def replace(match: re.Match[str]) -> str:
        if match["op"] in {"-", ":-"}:
            return match["arg"]
        return f"placeholder-{match['name'].lower()}"

    return _INTERPOLATION.sub(replace, value).replace("$$", "$")


def _url(value: str) -> SplitResult:
    return urlsplit(_substitute(value))


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return yaml.safe_load(COMPOSE_FILE.read_text())


@pytest.fixture(scope="module")
def services(compose: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return compose["services"]


def _environment(service: dict[str, Any]) -> dict[str, str]:
    """A service's environment as a mapping, whichever of Compose's two forms it uses."""
    env = service.get("environment") or {}
    if isinstance(env, list):
        return dict(item.split("=", 1) if "=" in item else (item, "") for item in env)
    return {key: "" if value is None else str(value) for key, value in env.items()}


def _app_env(services: dict[str, dict[str, Any]]) -> dict[str, str]:
    return _environment(services["web"])


def _named_volumes(service: dict[str, Any]) -> set[str]:
    names = set()
    for volume in service.get("volumes", []):
        if isinstance(volume, dict):
            source = volume.get("source", "") if volume.get("type", "volume") == "volume" else ""
        else:
            source = volume.split(":", 1)[0] if ":" in volume else ""
        if source and not source.startswith((".", "/", "~", "$")):
            names.add(source)
    return names


def test_compose_file_has_no_obsolete_version_key(compose: dict[str, Any]) -> None:
    assert "version" not in compose


def test_every_expected_service_is_defined(services: dict[str, dict[str, Any]]) -> None:
    expected = {*INFRASTRUCTURE, *APP_SERVICES, "migrate"}
    assert expected <= services.keys(), sorted(expected - services.keys())


def test_postgres_uses_pgvector_image(services: dict[str, dict[str, Any]]) -> None:
    assert services["postgres"]["image"].startswith("pgvector/pgvector:")


@pytest.mark.parametrize("name", [*INFRASTRUCTURE, "web", *WORKERS])
def test_long_running_service_has_healthcheck(
    services: dict[str, dict[str, Any]], name: str
) -> None:
    healthcheck = services[name].get("healthcheck") or {}
    assert not healthcheck.get("disable", False)
    assert healthcheck.get("test"), f"{name} has no healthcheck test"
    assert healthcheck["test"] not in (["NONE"], "NONE")


def test_web_healthcheck_probes_healthz(services: dict[str, dict[str, Any]]) -> None:
    test = services["web"]["healthcheck"]["test"]
    command = test if isinstance(test, str) else " ".join(test)
    assert "localhost:8000/healthz" in command


@pytest.mark.parametrize("lane", LANES)
def test_worker_healthcheck_pings_its_own_node(
    services: dict[str, dict[str, Any]], lane: str
) -> None:
    test = services[f"worker-{lane}"]["healthcheck"]["test"]
    command = test if isinstance(test, str) else " ".join(test)
    # `$$` survives Compose interpolation as `$`, so the container's shell expands it.
    assert "inspect ping" in command
    assert f"{lane}@$$HOSTNAME" in command


@pytest.mark.parametrize("lane", LANES)
def test_each_lane_has_a_worker_consuming_only_its_queue(
    services: dict[str, dict[str, Any]], lane: str
) -> None:
    command = services[f"worker-{lane}"]["command"]
    assert command[command.index("-Q") + 1] == lane
    assert command[command.index("-n") + 1] == f"{lane}@%h"


def test_every_routed_queue_has_a_worker(services: dict[str, dict[str, Any]]) -> None:
    from django.conf import settings

    routed = {route["queue"] for route in settings.CELERY_TASK_ROUTES.values()}
    consumed = {services[w]["command"][services[w]["command"].index("-Q") + 1] for w in WORKERS}
    assert routed | {settings.CELERY_TASK_DEFAULT_QUEUE} <= consumed


def test_migrate_has_same_environment_keys_as_web(services: dict[str, dict[str, Any]]) -> None:
    assert _environment(services["migrate"]).keys() == _app_env(services).keys()


@pytest.mark.parametrize("name", [*WORKERS, "beat"])
def test_app_service_shares_web_environment(services: dict[str, dict[str, Any]], name: str) -> None:
    assert _environment(services[name]) == _app_env(services)


def test_app_database_url_uses_app_role_at_postgres(services: dict[str, dict[str, Any]]) -> None:
    env = _app_env(services)
    url = _url(env["DATABASE_URL"])
    assert url.scheme in {"postgres", "postgresql"}
    assert url.username == "vera_app"
    assert url.username == env["VERA_DB__APP_ROLE"]
    assert url.hostname == "postgres"
    assert url.path == "/vera"


def test_app_database_url_is_not_owner_or_superuser(services: dict[str, dict[str, Any]]) -> None:
    user = _url(_app_env(services)["DATABASE_URL"]).username
    superuser = _environment(services["postgres"])["POSTGRES_USER"]
    assert user not in {"vera_owner", superuser}


def test_migrate_database_url_uses_owner_role(services: dict[str, dict[str, Any]]) -> None:
    url = _url(_environment(services["migrate"])["DATABASE_URL"])
    assert url.username == "vera_owner"
    assert url.hostname == "postgres"
    assert url.path == "/vera"


def test_migrate_runs_migrations_once(services: dict[str, dict[str, Any]]) -> None:
    migrate = services["migrate"]
    command = migrate["command"]
    command = command if isinstance(command, str) else " ".join(command)
    assert "manage.py migrate" in command
    assert migrate.get("restart") == "no"
    assert migrate["depends_on"]["postgres"]["condition"] == "service_healthy"


def test_redis_url_points_at_valkey(services: dict[str, dict[str, Any]]) -> None:
    url = _url(_app_env(services)["REDIS_URL"])
    assert url.scheme == "redis"
    assert url.hostname == "valkey"


def test_graph_backend_is_neo4j_at_neo4j_host(services: dict[str, dict[str, Any]]) -> None:
    env = _app_env(services)
    assert env["VERA_MEMORY__GRAPH_BACKEND"] == "neo4j"
    assert _url(env["VERA_NEO4J__URI"]).hostname == "neo4j"


def test_object_store_is_s3_at_minio(services: dict[str, dict[str, Any]]) -> None:
    env = _app_env(services)
    assert env["VERA_OBJECT_STORE__BACKEND"] == "s3"
    assert _url(env["VERA_OBJECT_STORE__ENDPOINT_URL"]).hostname == "minio"


_MAKE_BUCKET = re.compile(r'mc mb --ignore-existing "?(?P<alias>[\w-]+)/(?P<bucket>[\w.-]+)"?')
_SET_ALIAS = re.compile(r'mc alias set "?(?P<alias>[\w-]+)"? "?(?P<url>[^"\s]+)"?')


def _shell_command(service: dict[str, Any]) -> str:
    """A service's entrypoint and command as one line, with `$$NAME` expanded from its own
    environment as the container's shell would."""
    words: list[str] = []
    for key in ("entrypoint", "command"):
        value = service.get(key) or []
        words += [value] if isinstance(value, str) else [str(word) for word in value]
    env = _environment(service)
    return re.sub(
        r"\$\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?", lambda m: env.get(m[1], ""), " ".join(words)
    )


def _bucket_makers(services: dict[str, dict[str, Any]]) -> dict[str, re.Match[str]]:
    """The services whose command makes the app's bucket (`mc mb`), with that match."""
    bucket = _app_env(services)["VERA_OBJECT_STORE__BUCKET"]
    found = {
        name: _MAKE_BUCKET.search(_shell_command(service)) for name, service in services.items()
    }
    return {name: made for name, made in found.items() if made and made["bucket"] == bucket}


def test_the_app_bucket_is_made_once_at_the_app_endpoint(
    services: dict[str, dict[str, Any]],
) -> None:
    makers = _bucket_makers(services)
    assert len(makers) == 1, "no one-shot service makes VERA_OBJECT_STORE__BUCKET"
    [(name, made)] = makers.items()
    alias = _SET_ALIAS.search(_shell_command(services[name]))
    assert alias, f"{name} sets no mc alias"
    assert alias["alias"] == made["alias"]
    assert alias["url"] == _app_env(services)["VERA_OBJECT_STORE__ENDPOINT_URL"]
    assert services[name].get("restart") == "no"
    assert services[name]["depends_on"]["minio"]["condition"] == "service_healthy"


@pytest.mark.parametrize("name", [*APP_SERVICES, "mcp"])
def test_app_service_starts_after_the_bucket_is_made(
    services: dict[str, dict[str, Any]], name: str
) -> None:
    makers = list(_bucket_makers(services))
    depends_on = services[name].get("depends_on") or {}
    assert makers
    assert depends_on.get(makers[0], {}).get("condition") == "service_completed_successfully"


def test_app_settings_module_is_production(services: dict[str, dict[str, Any]]) -> None:
    assert _app_env(services)["DJANGO_SETTINGS_MODULE"] == "vera.settings.production"


@pytest.mark.parametrize("name", APP_SERVICES)
@pytest.mark.parametrize("dependency", ["postgres", "valkey", "neo4j"])
def test_app_service_waits_for_healthy_dependency(
    services: dict[str, dict[str, Any]], name: str, dependency: str
) -> None:
    depends_on = services[name].get("depends_on") or {}
    assert isinstance(depends_on, dict), f"{name} depends_on needs conditions"
    assert depends_on.get(dependency, {}).get("condition") == "service_healthy"


@pytest.mark.parametrize("name", APP_SERVICES)
def test_app_service_waits_for_migrate_to_complete(
    services: dict[str, dict[str, Any]], name: str
) -> None:
    depends_on = services[name].get("depends_on") or {}
    assert isinstance(depends_on, dict), f"{name} depends_on needs conditions"
    assert depends_on.get("migrate", {}).get("condition") == "service_completed_successfully"


def test_secret_environment_values_are_interpolated(services: dict[str, dict[str, Any]]) -> None:
    literal = [
        f"{name}.{key}"
        for name, service in services.items()
        for key, value in _environment(service).items()
        if any(marker in key.upper() for marker in SECRET_MARKERS) and "${" not in value
    ]
    assert not literal, f"literal secrets: {literal}"


def test_url_passwords_are_interpolated(services: dict[str, dict[str, Any]]) -> None:
    literal = []
    for name, service in services.items():
        for key, value in _environment(service).items():
            if "://" not in value:
                continue
            password = urlsplit(value).password
            if password is not None and not _INTERPOLATION.fullmatch(password):
                literal.append(f"{name}.{key}")
    assert not literal, f"URLs with literal passwords: {literal}"


def test_neo4j_auth_password_is_interpolated(services: dict[str, dict[str, Any]]) -> None:
    user, _, password = _environment(services["neo4j"])["NEO4J_AUTH"].partition("/")
    assert user == "neo4j"
    assert _INTERPOLATION.fullmatch(password)


def test_every_used_named_volume_is_declared(compose: dict[str, Any]) -> None:
    used = set().union(*(_named_volumes(service) for service in compose["services"].values()))
    declared = set(compose.get("volumes") or {})
    assert used, "expected the stateful services to use named volumes"
    assert used <= declared, sorted(used - declared)


def test_postgres_mounts_init_roles_script(services: dict[str, dict[str, Any]]) -> None:
    mounts = [v for v in services["postgres"]["volumes"] if isinstance(v, str)]
    init = [m for m in mounts if m.split(":")[1].startswith("/docker-entrypoint-initdb.d/")]
    assert init, "init-roles.sh is not mounted into the init directory"
    assert (COMPOSE_FILE.parent / init[0].split(":")[0]).resolve() == INIT_ROLES


def _create_role_options(script: str, role: str) -> list[str]:
    match = re.search(rf"CREATE\s+ROLE\s+{role}\b(?P<options>[^;]*);", script, re.IGNORECASE)
    assert match, f"no CREATE ROLE {role} in {INIT_ROLES.name}"
    return match["options"].upper().split()


def test_init_roles_creates_app_role_without_superuser_or_bypassrls() -> None:
    options = _create_role_options(INIT_ROLES.read_text(), "vera_app")
    assert "NOSUPERUSER" in options
    assert "NOBYPASSRLS" in options
    assert {"SUPERUSER", "BYPASSRLS", "CREATEROLE"}.isdisjoint(options)


def test_init_roles_creates_owner_role_without_superuser_or_bypassrls() -> None:
    options = _create_role_options(INIT_ROLES.read_text(), "vera_owner")
    assert "NOSUPERUSER" in options
    assert "NOBYPASSRLS" in options


def test_init_roles_passes_passwords_as_psql_variables() -> None:
    script = INIT_ROLES.read_text()
    assert "ON_ERROR_STOP=1" in script
    assert ":'owner_pw'" in script
    assert ":'app_pw'" in script


def test_init_roles_script_is_executable() -> None:
    assert INIT_ROLES.stat().st_mode & 0o111


# --- metrics: every VERA process's samples reach web's /metrics ----------------------------

METRICS_DIR = "PROMETHEUS_MULTIPROC_DIR"


def _vera_services() -> list[str]:
    """Every service that runs VERA's image (its code), whatever its command."""
    services = yaml.safe_load(COMPOSE_FILE.read_text())["services"]
    image = services["web"]["image"]
    return [name for name, service in services.items() if service.get("image") == image]


def _mounts(service: dict[str, Any]) -> dict[str, str]:
    """The service's mounts: container path -> source (a named volume, or a host path)."""
    mounts = {}
    for volume in service.get("volumes", []):
        if isinstance(volume, dict):
            mounts[volume["target"]] = volume.get("source", "")
        else:
            source, _, rest = volume.partition(":")
            mounts[rest.split(":", 1)[0] if rest else source] = source if rest else ""
    return mounts


def test_every_vera_process_kind_runs_the_vera_image() -> None:
    assert {"web", "mcp", *WORKERS, "beat"} <= set(_vera_services())


@pytest.mark.parametrize("name", _vera_services())
def test_vera_service_writes_metrics_into_webs_volume_at_the_same_path(
    services: dict[str, dict[str, Any]], name: str
) -> None:
    web = _environment(services["web"])[METRICS_DIR]
    directory = _environment(services[name]).get(METRICS_DIR)
    assert directory == web, f"{name}: {METRICS_DIR}={directory!r}, web's is {web!r}"
    assert _mounts(services[name]).get(directory) == _mounts(services["web"])[web] != ""


def test_the_metrics_volume_is_named_and_empty_when_the_deployment_starts(
    compose: dict[str, Any], services: dict[str, dict[str, Any]]
) -> None:
    source = _mounts(services["web"])[_environment(services["web"])[METRICS_DIR]]
    # A named volume (not a host folder that outlives the deployment) on tmpfs: mounted
    # while any container uses it, so it is empty at a start and kept across a restart.
    options = (compose.get("volumes") or {})[source]["driver_opts"]
    assert options["type"] == "tmpfs"

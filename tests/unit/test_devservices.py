"""The embedded-services command recovers from leftovers or says exactly what to do."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from devtools.common import Profile, ServiceError
from devtools.postgres import Postgres, pg_bin
from devtools.redis_falkordb import Redis

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def profile(tmp_path: Path, free_port: int) -> Profile:
    return Profile(name="scratch", pg_port=free_port, redis_port=free_port, root=tmp_path)


@pytest.fixture
def listener(free_port: int) -> Iterator[socket.socket]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", free_port))
        sock.listen()
        yield sock


def test_redis_start_names_the_port_and_the_fix_when_the_port_is_taken(
    profile: Profile, listener: socket.socket
) -> None:
    with pytest.raises(ServiceError, match=rf"port {profile.redis_port} .*VERA_DEV__REDIS_PORT"):
        Redis(profile).start()


def test_postgres_start_names_the_port_and_the_fix_when_the_port_is_taken(
    profile: Profile, listener: socket.socket
) -> None:
    # A data directory that looks initialised, so start() goes straight to the port check.
    service = Postgres(profile)
    service.data.mkdir(parents=True)
    (service.data / "PG_VERSION").write_text(_server_major() + "\n")
    with pytest.raises(ServiceError, match=rf"port {profile.pg_port} .*VERA_DEV__PG_PORT"):
        service.start(profile.secrets())


def test_redis_start_replaces_a_stale_pid_file(profile: Profile) -> None:
    service = Redis(profile)
    service.home.mkdir(parents=True)
    finished = subprocess.Popen(["true"])
    finished.wait()
    service.pidfile.write_text(f"{finished.pid}\n")  # a previous run's pid, long gone
    try:
        assert service.start() is True
        assert service.running()
        assert int(service.pidfile.read_text()) != finished.pid
    finally:
        service.stop()
    assert not service.running()


def test_postgres_refuses_a_data_dir_from_another_major_version(profile: Profile) -> None:
    service = Postgres(profile)
    service.data.mkdir(parents=True)
    (service.data / "PG_VERSION").write_text("15\n")
    (service.data / "base").mkdir()
    with pytest.raises(ServiceError, match=r"PostgreSQL 15.*Nothing was changed"):
        service.start(profile.secrets())
    assert (service.data / "PG_VERSION").read_text() == "15\n"
    assert (service.data / "base").is_dir()


def test_postgres_refuses_a_non_empty_dir_that_is_no_cluster(profile: Profile) -> None:
    service = Postgres(profile)
    service.data.mkdir(parents=True)
    (service.data / "precious.txt").write_text("keep me")
    with pytest.raises(ServiceError, match="holds no PostgreSQL cluster"):
        service.start(profile.secrets())
    assert (service.data / "precious.txt").read_text() == "keep me"


def test_profile_secrets_are_private_and_stable(profile: Profile) -> None:
    first = profile.secrets()
    assert profile.secrets() == first
    assert (profile.state / "secrets.json").stat().st_mode & 0o777 == 0o600
    assert len(first["vera_app"]) == 48


def test_find_python_names_what_it_looked_for_when_none_is_found(tmp_path: Path) -> None:
    bash = shutil.which("bash")
    assert bash is not None
    env = {"PATH": str(tmp_path), "PYENV_ROOT": str(tmp_path / "no-pyenv"), "HOME": str(tmp_path)}
    for tool in ("dirname", "sort", "ls", "cat", "sha256sum", "cut"):
        found = shutil.which(tool)
        assert found is not None
        os.symlink(found, tmp_path / tool)
    result = subprocess.run(
        [bash, str(ROOT / "bin" / "vera"), "find-python"], env=env, capture_output=True, text=True
    )
    assert result.returncode == 1
    assert "no Python >= 3.12 found" in result.stderr
    assert "python3.12" in result.stderr
    assert "no-pyenv/versions/*/bin/python3" in result.stderr


def _server_major() -> str:
    out = subprocess.run([pg_bin("postgres"), "--version"], capture_output=True, text=True)
    return out.stdout.split()[-1].split(".")[0]

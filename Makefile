# The two commands that matter: `make run` and `make test`. Everything else is detail.
.PHONY: run test services-start services-stop services-status lint lock clean-venv

run:  ## Install, start embedded Postgres/Redis/FalkorDB, migrate, seed a demo, run web + worker + beat.
	@bin/vera run

test:  ## Same set-up on isolated ports and data, then ruff, import-linter, mypy and the three test tiers.
	@bin/vera test

services-start:
	@bin/vera services start

services-stop:
	@bin/vera services stop

services-status:
	@bin/vera services status

lint:
	@bin/vera lint

lock:  ## Re-resolve requirements.lock from pyproject.toml's dependencies.
	@bin/vera lock
